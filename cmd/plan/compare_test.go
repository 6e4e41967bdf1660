package plan_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/test/plantest"
)

func TestCompareWithTheSamePlanFindsNothing(t *testing.T) {
	before := plantest.PlanFile(t, "h200-reserved", nil)
	code, out, errOut := plantest.Main(t, "--stack", "h200-reserved", "--compare", before)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n  none: `pulumi up` with this version proposes no change to the stack's inputs\n")
	assert.NotContains(t, out, "Experiment ", "no change, nothing to say of the experiment")
}

// editResources edits each resource of an earlier plan by its name.
func editResources(edit func(name string, r map[string]any)) func(doc map[string]any) {
	return func(doc map[string]any) {
		for _, res := range doc["resources"].([]any) {
			r := res.(map[string]any)
			edit(r["name"].(string), r)
		}
	}
}

// digests are an earlier plan's digests of a Kubernetes object's fields.
func digests(r map[string]any) map[string]any {
	return r["inputs"].(map[string]any)["manifest"].(map[string]any)["digests"].(map[string]any)
}

// A RayCluster deleted or renamed stops the run on it; a ConfigMap deleted or renamed does not
// (h200-reserved's long-lived cluster and its run script).
func TestCompareSaysWhichDeletionsAndRenamesStopTheRun(t *testing.T) {
	gone := plantest.PlanFile(t, "h200-reserved", editResources(func(name string, r map[string]any) {
		if name == "run-script" || name == "ray-raycluster" {
			r["urn"] = r["urn"].(string) + "-old" // not in today's plan: deleted
		}
	}))
	code, out, errOut := plantest.Main(t, "--stack", "h200-reserved", "--compare", gone)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n  -  kubernetes:ray.io/v1:RayCluster ray-raycluster\n       the running attempt stops\n")
	assert.Contains(t, out, "\n  -  kubernetes:core/v1:ConfigMap run-script\nExperiment ")

	renamed := plantest.PlanFile(t, "h200-reserved", editResources(func(name string, r map[string]any) {
		if name == "run-script" || name == "ray-raycluster" {
			digests(r)["metadata.name"] = "0"
		}
	}))
	code, out, errOut = plantest.Main(t, "--stack", "h200-reserved", "--compare", renamed)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n  +- kubernetes:ray.io/v1:RayCluster ray-raycluster: metadata.name\n       the running attempt stops; the new one starts where the checkpoint directory says\n")
	assert.Contains(t, out, "\n  +- kubernetes:core/v1:ConfigMap run-script: metadata.name\nExperiment ")
}

// A field the earlier plan had and today's has not is a change too.
func TestCompareSeesAFieldThatIsGone(t *testing.T) {
	before := plantest.PlanFile(t, "h200-reserved", editResources(func(name string, r map[string]any) {
		if name == "run-script" {
			digests(r)["data.gone"] = "0"
		}
	}))
	code, out, errOut := plantest.Main(t, "--stack", "h200-reserved", "--compare", before)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n  ~  kubernetes:core/v1:ConfigMap run-script: data.gone\n")
	assert.True(t, strings.HasSuffix(out, "A running run keeps running.\n"), out)
}

// A new run length changes the RayJob's entrypoint: KubeRay would not act on it in place, so
// the RayJob is replaced and the running attempt stops.
func TestCompareSaysWhenTheRunRestarts(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", nil)
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "job.maxSteps=30")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Regexp(t, `\n  \+- kubernetes:ray.io/v1:RayJob grpo-rayjob: [^\n]*spec.entrypoint`, out)
	assert.Contains(t, out, "the running attempt stops; the new RayJob resumes from the newest checkpoint")
	assert.True(t, strings.HasSuffix(out, "A running run stops and resumes from its newest checkpoint: update between runs, or after a checkpoint.\n"), out)
	assert.NotContains(t, out, "NodePool", "the pools do not change with the run's length")
}

func TestCompareListsCreatedAndDeletedResourcesAndPoolRolls(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", nil, "tokens.huggingFace=true")
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "cluster.cpuMachineType=n2-standard-32")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n  -  gcp:secretmanager/secret:Secret tokens-hf-token\n")
	assert.Contains(t, out, "\n  ~  gcp:container/nodePool:NodePool cluster-cpu: nodeConfig.machineType\n       GKE re-creates the nodes one at a time")
}

// The earlier plan is a file anyone could have written: a resource name in it that carries
// terminal escape sequences is printed with them escaped.
func TestCompareEscapesControlCharactersOfTheEarlierPlan(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", func(doc map[string]any) {
		resources := doc["resources"].([]any)
		r := resources[len(resources)-1].(map[string]any)
		r["name"] = "gone\x1b]0;pwned\x07\x1b[2J"
		r["urn"] = r["urn"].(string) + "-renamed\x1b[2J"
	})
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\x07")
	assert.Contains(t, out, `gone\u001b]0;pwned\u0007\u001b[2J`)
}

