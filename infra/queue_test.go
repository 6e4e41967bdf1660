package infra_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/test/plantest"
	"gke-rl/workloads/queue"
)

// experiments are the experiments of smoke (verl, one B200 node) with overrides, by name.
func experiments(t *testing.T, overrides ...string) (*infra.Blueprint, map[string]infra.ExperimentPlan) {
	t.Helper()
	bp := plantest.Resolve(t, "smoke", overrides...)
	byName := map[string]infra.ExperimentPlan{}
	for _, x := range bp.Run.Experiments {
		byName[x.Name] = x
	}
	return bp, byName
}

// Each entry of jobs takes from job what it does not set, and its own values otherwise; each is
// a RayJob of its own, queued, with its own checkpoints and data preparation.
func TestEachExperimentTakesWhatItDoesNotSetFromJob(t *testing.T) {
	bp, xs := experiments(t, "gpu.maxNodes=2", "job.learningRate=2e-6", `job.revisions["openai/gsm8k"]=0123456789abcdef0123456789abcdef01234567`,
		"jobs.base.maxSteps=6", "jobs.low.learningRate=5e-7", `jobs.low.revisions["Qwen/Qwen2.5-0.5B-Instruct"]=1111111111111111111111111111111111111111`)
	require.Len(t, xs, 2)
	assert.Nil(t, bp.Run.RayJob, "no single run: the experiments are the runs")
	assert.Nil(t, bp.Run.RayCluster)
	base, low := xs["base"], xs["low"]
	assert.Contains(t, base.RayJob.Spec.Entrypoint, "actor_rollout_ref.actor.optim.lr=2e-06", "job's value")
	assert.Contains(t, low.RayJob.Spec.Entrypoint, "actor_rollout_ref.actor.optim.lr=5e-07", "the entry's own")
	assert.Contains(t, base.RayJob.Spec.Entrypoint, "trainer.total_training_steps=6")
	assert.Contains(t, base.Launch.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "BUDGET", Value: "6 0"}, "the entry's own steps")
	assert.Equal(t, map[string]string{
		"openai/gsm8k":               "0123456789abcdef0123456789abcdef01234567",
		"Qwen/Qwen2.5-0.5B-Instruct": "1111111111111111111111111111111111111111",
	}, low.Hub.Revisions, "revisions are added to job's")
	// On a stack that pins nothing in job.revisions, an entry's own pins are its revisions, and
	// the other entry has none.
	dir := plantest.ProjectDir(t)
	stack, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "Pulumi.smoke.yaml"))
	require.NoError(t, err)
	var doc map[string]map[string]any
	require.NoError(t, yaml.Unmarshal(stack, &doc))
	job, ok := doc["config"]["gke-rl:job"].(map[string]any)
	require.True(t, ok)
	require.Contains(t, job, "revisions")
	delete(job, "revisions")
	stack, err = yaml.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.smoke.yaml"), stack, 0o600))
	sc, err := offline.LoadStackConfig(dir, "smoke", []string{"jobs.base.maxSteps=6", `jobs.low.revisions["openai/gsm8k"]=2222222222222222222222222222222222222222`})
	require.NoError(t, err)
	unpinned, err := offline.Resolve(sc, "smoke", plantest.PlanTime)
	require.NoError(t, err)
	own := map[string]infra.ExperimentPlan{}
	for _, x := range unpinned.Run.Experiments {
		own[x.Name] = x
	}
	assert.Equal(t, map[string]string{"openai/gsm8k": "2222222222222222222222222222222222222222"}, own["low"].Hub.Revisions)
	assert.Empty(t, own["base"].Hub.Revisions)
	for name, x := range xs {
		assert.Regexp(t, "^"+name+"-[0-9a-f]{6}$", x.RayJob.Name, "its key and the hash of what it trains")
		assert.Equal(t, "/data/checkpoints/"+x.RayJob.Name, x.Layout.Checkpoints())
		assert.Equal(t, x.RayJob.Name+"-data-prep", x.Prep.Name)
		assert.True(t, x.RayJob.Spec.Suspend, "created suspended: Kueue starts it")
		assert.NotContains(t, x.RayJob.Labels, "kueue.x-k8s.io/queue-name", "its launch queues it")
		// The launch: on the head's CPU node, as the launches' account, for this RayJob and budget.
		assert.Equal(t, x.RayJob.Name+"-launch", x.Launch.Name)
		launch := x.Launch.Spec.Template.Spec
		head := x.RayJob.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
		assert.Equal(t, "rl-launcher", launch.ServiceAccountName)
		assert.Equal(t, head.NodeSelector, launch.NodeSelector)
		assert.Equal(t, head.Containers[0].Image, launch.Containers[0].Image)
		assert.Contains(t, launch.Containers[0].Env, corev1.EnvVar{Name: "RAYJOB", Value: x.RayJob.Name})
		assert.Contains(t, launch.Containers[0].Env, corev1.EnvVar{Name: "CHECKPOINT_DIR", Value: "/data/checkpoints/" + x.RayJob.Name})
		assert.NotNil(t, x.RayJob.Spec.RayClusterSpec, "a cluster of its own, which Kueue manages")
		assert.True(t, x.RayJob.Spec.ShutdownAfterJobFinishes)
		assert.Zero(t, x.RayJob.Spec.TTLSecondsAfterFinished, "the finished cluster does not keep the next experiment's nodes")
		assert.Equal(t, 3, queue.PodSets(x.RayJob), "head, workers, submitter: within Kueue's %d", queue.MaxPodSets)
		assert.Equal(t, 8, queue.GPUs(x.RayJob))
	}
	assert.Equal(t, 16, bp.Run.Queue.GPUs, "gpu.maxNodes × 8")
}

