package infra

import (
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gke-rl/cluster"
	"gke-rl/internal/cost"
	"gke-rl/internal/gpunode"
	"gke-rl/internal/kinds"
	"gke-rl/internal/kube"
	"gke-rl/monitoring"
	"gke-rl/network"
	"gke-rl/storage"
	"gke-rl/workloads"
)

// Blueprint is every value the program derives from the stack configuration, computed once by
// Resolve, typed and checked, before any resource is registered. Deploy only adds what exists
// after creation (network and subnet names, the namespace, the Lustre mount address, the
// cluster endpoint).
type Blueprint struct {
	Project, Region, Zone string
	// Namespace holds the stack's workloads (WorkloadNamespace).
	Namespace string
	// Hardware is the GPU type's row of the hardware catalog.
	Hardware GPUSpec
	// Addresses are the stack's IPv4 ranges.
	Addresses AddressPlan
	// NICs are the GPU nodes' extra NICs in order: they feed the node pool's additional
	// networks, the network objects and every GPU pod's interfaces annotation alike.
	NICs     []gpunode.NIC
	Networks network.NetworksArgs
	Cluster  cluster.Spec
	// WorkerSelector places Ray workers on GPU nodes; HeadSelector places the head and the data
	// preparation on CPU nodes.
	WorkerSelector, HeadSelector map[string]string
	Storage                      StoragePlan
	Run                          RunPlan
	Tokens                       workloads.Tokens
	// Monitoring is the dashboard's and the alerts' values, nil when monitoring is off.
	Monitoring *monitoring.Args
	// Checkpoint is the time one checkpoint takes to write, nil when the model size is unknown.
	Checkpoint *CheckpointEstimate
	// Volume is what the experiments hold on the Lustre instance, nil off Lustre or when a
	// model's size is unknown.
	Volume *VolumeUse
	// Deadline is the run's derived deadline, nil when job.activeDeadlineSeconds is set, the
	// run is off, or its length is unknown.
	Deadline *RunDeadline
	// Bill is what the stack bills for, to price with a cost.Table.
	Bill cost.Bill
	// Warnings are worth a look but do not stop the deployment.
	Warnings Errors
	// Placeholders are the shipped placeholders the stack still holds: the plan names them,
	// `pulumi preview` and `pulumi up` refuse them.
	Placeholders Errors
}

// StoragePlan is the shared storage: one of Lustre and Bucket is set.
type StoragePlan struct {
	Type   kinds.StorageType
	Lustre *storage.LustreSpec
	Bucket *storage.BucketSpec
	// Volume is how pods mount it.
	Volume kube.SharedVolume
	// WriteMBps is its aggregate write throughput, for the checkpoint estimate.
	WriteMBps float64
}

// RunPlan is the Ray cluster and the training run, as KubeRay objects that have passed KubeRay's
// own validation.
type RunPlan struct {
	Mode      kinds.RunMode
	Framework kinds.Framework
	Release   workloads.Release
	Layout    workloads.Layout
	// RayCluster is the long-lived cluster (nil when the job brings its own).
	RayCluster *rayv1.RayCluster
	// RayJob is the training run (nil with `job.enabled=false`).
	RayJob *rayv1.RayJob
	// Prep is the data preparation Job that runs before the RayJob, or nil.
	Prep *batchv1.Job
	// Gate are the post-deploy checks that the Ray cluster and the run wait for, or nil.
	Gate *GatePlan
	// MemoryEstimate is the run's memory per GPU and per node against what it may take
	// (workloads.EstimateFit), "" when the model's size is unknown.
	MemoryEstimate string
	// Hub is what the data preparation downloads from the Hugging Face Hub, for preflight to
	// ask about; empty with `job.enabled=false`.
	Hub HubDownloads
	// Experiments are the experiments of `jobs`, in name order, each with its RayJob and data
	// preparation (RayJob and Prep above are then nil), and Queue the Kueue objects that admit
	// them; both empty without `jobs`.
	Experiments []ExperimentPlan
	Queue       *QueuePlan
	// Settings are the framework's overrides of the run, each with the config key it comes
	// from (workloads.Overrides); nil without a RayJob.
	Settings []workloads.Override
	// RunSettings are the single run's settings that a config key sets, and which key (as an
	// experiment's Settings): what the plan shows of its hyperparameters. Nil with jobs.
	RunSettings []Setting
}

