package queue

import (
	"fmt"
	"strings"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gke-rl/internal/kube"
	"gke-rl/internal/naming"
)

// ComponentArgs are the queue's objects, built before registration, and where they go.
type ComponentArgs struct {
	// Objects are Objects(Args).
	Objects []*unstructured.Unstructured
	// InstallEnv is InstallEnv's; Kubeconfig reaches the cluster for the install step.
	InstallEnv map[string]string
	Kubeconfig pulumi.StringInput
	// Placement is the cluster's provider and namespace, and what the install step waits for
	// (the cluster and its node pools).
	Placement kube.Placement
}

// Queue is Kueue on the cluster and the stack's queue in it.
type Queue struct {
	pulumi.ResourceState

	// Install is the step that installs Kueue unless the cluster runs one.
	Install pulumi.Resource
	// Objects are the queue's objects; a RayJob submitted to the queue waits for them.
	Objects []pulumi.Resource
}

// New registers the install step and, after it, the queue's objects.
func New(ctx *pulumi.Context, name string, args *ComponentArgs, opts ...pulumi.ResourceOption) (*Queue, error) {
	q := &Queue{}
	if err := ctx.RegisterComponentResource("gke-rl:workloads:Queue", name, q, opts...); err != nil {
		return nil, err
	}
	kids := naming.Children{Component: name, Parent: q}
	env := pulumi.StringMap{}
	for k, v := range args.InstallEnv {
		env[k] = pulumi.String(v)
	}
	p := args.Placement
	// A local command takes no Kubernetes provider: it waits for what the objects wait for, and
	// goes with the cluster.
	installOpts := []pulumi.ResourceOption{pulumi.DependsOn(p.After)}
	if p.Cluster != nil {
		installOpts = append(installOpts, pulumi.DeletedWith(p.Cluster))
	}
	installName, installOpts := kids.Of("install", "", installOpts...)
	install, err := kube.NewKubectlCommand(ctx, installName, kube.KubectlCommandArgs{
		Script:     kube.KubectlScript(InstallScript()),
		Kubeconfig: args.Kubeconfig,
		Env:        env,
		// A new version is installed by the next `pulumi up`.
		Triggers: pulumi.Array{pulumi.String(KueueVersion)},
	}, installOpts...)
	if err != nil {
		return nil, fmt.Errorf("kueue install: %w", err)
	}
	q.Install = install
	p = p.WaitingFor(install)
	accountName, accountOpts := kids.Of("launcher-service-account", "")
	account, err := corev1.NewServiceAccount(ctx, accountName, &corev1.ServiceAccountArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(LauncherServiceAccount), Namespace: pulumi.String(p.Namespace)},
	}, p.Namespaced(accountOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("launcher service account: %w", err)
	}
	q.Objects = append(q.Objects, account)
	for _, obj := range args.Objects {
		objName, objOpts := kids.Of(strings.ToLower(obj.GetKind())+"-"+obj.GetName(), "")
		var r pulumi.Resource
		if obj.GetNamespace() != "" {
			r, err = kube.NewObject(ctx, objName, obj, p.Namespaced(objOpts...)...)
		} else {
			r, err = kube.NewObject(ctx, objName, obj, p.ClusterScoped(objOpts...)...)
		}
		if err != nil {
			return nil, fmt.Errorf("queue %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		q.Objects = append(q.Objects, r)
		// The queue exists before its classes are used, and each object after the one it names.
		p = p.WaitingFor(r)
	}
	if err := ctx.RegisterResourceOutputs(q, pulumi.Map{}); err != nil {
		return nil, err
	}
	return q, nil
}
