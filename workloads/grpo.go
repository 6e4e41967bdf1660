package workloads

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"

	"gke-rl/internal/kube"
	"gke-rl/internal/lifecycle"
	"gke-rl/internal/naming"
)

// GRPOArgs are the run's objects, built and validated before registration, and where they go.
type GRPOArgs struct {
	Job *rayv1.RayJob
	// Prep is the data preparation, or nil; the RayJob starts only once it has succeeded.
	Prep *batchv1.Job
	// Placement is the cluster's provider and namespace, and what the RayJob waits for (the
	// claim, the network objects, the tokens, the gate, the long-lived RayCluster).
	Placement kube.Placement
	// PrepPlacement is what the data preparation waits for: only what its pod uses (the claim,
	// the tokens). It runs on CPU nodes, so it starts while the gate checks the GPU nodes and
	// the Ray cluster comes up; the RayJob waits for both.
	PrepPlacement kube.Placement
	// Launch is a queued RayJob's launch (LaunchJob), or nil: it runs once the RayJob exists,
	// and so after what the RayJob waits for (the queue's objects, the launches' account and
	// Role).
	Launch *batchv1.Job
	// Queued is a RayJob of the queue (workloads/queue), whose labels name its priority class
	// (its launch adds the queue's): a change of them replaces it too. In place, the program's
	// object would send spec.suspend=true again to a RayJob that Kueue has started, and Kueue
	// reads the class only when it creates the workload; replaced, the experiment goes back in
	// the queue with its new priority and resumes from its newest checkpoint when admitted.
	Queued bool
}

// GRPO is the training run.
type GRPO struct {
	pulumi.ResourceState

	RayJob *apiextensions.CustomResource
	Prep   *apiextensions.CustomResource
	Launch *apiextensions.CustomResource
}

// NewGRPO registers the data preparation (if any), the RayJob and its launch (if any).
func NewGRPO(ctx *pulumi.Context, name string, args *GRPOArgs, opts ...pulumi.ResourceOption) (*GRPO, error) {
	g := &GRPO{}
	if err := ctx.RegisterComponentResource("gke-rl:workloads:GRPO", name, g, opts...); err != nil {
		return nil, err
	}
	kids := naming.Children{Component: name, Parent: g}
	// The names the single run's children had before names were derived from the component's
	// ("rayjob", "data-prep"): an alias keeps their URNs. An experiment of a queue never had
	// them, and two experiments aliasing one URN would fail the update.
	formerly := func(role string) string {
		if args.Queued {
			return ""
		}
		return role
	}
	placement := args.Placement
	if args.Prep != nil {
		prepName, prepOpts := kids.Of("data-prep", formerly("data-prep"), lifecycle.Options(lifecycle.JobType)...)
		var err error
		// The provider waits for the Job to succeed: that is what orders it before training.
		g.Prep, err = kube.NewObject(ctx, prepName, args.Prep, args.PrepPlacement.Namespaced(prepOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("data preparation: %w", err)
		}
		placement = placement.WaitingFor(g.Prep)
	}
	jobOptions := lifecycle.Options(lifecycle.RayJobType)
	if args.Queued {
		jobOptions = append(jobOptions, pulumi.ReplaceOnChanges([]string{"metadata.labels"}))
	}
	jobName, jobOpts := kids.Of("rayjob", formerly("rayjob"), jobOptions...)
	var err error
	g.RayJob, err = kube.NewObject(ctx, jobName, args.Job, placement.Namespaced(jobOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("rayjob: %w", err)
	}
	if args.Launch != nil {
		launchName, launchOpts := kids.Of("launch", "", lifecycle.Options(lifecycle.JobType)...)
		// The provider waits for the Job to succeed: an `up` ends with each experiment queued or
		// known to be finished.
		g.Launch, err = kube.NewObject(ctx, launchName, args.Launch, args.Placement.WaitingFor(g.RayJob).Namespaced(launchOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("launch: %w", err)
		}
	}
	if err := ctx.RegisterResourceOutputs(g, pulumi.Map{"rayJob": pulumi.String(args.Job.Name)}); err != nil {
		return nil, err
	}
	return g, nil
}
