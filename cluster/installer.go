package cluster

import (
	_ "embed"
	"strconv"

	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/gpunode"
	"gke-rl/internal/kinds"
	"gke-rl/internal/kube"
)

// The gIB NCCL plugin installer, managed here instead of `kubectl apply` of a moving branch. It
// equals GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/
// nccl-rdma-installer.yaml (Standard) and nccl-rdma-installer-autopilot.yaml (Autopilot) as of
// commit 992db812 (June 2026), with one deliberate difference: the node affinity names only the
// stack's accelerator, not every GPU the manifests support.
const (
	GIBInstallerImage = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1"
	// PauseImage keeps the DaemonSet pod alive after the init container installs the plugin.
	PauseImage = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"

	installerName = "nccl-rdma-installer"
	// autopilotInstallerNamespace is the Autopilot variant's namespace: Autopilot does not admit
	// privileged workloads into kube-system.
	autopilotInstallerNamespace = "rdma-system"
)

// installScript copies the plugin into the host directories the workers mount
// (rdma-install.sh); installEnv says whether it installs NCCL too.
//
//go:embed rdma-install.sh
var installScript string

// installEnv: the Standard manifest no longer installs NCCL itself (upstream commit 2da1c92f,
// "Removed --install-nccl from default and a4x installers"); the Autopilot manifest still does.
func installEnv(mode kinds.Mode) corev1.EnvVarArray {
	return corev1.EnvVarArray{corev1.EnvVarArgs{Name: pulumi.String("INSTALL_NCCL"), Value: pulumi.String(strconv.FormatBool(mode == kinds.Autopilot))}}
}

// newRDMAInstaller registers the installer DaemonSet (and, on Autopilot, its namespace), on GPU
// nodes only, and returns the DaemonSet. Placed after the GPU pool, its creation lasts until
// the plugin is installed on every node the pool starts with: pulumi-kubernetes awaits a
// DaemonSet until every scheduled pod is updated and available (await logic for DaemonSets,
// pulumi/pulumi-kubernetes#2953, kstatus), and this one's pod is available only once its init
// container has copied the plugin.
func newRDMAInstaller(ctx *pulumi.Context, name string, mode kinds.Mode, accelerator string, p kube.Placement, parent pulumi.ResourceOption) (*appsv1.DaemonSet, error) {
	namespace := pulumi.String("kube-system").ToStringOutput()
	opts := p.ClusterScoped(parent)
	if mode == kinds.Autopilot {
		ns, err := corev1.NewNamespace(ctx, name+"-ns", &corev1.NamespaceArgs{
			Metadata: &metav1.ObjectMetaArgs{
				Name:   pulumi.String(autopilotInstallerNamespace),
				Labels: pulumi.StringMap{"name": pulumi.String(autopilotInstallerNamespace)},
			},
		}, opts...)
		if err != nil {
			return nil, err
		}
		namespace = ns.Metadata.Name().Elem()
	}
	return appsv1.NewDaemonSet(ctx, name, &appsv1.DaemonSetArgs{
		Metadata: &metav1.ObjectMetaArgs{
			Name:      pulumi.String(installerName),
			Namespace: namespace,
			Labels:    pulumi.StringMap{"k8s-app": pulumi.String(installerName)},
		},
		Spec: installerSpec(mode, accelerator),
	}, opts...)
}

func installerSpec(mode kinds.Mode, accelerator string) *appsv1.DaemonSetSpecArgs {
	labels := pulumi.StringMap{"k8s-app": pulumi.String(installerName), "name": pulumi.String(installerName)}
	hostMounts := corev1.VolumeMountArray{
		corev1.VolumeMountArgs{Name: pulumi.String("library-dir-host"), MountPath: pulumi.String("/usr/local/home/kubernetes/bin/nvidia/lib64")},
		corev1.VolumeMountArgs{Name: pulumi.String("gib"), MountPath: pulumi.String("/usr/local/home/kubernetes/bin/gib")},
	}
	inits := corev1.ContainerArray{corev1.ContainerArgs{
		Name:            pulumi.String(installerName),
		Image:           pulumi.String(GIBInstallerImage),
		Command:         pulumi.StringArray{pulumi.String("/bin/sh"), pulumi.String("-c")},
		Args:            pulumi.StringArray{pulumi.String(installScript)},
		Env:             installEnv(mode),
		Resources:       &corev1.ResourceRequirementsArgs{Requests: pulumi.StringMap{"cpu": pulumi.String("150m")}},
		SecurityContext: &corev1.SecurityContextArgs{Privileged: pulumi.Bool(true)},
		VolumeMounts:    hostMounts,
	}}
	podSpec := &corev1.PodSpecArgs{
		Affinity: &corev1.AffinityArgs{NodeAffinity: &corev1.NodeAffinityArgs{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelectorArgs{
				NodeSelectorTerms: corev1.NodeSelectorTermArray{corev1.NodeSelectorTermArgs{
					MatchExpressions: corev1.NodeSelectorRequirementArray{corev1.NodeSelectorRequirementArgs{
						Key: pulumi.String(gpunode.AcceleratorLabel), Operator: pulumi.String("In"), Values: pulumi.StringArray{pulumi.String(accelerator)},
					}},
				}},
			},
		}},
		Tolerations: corev1.TolerationArray{corev1.TolerationArgs{Operator: pulumi.String("Exists")}},
		HostNetwork: pulumi.Bool(true),
		HostPID:     pulumi.Bool(true),
		Volumes: corev1.VolumeArray{
			corev1.VolumeArgs{Name: pulumi.String("library-dir-host"), HostPath: &corev1.HostPathVolumeSourceArgs{Path: pulumi.String(gpunode.NvidiaHostPath + "/lib64"), Type: pulumi.String("DirectoryOrCreate")}},
			corev1.VolumeArgs{Name: pulumi.String("gib"), HostPath: &corev1.HostPathVolumeSourceArgs{Path: pulumi.String(gpunode.GIBHostPath)}},
		},
		InitContainers: inits,
		Containers:     corev1.ContainerArray{corev1.ContainerArgs{Name: pulumi.String("pause"), Image: pulumi.String(PauseImage)}},
	}
	if mode == kinds.Standard {
		podSpec.PriorityClassName = pulumi.String("system-node-critical")
	}
	return &appsv1.DaemonSetSpecArgs{
		Selector:       &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{"k8s-app": pulumi.String(installerName)}},
		UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("RollingUpdate")},
		Template: &corev1.PodTemplateSpecArgs{
			Metadata: &metav1.ObjectMetaArgs{Labels: labels},
			Spec:     podSpec,
		},
	}
}