// ExperimentPlan is one experiment of `jobs`.
type ExperimentPlan struct {
	Name     string
	Priority int
	// Stopped is `jobs.<name>.enabled=false`: the experiment keeps its checkpoints and has no
	// RayJob, so it neither runs nor waits.
	Stopped bool
	// Nodes and GPUs are what it holds while it runs.
	Nodes, GPUs int
	Layout      workloads.Layout
	// Release is the framework's release it trains with (job.frameworkRelease), its image and
	// Ray as the stack sets them.
	Release workloads.Release
	// RayJob is queued (queue.Queued); Prep is its data preparation; Launch puts the RayJob in
	// the queue unless the experiment already trained its budget (workloads.LaunchJob).
	RayJob *rayv1.RayJob
	Prep   *batchv1.Job
	Launch *batchv1.Job
	// MemoryEstimate, Hub and Deadline are the experiment's, as RunPlan's and Blueprint's are
	// a single run's.
	MemoryEstimate string
	Hub            HubDownloads
	Deadline       *RunDeadline
	// Start is what the queue does with it when the stack is applied with every experiment
	// waiting (QueuePlan.Order).
	Start Start
	// Settings are what it trains with that a config key sets, and which key: the plan's view
	// of an experiment's hyperparameters.
	Settings []Setting
}

// Setting is one framework setting of an experiment and where its value comes from.
type Setting struct {
	// Key and Value are the framework's (actor_rollout_ref.actor.optim.lr=5e-07).
	Key, Value string
	// From is the key that set it: the experiment's own (jobs.a.learningRate), job's, which it
	// inherits (job.learningRate), or the default of that key (default of job.learningRate).
	From string
}

// Start is whether an experiment runs as soon as the stack is applied or waits for the GPUs.
type Start string

// The starts.
const (
	StartsAtOnce Start = "runs"
	Waits        Start = "waits"
	NotStarted   Start = "stopped"
)

// QueuePlan is the stack's Kueue objects.
type QueuePlan struct {
	// Name is the ClusterQueue's.
	Name string
	// Objects are the ResourceFlavor, the ClusterQueue, the LocalQueue and the priority
	// classes, in the order they are applied (queue.Objects).
	Objects []*unstructured.Unstructured
	// GPUs is the quota; InstallEnv the install step's environment (queue.InstallEnv).
	GPUs       int
	InstallEnv map[string]string
}

// HubDownloads are the Hub repositories a run downloads.
type HubDownloads struct {
	// Model is the model's repository; ModelKey the config key that names it (job.model).
	Model string
	// ModelBillions is the size the plan used (0: unknown); SizeKey the key it came from.
	ModelBillions float64
	SizeKey       string
	// Datasets are the dataset repositories, in order.
	Datasets []string
	// Revisions are job.revisions: each repository's pinned revision, if any.
	Revisions map[string]string
	// Token says that the run reads a Hugging Face token (tokens.huggingFace).
	Token bool
	// Shape is the model's shape the memory check used, and ShapeKey where it came from:
	// "job.modelShape", or "" for the program's table (workloads.KnownShape). preflight holds it
	// to the model's config.json. Zero when the run has no model.
	Shape    workloads.Shape
	ShapeKey string
}

// GatePlan is the post-deploy gate's Jobs.
type GatePlan struct {
	// NCCL checks every GPU and RDMA NIC of every GPU node and NCCL's all_gather between them
	// over RDMA (on a single node, between its GPUs over its NICs); Storage writes and reads the
	// shared volume from a GPU node.
	NCCL, Storage *batchv1.Job
}

// anyRayJob is the run's RayJob, or the first experiment's: they set the same fields.
func (r RunPlan) anyRayJob() *rayv1.RayJob {
	if r.RayJob != nil {
		return r.RayJob
	}
	for _, x := range r.Experiments {
		if x.RayJob != nil {
			return x.RayJob
		}
	}
	return nil
}

// RunningAtOnce is how many GPU nodes the experiments that run as soon as the stack is applied
// take, and their names.
func (r RunPlan) RunningAtOnce() (int, string) {
	nodes, names := 0, []string{}
	for _, x := range r.Experiments {
		if x.Start == StartsAtOnce {
			nodes += x.Nodes
			names = append(names, x.Name)
		}
	}
	if len(names) == 0 {
		return 0, "none runs"
	}
	return nodes, strings.Join(names, ", ") + " at once"
}