// A resource renamed with an alias to its old URN is the same resource.
func TestCompareFollowsAliases(t *testing.T) {
	r := plantest.Plan(t, "b200-spot")
	gke := r.Find("gcp:container/cluster:Cluster", "cluster-gke")
	require.NotEmpty(t, gke.Options.Aliases)
	before := plantest.PlanFile(t, "b200-spot", func(doc map[string]any) {
		for _, res := range doc["resources"].([]any) {
			m := res.(map[string]any)
			if m["urn"] == gke.URN {
				m["urn"] = gke.Options.Aliases[0]
			}
		}
	})
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "  none:")
}

// A plan written before plans carried digests cannot tell whether an object changed: the report
// says so instead of guessing either way.
func TestComparingWithAPlanWithoutDigestsSaysWhatItCannotTell(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", func(doc map[string]any) {
		for _, res := range doc["resources"].([]any) {
			inputs := res.(map[string]any)["inputs"].(map[string]any)
			if m, ok := inputs["manifest"].(map[string]any); ok {
				delete(m, "digests")
			}
		}
	})
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Regexp(t, `\n  \?  \d+ Kubernetes objects not compared: the earlier plan was written before plans carried digests of them\n`, out)
	assert.Contains(t, out, "Whether a running run stops cannot be told from that plan")
}

func TestCompareRefusesAnotherStacksPlanOrAnotherFile(t *testing.T) {
	other := plantest.PlanFile(t, "smoke", nil)
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", other)
	assert.Equal(t, cmd.ExitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "is a plan of stack smoke, not b200-spot")

	for _, other := range []string{"--json", "--destroy"} {
		code, out, errOut = plantest.Main(t, "--stack", "smoke", "--compare", "before.json", other)
		assert.Equal(t, cmd.ExitUsage, code, other)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "--compare prints its own report: not with --json or --destroy")
	}

	notPlan := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, os.WriteFile(notPlan, []byte(`{"hello": 1}`), 0o600))
	code, _, errOut = plantest.Main(t, "--stack", "b200-spot", "--compare", notPlan)
	assert.Equal(t, cmd.ExitUsage, code)
	assert.Contains(t, errOut, "not a plan --json document")
}

// A long-lived cluster's worker count is an update KubeRay makes in place; its pod template is
// not: only the template replaces it.
func TestCompareTellsAClusterUpdateFromAReplacement(t *testing.T) {
	before := plantest.PlanFile(t, "h200-reserved", nil)
	code, out, errOut := plantest.Main(t, "--stack", "h200-reserved", "--compare", before, "--config", "ray.image=rayproject/ray:2.49.2-py312-gpu")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Regexp(t, `\n  \+- kubernetes:ray.io/v1:RayCluster ray-raycluster: [^\n]*spec.headGroupSpec[^\n]*spec.workerGroupSpecs\[0\].template`, out)
	assert.Contains(t, out, "the long-lived Ray cluster is deleted and created again; the RayJob is replaced with it")
	assert.Regexp(t, `\n  \+- kubernetes:ray.io/v1:RayJob grpo-rayjob: [^\n]*spec.metadata`, out, "the job carries the cluster's fingerprint")
	// A Job's template is immutable: the data preparation is replaced and runs again.
	assert.Contains(t, out, "\n  +- kubernetes:batch/v1:Job grpo-data-prep: spec.template\n       the Job runs again, skipping the downloads and conversions it finished before\n")
}

// A node setting the provider updates in place re-creates the nodes one at a time: on the GPU
// pool that fails the running attempt, on the CPU pool it does not. A ForceNew one (the node
// service account: node_config.go, schemaNodeConfig) replaces the pool, the old one deleted
// first.
func TestCompareTellsTheGPUPoolFromTheCPUPool(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", nil)
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "cluster.nodeServiceAccount=gke-rl-nodes@acme-rl.iam.gserviceaccount.com")
	require.Equal(t, cmd.ExitOK, code, errOut)
	for _, pool := range []string{"cluster-cpu", "cluster-gpu"} {
		assert.Contains(t, out, "\n  +- gcp:container/nodePool:NodePool "+pool+": nodeConfig.serviceAccount\n       a new node pool (nodeConfig.serviceAccount is fixed at creation), the old one deleted first")
	}
	assert.True(t, strings.HasSuffix(out, "A running run stops and resumes from its newest checkpoint: update between runs, or after a checkpoint.\n"), out)

	code, out, errOut = plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "cluster.cpuMachineType=n2-standard-32")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Regexp(t, `\n  ~  gcp:container/nodePool:NodePool cluster-cpu: nodeConfig.machineType\n       GKE re-creates the nodes one at a time [^\n;]*\n`, out)
	assert.NotContains(t, out, "cluster-gpu")
	assert.NotContains(t, out, "fails the running attempt")

	// The GPU pool's settings that the provider updates in place come from the program, not
	// the stack: an earlier version's node labels stand for them.
	relabelled := plantest.PlanFile(t, "b200-spot", func(doc map[string]any) {
		for _, r := range doc["resources"].([]any) {
			if res := r.(map[string]any); res["name"] == "cluster-gpu" {
				res["inputs"].(map[string]any)["nodeConfig"].(map[string]any)["labels"].(map[string]any)["gke-rl/role"] = "earlier"
			}
		}
	})
	_, out, _ = plantest.Main(t, "--stack", "b200-spot", "--compare", relabelled)
	assert.Regexp(t, `\n  ~  gcp:container/nodePool:NodePool cluster-gpu: nodeConfig.labels\n       GKE re-creates the nodes one at a time [^\n]*; each GPU node's re-creation fails the running attempt`, out)
}

