package infra_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cluster"
	"gke-rl/gate"
	"gke-rl/infra/offline"
	"gke-rl/internal/lifecycle"
	"gke-rl/storage"
	"gke-rl/test/plantest"
	"gke-rl/workloads"
)

// lifecycleVariants cover every resource type the program creates.
var lifecycleVariants = map[string][]string{
	"b200-spot":                        nil,
	"h200-reserved":                    nil,
	"b200-spot on GCS FUSE":            {"storage.type=gcsfuse"},
	"h200-reserved on Lustre":          {"storage.type=lustre"},
	"b200-spot on Autopilot with verl": {"cluster.mode=autopilot", "storage.type=gcsfuse", "framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"},
}

func eachVariant(t *testing.T, check func(t *testing.T, res *offline.Result)) {
	for name, overrides := range lifecycleVariants {
		t.Run(name, func(t *testing.T) {
			check(t, plantest.Plan(t, strings.Fields(name)[0], overrides...))
		})
	}
}

// The GPU pool's update timeout grows with the pool: it rolls one node at a time.
func TestGPUPoolUpdateTimeoutGrowsWithThePool(t *testing.T) {
	assert.Equal(t, "150m", lifecycle.GPUPoolTimeout(8).Update, "8 × 15 min + 30")
	assert.Equal(t, "120m", lifecycle.GPUPoolTimeout(2).Update, "never below the node pools' 120")
	assert.Equal(t, "3870m", lifecycle.GPUPoolTimeout(256).Update)
	assert.Equal(t, "90m", lifecycle.GPUPoolTimeout(256).Create, "nodes are created together")
	res := plantest.Plan(t, "b200-spot", "gpu.nodes=32")
	gpu := res.Find(lifecycle.NodePoolType, "cluster-gpu")
	require.NotNil(t, gpu)
	assert.Equal(t, "510m", gpu.Options.CustomTimeouts.Update, "in the plan")
	assert.Equal(t, "120m", res.Find(lifecycle.NodePoolType, "cluster-cpu").Options.CustomTimeouts.Update)
}

func TestSlowResourcesCarryTimeoutsLongerThanTheProvidersDefault(t *testing.T) {
	for _, row := range lifecycle.Timeouts {
		create, err := time.ParseDuration(row.Create)
		require.NoError(t, err, row.Type)
		if row.ProviderCreate != "" {
			def, err := time.ParseDuration(row.ProviderCreate)
			require.NoError(t, err)
			assert.Greater(t, create, def, "%s: the custom create timeout replaces a shorter default", row.Type)
		}
		assert.NotEmpty(t, row.Why, row.Type)
	}
	seen := map[string]bool{}
	eachVariant(t, func(t *testing.T, res *offline.Result) {
		for _, r := range res.Resources {
			row, slow := lifecycle.TimeoutOf(r.Type)
			if !slow {
				assert.Nil(t, r.Options.CustomTimeouts, "%s %s", r.Type, r.Name)
				continue
			}
			seen[r.Type] = true
			require.NotNil(t, r.Options.CustomTimeouts, "%s %s has no custom timeouts", r.Type, r.Name)
			if r.Name == "cluster-gpu" {
				row = lifecycle.GPUPoolTimeout(res.Blueprint.Cluster.GPUPool.Nodes)
			}
			if g := res.Blueprint.Run.Gate; g != nil && (r.Name == "gate-nccl" || r.Name == "gate-storage") {
				job := g.NCCL
				if r.Name == "gate-storage" {
					job = g.Storage
				}
				row = lifecycle.GateJobTimeout(gate.JobSeconds(job))
				deadline, err := time.ParseDuration(row.Create)
				require.NoError(t, err)
				assert.Greater(t, deadline, time.Duration(gate.JobSeconds(job))*time.Second, "%s: Pulumi waits past the Job's own deadline", r.Name)
			}
			assert.Equal(t, row.Create, r.Options.CustomTimeouts.Create, r.Name)
			assert.Equal(t, row.Update, r.Options.CustomTimeouts.Update, r.Name)
			assert.Equal(t, row.Delete, r.Options.CustomTimeouts.Delete, r.Name)
		}
	})
	for _, typ := range []string{lifecycle.LustreType, lifecycle.ClusterType, lifecycle.NodePoolType, lifecycle.JobType} {
		assert.True(t, seen[typ], "no %s was checked", typ)
	}
}

