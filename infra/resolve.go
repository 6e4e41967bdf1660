package infra

import (
	"fmt"
	"strings"
	"time"

	"gke-rl/cluster"
	"gke-rl/internal/gpunode"
	"gke-rl/internal/kinds"
	"gke-rl/monitoring"
	"gke-rl/network"
	"gke-rl/ray"
	"gke-rl/storage"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

// namespacePrefix starts every workload namespace that is not a cluster name itself.
const namespacePrefix = "rl-"

// clusterNamespacePrefix is how a cluster name that serves as its own namespace starts.
const clusterNamespacePrefix = "gke-rl"

// WorkloadNamespace is the namespace of a stack's storage claim, Ray cluster, training run and
// tokens' readers, from its cluster name: the cluster name itself when it starts with "gke-rl",
// else "rl-" and the cluster name (`ray-a4-gpu-spot` → `rl-ray-a4-gpu-spot`).
//
// Every Workload Identity principal of a project shares one pool (<project>.svc.id.goog) and
// names only the namespace and the service account, not the cluster, so the namespace is what
// keeps two stacks of one project from reading each other's tokens and writing each other's
// buckets. The cluster name is the stack's name in the project (its VPCs are named after it, and
// two stacks of one project cannot share them), so the mapping must be one-to-one: the two
// branches' namespaces never meet, since one always starts with "gke-rl" and the other with
// "rl-", and each branch keeps the whole name. (Until this version unprefixed names took
// "gke-rl-", so `smoke` and `gke-rl-smoke` shared gke-rl-smoke.) The prefixes keep the namespace
// clear of those Kubernetes and GKE reserve (default, kube-*, gke-* system namespaces), and
// within 63 characters (cluster names stop at 40).
func WorkloadNamespace(clusterName string) string {
	if strings.HasPrefix(clusterName, clusterNamespacePrefix) {
		return clusterName
	}
	return namespacePrefix + clusterName
}

// Resolve checks a loaded configuration and derives everything the program will create from it:
// the Blueprint. It is pure (no Pulumi context, no resource, no invoke), so that a configuration
// it rejects registers nothing, and it returns Errors listing every problem at once. now is the
// moment the stack is planned at: the warnings about dates (the maintenance exclusion) compare
// with it.
func Resolve(c *Config, now time.Time) (*Blueprint, error) {
	var errs Errors
	if c.Queued() {
		errs = perExperiment(c, validate)
		if spec, ok := LookupGPU(c.GPU.Type); ok {
			validateJobs(c, spec, &errs)
		}
	} else {
		validate(c, &errs)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	hw, _ := LookupGPU(c.GPU.Type) // validate checked the type
	addrs, err := resolveAddressPlan(c.Network)
	if err != nil {
		return nil, internalError("address plan", err)
	}
	bp := &Blueprint{
		Project: c.Project, Region: c.Region, Zone: c.Zone,
		Namespace: WorkloadNamespace(c.Cluster.Name),
		Hardware:  hw,
		Addresses: addrs,
		NICs:      gpunode.NICs(c.Network.RDMASubnets),
		Networks: network.NetworksArgs{
			Project: c.Project, Region: c.Region, Zone: c.Zone,
			NamePrefix: c.Cluster.Name,
			NodeCIDR:   addrs.Node, PodCIDR: addrs.Pod, ServiceCIDR: addrs.Service,
			GVNICCIDR:   addrs.GVNIC,
			RDMASubnets: addrs.RDMA,
			MTU:         c.Network.MTU,
			// The Lustre instance that an earlier destroy kept holds on to the main VPC.
			AdoptMain: c.Storage.Adopt && c.Storage.Type == kinds.Lustre,
		},
		Tokens: workloads.Tokens{
			HF: c.Tokens.HuggingFace, WandB: c.Tokens.WandB,
			Project: c.Project, Prefix: c.Cluster.Name,
		},
	}
	if c.Queued() {
		// The bucket's bill and the checkpoint outputs take the first experiment's; each
		// experiment has its own deadline (resolveQueuedRun).
		bp.Checkpoint = estimateCheckpoint(c.ForExperiment(c.Jobs[0]))
	} else {
		bp.Checkpoint, bp.Deadline = estimateCheckpoint(c), derivedDeadline(c)
	}
	bp.Volume = volumeUse(c)
	bp.Cluster = resolveCluster(c, bp)
	bp.WorkerSelector, bp.HeadSelector = cluster.NodeSelectors(bp.Cluster.Mode, bp.Cluster.CPUPool, bp.Cluster.GPUPool)
	bp.Storage = resolveStorage(c, bp.Hardware)
	if b := bp.Storage.Bucket; b != nil {
		// The pods that read a token run as its reader, which mounts the bucket too: the W&B
		// token's with the Ray pods' access, the Hugging Face token's with the data
		// preparation's, which stops at the checkpoints.
		if reader := bp.Tokens.ForRay().ServiceAccount; reader != "" {
			b.Readers = []string{reader}
		}
		if reader := bp.Tokens.ForPrep().ServiceAccount; reader != "" {
			b.SupportReaders = []string{reader}
		}
		if c.Queued() {
			// The experiments' launches read a finished run's record among the checkpoints.
			b.Viewers = []string{queue.LauncherServiceAccount}
		}
		b.CheckpointsPrefix = workloads.Layout{Root: c.Storage.MountPath}.CheckpointsPrefix()
	}
	bp.Placeholders = placeholders(c)
	if c.Queued() {
		bp.Warnings = perExperiment(c, func(e *Config, warns *Errors) {
			*warns = warnings(e, estimateCheckpoint(e), derivedDeadline(e), now)
		})
	} else {
		bp.Warnings = warnings(c, bp.Checkpoint, bp.Deadline, now)
	}
	if c.Monitoring.Enabled {
		bp.Monitoring = &monitoring.Args{
			Project: c.Project, Cluster: c.Cluster.Name, Namespace: bp.Namespace,
			GPUsPerNode:          hw.GPUsPerNode,
			Spot:                 c.GPU.Provisioning == kinds.Spot,
			Queue:                c.Queued(),
			NotificationChannels: c.Monitoring.NotificationChannels,
		}
		if l := bp.Storage.Lustre; l != nil {
			bp.Monitoring.Lustre = &monitoring.Lustre{InstanceID: storage.LustreInstanceID(l.NamePrefix), ThroughputMBps: bp.Storage.WriteMBps}
		}
	}
	if c.Queued() {
		bp.Run, err = resolveQueuedRun(c, bp)
	} else {
		bp.Run, err = resolveRun(c, bp)
	}
	if err != nil {
		return nil, err
	}
	// The GPU nodes bill for what trains: with a queue, the experiments that run at once.
	bp.Bill = billOf(c, bp)
	if bp.Cluster.CRDFields, err = ray.CRDFields(bp.Run.anyRayJob(), bp.Run.RayCluster); err != nil {
		return nil, internalError("custom resource fields", err)
	}
	return bp, nil
}

// internalError is a failure of the program, not of the configuration: validate should have
// caught whatever caused it.
func internalError(what string, err error) error {
	return fmt.Errorf("internal error: %s of a validated configuration: %w", what, err)
}