// More nodes on a reservation: KubeRay scales the long-lived cluster in place, the pool's
// autoscaling bounds change, and the RayJob, whose world size changes, is replaced. What the
// program ignores after creation does not count: the pool's initial size, the gate's Jobs
// (they ran at the first up).
func TestCompareScalingALongLivedCluster(t *testing.T) {
	before := plantest.PlanFile(t, "h200-reserved", nil)
	code, out, errOut := plantest.Main(t, "--stack", "h200-reserved", "--compare", before, "--config", "gpu.nodes=4")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n  ~  gcp:container/nodePool:NodePool cluster-gpu: autoscaling.totalMaxNodeCount, autoscaling.totalMinNodeCount\n")
	assert.Contains(t, out, "\n  ~  kubernetes:ray.io/v1:RayCluster ray-raycluster: spec.workerGroupSpecs[0].maxReplicas, spec.workerGroupSpecs[0].minReplicas, spec.workerGroupSpecs[0].replicas\n")
	assert.Regexp(t, `\n  \+- kubernetes:ray.io/v1:RayJob grpo-rayjob: `, out)
	assert.NotContains(t, out, "initialNodeCount")
	assert.NotContains(t, out, "gate-nccl")
}

// Turning the run off deletes its RayJob: the run stops and does not resume.
func TestCompareSaysWhenTheRunStopsForGood(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", nil)
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "job.enabled=false")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n  -  kubernetes:ray.io/v1:RayJob grpo-rayjob\n       the running attempt stops\n")
	assert.True(t, strings.HasSuffix(out, "A running run stops for good: the stack no longer has a RayJob.\n"), out)
}

// A rename replaces what its name fixes: the cluster, its pools, the Lustre instance (a new, empty
// one), the networks; the report says so, and that the run starts again from step 0, instead of
// listing updates that resume from a checkpoint.
func TestCompareSaysReplaceWhereTheProviderReplaces(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", nil)
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "cluster.name=ray-a4-renamed")
	require.Equal(t, cmd.ExitOK, code, errOut)
	for _, replaced := range []string{
		"gcp:container/cluster:Cluster cluster-gke: ", "gcp:container/nodePool:NodePool cluster-gpu: ",
		"gcp:lustre/instance:Instance storage-lustre: ", "gcp:compute/network:Network networks-main: ",
	} {
		assert.Contains(t, out, "\n  +- "+replaced, replaced)
	}
	assert.Contains(t, out, "a new, empty Lustre instance (instanceId, network is fixed at creation)")
	assert.Contains(t, out, "\n  +- kubernetes:core/v1:Namespace cluster-workloads: metadata.name", "a new namespace: the stack's name changed")
	assert.True(t, strings.HasSuffix(out, "the storage that holds the checkpoints is new and empty (the old checkpoints stay where they were only if the old storage is kept).\n"), out)
	assert.NotContains(t, out, "resumes from its newest checkpoint: update")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  ~  gcp:") && !strings.Contains(line, "gcp:monitoring/") { // alerts and dashboards update in place
			t.Errorf("a cloud resource updated in place by a rename: %s", line)
		}
	}
}

// The table of the provider's forceNew arguments covers every cloud resource type a plan holds.
func TestForceNewCoversEveryCloudResourceType(t *testing.T) {
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack, "tokens.huggingFace=true", "tokens.wandb=true", "monitoring.enabled=true")
		for _, r := range res.Resources {
			if strings.HasPrefix(r.Type, "gcp:") {
				assert.True(t, plan.HasForceNewTable(r.Type), "%s: no forceNew arguments of %s in forcenew.json", stack, r.Type)
			}
		}
	}
}