// A reservation stack's experiments each bring their own cluster too: Kueue leaves a RayJob on a
// long-lived cluster unmanaged, and that cluster would hold the GPUs the queue hands out.
func TestQueuedExperimentsOnAReservationBringTheirOwnCluster(t *testing.T) {
	bp := plantest.Resolve(t, "h200-reserved", "jobs.a.priority=1", "jobs.b.priority=2")
	assert.Nil(t, bp.Run.RayCluster, "no long-lived cluster")
	for _, x := range bp.Run.Experiments {
		assert.Empty(t, x.RayJob.Spec.ClusterSelector, x.Name)
		assert.NotNil(t, x.RayJob.Spec.RayClusterSpec, x.Name)
	}
	assert.NotNil(t, bp.Run.Gate, "the gate still runs once, before every experiment")
}

// The plan says which experiments run as soon as the stack is applied and which wait, as Kueue
// admits them: highest priority first, then in creation order, each that fits what is left.
func TestThePlanOrdersTheQueue(t *testing.T) {
	_, xs := experiments(t, "gpu.maxNodes=3", "jobs.a.maxSteps=4", "jobs.b.nodes=2", "jobs.c.priority=5", "jobs.d.enabled=false")
	assert.Equal(t, infra.StartsAtOnce, xs["c"].Start, "priority 5 first")
	assert.Equal(t, infra.StartsAtOnce, xs["a"].Start, "then a, in name order")
	assert.Equal(t, infra.Waits, xs["b"].Start, "b's 2 nodes do not fit the one left")
	assert.Equal(t, infra.NotStarted, xs["d"].Start)
	assert.Nil(t, xs["d"].RayJob, "a stopped experiment has no RayJob")

	res := plantest.Plan(t, "smoke", "gpu.maxNodes=3", "jobs.a.maxSteps=4", "jobs.b.nodes=2", "jobs.c.priority=5", "jobs.d.enabled=false")
	gpu := plantest.Input(t, res.Find("gcp:container/nodePool:NodePool", "cluster-gpu"), "autoscaling.totalMaxNodeCount")
	assert.EqualValues(t, 3, gpu, "the pool can hold the quota")
	for _, line := range res.Costs.Lines {
		if line.Item == "GPU nodes" {
			assert.EqualValues(t, 2, line.Training, "what trains is what runs at once: a and c")
			assert.Contains(t, line.Detail, "queue: a, c at once")
		}
	}
}