// A second `pulumi up` proposes no change: every field the cloud changes after creation is
// either ignored or never set, as the table says.
// ignoredByType is what `pulumi up --refresh` must not undo, stated from who writes it, not read
// from the program's table (lifecycle.Drifts): a change of that table shows here as a failure.
var ignoredByType = map[string][]string{
	// GKE fills the default pool's node config, which would replace the cluster
	// (Cluster Toolkit's modules/scheduler/gke-cluster ignores node_config for this reason).
	"gcp:container/cluster:Cluster": {"nodeConfig"},
	// The autoscaler resizes the pool; initialNodeCount is ForceNew in the provider.
	"gcp:container/nodePool:NodePool": {"initialNodeCount", "nodeCount"},
	// Kueue admits a queued RayJob by setting spec.suspend to false (kueue v0.17.0
	// pkg/controller/jobs/rayjob/rayjob_controller.go, RunWithPodSetsInfo); spec replaces.
	"kubernetes:ray.io/v1:RayJob": {"spec.suspend"},
}

func TestFieldsTheCloudChangesAreIgnoredOrNotSet(t *testing.T) {
	eachVariant(t, func(t *testing.T, res *offline.Result) {
		for _, r := range res.Resources {
			want := slices.Clone(ignoredByType[r.Type])
			if r.Name == "gate-nccl" || r.Name == "gate-storage" {
				// Not a drift: a gate Job runs once; re-running it is a deliberate --replace.
				want = append(want, "spec")
			}
			assert.ElementsMatch(t, want, r.Options.IgnoreChanges, "%s %s", r.Type, r.Name)
			for _, d := range lifecycle.Drifts {
				if d.Type == r.Type && d.Handling == lifecycle.NotSet {
					_, set := r.Input(d.Field)
					assert.False(t, set, "%s %s sets %s: %s", r.Type, r.Name, d.Field, d.Why)
				}
			}
		}
		for _, p := range res.OfType("pulumi:providers:kubernetes") {
			assert.Equal(t, true, plantest.Input(t, p, "enableServerSideApply"), "fields of other managers are not diffed only under server-side apply")
		}
	})
	gke := plantest.Plan(t, "b200-spot").Find(lifecycle.ClusterType, "cluster-gke")
	assert.Contains(t, gke.Options.IgnoreChanges, "nodeConfig", "the default pool's config would replace the cluster")
}

func TestDestroyRemovesThePSAPeering(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	conn := res.Find(lifecycle.ConnectionType, "storage-psa")
	assert.Equal(t, "ABANDON", plantest.Input(t, conn, "deletionPolicy"), "deleting the connection fails while the producer holds the range")
	cleanup := res.Find("command:local:Command", "storage-psa-cleanup")
	require.NotNil(t, cleanup)
	assert.Contains(t, cleanup.Dependencies, conn.URN, "created after the connection, so deleted before it")
	assert.Equal(t, storage.PeeringCleanupScript, plantest.Input(t, cleanup, "delete"))
	assert.Equal(t, "ray-a4-gpu-spot-net", plantest.Input(t, cleanup, "environment.NETWORK"))
	instance := res.Find(lifecycle.LustreType, "storage-lustre")
	assert.Contains(t, instance.Dependencies, cleanup.URN, "the cleanup runs only once the instance is gone")
	network := res.Find("gcp:compute/network:Network", "networks-main")
	assert.True(t, res.DependencyClosure(cleanup)[network.URN], "and before the network goes")
	assert.True(t, slices.ContainsFunc(strings.Split(storage.PeeringCleanupScript, "\n"), func(l string) bool {
		return strings.Contains(l, "gcloud compute networks peerings delete")
	}), "falls back to removing the peering from the VPC's side")
}