// --compare says which experiment an update runs: a new one (another model, or job.name) starts
// from step 0 in its own directory and leaves the earlier one's checkpoints; a knob keeps the
// experiment, which resumes; job.resumeFrom starts from the other's newest checkpoint.
func TestCompareSaysWhichExperimentRuns(t *testing.T) {
	before := plantest.PlanFile(t, "smoke", nil)
	old := "/data/checkpoints/" + plantest.Plan(t, "smoke").Outputs["experiment"].(string)

	_, out, _ := plantest.Main(t, "--stack", "smoke", "--compare", before, "--config", "job.model=Qwen/Qwen2.5-1.5B-Instruct")
	assert.Regexp(t, `\nExperiment qwen2-5-1-5b-instruct-gsm8k-[0-9a-f]{6}: a new one \([^)]*\); it starts from step 0 in /data/checkpoints/qwen2-5-1-5b-instruct-gsm8k-[0-9a-f]{6}; `+
		`qwen2-5-0-5b-instruct-gsm8k-[0-9a-f]{6}'s checkpoints stay in `+old+`\. Changed: actor_rollout_ref\.model\.path [^ ]*Qwen2\.5-0\.5B-Instruct@[0-9a-f]+ → [^ ]*Qwen2\.5-1\.5B-Instruct \(job\.model\)\.\n`, out)
	assert.Contains(t, out, "the running attempt stops; the new experiment starts from step 0\n")
	assert.True(t, strings.HasSuffix(out, "A running run stops, and the new experiment starts in its own directory: the earlier experiment's checkpoints stay, and it resumes if its job.name comes back.\n"), out)

	_, out, _ = plantest.Main(t, "--stack", "smoke", "--compare", before, "--config", "job.klCoef=0.01")
	assert.Contains(t, out, "the running attempt stops; the new RayJob resumes from the newest checkpoint")
	assert.Contains(t, out, "\nExperiment "+filepath.Base(old)+": the same one; a replaced RayJob resumes from its newest checkpoint in "+old+". Changed: actor_rollout_ref.actor.kl_loss_coef 0.001 → 0.01 (job.klCoef).\n")

	_, out, _ = plantest.Main(t, "--stack", "smoke", "--compare", before, "--config", "job.klCoef=0.01", "--config", "job.name=kl-0-01", "--config", "job.resumeFrom="+filepath.Base(old))
	assert.Contains(t, out, "\nExperiment kl-0-01: a new one (")
	assert.Contains(t, out, "it starts from "+filepath.Base(old)+"'s newest checkpoint (job.resumeFrom) and saves in /data/checkpoints/kl-0-01;")
	assert.Contains(t, out, "the running attempt stops; the new experiment starts from "+filepath.Base(old)+"'s newest checkpoint\n")
}

// A plan of the version before experiments named the directory after the cluster: the first
// `up` of this version starts a new experiment, which --compare says, with the way to keep the
// old one (docs/operations.md, Updates).
func TestCompareAgainstAPlanBeforeExperiments(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", func(doc map[string]any) {
		doc["outputs"].(map[string]any)["checkpointDir"] = "/lustre/checkpoints/ray-a4-gpu-spot-grpo"
		delete(doc["outputs"].(map[string]any), "experiment")
		for _, r := range doc["resources"].([]any) {
			if r := r.(map[string]any); r["type"] == "kubernetes:ray.io/v1:RayJob" {
				r["inputs"].(map[string]any)["manifest"].(map[string]any)["digests"].(map[string]any)["metadata.name"] = "the RayJob's old name"
			}
		}
	})
	_, out, _ := plantest.Main(t, "--stack", "b200-spot", "--compare", before)
	assert.Contains(t, out, "; ray-a4-gpu-spot-grpo's checkpoints stay in /lustre/checkpoints/ray-a4-gpu-spot-grpo.\n")
	_, out, _ = plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "job.name=ray-a4-gpu-spot-grpo")
	assert.Contains(t, out, "\nExperiment ray-a4-gpu-spot-grpo: the same one; a replaced RayJob resumes from its newest checkpoint in /lustre/checkpoints/ray-a4-gpu-spot-grpo.\n")
}

// verl saves one shard per GPU: a named experiment moved to another GPU count cannot load its
// checkpoints, and --compare says so (the default name changes with the count instead).
func TestCompareWarnsWhenVerlCannotLoadItsShards(t *testing.T) {
	before := plantest.PlanFile(t, "h200-reserved", nil, "job.name=sweep")
	_, out, _ := plantest.Main(t, "--stack", "h200-reserved", "--compare", before, "--config", "job.name=sweep", "--config", "gpu.nodes=4")
	assert.Contains(t, out, "\nExperiment sweep: the same one, but verl's checkpoints in /data/checkpoints/sweep are 16 shards, one per GPU, and the run now has 32 GPUs: verl cannot load them and the next attempt fails.")
	assert.True(t, strings.HasSuffix(out, "A running run stops, and its retries fail: verl cannot load the experiment's checkpoints on the new GPU count.\n"), out)
	_, out, _ = plantest.Main(t, "--stack", "h200-reserved", "--compare", plantest.PlanFile(t, "h200-reserved", nil), "--config", "gpu.nodes=4")
	assert.Contains(t, out, ": a new one (", "the default follows verl's GPU count")

	// An earlier plan that does not say its GPUs (written before plans carried gpuNodes) cannot
	// tell a change of count: no warning is made up.
	unsaid := plantest.PlanFile(t, "h200-reserved", func(doc map[string]any) {
		delete(doc["outputs"].(map[string]any), "gpuNodes")
	}, "job.name=sweep")
	_, out, _ = plantest.Main(t, "--stack", "h200-reserved", "--compare", unsaid, "--config", "job.name=sweep", "--config", "gpu.nodes=4")
	assert.Contains(t, out, "\nExperiment sweep: the same one; a replaced RayJob resumes from its newest checkpoint")
	assert.NotContains(t, out, "cannot load")
}

// The --compare text docs/operations.md shows (Experiments) is what the command prints.
func TestOperationsShowsTheExperimentComparison(t *testing.T) {
	_, out, _ := plantest.Main(t, "--stack", "smoke", "--compare", plantest.PlanFile(t, "smoke", nil), "--config", "job.klCoef=0.01", "--config", "job.name=smoke-kl-0-01")
	_, body, ok := strings.Cut(out, "\n")
	require.True(t, ok)
	doc, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "operations.md"))
	require.NoError(t, err)
	assert.Contains(t, string(doc), "```\n"+body+"```\n")
}