// Every bad jobs value is refused before anything is registered, naming the key that sets it.
func TestBadExperimentsAreRefusedNamingTheirKey(t *testing.T) {
	for name, c := range map[string]struct {
		overrides []string
		key, says string
	}{
		"larger than the quota":       {[]string{"gpu.maxNodes=2", "jobs.big.nodes=3"}, "jobs.big.nodes", "more than the queue's quota of 16 (gpu.maxNodes 2 × 8 GPUs)"},
		"no nodes":                    {[]string{"jobs.none.nodes=0"}, "jobs.none.nodes", "experiment none: 0 is out of range"},
		"a negative priority":         {[]string{"jobs.a.priority=-1"}, "jobs.a.priority", "allowed: 0 to 1000000"},
		"a name of its own":           {[]string{"jobs.a.name=b"}, "jobs.a.name", "named by its key"},
		"job.name beside jobs":        {[]string{"job.name=x", "jobs.a.maxSteps=4"}, "job.name", "remove job.name"},
		"a name that is no DNS label": {[]string{"jobs.Lr_Low.maxSteps=4"}, "jobs.Lr_Low", "is not a DNS label"},
		"an entry's own bad value":    {[]string{"jobs.a.learningRate=5"}, "jobs.a.learningRate", "experiment a:"},
		"job's bad value, inherited":  {[]string{"job.learningRate=5", "jobs.a.maxSteps=4"}, "job.learningRate", "experiment a:"},
		"an unknown key":              {[]string{"jobs.a.learningrate=1e-6"}, "jobs.a.learningrate", "unknown key"},
		"a check across its keys":     {[]string{"jobs.a.maxSteps=4", "jobs.a.checkpointPeriod=10"}, "jobs.a.checkpointPeriod", "experiment a: 10 steps is longer than the run"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := plantest.TryPlan("smoke", c.overrides...)
			require.Error(t, err)
			var refused *offline.ConfigError
			require.ErrorAs(t, err, &refused)
			found := false
			for _, p := range refused.Problems {
				if (c.key == "" || p.Key == c.key) && strings.Contains(p.Message, c.says) {
					found = true
				}
			}
			assert.True(t, found, "no %s problem saying %q in:\n%v", c.key, c.says, err)
		})
	}
}

// A stack without jobs plans as it did: no queue, one run (the golden plans hold its URNs).
func TestAStackWithJobHasNoQueue(t *testing.T) {
	for _, stack := range plantest.Stacks {
		bp := plantest.Resolve(t, stack)
		assert.Nil(t, bp.Run.Queue, stack)
		assert.Empty(t, bp.Run.Experiments, stack)
		assert.NotNil(t, bp.Run.RayJob, stack)
		assert.False(t, bp.Run.RayJob.Spec.Suspend, stack)
	}
}

// What `up` does with the experiments: a queued RayJob is replaced when its labels (its queue,
// its priority class) change; the data preparations run one after another, as they fill one
// Hugging Face cache. Kueue's image, by tag in its release manifest, is not warned about on every
// plan: no user could act on it before the first `up` (docs/operations.md, Kueue itself, says how
// to read the digest that runs).
func TestQueuedExperimentsAreAppliedInTurn(t *testing.T) {
	res := plantest.Plan(t, "smoke", "gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.maxSteps=4")
	for _, name := range []string{"a", "b"} {
		job := res.Find("kubernetes:ray.io/v1:RayJob", "grpo-"+name+"-rayjob")
		require.NotNil(t, job, name)
		assert.Contains(t, job.Options.ReplaceOnChanges, "metadata.labels", name)
	}
	first := res.Find("kubernetes:batch/v1:Job", "grpo-a-data-prep")
	second := res.Find("kubernetes:batch/v1:Job", "grpo-b-data-prep")
	require.NotNil(t, first)
	require.NotNil(t, second)
	assert.Contains(t, second.Dependencies, first.URN, "b's preparation waits for a's")
	assert.NotContains(t, first.Dependencies, second.URN)
	for _, w := range res.Warnings {
		assert.NotContains(t, w.Message, queue.Image, "no warning a user cannot act on: %s", w.Key)
	}

	single := plantest.Plan(t, "smoke").Find("kubernetes:ray.io/v1:RayJob", "grpo-rayjob")
	require.NotNil(t, single)
	assert.NotContains(t, single.Options.ReplaceOnChanges, "metadata.labels", "a stack without jobs keeps its options")
}