func TestPreemptibleCapacityScalesFromZero(t *testing.T) {
	for _, tc := range []struct {
		prov          string
		queue         bool
		min, max, now int
	}{
		{"spot", false, 0, 8, 0},
		{"flex-start", false, 0, 8, 0},
		// The long-lived Ray cluster of the single run holds reserved and on-demand nodes.
		{"on-demand", false, 8, 8, 8},
		{"reservation", false, 8, 8, 8},
		// With a lower minimum the pool still starts at its full size, which the Ray cluster waits for.
		{"on-demand, gpu.minNodes=2", false, 2, 8, 8},
		// A queue's experiments bring Ray clusters of their own: no node is held between them.
		{"on-demand", true, 0, 8, 0},
		{"reservation", true, 0, 8, 0},
		{"spot", true, 0, 8, 0},
	} {
		t.Run(fmt.Sprintf("%s, queue %v", tc.prov, tc.queue), func(t *testing.T) {
			prov, minNodes, lower := strings.Cut(tc.prov, ", ")
			o := []string{"gpu.provisioning=" + prov}
			if lower {
				o = append(o, minNodes)
			}
			if tc.queue {
				o = append(o, "jobs.a.maxSteps=20")
			}
			switch prov {
			case "reservation":
				o = append(o, "gpu.reservation=res-1")
			case "on-demand": // not offered for A4
				o = append(o, plantest.GPU("h200")...)
			}
			pool := plantest.Plan(t, "b200-spot", o...).Find(lifecycle.NodePoolType, "cluster-gpu")
			assert.EqualValues(t, tc.min, plantest.Input(t, pool, "autoscaling.totalMinNodeCount"))
			assert.EqualValues(t, tc.max, plantest.Input(t, pool, "autoscaling.totalMaxNodeCount"))
			assert.EqualValues(t, tc.now, plantest.Input(t, pool, "initialNodeCount"), "`pulumi up` does not wait for capacity that the job asks for later")
		})
	}
}

// A queue on on-demand GPUs bills no GPU node while idle; on a reservation the machines bill
// whether they run or not, and the bill says so.
func TestAQueueHoldsNoGPUNodeIdle(t *testing.T) {
	onDemand := lineOf(t, plantest.Resolve(t, "h200-reserved", "gpu.provisioning=on-demand", "gpu.reservation=", "jobs.a.maxSteps=20").Bill, "GPU nodes")
	assert.Zero(t, onDemand.Idle, "no GPU node while no experiment runs")
	assert.EqualValues(t, 2, onDemand.Training)
	reserved := lineOf(t, plantest.Resolve(t, "h200-reserved", "jobs.a.maxSteps=20").Bill, "GPU nodes")
	assert.EqualValues(t, 2, reserved.Idle, "the reservation's 2 machines bill idle too")
	assert.Contains(t, reserved.Note, "a reservation bills its machines whether they run or not, at the on-demand rate less any commitment (which only your billing account knows)")
	held := plantest.Plan(t, "h200-reserved", "gpu.provisioning=on-demand", "gpu.reservation=", "jobs.a.maxSteps=20", "gpu.minNodes=1").Find(lifecycle.NodePoolType, "cluster-gpu")
	assert.EqualValues(t, 1, plantest.Input(t, held, "autoscaling.totalMinNodeCount"), "gpu.minNodes set is kept")
}

func TestCustomResourcesWaitForTheirCRDs(t *testing.T) {
	eachVariant(t, func(t *testing.T, res *offline.Result) {
		crds := res.Find("command:local:Command", "cluster-crds")
		require.NotNil(t, crds)
		// KubeRay's two kinds the program makes, and GKE's multi-network kinds the GPU NICs use.
		assert.Equal(t, "rayclusters.ray.io rayjobs.ray.io gkenetworkparamsets.networking.gke.io networks.networking.gke.io", plantest.Input(t, crds, "environment.CRDS"))
		var custom int
		for _, r := range res.Resources {
			if !strings.HasPrefix(r.Type, "kubernetes:ray.io/") && !strings.HasPrefix(r.Type, "kubernetes:networking.gke.io/") {
				continue
			}
			custom++
			assert.True(t, res.DependencyClosure(r)[crds.URN], "%s waits until its CRD is established", r.Name)
		}
		assert.Positive(t, custom)
		for _, net := range res.OfType("kubernetes:networking.gke.io/v1:Network") {
			name := strings.TrimPrefix(net.Name, "network-mapping-network-")
			paramSet := res.Find("kubernetes:networking.gke.io/v1:GKENetworkParamSet", "network-mapping-gkenetworkparamset-"+name)
			assert.Contains(t, net.Dependencies, paramSet.URN, "a Network is applied after the param set it names")
		}
	})
}