// The comparison says what an update does to each experiment of a queue: the stack's single
// run taken into the queue under its own name resumes; a new experiment starts from step 0;
// one removed keeps its checkpoints.
func TestCompareSaysWhatAnUpdateDoesToEachQueuedExperiment(t *testing.T) {
	single := plantest.PlanFile(t, "smoke", nil)
	run := plantest.Resolve(t, "smoke").Run.RayJob.Name
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--config", "gpu.maxNodes=2", "--config", "jobs."+run+".maxSteps=4", "--config", "jobs.kl.klCoef=0.01", "--compare", single)
	require.Equal(t, cmd.ExitOK, code, errOut)
	// An experiment's directory carries the hash of what it trains: one named after the single
	// run is a new experiment all the same, and the single run stops for good.
	assert.Regexp(t, "Experiment "+run+` \(queue\): a new one; it starts from step 0 in /data/checkpoints/`+run+`-[0-9a-f]{6} when the queue admits it.`, out)
	assert.Regexp(t, `Experiment kl \(queue\): a new one; it starts from step 0 in /data/checkpoints/kl-[0-9a-f]{6} when the queue admits it.`, out)
	assert.Contains(t, out, "The stack's run until now stops for good: no experiment of jobs continues it (its checkpoints stay in /data/checkpoints/"+run+")")

	queued := plantest.PlanFile(t, "smoke", nil, "gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.maxSteps=4")
	code, out, errOut = plantest.Main(t, "--stack", "smoke", "--config", "gpu.maxNodes=2", "--config", "jobs.a.maxSteps=4", "--compare", queued)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "Experiment a (queue): the same one;")
	// A finished experiment's replaced RayJob stays out of the queue (test/kubetest,
	// TestAFinishedExperimentBringsUpNoGPUNode, shows it).
	assert.Contains(t, out, "(a finished one stays out of the queue, suspended with no Ray cluster and no GPU node, unless its maxSteps or epochs grew: its launch Job reads what the finished run recorded)")
	assert.Regexp(t, `Experiment b: leaves the queue; its RayJob is deleted \(a running one stops\), its checkpoints stay in /data/checkpoints/b-[0-9a-f]{6}\.`, out)
	assert.NotContains(t, out, "new one")
}

// Three queue changes --compare once told the opposite of: a priority change replaces the
// experiment's RayJob (its label), not "keeps running"; an experiment stopped with
// enabled=false leaves the others training, not "the stack no longer has a RayJob"; and
// taking a stack from job to jobs stops the single run for good when no experiment continues
// its checkpoints, not "resumes".
func TestCompareTellsTheTruthOfQueueChanges(t *testing.T) {
	two := []string{"gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.maxSteps=4"}
	queued := plantest.PlanFile(t, "smoke", nil, two...)
	args := func(extra ...string) []string {
		out := []string{"--stack", "smoke", "--compare", queued}
		for _, o := range append(slices.Clone(two), extra...) {
			out = append(out, "--config", o)
		}
		return out
	}

	code, out, errOut := plantest.Main(t, args("jobs.a.priority=5")...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "+- kubernetes:ray.io/v1:RayJob grpo-a-rayjob: metadata.labels\n       a running experiment stops; the new RayJob goes back in the queue and resumes from its newest checkpoint when admitted")
	assert.NotContains(t, out, "keeps running.")

	// A change of what an experiment trains (here its framework release) renames its RayJob:
	// a new experiment, from step 0, not a resume.
	code, out, errOut = plantest.Main(t, args("jobs.a.frameworkRelease=v0.7.0", "ray.image=verlai/verl:vllm012.latest@sha256:"+strings.Repeat("5", 64), "ray.version=2.53.0", "jobs.b.frameworkRelease=v0.7.0")...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "+- kubernetes:ray.io/v1:RayJob grpo-a-rayjob: metadata.name, ")
	assert.Contains(t, out, "a running experiment stops; the new RayJob is a new experiment, which waits in the queue and starts from step 0 when admitted")
	assert.NotContains(t, out, "new RayJob goes back in the queue and resumes")

	code, out, errOut = plantest.Main(t, args("jobs.b.enabled=false")...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.NotContains(t, out, "no longer has a RayJob")
	assert.Contains(t, out, "Experiment a (queue): the same one;")
	assert.Regexp(t, `Experiment b: stops \(jobs.b.enabled=false\): its RayJob is deleted \(a running one stops\), its checkpoints stay in /data/checkpoints/b-[0-9a-f]{6} and it resumes from them when enabled again.`, out)

	single := plantest.PlanFile(t, "smoke", nil)
	code, out, errOut = plantest.Main(t, "--stack", "smoke", "--config", "gpu.maxNodes=2", "--config", "jobs.a.maxSteps=4", "--compare", single)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "The stack's run until now stops for good: no experiment of jobs continues it")
	assert.NotContains(t, out, "resumes from its newest checkpoint: update between runs")

	// Another model under the same key: a new experiment, the earlier one's checkpoints kept.
	code, out, errOut = plantest.Main(t, args("jobs.a.model=Qwen/Qwen2.5-1.5B-Instruct")...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Regexp(t, `Experiment a \(queue\): a new one under the same name, since what it trains changed .*: its RayJob is replaced \(a running one stops\), and it starts from step 0 in /data/checkpoints/a-[0-9a-f]{6} when the queue admits it; the earlier one's checkpoints stay in /data/checkpoints/a-[0-9a-f]{6}\.`, out)

	// A plan written before labels had digests of their own says the same from its metadata.
	old := plantest.PlanFile(t, "smoke", func(doc map[string]any) {
		for _, r := range doc["resources"].([]any) {
			inputs := r.(map[string]any)["inputs"].(map[string]any)
			if m, ok := inputs["manifest"].(map[string]any); ok {
				digests := m["digests"].(map[string]any)
				delete(digests, "metadata.labels")
				delete(digests, "metadata.annotations")
			}
		}
	}, two...)
	code, out, errOut = plantest.Main(t, "--stack", "smoke", "--compare", old, "--config", "gpu.maxNodes=2", "--config", "jobs.a.maxSteps=4", "--config", "jobs.b.maxSteps=4")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "  none: `pulumi up` with this version proposes no change")
}

