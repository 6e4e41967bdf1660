package workloads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	batchv1 "k8s.io/api/batch/v1"

	"gke-rl/infra/kube"
	"gke-rl/infra/lifecycle"
	"gke-rl/infra/naming"
)

// GateComponentArgs are the gate's Jobs, built before registration, and where they go.
type GateComponentArgs struct {
	// NCCL is the GPU health and NCCL Job; Storage the storage check.
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

// collectResults prints the `gate:` lines of every pod of the Jobs in $JOBS.
const collectResults = `set -eu
kubeconfig=$(mktemp); trap 'rm -f "$kubeconfig"' EXIT
printf '%s' "$KUBECONFIG_DATA" > "$kubeconfig"
for job in $JOBS; do
  kubectl --kubeconfig "$kubeconfig" -n "$NAMESPACE" logs -l "batch.kubernetes.io/job-name=$job" --tail=-1 | grep '^` + GateResultPrefix + `' || true
done
`

// NewGate registers the gate.
func NewGate(ctx *pulumi.Context, name string, args *GateComponentArgs, opts ...pulumi.ResourceOption) (*Gate, error) {
	g := &Gate{}
	if err := ctx.RegisterComponentResource("gke-rl:workloads:Gate", name, g, opts...); err != nil {
		return nil, err
	}
	kids := naming.Children{Component: name, Parent: g}
	p := args.Placement
	var jobNames []string
	// uids change when a Job is replaced: the results are then collected again.
	var uids pulumi.Array
	if args.NCCL != nil {
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
		jobName, jobOpts := kids.Of("nccl", "", lifecycle.Options(lifecycle.JobType)...)
		job, err := kube.NewObject(ctx, jobName, args.NCCL, p.WaitingFor(svc).Namespaced(jobOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("nccl job: %w", err)
		}
		g.Jobs = append(g.Jobs, job)
		jobNames = append(jobNames, args.NCCL.Name)
		uids = append(uids, job.Metadata.Uid())
	}
	storageName, storageOpts := kids.Of("storage", "", lifecycle.Options(lifecycle.JobType)...)
	storageJob, err := kube.NewObject(ctx, storageName, args.Storage, p.Namespaced(storageOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("storage job: %w", err)
	}
	g.Jobs = append(g.Jobs, storageJob)
	jobNames = append(jobNames, args.Storage.Name)
	uids = append(uids, storageJob.Metadata.Uid())

	resultsName, resultsOpts := kids.Of("results", "", pulumi.DependsOn(slices.Clone(g.Jobs)))
	results, err := local.NewCommand(ctx, resultsName, &local.CommandArgs{
		Create:      pulumi.String(collectResults),
		Interpreter: pulumi.StringArray{pulumi.String("/bin/bash"), pulumi.String("-c")},
		Triggers:    uids,
		Environment: pulumi.StringMap{
			"KUBECONFIG_DATA": args.Kubeconfig,
			"NAMESPACE":       pulumi.String(p.Namespace),
			"JOBS":            pulumi.String(strings.Join(jobNames, " ")),
		},
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