// A preparation waits only for the earlier ones that write what it writes (the same model or
// dataset download, verl's checkout): a failed one holds back those alone. Each is replaced by
// the next up when it is not Ready (failed), instead of being awaited again.
func TestPreparationsWaitOnlyForThoseTheyShareAWriteWith(t *testing.T) {
	res := plantest.Plan(t, "b200-spot", "jobs.a.maxSteps=20",
		"jobs.b.maxSteps=20", "jobs.b.model=Qwen/Qwen2.5-7B-Instruct", "jobs.b.dataset=OpenMathInstruct-2",
		"jobs.c.maxSteps=20", "jobs.c.dataset=OpenMathInstruct-2")
	prep := func(name string) *offline.Resource {
		r := res.Find("kubernetes:batch/v1:Job", "grpo-"+name+"-data-prep")
		require.NotNil(t, r, name)
		return r
	}
	a, b, c := prep("a"), prep("b"), prep("c")
	assert.NotContains(t, b.Dependencies, a.URN, "b shares neither model nor dataset with a: they run at once")
	assert.Contains(t, c.Dependencies, a.URN, "c downloads a's model")
	assert.Contains(t, c.Dependencies, b.URN, "c downloads b's dataset")
	replaceUnready := func(r *offline.Resource) any {
		annotations, _ := plantest.Input(t, r, "metadata.annotations").(map[string]any)
		return annotations["pulumi.com/replaceUnready"]
	}
	for _, r := range []*offline.Resource{a, b, c} {
		assert.Equal(t, "true", replaceUnready(r), r.Name)
	}
	single := plantest.Plan(t, "smoke").Find("kubernetes:batch/v1:Job", "grpo-data-prep")
	require.NotNil(t, single)
	assert.Equal(t, "true", replaceUnready(single), "the single run's too")
}

// fiveExperiments are five one-node experiments.
var fiveExperiments = []string{"jobs.a.maxSteps=4", "jobs.b.maxSteps=4", "jobs.c.maxSteps=4", "jobs.d.maxSteps=4", "jobs.e.maxSteps=4"}

