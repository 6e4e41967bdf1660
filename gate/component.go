package gate

import (
	_ "embed"
	"fmt"
	"slices"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	batchv1 "k8s.io/api/batch/v1"

	"gke-rl/internal/kube"
	"gke-rl/internal/lifecycle"
	"gke-rl/internal/naming"
)

// ComponentArgs are the gate's Jobs, built before registration, and where they go.
type ComponentArgs struct {
	// NCCL is the GPU health and NCCL Job (its pods resolve through a headless Service of its
	// subdomain); Storage is the storage check.
	NCCL, Storage *batchv1.Job
	// Kubeconfig reaches the cluster, to collect the Jobs' results into a stack output.
	Kubeconfig pulumi.StringInput
	Placement  kube.Placement
}

// Gate is the post-deploy gate: Jobs that Pulumi awaits, so that a failed one stops what waits
// for it (the Ray cluster and the training run) and says why.
type Gate struct {
	pulumi.ResourceState

	// Jobs are what the Ray objects wait for.
	Jobs []pulumi.Resource
	// Results are the Jobs' `gate:` lines.
	Results pulumi.StringOutput
}

// ResultsScript prints the result lines of every pod of the Jobs in $JOBS (in $NAMESPACE)
// that start with $PREFIX (ResultPrefix).
var ResultsScript = kube.KubectlScript(gateResults)

//go:embed results.sh
var gateResults string

// New registers the gate.
func New(ctx *pulumi.Context, name string, args *ComponentArgs, opts ...pulumi.ResourceOption) (*Gate, error) {
	g := &Gate{}
	// The type token is the one of the package the gate was first released in (workloads): it is
	// part of the URN of every resource of the gate, which a new token would replace.
	if err := ctx.RegisterComponentResource("gke-rl:workloads:Gate", name, g, opts...); err != nil {
		return nil, err
	}
	kids := naming.Children{Component: name, Parent: g}
	// The pods are refused by admission until their priority class exists.
	priorityName, priorityOpts := kids.Of("priority", "")
	priority, err := kube.NewObject(ctx, priorityName, PriorityClassObject(), args.Placement.ClusterScoped(priorityOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("gate priority class: %w", err)
	}
	p := args.Placement.WaitingFor(priority)
	svcName, svcOpts := kids.Of("nccl-service", "")
	svc, err := corev1.NewService(ctx, svcName, &corev1.ServiceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(args.NCCL.Spec.Template.Spec.Subdomain), Namespace: pulumi.String(p.Namespace)},
		Spec: &corev1.ServiceSpecArgs{
			ClusterIP:                pulumi.String("None"),
			Selector:                 pulumi.StringMap{batchv1.JobNameLabel: pulumi.String(args.NCCL.Name)},
			PublishNotReadyAddresses: pulumi.Bool(true),
		},
	}, p.Namespaced(svcOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("nccl service: %w", err)
	}
	// A gate Job runs once, when it is created: a later change of its spec (a gate key, the node
	// count, a new release of this program) does not run it again, so that an unrelated change
	// never stops a run. Running it again is deliberate: a new `gate.runId` renames the Jobs,
	// which Pulumi then creates anew; their pods preempt Ray workers that hold the GPUs
	// (PriorityClass).
	once := func(job *batchv1.Job) []pulumi.ResourceOption {
		return append(lifecycle.GateJobOptions(JobSeconds(job)), pulumi.IgnoreChanges([]string{"spec"}))
	}
	ncclName, ncclOpts := kids.Of("nccl", "", once(args.NCCL)...)
	ncclJob, err := kube.NewObject(ctx, ncclName, args.NCCL, p.WaitingFor(svc).Namespaced(ncclOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("nccl job: %w", err)
	}
	storageName, storageOpts := kids.Of("storage", "", once(args.Storage)...)
	storageJob, err := kube.NewObject(ctx, storageName, args.Storage, p.Namespaced(storageOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("storage job: %w", err)
	}
	g.Jobs = []pulumi.Resource{ncclJob, storageJob}

	resultsName, resultsOpts := kids.Of("results", "", pulumi.DependsOn(slices.Clone(g.Jobs)))
	results, err := kube.NewKubectlCommand(ctx, resultsName, kube.KubectlCommandArgs{
		Script:     ResultsScript,
		Kubeconfig: args.Kubeconfig,
		Env: pulumi.StringMap{
			"NAMESPACE": pulumi.String(p.Namespace),
			"JOBS":      pulumi.String(args.NCCL.Name + " " + args.Storage.Name),
			"PREFIX":    pulumi.String(ResultPrefix),
		},
		// The Jobs' uids change when a Job is replaced: the results are then collected again.
		Triggers: pulumi.Array{ncclJob.Metadata.Uid(), storageJob.Metadata.Uid()},
	}, resultsOpts...)
	if err != nil {
		return nil, fmt.Errorf("gate results: %w", err)
	}
	g.Results = results.Stdout
	if err := ctx.RegisterResourceOutputs(g, pulumi.Map{"results": g.Results}); err != nil {
		return nil, err
	}
	return g, nil
}