func TestAdoptTakesOverWhatDestroyKept(t *testing.T) {
	lustre := plantest.Plan(t, "b200-spot", "storage.adopt=true")
	assert.Equal(t, "projects/your-project-id/global/networks/ray-a4-gpu-spot-net",
		lustre.Find("gcp:compute/network:Network", "networks-main").Options.Import, "the kept instance holds on to its VPC")
	assert.NotEmpty(t, lustre.Find(lifecycle.LustreType, "storage-lustre").Options.Import)
	assert.Empty(t, lustre.Find("gcp:compute/network:Network", "networks-rdma").Options.Import)

	bucket := plantest.Plan(t, "h200-reserved", "storage.adopt=true")
	assert.Equal(t, "your-project-id-verl-h200-rl", bucket.Find("gcp:storage/bucket:Bucket", "storage-bucket").Options.Import)
	assert.Empty(t, bucket.Find("gcp:compute/network:Network", "networks-main").Options.Import, "a bucket needs no VPC")
}

// Objects with finalizers (RayJob, RayCluster, claims, the Lustre PV) must not hang destroy:
// every in-cluster object goes with the cluster, without a call to its API server.
func TestInClusterObjectsGoWithTheCluster(t *testing.T) {
	eachVariant(t, func(t *testing.T, res *offline.Result) {
		gke := res.Find(lifecycle.ClusterType, "cluster-gke")
		for _, r := range res.Resources {
			if r.Custom && strings.HasPrefix(r.Type, "kubernetes:") {
				assert.Equal(t, gke.URN, r.Options.DeletedWith, "%s %s", r.Type, r.Name)
			}
		}
	})
}

// Checkpoints can leave Lustre before a destroy that deletes it: the stack output is Managed
// Lustre's export of the run's directory, given from the file system's root.
func TestCheckpointExportCommand(t *testing.T) {
	lustre := plantest.Plan(t, "b200-spot")
	assert.Equal(t, "gcloud lustre instances export-data ray-a4-gpu-spot-lustre --location=us-east1-b --project=your-project-id"+
		" --lustre-path=/checkpoints/qwen2-5-72b-instruct-deepscaler-251dec --gcs-path-uri=gs://YOUR_BUCKET/checkpoints/qwen2-5-72b-instruct-deepscaler-251dec/",
		lustre.Outputs["checkpointExport"])
	instance := lustre.Find(lifecycle.LustreType, "storage-lustre")
	assert.Equal(t, "ray-a4-gpu-spot-lustre", plantest.Input(t, instance, "instanceId"), "the command names the instance the stack creates")
	assert.Equal(t, "/lustre/checkpoints/qwen2-5-72b-instruct-deepscaler-251dec", lustre.Outputs["checkpointDir"], "the same directory, seen from the pods")

	fuse := plantest.Plan(t, "h200-reserved")
	assert.Equal(t, "gcloud storage ls gs://your-project-id-verl-h200-rl/checkpoints/qwen2-5-32b-instruct-gsm8k-f31a59/", fuse.Outputs["checkpointExport"], "already in the bucket")
}

// With tokens, the cluster runs the Secret Manager add-on, the CRD wait covers its
// SecretProviderClass, and the class waits for it; without, the add-on's field stays unset,
// which the provider reads as {enabled: false} with no diff.
func TestTokensTurnOnTheSecretManagerAddOn(t *testing.T) {
	res := plantest.Plan(t, "b200-spot", "tokens.huggingFace=true")
	gke := res.Find("gcp:container/cluster:Cluster", "cluster-gke")
	require.NotNil(t, gke)
	assert.Equal(t, true, plantest.Input(t, gke, "secretManagerConfig.enabled"))
	crds := res.Find("command:local:Command", "cluster-crds")
	assert.Contains(t, plantest.Input(t, crds, "environment.CRDS"), cluster.SecretManagerCRD)
	class := res.OfType("kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass")
	require.Len(t, class, 1)
	assert.True(t, res.DependencyClosure(class[0])[crds.URN], "the class waits until its CRD is established")

	gke = plantest.Plan(t, "b200-spot").Find("gcp:container/cluster:Cluster", "cluster-gke")
	_, set := gke.Inputs["secretManagerConfig"]
	assert.False(t, set)
}

// A node service account made outside the stack is used as it is: the program creates no
// account and grants no project role, so its deployer needs neither.
func TestAGivenNodeServiceAccountIsUsedAsItIs(t *testing.T) {
	const sa = "gke-rl-nodes@your-project-id.iam.gserviceaccount.com"
	res := plantest.Plan(t, "b200-spot", "cluster.nodeServiceAccount="+sa)
	assert.Empty(t, res.OfType("gcp:serviceaccount/account:Account"))
	assert.Empty(t, res.OfType("gcp:projects/iAMMember:IAMMember"))
	for _, pool := range res.OfType(lifecycle.NodePoolType) {
		assert.Equal(t, sa, plantest.Input(t, pool, "nodeConfig.serviceAccount"), pool.Name)
	}
	assert.NotEmpty(t, plantest.Plan(t, "b200-spot").OfType("gcp:projects/iAMMember:IAMMember"), "unset, the program makes and grants one")
}