// As many experiments as the GPU quota lets run at once must fit the CPU pool together, each
// with its Ray head and its submitter: smoke's pool of 3 × n2-standard-16 holds one 8-CPU head
// a node, so five one-node experiments on gpu.maxNodes=5 are refused before anything is
// registered, naming the largest quota that fits; on 3 nodes, or a pool of larger machines,
// they plan, and Autopilot, which has no CPU pool, is not held to it.
func TestTheQueueRunsNoMoreExperimentsThanTheCPUPoolHolds(t *testing.T) {
	_, err := plantest.TryPlan("smoke", append([]string{"gpu.maxNodes=5"}, fiveExperiments...)...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gpu.maxNodes: 5 lets 5 experiments run at once (a, b, c, d, e), and each brings to the CPU pool a Ray head of 8 CPUs and 32 GiB and a submitter of")
	assert.Contains(t, err.Error(), "the pool holds at most 3 × n2-standard-16 (15.89 CPUs and 58.4 GiB for pods each): 3 of them fit")
	assert.Contains(t, err.Error(), "allowed: gpu.maxNodes up to 3, or a larger cluster.cpuMachineType")

	plantest.Plan(t, "smoke", append([]string{"gpu.maxNodes=3"}, fiveExperiments...)...)
	plantest.Plan(t, "smoke", append([]string{"gpu.maxNodes=5", "cluster.cpuMachineType=n2-standard-32"}, fiveExperiments...)...)
	plantest.Plan(t, "smoke", append([]string{"gpu.maxNodes=5", "cluster.mode=autopilot"}, fiveExperiments...)...)
	// Two two-node experiments and one of one node on 5 nodes: at most three at once, which fit.
	plantest.Plan(t, "smoke", "gpu.maxNodes=5", "jobs.a.nodes=2", "jobs.b.nodes=2", "jobs.c.maxSteps=4")
}

// The experiments share one Lustre instance: three that each fit b200-spot's 19,327 GB alone
// (6 kept, 7 at the peak of 1,152 GB, each with its Megatron conversion) do not fit it together
// with the model's download and checked copy, and the error names each one's share; two do.
func TestTheExperimentsCheckpointsFitTheVolumeTogether(t *testing.T) {
	three := []string{"jobs.a.keepCheckpoints=6", "jobs.b.keepCheckpoints=6", "jobs.c.keepCheckpoints=6"}
	_, err := plantest.TryPlan("b200-spot", three...)
	require.Error(t, err)
	assert.Equal(t, "invalid stack configuration:\njobs: the experiments' checkpoints at their peak need 24912 GB together (a 7 × 1152 GB + its Megatron conversion 144 GB, "+
		"b 7 × 1152 GB + its Megatron conversion 144 GB, c 7 × 1152 GB + its Megatron conversion 144 GB, the models' downloads and checked copies 288 GB), "+
		"more than the Lustre instance's 19327 GB (storage.capacityGib 18000), which they share; "+
		"allowed: fewer checkpoints kept (job.keepCheckpoints, jobs.<name>.keepCheckpoints), fewer experiments, or a larger storage.capacityGib", err.Error())
	plantest.Plan(t, "b200-spot", three[:2]...)
	// The experiments of one model share its download and checked copy; another model brings
	// its own.
	_, err = plantest.TryPlan("b200-spot", append(three, "jobs.c.model=Qwen/Qwen2.5-32B-Instruct", "jobs.c.recipe=")...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the models' downloads and checked copies 416 GB", "72B and 32B, each twice in bf16")
	// A stopped experiment's checkpoints stay on the volume: it counts what it kept.
	_, err = plantest.TryPlan("b200-spot", append(three, "jobs.c.enabled=false")...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "c 6 × 1152 GB")
}

// The experiments' checkpoints may fill the instance together exactly: two keeping 7 each hold
// 8 at their peak (16 bytes a parameter each) and a Megatron conversion (2 bytes), and share the
// model's download and checked copy (4 bytes): 2 × 130 + 4 = 264 bytes a parameter, and
// 19,327.352832 GB / 264 = 73.20966981818181B, the size written with all its digits at which the
// sum is the capacity to the last bit. The next size that can be written is refused.
func TestTheExperimentsCheckpointsMayFillTheVolumeExactly(t *testing.T) {
	two := []string{"jobs.a.keepCheckpoints=7", "jobs.b.keepCheckpoints=7"}
	bp, err := plantest.TryResolve("b200-spot", append(two, "job.modelSize=73.20966981818181B")...)
	require.NoError(t, err)
	require.Equal(t, bp.Volume.CapacityGB, bp.Volume.PeakGB, "the sum is the capacity to the last bit")
	_, err = plantest.TryResolve("b200-spot", append(two, "job.modelSize=73.20966981818182B")...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "jobs: the experiments' checkpoints at their peak need 19327 GB together")
}

// An experiment may start from another of the stack only when the other cannot be running
// (stopped, or the two do not fit the quota together) and, for verl, on the same GPU count.
func TestResumingFromAnotherExperimentOfTheQueue(t *testing.T) {
	_, err := plantest.TryPlan("smoke", "gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.resumeFrom=a")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `jobs.b.resumeFrom: experiment b: "a" is an experiment of this stack that can run at the same time as b (1 + 1 GPU nodes fit gpu.maxNodes 2): b would load a checkpoint a is still writing; allowed: stop a first (jobs.a.enabled=false), then start b`)
	plantest.Plan(t, "smoke", "gpu.maxNodes=2", "jobs.a.enabled=false", "jobs.b.resumeFrom=a")
	plantest.Plan(t, "smoke", "gpu.maxNodes=1", "jobs.a.maxSteps=4", "jobs.b.resumeFrom=a")

	_, err = plantest.TryPlan("smoke", "gpu.maxNodes=2", "jobs.a.enabled=false", "jobs.b.resumeFrom=a", "jobs.b.nodes=2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `jobs.b.resumeFrom: experiment b: "a" trains on 1 GPU node and b on 2: verl saves one checkpoint shard per GPU, which another GPU count cannot load; allowed: the same node count as a (jobs.b.nodes 1)`)
}

// NeMo RL loads a dataset by name from the one cache the experiments share: two pins of one
// dataset are refused, one pin for all of them plans.
func TestOneDatasetHasOnePinInTheQueue(t *testing.T) {
	other := `jobs.b.revisions["agentica-org/DeepScaleR-Preview-Dataset"]=0123456789abcdef0123456789abcdef01234567`
	_, err := plantest.TryPlan("b200-spot", "jobs.a.maxSteps=4", other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "jobs.b.revisions: experiments a and b pin the dataset agentica-org/DeepScaleR-Preview-Dataset differently (b6ae8c60f5c1f2b594e2140b91c49c9ad0949e29, 0123456789abcdef0123456789abcdef01234567)")
	plantest.Plan(t, "b200-spot", "jobs.a.maxSteps=4", "jobs.b.maxSteps=6")
	plantest.Plan(t, "b200-spot", "jobs.a.maxSteps=4", other, "jobs.a.enabled=false")
}

// An experiment's identity names its checkpoints, as the single run's default name does: a
// change of what it trains under the same key (the model, a revision, verl's GPU count) is a new
// experiment in a directory of its own, which leaves the earlier one's checkpoints alone; a
// change of how it trains (the learning rate, the steps) is the same experiment, which resumes.
// An experiment that starts from another of the stack starts from that one's directory.
func TestAnExperimentsIdentityNamesItsCheckpoints(t *testing.T) {
	dir := func(overrides ...string) string {
		t.Helper()
		_, xs := experiments(t, append([]string{"gpu.maxNodes=2", "jobs.a.maxSteps=4"}, overrides...)...)
		return xs["a"].Layout.Checkpoints()
	}
	same := dir()
	assert.Regexp(t, `^/data/checkpoints/a-[0-9a-f]{6}$`, same)
	assert.Equal(t, same, dir("jobs.a.learningRate=5e-6"), "how it trains: the same experiment")
	assert.Equal(t, same, dir("jobs.a.maxSteps=40"))
	assert.Equal(t, same, dir("jobs.a.priority=7"))
	for _, other := range [][]string{
		{"jobs.a.model=Qwen/Qwen2.5-1.5B-Instruct"},
		{`jobs.a.revisions["openai/gsm8k"]=0123456789abcdef0123456789abcdef01234567`},
		{"jobs.a.nodes=2"},
	} {
		assert.NotEqual(t, same, dir(other...), "%v: another experiment", other)
	}

	_, xs := experiments(t, "gpu.maxNodes=2", "jobs.a.enabled=false", "jobs.b.resumeFrom=a")
	assert.Contains(t, xs["b"].RayJob.Spec.Entrypoint, "RESUME_FROM="+xs["a"].Layout.Checkpoints()+" ")

	_, err := plantest.TryPlan("smoke", "gpu.maxNodes=2", "jobs."+strings.Repeat("x", infra.MaxQueuedNameLength+1)+".maxSteps=4")
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("is %d characters long; allowed: at most %d, since its RayJob and checkpoint directory add the hash of what it trains", infra.MaxQueuedNameLength+1, infra.MaxQueuedNameLength))
}

// Adding jobs leaves the run job trained: the plan says so, naming the run and how to continue
// it; the command it gives plans clean, silences the warning and resumes from that run's
// checkpoints. NeMo RL, where no experiment starts from another's, is told to remove jobs.
func TestAddingJobsSaysWhatBecomesOfTheStacksOwnRun(t *testing.T) {
	singleRun := plantest.Resolve(t, "smoke").Run.Layout.Run
	res := plantest.Plan(t, "smoke", "jobs.a.maxSteps=4")
	warning := ""
	for _, w := range res.Warnings {
		if w.Key == "jobs" && strings.Contains(w.Message, "the stack's own run") {
			warning = w.Message
		}
	}
	assert.Equal(t, "with jobs, job.* are the experiments' defaults and no experiment continues the stack's own run ("+singleRun+", checkpoints in /data/checkpoints/"+singleRun+"): "+
		"if the stack trained it, `pulumi up` stops it for good and its checkpoints stay; to continue it as an experiment: `pulumi config set --path jobs.a.resumeFrom "+singleRun+"`", warning)

	kept := plantest.Plan(t, "smoke", "jobs.a.maxSteps=4", "jobs.a.resumeFrom="+singleRun)
	for _, w := range kept.Warnings {
		assert.NotContains(t, w.Message, "the stack's own run", "an experiment continues it")
	}
	bp := plantest.Resolve(t, "smoke", "jobs.a.maxSteps=4", "jobs.a.resumeFrom="+singleRun)
	require.Len(t, bp.Run.Experiments, 1)
	rayJob, err := json.Marshal(bp.Run.Experiments[0].RayJob)
	require.NoError(t, err)
	assert.Contains(t, string(rayJob), "RESUME_FROM=/data/checkpoints/"+singleRun, "the experiment starts from the run's newest checkpoint")

	nemo := plantest.Plan(t, "b200-spot", "jobs.a.maxSteps=4")
	found := false
	for _, w := range nemo.Warnings {
		if strings.Contains(w.Message, "the stack's own run") {
			found = true
			assert.Contains(t, w.Message, "no experiment can continue it (nemo-rl: ")
			assert.Contains(t, w.Message, "remove jobs (`pulumi config rm jobs`)")
		}
	}
	assert.True(t, found, "b200-spot: %v", nemo.Warnings)
}

// The seam between the plan and the install step: with jobs, the workload namespace the plan
// applies carries the label that the install step narrows Kueue's webhooks to (its
// NAMESPACE_LABEL), so the stack's pods and jobs still go through Kueue; without jobs it carries
// none, and no webhook of Kueue's is called there.
func TestTheQueuesNamespaceIsTheOneKueuesWebhooksSelect(t *testing.T) {
	namespaceLabels := func(res *offline.Result) map[string]any {
		t.Helper()
		for _, m := range offline.Manifests(res) {
			if m.Object["kind"] == "Namespace" {
				labels, _ := m.Object["metadata"].(map[string]any)["labels"].(map[string]any)
				return labels
			}
		}
		require.Fail(t, "no Namespace in the plan")
		return nil
	}
	queued := plantest.Plan(t, "smoke", "jobs.a.maxSteps=4")
	key, value, ok := strings.Cut(queue.InstallEnv("gke-rl-smoke")["NAMESPACE_LABEL"], "=")
	require.True(t, ok)
	assert.Equal(t, value, namespaceLabels(queued)[key])
	assert.NotContains(t, namespaceLabels(plantest.Plan(t, "smoke")), key)
}

// The experiments of a queue carry no alias of the single run's former names: two of them would
// claim one URN (a parent's type and a name, which every experiment's children share), and a
// stack coming from the state before the rename with two experiments would fail. The single
// run's children keep theirs.
func TestQueuedExperimentsClaimNoAliasTwice(t *testing.T) {
	res := plantest.Plan(t, "smoke", "gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.maxSteps=4")
	claimed := map[string]string{}
	for _, r := range res.Resources {
		for _, a := range r.Options.Aliases {
			other, taken := claimed[a]
			assert.False(t, taken, "%s is claimed by %s and %s", a, other, r.URN)
			claimed[a] = r.URN
		}
	}
	assert.Empty(t, res.Find("kubernetes:ray.io/v1:RayJob", "grpo-a-rayjob").Options.Aliases)
	assert.Empty(t, res.Find("kubernetes:batch/v1:Job", "grpo-b-data-prep").Options.Aliases)
	single := plantest.Plan(t, "smoke")
	assert.NotEmpty(t, single.Find("kubernetes:ray.io/v1:RayJob", "grpo-rayjob").Options.Aliases, "the single run keeps its former name")
}

// The queue's checks at their limits, each one unit under and over, the verdicts worked out by
// hand: an experiment's key is at most 40 characters (KubeRay v1.5.0's RayJob names stop at
// MaxRayClusterNameLength 53 − 6 = 47, less "-" and the 6 hex digits of its identity: 47 − 7 =
// 40); a priority is 0 to 1,000,000; an experiment takes at most the queue's nodes (smoke's H200
// pool with gpu.maxNodes=2: 2 nodes, 16 GPUs; 3 nodes are 24 GPUs).
func TestTheQueueChecksAtTheirLimits(t *testing.T) {
	queued := func(settings ...string) []string { return append([]string{"gpu.maxNodes=2"}, settings...) }
	assertAccepted(t, "smoke", map[string][]string{
		"a key of 40 characters": queued("jobs." + strings.Repeat("x", 40) + ".maxSteps=4"),
		"the highest priority":   queued("jobs.a.priority=1000000"),
		"the lowest priority":    queued("jobs.a.priority=0"),
		"the whole quota":        queued("jobs.big.nodes=2"),
	})
	assertRefused(t, []refusal{
		{"a key of 41 characters", "smoke", queued("jobs." + strings.Repeat("x", 41) + ".maxSteps=4"), "jobs." + strings.Repeat("x", 41), "is 41 characters long; allowed: at most 40"},
		{"a priority over the highest", "smoke", queued("jobs.a.priority=1000001"), "jobs.a.priority", "1000001 is out of range; allowed: 0 to 1000000"},
		{"a node over the quota", "smoke", queued("jobs.big.nodes=3"), "jobs.big.nodes", "experiment big takes 3 nodes (24 GPUs), more than the queue's quota of 16 (gpu.maxNodes 2 × 8 GPUs), so it would wait forever; allowed: 1 to 2, or a larger gpu.maxNodes"},
	})
}