// `--compare` names the values an update changes in what an experiment trains, with the key
// that set the new one: for the single run, and for each experiment of jobs.
func TestCompareNamesTheChangedValues(t *testing.T) {
	before := plantest.PlanFile(t, "smoke", nil)
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--compare", before, "--config", "job.learningRate=5e-6", "--config", "job.maxSteps=8")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "the same one; a replaced RayJob resumes from its newest checkpoint in /data/checkpoints/qwen2-5-0-5b-instruct-gsm8k-9f3889. "+
		"Changed: actor_rollout_ref.actor.optim.lr set to 5e-06 (job.learningRate): applies: the run resumes the weights with a fresh optimizer and LR scheduler at the new value (run.sh, load_contents=[model]), dropping their earlier state; trainer.total_training_steps 4 → 8 (job.maxSteps).")

	before = plantest.PlanFile(t, "smoke", nil, "jobs.a.maxSteps=4", "jobs.b.learningRate=1e-6")
	code, out, errOut = plantest.Main(t, "--stack", "smoke", "--compare", before, "--config", "jobs.a.maxSteps=4", "--config", "jobs.b.learningRate=5e-6")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "Experiment b (queue): the same one;")
	assert.Contains(t, out, "Changed: actor_rollout_ref.actor.optim.lr 1e-06 → 5e-06 (jobs.b.learningRate): applies: the run resumes the weights with a fresh optimizer")
	_, a, _ := strings.Cut(out, "Experiment a (queue)")
	a, _, _ = strings.Cut(a, "\n")
	assert.NotContains(t, a, "Changed:", "a changes nothing")

	// NeMo RL restores the optimizer with the checkpoint and has no switch to skip it: the run
	// refuses the change when it resumes, and --compare says so before up.
	before = plantest.PlanFile(t, "b200-spot", nil)
	code, out, errOut = plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "job.learningRate=5e-6")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "Changed: policy.megatron_cfg.optimizer.lr set to 5e-06 (job.learningRate): refused when the run resumes: NeMo RL (v0.5.0, v0.7.0) restores the checkpoint's optimizer and scheduler, so the old value would stay (allowed: a new experiment, another job.name, or the old value).")

	// A plan of an earlier version carries no settings: the comparison says no more than before.
	before = plantest.PlanFile(t, "smoke", func(doc map[string]any) { delete(doc, "settings") })
	_, out, _ = plantest.Main(t, "--stack", "smoke", "--compare", before, "--config", "job.learningRate=5e-6")
	assert.NotContains(t, out, "Changed:")
}

