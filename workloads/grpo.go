package workloads

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"

	"gke-rl/infra/kube"
)

// PrepTimeout bounds the data preparation: a 72B model is about 150 GB to download.
const PrepTimeout = "2h"

// GRPOArgs are the run's objects, built and validated before registration.
type GRPOArgs struct {
	Job *rayv1.RayJob
	// Prep is verl's data preparation, or nil; the RayJob starts only once it has succeeded.
	Prep *batchv1.Job
	// NamespaceInput is the namespace's name as an output of the namespace resource.
	NamespaceInput pulumi.StringInput
	// InCluster are the options of in-cluster objects (provider, DeletedWith, DependsOn on the
	// claim, the network objects and the secret the pods use).
	InCluster []pulumi.ResourceOption
}

// GRPO is the training run.
type GRPO struct {
	pulumi.ResourceState

	RayJob *apiextensions.CustomResource
	Prep   *apiextensions.CustomResource
}

// NewGRPO registers the data preparation (if any) and the RayJob.
func NewGRPO(ctx *pulumi.Context, name string, args *GRPOArgs, opts ...pulumi.ResourceOption) (*GRPO, error) {
	g := &GRPO{}
	if err := ctx.RegisterComponentResource("gke-rl:workloads:GRPO", name, g, opts...); err != nil {
		return nil, err
	}
	jobOpts := append([]pulumi.ResourceOption{pulumi.Parent(g)}, args.InCluster...)
	if args.Prep != nil {
		var err error
		// The provider waits for the Job to succeed: that is what orders it before training.
		g.Prep, err = kube.NewObject(ctx, "data-prep", args.Prep, args.NamespaceInput,
			append(append([]pulumi.ResourceOption{}, jobOpts...), pulumi.Timeouts(&pulumi.CustomTimeouts{Create: PrepTimeout, Update: PrepTimeout}))...)
		if err != nil {
			return nil, fmt.Errorf("data preparation: %w", err)
		}
		jobOpts = append(jobOpts, pulumi.DependsOn([]pulumi.Resource{g.Prep}))
	}
	var err error
	g.RayJob, err = kube.NewObject(ctx, "rayjob", args.Job, args.NamespaceInput, jobOpts...)
	if err != nil {
		return nil, fmt.Errorf("rayjob: %w", err)
	}
	if err := ctx.RegisterResourceOutputs(g, pulumi.Map{"rayJob": pulumi.String(args.Job.Name)}); err != nil {
		return nil, err
	}
	return g, nil
}
