// Package ray builds KubeRay RayCluster specs for GPU training on GKE as pure functions over
// KubeRay's and Kubernetes' own Go types, checks them with KubeRay's validation, and registers a
// long-lived RayCluster for interactive work.
package ray

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/internal/gpunode"
	"gke-rl/internal/kube"
)

const (
	// DashboardPort is the Ray dashboard (and job API) port of the head.
	DashboardPort = 8265

	headContainer   = "ray-head"
	workerContainer = "ray-worker"
	// WorkerGroup is the name of the GPU worker group.
	WorkerGroup = "gpu-workers"
)

// GPU describes the worker nodes' hardware.
type GPU struct {
	// Accelerator is the GKE accelerator name, for the node affinity of Autopilot and readers.
	Accelerator string
	GPUsPerNode int
	// CPUs and MemoryGiB are what one worker requests: the node minus room for system pods.
	CPUs      int
	MemoryGiB int
	// SharedMemoryGiB sizes /dev/shm (NCCL and vLLM use it between processes on a node).
	SharedMemoryGiB int
	// NCCLTunerConfig is the gIB tuner file of the machine family.
	NCCLTunerConfig string
}

// SpecArgs are the inputs of a RayCluster spec. They are plain values: the spec is built
// before any resource is registered, so that KubeRay's validation runs at plan time.
type SpecArgs struct {
	Image      string
	RayVersion string
	Workers    int
	GPU        GPU
	// WorkerNodeSelector places workers on GPU nodes; HeadNodeSelector places the head on CPU
	// nodes that are neither spot nor GPU.
	WorkerNodeSelector map[string]string
	HeadNodeSelector   map[string]string
	// NICs are the GPU nodes' extra NICs, which every worker attaches.
	NICs    []gpunode.NIC
	Storage kube.SharedVolume
	// HeadRayCPUs are the CPUs the head advertises to Ray's scheduler: 0 keeps every task and
	// actor off it; a framework that places one bundle on every node needs 1
	// (workloads.HeadRayCPUs).
	HeadRayCPUs int
	// Env is added to every Ray container before the program's own variables.
	Env []corev1.EnvVar
	// Volumes and Mounts are further volumes of every Ray pod (the token files).
	Volumes []corev1.Volume
	Mounts  []corev1.VolumeMount
}

// ClusterSpec is the RayCluster spec: a CPU head and one fixed-size GPU worker group.
func ClusterSpec(a SpecArgs) rayv1.RayClusterSpec {
	workers := int32(a.Workers)
	return rayv1.RayClusterSpec{
		RayVersion:              a.RayVersion,
		EnableInTreeAutoscaling: ptr.To(false),
		HeadGroupSpec: rayv1.HeadGroupSpec{
			// Reachable from inside the cluster only: users port-forward to it.
			ServiceType: corev1.ServiceTypeClusterIP,
			RayStartParams: map[string]string{
				// The dashboard listens on the pod IP so that the KubeRay operator and the job
				// submitter reach it through the ClusterIP service; nothing exposes it further.
				"dashboard-host": "0.0.0.0",
				// No training lands on the head: it has no GPU and little memory. It advertises
				// as few CPUs as the framework's startup needs (HeadRayCPUs).
				"num-cpus": strconv.Itoa(a.HeadRayCPUs),
			},
			Template: HeadTemplate(a),
		},
		WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
			GroupName:   WorkerGroup,
			Replicas:    ptr.To(workers),
			MinReplicas: ptr.To(workers),
			MaxReplicas: ptr.To(workers),
			// KubeRay derives num-cpus, num-gpus and memory from the container's limits.
			RayStartParams: map[string]string{},
			Template:       WorkerTemplate(a),
		}},
	}
}

// HeadTemplate is the head pod: on the CPU pool, no GPU, the shared volume mounted.
func HeadTemplate(a SpecArgs) corev1.PodTemplateSpec {
	res := resources(map[corev1.ResourceName]string{corev1.ResourceCPU: "8", corev1.ResourceMemory: "32Gi"})
	c := corev1.Container{
		Name:      headContainer,
		Image:     a.Image,
		Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
		Ports: []corev1.ContainerPort{
			{Name: "gcs-server", ContainerPort: 6379},
			{Name: "dashboard", ContainerPort: DashboardPort},
			{Name: "client", ContainerPort: 10001},
		},
		// The head carries the workers' NCCL settings too: NeMo RL's driver runs here and copies
		// its whole environment into every actor (nemo_rl/distributed/virtual_cluster.py,
		// init_ray), which would otherwise replace the workers' LD_LIBRARY_PATH and lose the
		// gIB plugin, and NCCL would fall back to sockets.
		Env:          slices.Concat(a.Env, rayEnv(), NCCLEnv(a.GPU.NCCLTunerConfig)),
		VolumeMounts: append([]corev1.VolumeMount{a.Storage.Mount()}, a.Mounts...),
	}
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: a.Storage.Annotations()},
		Spec: corev1.PodSpec{
			ServiceAccountName: a.Storage.ServiceAccountName,
			NodeSelector:       cloneOrNil(a.HeadNodeSelector),
			Containers:         []corev1.Container{c},
			Volumes:            append([]corev1.Volume{a.Storage.Volume()}, a.Volumes...),
		},
	}
	kube.Harden(&t.Spec)
	return t
}