// A change to a running experiment while another waits: pulumi deletes its RayJob before it
// creates the new one, the queue admits the waiting one in the freed GPUs, and with preemption
// Never the changed one waits until that one ends. --compare says so before up, naming the one
// that takes its place; with nothing waiting it says nothing of it.
func TestCompareSaysWhoTakesTheGPUsOfAChangedExperiment(t *testing.T) {
	queue := []string{"gpu.maxNodes=1", "jobs.a.maxSteps=4", "jobs.b.maxSteps=4", "jobs.b.priority=5", "jobs.c.maxSteps=4", "jobs.c.priority=2"}
	before := plantest.PlanFile(t, "smoke", nil, queue...)
	args := []string{"--stack", "smoke", "--compare", before, "--config", "jobs.b.learningRate=5e-6"}
	for _, q := range queue {
		args = append(args, "--config", q)
	}
	code, out, errOut := plantest.Main(t, args...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	_, b, _ := strings.Cut(out, "Experiment b (queue)")
	b, _, _ = strings.Cut(b, "\n")
	// b (priority 5) runs; c (2) and a (0) wait, c first.
	assert.Contains(t, b, "it gives its GPUs away: the queue admits the first waiting experiment that fits them (c, priority 2, first in order), which runs to its end (the queue never preempts), and b waits behind it.")
	// a and c do not change: replacing nothing, they give nothing away.
	for _, unchanged := range []string{"a", "c"} {
		_, line, _ := strings.Cut(out, "Experiment "+unchanged+" (queue)")
		line, _, _ = strings.Cut(line, "\n")
		assert.NotContains(t, line, "gives its GPUs away", unchanged)
	}

	// Among four waiting, the highest priority goes first, whatever the names' order: d (3)
	// before e (2), a (1) and c (0).
	four := []string{"gpu.maxNodes=1", "jobs.b.maxSteps=4", "jobs.b.priority=9", "jobs.a.maxSteps=4", "jobs.a.priority=1", "jobs.c.maxSteps=4", "jobs.d.maxSteps=4", "jobs.d.priority=3", "jobs.e.maxSteps=4", "jobs.e.priority=2"}
	args = []string{"--stack", "smoke", "--compare", plantest.PlanFile(t, "smoke", nil, four...), "--config", "jobs.b.learningRate=5e-6"}
	for _, q := range four {
		args = append(args, "--config", q)
	}
	code, out, errOut = plantest.Main(t, args...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "the queue admits the first waiting experiment that fits them (d, priority 3, first in order), which runs to its end (the queue never preempts), and b waits behind it.")

	// A priority change is named, with the same effect.
	args = []string{"--stack", "smoke", "--compare", before, "--config", "jobs.b.priority=6"}
	for _, q := range queue[:len(queue)-3] {
		args = append(args, "--config", q)
	}
	args = append(args, "--config", "jobs.c.maxSteps=4", "--config", "jobs.c.priority=2")
	code, out, errOut = plantest.Main(t, args...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "Changed: priority 5 → 6 (jobs.b.priority). If it is running when `pulumi up` replaces its RayJob, it gives its GPUs away")

	// Nothing waits (room for all): no such sentence.
	wide := []string{"gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.maxSteps=4"}
	before = plantest.PlanFile(t, "smoke", nil, wide...)
	args = []string{"--stack", "smoke", "--compare", before, "--config", "jobs.b.learningRate=5e-6"}
	for _, q := range wide {
		args = append(args, "--config", q)
	}
	_, out, _ = plantest.Main(t, args...)
	assert.Contains(t, out, "Experiment b (queue): the same one")
	assert.NotContains(t, out, "gives its GPUs away")
}

// The Lustre check counts what stays on the volume: an experiment that leaves the plan keeps its
// checkpoints there. On b200-spot (18000 GiB = 19327 GB; Qwen2.5-72B: a checkpoint 72B × 16
// bytes = 1152 GB, the Megatron conversion 72B × 2 = 144 GB, the download and checked copy
// 2 × 144 = 288 GB), swapping experiment a for b, each keeping K:
// b's peak is (K + 1) × 1152 + 144 + 288 (NeMo RL saves beside those kept), a leaves K × 1152 + 144.
//
//	K = 8: 10800 + 9360 = 20160 GB > 19327: refused, though b alone fits.
//	K = 7:  9648 + 8208 = 17856 GB ≤ 19327: said, and allowed.
func TestCompareCountsTheCheckpointsLeftOnTheVolume(t *testing.T) {
	swap := func(t *testing.T, keep string) (int, string, string) {
		before := plantest.PlanFile(t, "b200-spot", nil, "jobs.a.maxSteps=20", "jobs.a.keepCheckpoints="+keep)
		return plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "jobs.b.maxSteps=20", "--config", "jobs.b.keepCheckpoints="+keep)
	}
	code, out, errOut := swap(t, "8")
	assert.Equal(t, cmd.ExitInvalidConfig, code, errOut)
	assert.Contains(t, out, "Volume: the checkpoints of experiments this plan no longer has stay on the Lustre instance (a-251dec 9360 GB); with this plan's at their peak (10800 GB) they need 20160 GB of its 19327 GB: more than it holds.")
	assert.Contains(t, errOut, "error: storage.capacityGib: the Lustre instance would need 20160 GB")

	code, out, errOut = swap(t, "7")
	assert.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "(a-251dec 8208 GB); with this plan's at their peak (9648 GB) they need 17856 GB of its 19327 GB.")

	// The same experiment stays: nothing is left behind, nothing said.
	before := plantest.PlanFile(t, "b200-spot", nil, "jobs.a.maxSteps=20", "jobs.a.keepCheckpoints=8")
	_, out, _ = plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "jobs.a.maxSteps=20", "--config", "jobs.a.keepCheckpoints=8")
	assert.NotContains(t, out, "Volume:")
	// The single run's directory counts the same way when jobs replace it.
	before = plantest.PlanFile(t, "b200-spot", nil)
	_, out, _ = plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "jobs.b.maxSteps=20")
	assert.Contains(t, out, "Volume: the checkpoints of experiments this plan no longer has stay on the Lustre instance (qwen2-5-72b-instruct-deepscaler-251dec 2448 GB)")
	// A plan of an earlier version does not say what its experiments keep: no check.
	before = plantest.PlanFile(t, "b200-spot", func(doc map[string]any) { delete(doc["outputs"].(map[string]any), "volumeUse") }, "jobs.a.maxSteps=20", "jobs.a.keepCheckpoints=8")
	code, out, _ = plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "jobs.b.maxSteps=20", "--config", "jobs.b.keepCheckpoints=8")
	assert.Equal(t, cmd.ExitOK, code)
	assert.NotContains(t, out, "Volume:")
}

