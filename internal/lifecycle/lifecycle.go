// Package lifecycle holds what keeps the whole lifecycle of a stack working, not only its first
// `pulumi up`: the custom timeouts of the slow resources, and the fields that the cloud or the
// Kubernetes API fills in or changes after creation, each with how the program handles it so that
// a second `pulumi up` with unchanged config proposes no change. Both are tables with their
// sources; components apply them with Options.
package lifecycle

import (
	"fmt"
	"slices"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Type tokens of the resources the tables name.
const (
	ClusterType    = "gcp:container/cluster:Cluster"
	NodePoolType   = "gcp:container/nodePool:NodePool"
	LustreType     = "gcp:lustre/instance:Instance"
	ConnectionType = "gcp:servicenetworking/connection:Connection"
	JobType        = "kubernetes:batch/v1:Job"
	RayJobType     = "kubernetes:ray.io/v1:RayJob"
	RayClusterType = "kubernetes:ray.io/v1:RayCluster"
)

// Timeout is a resource type's custom timeouts (Go durations), longer than its real work takes.
type Timeout struct {
	Type                   string
	Create, Update, Delete string
	// ProviderCreate is the provider's own create timeout, which Create replaces ("" when the
	// provider has none, as for Kubernetes objects).
	ProviderCreate string
	Why            string
}

// Timeouts are the custom timeouts of the slow resources. Defaults are those of
// terraform-provider-google-beta v6.49.2 (commit 6a9e0f0b), which pulumi-gcp v8.41.1 wraps.
var Timeouts = []Timeout{
	{
		Type: LustreType, Create: "120m", Update: "60m", Delete: "60m", ProviderCreate: "20m",
		Why: "the provider's default is 20 min each (services/lustre/resource_lustre_instance.go), " +
			"while an instance at 500 MB/s per TiB takes up to an hour to create; Cluster Toolkit's " +
			"modules/file-system/managed-lustre uses 1h, and later provider versions 120/60/60",
	},
	{
		Type: ClusterType, Create: "60m", Update: "90m", Delete: "60m", ProviderCreate: "40m",
		Why: "the provider's default is 40 min create and delete, 60 update " +
			"(services/container/resource_container_cluster.go); a regional cluster with multi-networking, " +
			"the Ray, Lustre and GCS FUSE add-ons and Managed Prometheus has been seen past 40 min, and " +
			"an add-on change rolls the control plane",
	},
	{
		Type: NodePoolType, Create: "90m", Update: "120m", Delete: "60m", ProviderCreate: "30m",
		Why: "the provider's default is 30 min each (services/container/resource_container_node_pool.go); " +
			"A4 and A3 Ultra pools with 9 extra NICs have been reported past 30 min to create, and an " +
			"update rolls GPU nodes one at a time",
	},
	{
		Type: JobType, Create: "2h", Update: "2h",
		Why: "Pulumi waits for the data preparation Job to succeed before the RayJob starts; a 72B " +
			"model is about 150 GB to download",
	},
}

// Handling is how the program keeps a field that changes after creation from showing a diff.
type Handling string

// The ways a drifting field is handled.
const (
	// Ignored: set at creation, then ignoreChanges.
	Ignored Handling = "ignored"
	// NotSet: the program leaves the field to the cloud (Optional and Computed).
	NotSet Handling = "not set"
	// SameValue: the program sets the value the cloud would set anyway.
	SameValue Handling = "set to the cloud's own value"
	// OtherManager: under server-side apply Pulumi diffs only the fields it manages, and another
	// field manager (a controller, GKE) owns this one.
	OtherManager Handling = "owned by another field manager"
)

// Drift is one field that the cloud or the Kubernetes API fills in or changes after creation.
type Drift struct {
	Type, Field string
	Handling    Handling
	Why         string
}

// Drifts are every such field of the resources the program creates.
var Drifts = []Drift{
	{ClusterType, "nodeConfig", Ignored,
		"Optional, Computed and ForceNew (services/container/node_config.go, schemaNodeConfig); it " +
			"configures only the default pool, which removeDefaultNodePool deletes, after which GKE " +
			"returns none and the next preview would replace the cluster. Cluster Toolkit's " +
			"modules/scheduler/gke-cluster ignores node_config for this reason"},
	{ClusterType, "minMasterVersion", NotSet,
		"the release channel upgrades the control plane; a pinned version would fight it"},
	{ClusterType, "privateClusterConfig.masterIpv4CidrBlock", NotSet,
		"Optional and Computed; GKE picks the control plane's range"},
	{NodePoolType, "initialNodeCount", Ignored,
		"ForceNew; the autoscaler resizes the pool, and a changed initial count would replace it"},
	{NodePoolType, "nodeCount", Ignored, "the autoscaler owns the pool's size"},
	{NodePoolType, "version", NotSet, "auto-upgrade moves the node version"},
	{NodePoolType, "nodeConfig.taints", SameValue,
		"GKE adds nvidia.com/gpu=present:NoSchedule to GPU pools itself; the program sets the same " +
			"taint, and GKE's own lands in effectiveTaints (services/container/node_config.go), not taint"},
	{RayClusterType, "status, and the fields GKE's Ray add-on injects", OtherManager,
		"the KubeRay operator writes status; the add-on's logging and monitoring settings are its own"},
	{RayJobType, "status", OtherManager, "the KubeRay operator manages the job's lifecycle"},
	{RayJobType, "spec.suspend", Ignored,
		"a queued RayJob is created suspended, and Kueue admits it by setting spec.suspend to false " +
			"(sigs.k8s.io/kueue v0.17.0 pkg/controller/jobs/rayjob/rayjob_controller.go, " +
			"RunWithPodSetsInfo). A refresh stores the live object, pruned to the program's fields, " +
			"as the inputs (pulumi-kubernetes v4.32.0 provider/pkg/provider/provider.go, Read → " +
			"pruneLiveState), and spec is replace-on-change: without this, `pulumi up --refresh` " +
			"would delete every admitted experiment and start every finished one again. The program " +
			"sets the field only at creation; a RayJob outside the queue never sets it"},
	{"kubernetes:core/v1:PersistentVolume", "spec.claimRef.uid, spec.claimRef.resourceVersion", OtherManager,
		"the PV binder completes the claim reference when it binds"},
	{"kubernetes:core/v1:Namespace", "metadata.labels[kubernetes.io/metadata.name]", OtherManager,
		"the API server labels every namespace with its name"},
	{JobType, "spec.selector, spec.template.metadata.labels", OtherManager,
		"the Job controller generates the selector and its labels"},
}

// Replacement is a resource type that `pulumi up` replaces, deleting the old object first, when
// one of its Fields changes, where the provider would update it in place.
type Replacement struct {
	Type   string
	Fields []string
	Why    string
}

// Replacements are the types whose in-place update would not do what the configuration says.
// pulumi-kubernetes replaces built-in kinds on their immutable fields (a Job's template) but
// updates custom resources in place (pulumi-kubernetes #1775); KubeRay v1.5.0 does not act on
// those updates.
var Replacements = []Replacement{
	{RayJobType, []string{"spec"},
		"KubeRay v1.5.0 reads a RayJob's spec when it submits: it creates the submitter Job once " +
			"(controllers/ray/rayjob_controller.go, createK8sJobIfNeed) from the entrypoint of that " +
			"moment (controllers/ray/common/job.go), so an update in place would leave the running " +
			"attempt on the old spec and a retry on the new one. Deleting first stops the running Ray " +
			"job (the RayJob's finalizer calls StopJob) and frees its GPUs before the new RayJob asks " +
			"for them; the new run resumes from the newest checkpoint"},
	{RayClusterType, RayClusterPodFields,
		"KubeRay v1.5.0 has no upgrade strategy for a RayCluster's pods: it reconciles the worker " +
			"count, not the pod templates, so an update in place would keep the running pods on the " +
			"old template and start new ones on the new, a mixed cluster. Deleting first frees the " +
			"GPUs; the RayJob, which carries the cluster's fingerprint, is replaced with it. The " +
			"worker counts (replicas, minReplicas, maxReplicas) KubeRay does reconcile in place, and " +
			"the autoscaler may write them, so they stay updates"},
}

// DeleteFirst is a resource type that its provider replaces (a ForceNew field changed) by
// deleting the old resource before it creates the new one, where Pulumi would create first.
type DeleteFirst struct {
	Type, Why string
}

// DeletedFirst are the types whose two copies cannot exist at once.
var DeletedFirst = []DeleteFirst{
	{NodePoolType,
		"the program names its pools (cluster.PoolNames), and GKE refuses a second pool of a name in " +
			"a cluster; the provider replaces a pool when a ForceNew field of its node_config changes " +
			"(terraform-provider-google-beta services/container/node_config.go, schemaNodeConfig: " +
			"guest_accelerator with its gpu_driver_installation_config, the local SSDs, the " +
			"reservation affinity, the OAuth scopes, the service account), so a new pool created " +
			"first would fail the `up` on its name. pulumi-terraform-bridge deletes first by itself " +
			"only when the inputs' defaults list shows the name was not autonamed " +
			"(nameRequiresDeleteBeforeReplace); the option does not depend on it. Its nodes go " +
			"either way: the replaced pool's pods start again on the new one"},
}

// RayClusterPodFields are the fields of a RayCluster that make its pods: a change of one replaces
// the cluster.
var RayClusterPodFields = []string{
	"spec.headGroupSpec", "spec.rayVersion", "spec.enableInTreeAutoscaling",
	"spec.workerGroupSpecs[*].groupName", "spec.workerGroupSpecs[*].rayStartParams",
	"spec.workerGroupSpecs[*].template",
}

// ReplacementOf is a type's row of Replacements.
func ReplacementOf(typ string) (Replacement, bool) {
	i := slices.IndexFunc(Replacements, func(r Replacement) bool { return r.Type == typ })
	if i < 0 {
		return Replacement{}, false
	}
	return Replacements[i], true
}

// IgnoredFields are the fields of a resource type that the program ignores after creation.
func IgnoredFields(typ string) []string {
	var out []string
	for _, d := range Drifts {
		if d.Type == typ && d.Handling == Ignored {
			out = append(out, d.Field)
		}
	}
	return out
}

// TimeoutOf is a type's row of Timeouts.
func TimeoutOf(typ string) (Timeout, bool) {
	i := slices.IndexFunc(Timeouts, func(t Timeout) bool { return t.Type == typ })
	if i < 0 {
		return Timeout{}, false
	}
	return Timeouts[i], true
}

// GPUNodeUpdateMinutes is what one GPU node of an A4 or A3 Ultra pool takes in a rolling update:
// drained, recreated, the driver and the RDMA installer run, 10 to 15 minutes (reported for
// these machine types in the team's issue tracker; not measured here). The GPU pool updates one
// node at a time (surge 0, one unavailable), so its update takes that many minutes per node.
const GPUNodeUpdateMinutes = 15

// GPUPoolTimeout is the GPU pool's row: the node pool's, with an update timeout that grows with
// the pool (GPUNodeUpdateMinutes per node, plus 30 minutes), never below the table's 120.
// Creation starts every node at once, so its timeout stays the table's.
func GPUPoolTimeout(nodes int) Timeout {
	t, _ := TimeoutOf(NodePoolType)
	t.Update = fmt.Sprintf("%dm", max(120, 30+GPUNodeUpdateMinutes*nodes))
	t.Why += fmt.Sprintf("; the GPU pool's update takes %d min a node, one node at a time", GPUNodeUpdateMinutes)
	return t
}

// GPUPoolOptions are the node pool's options with GPUPoolTimeout's timeouts.
func GPUPoolOptions(nodes int) []pulumi.ResourceOption {
	t := GPUPoolTimeout(nodes)
	return options(NodePoolType, &t)
}

// GateJobTimeout is a gate Job's row: the Job's, with create and update timeouts ten minutes past
// the Job's own deadline (its activeDeadlineSeconds, which holds the wait for capacity), so that
// the Job's failure, which names its cause, comes before Pulumi's timeout, which names none;
// never below the table's.
func GateJobTimeout(deadlineSeconds int) Timeout {
	t, _ := TimeoutOf(JobType)
	table, _ := time.ParseDuration(t.Create)
	wait := max(table, time.Duration(deadlineSeconds)*time.Second+10*time.Minute)
	t.Create, t.Update = wait.String(), wait.String()
	t.Why = "a gate Job's deadline holds the wait for GPU capacity (gate.capacityWaitMinutes); Pulumi waits ten minutes longer"
	return t
}

// GateJobOptions are a gate Job's options with GateJobTimeout's timeouts.
func GateJobOptions(deadlineSeconds int) []pulumi.ResourceOption {
	t := GateJobTimeout(deadlineSeconds)
	return options(JobType, &t)
}

// Options are the resource options the tables give a resource type: its custom timeouts, the
// fields it ignores, and the fields whose change replaces it.
func Options(typ string) []pulumi.ResourceOption {
	if t, ok := TimeoutOf(typ); ok {
		return options(typ, &t)
	}
	return options(typ, nil)
}

// options are a type's ignored fields and the timeouts t, if any.
func options(typ string, t *Timeout) []pulumi.ResourceOption {
	var opts []pulumi.ResourceOption
	if t != nil {
		opts = append(opts, pulumi.Timeouts(&pulumi.CustomTimeouts{Create: t.Create, Update: t.Update, Delete: t.Delete}))
	}
	if fields := IgnoredFields(typ); len(fields) > 0 {
		opts = append(opts, pulumi.IgnoreChanges(fields))
	}
	if r, ok := ReplacementOf(typ); ok {
		opts = append(opts, pulumi.ReplaceOnChanges(r.Fields), pulumi.DeleteBeforeReplace(true))
	} else if slices.ContainsFunc(DeletedFirst, func(d DeleteFirst) bool { return d.Type == typ }) {
		opts = append(opts, pulumi.DeleteBeforeReplace(true))
	}
	return opts
}
