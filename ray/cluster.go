package ray

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/internal/kube"
	"gke-rl/internal/lifecycle"
	"gke-rl/internal/naming"
)

// RayClusterObject is the typed RayCluster object.
func RayClusterObject(name, namespace string, spec rayv1.RayClusterSpec) *rayv1.RayCluster {
	return &rayv1.RayCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       spec,
	}
}

// HeadService is the name KubeRay gives a RayCluster's head service.
func HeadService(cluster string) string { return cluster + "-head-svc" }

// LongLivedClusterArgs are a RayCluster, built and validated before registration, and where it
// goes.
type LongLivedClusterArgs struct {
	RayCluster *rayv1.RayCluster
	// Placement is the cluster's provider and namespace, and what the pods wait for (the claim,
	// the network objects and the tokens they use).
	Placement kube.Placement
}

// LongLivedCluster is a RayCluster that outlives any one job: the target of interactive
// `ray job submit`, and of the RayJob on reserved or on-demand capacity.
type LongLivedCluster struct {
	pulumi.ResourceState

	RayCluster *apiextensions.CustomResource
}

// NewLongLivedCluster registers the RayCluster.
func NewLongLivedCluster(ctx *pulumi.Context, name string, args *LongLivedClusterArgs, opts ...pulumi.ResourceOption) (*LongLivedCluster, error) {
	c := &LongLivedCluster{}
	// The type token keeps the URNs the component had as ray.Cluster.
	if err := ctx.RegisterComponentResource("gke-rl:ray:Cluster", name, c, opts...); err != nil {
		return nil, err
	}
	childName, childOpts := naming.Children{Component: name, Parent: c}.Of("raycluster", "raycluster", lifecycle.Options(lifecycle.RayClusterType)...)
	var err error
	c.RayCluster, err = kube.NewObject(ctx, childName, args.RayCluster, args.Placement.Namespaced(childOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("raycluster: %w", err)
	}
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"name":      pulumi.String(args.RayCluster.Name),
		"dashboard": pulumi.String(PortForward(args.RayCluster.Namespace, args.RayCluster.Name)),
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// JobLogsCommand follows a RayJob's training log: KubeRay v1.5.0 submits it from a Job named
// after the RayJob (K8sJobMode), whose pod tails the Ray job's driver log.
func JobLogsCommand(namespace, job string) string {
	return "kubectl -n " + namespace + " logs -f job/" + job
}

// JobAttemptsCommand lists RayJobs (one, or all in the namespace when job is empty) with their
// status and the attempt counts. KubeRay v1.5.0's printer columns show the job and deployment
// status but not the counts, which are .status.failed and .status.succeeded
// (ray-operator config/crd/bases/ray.io_rayjobs.yaml, apis/ray/v1/rayjob_types.go).
func JobAttemptsCommand(namespace, job string) string {
	cmd := "kubectl -n " + namespace + " get rayjob"
	if job != "" {
		cmd += " " + job
	}
	return cmd + " -o custom-columns=NAME:.metadata.name,JOB:.status.jobStatus,DEPLOYMENT:.status.jobDeploymentStatus," +
		"FAILED:.status.failed,SUCCEEDED:.status.succeeded,CLUSTER:.status.rayClusterName"
}

// PortForward is the command that forwards the dashboard of a cluster's head to localhost.
func PortForward(namespace, cluster string) string {
	return fmt.Sprintf("kubectl -n %s port-forward service/%s %d:%d", namespace, HeadService(cluster), DashboardPort, DashboardPort)
}