// This version gives cluster names that do not start with gke-rl the namespace rl-<name>
// (gke-rl-<name> before, which `smoke` and `gke-rl-smoke` shared). Against the earlier version's
// plan (this one with the old namespace wherever it is derived: plantest.Renamed, written by
// plan --json), --compare says the namespace moves, lists the stack's objects as replaced and
// says what a running run does.
func TestCompareSaysTheNamespaceMoves(t *testing.T) {
	const was, now = "gke-rl-ray-a4-gpu-spot", "rl-ray-a4-gpu-spot"
	before := plantest.PlanFileOf(t, plantest.Renamed(plantest.Plan(t, "b200-spot"), now, was))
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\nThe workload namespace moves from gke-rl-ray-a4-gpu-spot to rl-ray-a4-gpu-spot: Kubernetes cannot move an object, so every one in it is created in rl-ray-a4-gpu-spot and deleted from gke-rl-ray-a4-gpu-spot")
	for _, replaced := range []string{
		"kubernetes:core/v1:Namespace cluster-workloads: metadata.name",
		"kubernetes:core/v1:PersistentVolumeClaim storage-lustre-pvc: metadata.namespace",
		"kubernetes:ray.io/v1:RayJob grpo-rayjob: metadata.namespace\n       the running attempt stops",
		"kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding cluster-pod-policy-validatingadmissionpolicybinding: metadata.name",
	} {
		assert.Contains(t, out, "\n  +- "+replaced, "replaced")
	}
	// A bound volume cannot be given to another claim: a new one, named after the namespace.
	assert.Contains(t, out, "\n  +- kubernetes:core/v1:PersistentVolume storage-lustre-pv: metadata.name, spec.claimRef\n")
	assert.Contains(t, out, "\n  ~  gcp:monitoring/alertPolicy:AlertPolicy monitoring-run-failed: ", "the alerts follow the namespace")
	assert.True(t, strings.HasSuffix(out, "A running run stops and resumes from its newest checkpoint: update between runs, or after a checkpoint.\n"), out)

	// The same plan against itself moves nothing.
	_, out, _ = plantest.Main(t, "--stack", "b200-spot", "--compare", plantest.PlanFile(t, "b200-spot", nil))
	assert.NotContains(t, out, "namespace moves")
}

// Moving b200-spot from NeMo RL v0.5.0 to v0.7.0 (CUDA 13.2) moves its GPU pool to GKE's LATEST
// driver: --compare says the nodes are re-created with it, and that the experiment is new.
func TestCompareSaysTheGPUDriverMovesWithTheRelease(t *testing.T) {
	before := plantest.PlanFile(t, "b200-spot", nil, "job.frameworkRelease=v0.5.0")
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--compare", before)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "+- gcp:container/nodePool:NodePool cluster-gpu: nodeConfig.guestAccelerators\n")
	assert.Contains(t, out, "a new node pool (nodeConfig.guestAccelerators is fixed at creation), the old one deleted first")
	assert.Contains(t, out, "the new nodes get GKE's LATEST NVIDIA driver (gpu.driverVersion)")
	assert.Contains(t, out, "Experiment qwen2-5-72b-instruct-deepscaler-251dec: a new one")
	assert.Contains(t, out, "qwen2-5-72b-instruct-deepscaler-cedcb5's checkpoints stay")

	_, out, _ = plantest.Main(t, "--stack", "b200-spot", "--compare", before, "--config", "job.frameworkRelease=v0.5.0", "--config", "job.maxSteps=30")
	assert.NotContains(t, out, "cluster-gpu", "the same release keeps the pool")

	// The tree names the driver on the pool's line.
	_, out, _ = plantest.Main(t, "--stack", "b200-spot")
	assert.Contains(t, out, "machineType=a4-highgpu-8g gpuDriverVersion=LATEST ")
	_, out, _ = plantest.Main(t, "--stack", "b200-spot", "--config", "job.frameworkRelease=v0.5.0")
	assert.Contains(t, out, "machineType=a4-highgpu-8g gpuDriverVersion=DEFAULT ")
}

// The volume holds what it needs up to its capacity exactly: this plan's peak, 100 GB, and the
// 20 GB a removed experiment left, on 120 GB; one GB less overflows.
func TestTheVolumeOverflowsOnlyPastItsCapacity(t *testing.T) {
	v := plan.VolumeShift{PeakGB: 100, Left: map[string]float64{"/data/checkpoints/gone": 20}, CapacityGB: 120}
	assert.InDelta(t, 120, v.NeedGB(), 1e-9)
	assert.False(t, v.Overflows())
	v.CapacityGB = 119
	assert.True(t, v.Overflows())
}
