package ray

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/infra/kube"
)

// NewRayCluster is the typed RayCluster object.
func NewRayCluster(name, namespace string, spec rayv1.RayClusterSpec) *rayv1.RayCluster {
	return &rayv1.RayCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       spec,
	}
}

// HeadService is the name KubeRay gives a RayCluster's head service.
func HeadService(cluster string) string { return cluster + "-head-svc" }

// RayClusterArgs configures the long-lived RayCluster component.
type RayClusterArgs struct {
	// Name is the RayCluster's name; Namespace the namespace's name as a plain value, for the
	// typed object, and NamespaceInput the same name as an output of the namespace resource.
	Name           string
	Namespace      string
	NamespaceInput pulumi.StringInput
	Spec           ClusterArgs
	// InCluster are the options of in-cluster objects (provider, DeletedWith, DependsOn on the
	// claim, the network objects and the secret the pods use).
	InCluster []pulumi.ResourceOption
}

// Cluster is a long-lived RayCluster for interactive `ray job submit`, and the target of a
// RayJob on reserved or on-demand capacity.
type Cluster struct {
	pulumi.ResourceState

	RayCluster *apiextensions.CustomResource
	// Name is the RayCluster's name; Dashboard is the port-forward command that reaches its
	// dashboard from a workstation.
	Name      string
	Dashboard string
}

// NewCluster validates the spec with KubeRay's checks and registers the RayCluster.
func NewCluster(ctx *pulumi.Context, name string, args *RayClusterArgs, opts ...pulumi.ResourceOption) (*Cluster, error) {
	rc := NewRayCluster(args.Name, args.Namespace, ClusterSpec(args.Spec))
	if err := ValidateCluster(rc); err != nil {
		return nil, err
	}
	c := &Cluster{Name: args.Name, Dashboard: PortForward(args.Namespace, args.Name)}
	if err := ctx.RegisterComponentResource("gke-rl:ray:Cluster", name, c, opts...); err != nil {
		return nil, err
	}
	var err error
	c.RayCluster, err = kube.NewObject(ctx, "raycluster", rc, args.NamespaceInput,
		append([]pulumi.ResourceOption{pulumi.Parent(c)}, args.InCluster...)...)
	if err != nil {
		return nil, fmt.Errorf("raycluster: %w", err)
	}
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"name":      pulumi.String(c.Name),
		"dashboard": pulumi.String(c.Dashboard),
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// PortForward is the command that forwards the dashboard of a cluster's head to localhost.
func PortForward(namespace, cluster string) string {
	return fmt.Sprintf("kubectl -n %s port-forward service/%s %d:%d", namespace, HeadService(cluster), DashboardPort, DashboardPort)
}