// KubeRay does not act on an update of a running RayJob or RayCluster: a change of either spec
// replaces it, deleting the old one first so that two runs never hold the GPUs at once.
func TestAChangedRunIsReplacedNotPatched(t *testing.T) {
	eachVariant(t, func(t *testing.T, res *offline.Result) {
		seen := 0
		for _, r := range res.Resources {
			if r.Type != lifecycle.RayJobType && r.Type != lifecycle.RayClusterType {
				continue
			}
			seen++
			want := []string{"spec"}
			if r.Type == lifecycle.RayClusterType {
				// The worker counts stay updates: KubeRay reconciles them in place.
				want = lifecycle.RayClusterPodFields
				assert.NotContains(t, want, "spec.workerGroupSpecs[*].replicas")
			}
			assert.Equal(t, want, r.Options.ReplaceOnChanges, r.URN)
			assert.True(t, r.Options.DeleteBeforeReplace, r.URN)
		}
		assert.NotZero(t, seen)
	})
}

// A node pool the provider replaces (a ForceNew field of its node_config: the GPUs, their
// driver, the node service account) is deleted before its successor is created: the program
// names its pools, and GKE refuses a second pool of a name. Nothing else about it is replaced
// by Pulumi: the provider decides, and no field is listed for replacement.
func TestANodePoolIsDeletedBeforeItsReplacementIsCreated(t *testing.T) {
	eachVariant(t, func(t *testing.T, res *offline.Result) {
		pools := res.OfType(lifecycle.NodePoolType)
		if len(pools) == 0 {
			return // Autopilot
		}
		for _, r := range pools {
			assert.True(t, r.Options.DeleteBeforeReplace, r.URN)
			assert.Empty(t, r.Options.ReplaceOnChanges, r.URN)
			assert.NotEmpty(t, plantest.Input(t, r, "name"), "%s: a named pool, which the rule is for", r.URN)
		}
	})
}

// On a long-lived cluster, the RayJob carries the cluster's fingerprint: a change that replaces
// the cluster (and ends the driver on its head) changes the job's spec too, so the job is
// replaced with it and the run starts again on the new cluster.
func TestTheJobOnALongLivedClusterIsReplacedWithIt(t *testing.T) {
	fingerprint := func(overrides ...string) (job, cluster string) {
		bp := plantest.Resolve(t, "h200-reserved", overrides...)
		require.NotNil(t, bp.Run.RayCluster)
		want, err := workloads.Fingerprint(&bp.Run.RayCluster.Spec)
		require.NoError(t, err)
		return bp.Run.RayJob.Spec.Metadata[workloads.ClusterSpecKey], want
	}
	job, cluster := fingerprint()
	assert.Equal(t, cluster, job, "the job's fingerprint is the deployed cluster's")
	other, _ := fingerprint("ray.image=rayproject/ray:2.49.2-py312-gpu")
	assert.NotEqual(t, job, other, "a new image changes the cluster and so the job")
	same, _ := fingerprint("job.maxSteps=30")
	assert.Equal(t, job, same, "a change of the run alone leaves the cluster as it is")

	own := plantest.Resolve(t, "b200-spot").Run.RayJob
	assert.Nil(t, own.Spec.Metadata, "a job with its own cluster has it in its spec already")
}

// A run's spec depends on the configuration only, never on the day `pulumi up` runs: a change
// of it replaces the run (and restarts it from its newest checkpoint).
func TestTheRunDoesNotDependOnTheDay(t *testing.T) {
	specs := func(now time.Time) map[string]string {
		out := map[string]string{}
		for _, stack := range []string{"b200-spot", "h200-reserved"} {
			for _, m := range offline.Manifests(plantest.PlanAt(t, now, stack)) {
				if kind := m.Object["kind"]; kind == "RayJob" || kind == "RayCluster" {
					out[stack+"/"+m.File] = fmt.Sprint(offline.Digests(m.Object))
				}
			}
		}
		return out
	}
	today := specs(plantest.PlanTime)
	require.NotEmpty(t, today)
	assert.Equal(t, today, specs(plantest.PlanTime.AddDate(0, 7, 13)))
}