// WorkerTemplate is a GPU worker pod: the whole node's GPUs, its RDMA NICs attached by the
// interfaces annotation, the gIB plugin and driver libraries from the host, /dev/shm in memory.
func WorkerTemplate(a SpecArgs) corev1.PodTemplateSpec {
	annotations := gpunode.InterfaceAnnotations(a.NICs)
	maps.Copy(annotations, a.Storage.Annotations())

	res := resources(map[corev1.ResourceName]string{
		corev1.ResourceCPU:    strconv.Itoa(a.GPU.CPUs),
		corev1.ResourceMemory: fmt.Sprintf("%dGi", a.GPU.MemoryGiB),
		gpunode.GPUResource:   strconv.Itoa(a.GPU.GPUsPerNode),
	})
	c := corev1.Container{
		Name:  workerContainer,
		Image: a.Image,
		// KubeRay v1.5.0 runs `<command> && ulimit -n 65536; ray start ...`
		// (controllers/ray/common/pod.go, BuildPod): a failed `source` alone would skip the
		// ulimit and still start Ray, without the gIB plugin's settings, and NCCL would train
		// over TCP. The worker exits instead, and the pod fails where it can be seen.
		Command:      SourceOrExit(gpunode.NCCLEnvScript),
		Resources:    corev1.ResourceRequirements{Requests: res, Limits: res},
		Env:          append(append(slices.Clone(a.Env), rayEnv()...), NCCLEnv(a.GPU.NCCLTunerConfig)...),
		VolumeMounts: slices.Concat([]corev1.VolumeMount{a.Storage.Mount()}, gpunode.VolumeMounts(), a.Mounts),
	}
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec: corev1.PodSpec{
			ServiceAccountName: a.Storage.ServiceAccountName,
			NodeSelector:       cloneOrNil(a.WorkerNodeSelector),
			Tolerations:        []corev1.Toleration{gpunode.Toleration()},
			Containers:         []corev1.Container{c},
			Volumes:            slices.Concat([]corev1.Volume{a.Storage.Volume()}, gpunode.Volumes(a.GPU.SharedMemoryGiB), a.Volumes),
		},
	}
	kube.Harden(&t.Spec)
	return t
}

// SourceOrExit is a container command that sources script into the shell KubeRay starts Ray
// from, or stops that shell when it cannot. KubeRay joins the words with spaces.
func SourceOrExit(script string) []string {
	return []string{"source", script, "||", "{", "echo", "'" + script + " did not load: not starting Ray without the NCCL RDMA settings'", ">&2;", "exit", "1;", "}"}
}

// NCCLEnv is the NCCL environment of a GPU worker: libraries from the host, the tuner file of
// the machine family, and bootstrap sockets on eth0 (the RDMA NICs carry the collectives).
// NCCL_DEBUG=INFO limited to initialization and networking makes every communicator say once
// which transport it uses ("NET/gIB" over RDMA, "NET/Socket" on a silent fallback to TCP).
func NCCLEnv(tunerConfig string) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "LD_LIBRARY_PATH", Value: gpunode.NvidiaPath + "/lib64:" + gpunode.GIBPath + "/lib64"},
		{Name: "NCCL_TUNER_CONFIG_PATH", Value: tunerConfig},
		{Name: "NCCL_SOCKET_IFNAME", Value: "eth0"},
		{Name: "GLOO_SOCKET_IFNAME", Value: "eth0"},
		{Name: "NCCL_DEBUG", Value: "INFO"},
		{Name: "NCCL_DEBUG_SUBSYS", Value: "INIT,NET"},
	}
}

// rayEnv keeps Ray's own logs unbuffered so that Cloud Logging sees them as they happen.
func rayEnv() []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "PYTHONUNBUFFERED", Value: "1"}}
}

func resources(m map[corev1.ResourceName]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range m {
		out[k] = resource.MustParse(v)
	}
	return out
}

func cloneOrNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
