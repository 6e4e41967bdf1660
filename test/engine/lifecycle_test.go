package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/cmd"
	"gke-rl/infra/offline"
	"gke-rl/test/engine"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

// rayJobType is the type of the program's RayJobs.
const rayJobType = "kubernetes:ray.io/v1:RayJob"

// cluster is the control plane with KubeRay's reconcilers, Kueue's manager and the plan's node
// pools, and a loop that plays the pods' scripts: a Job's pod completes (its script succeeded)
// unless its Job is one the test has made fail, whose pods fail; KubeRay's submitters run
// until the test ends their Ray job.
type cluster struct {
	kubetest.Experiments

	mu      sync.Mutex
	failing map[string]bool // Job name prefixes whose pods fail
	// volume stands for the shared volume, where the launches read a finished run's record.
	volume string
}

func newCluster(t *testing.T, plan *offline.Result) *cluster {
	t.Helper()
	cp := kubetest.Start(t, kubetest.Options{})
	cp.InstallCRDs(t, kubetest.UpstreamCRDs(t)...)
	dash := kubetest.NewDashboard(t)
	cp.StartKubeRay(t, dash)
	cp.StartKueue(t)
	nodes := cp.NewNodes(t)
	ctx := context.Background()
	for _, r := range plan.Resources {
		if r.Type != "gcp:container/nodePool:NodePool" {
			continue
		}
		p, err := kubetest.PoolOf(r, plan.Blueprint.Zone)
		require.NoError(t, err)
		require.NoError(t, nodes.CreatePool(ctx, p))
	}
	ns := plan.Blueprint.Namespace
	c := &cluster{Experiments: kubetest.Experiments{CP: cp, Dash: dash, Namespace: ns}, failing: map[string]bool{}, volume: t.TempDir()}
	loop, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go c.playJobs(loop)
	return c
}

// fail makes the pods of the Jobs whose names start with prefix fail (ok=false) or succeed.
func (c *cluster) fail(prefix string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failing[prefix] = !ok
}

func (c *cluster) fails(job string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for prefix, f := range c.failing {
		if f && strings.HasPrefix(job, prefix) {
			return true
		}
	}
	return false
}

// playJobs ends the running pods of the Jobs the program made (not KubeRay's submitters), as
// their scripts would: completed, or failed with exit code 1. An experiment's launch runs its
// script for real (kubetest.RunLaunches): it is what puts the RayJob in Kueue's queue.
func (c *cluster) playJobs(ctx context.Context) {
	for ctx.Err() == nil {
		time.Sleep(300 * time.Millisecond)
		// Every namespace's: a stack that moves namespace has Jobs in both for a while.
		jobs, err := c.CP.Client.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, j := range jobs.Items {
			if len(j.OwnerReferences) > 0 {
				continue // a submitter: it runs as long as its Ray job
			}
			selector := "batch.kubernetes.io/job-name=" + j.Name
			if kubetest.IsLaunch(j.Spec.Template.Spec) {
				_, _ = c.CP.RunLaunches(ctx, j.Namespace, j.Name, c.volume)
				continue
			}
			if !c.fails(j.Name) {
				_ = c.CP.CompleteRunningPods(ctx, j.Namespace, selector)
				continue
			}
			pods, err := c.CP.Client.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				continue
			}
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					_ = c.CP.FailPod(ctx, &p)
				}
			}
		}
	}
}

// compare is what `plan --compare` prints for after against the earlier plan before.
func compare(t *testing.T, before []string, after []string) string {
	t.Helper()
	file := plantest.PlanFile(t, "smoke", nil, append([]string{"gpu.maxNodes=1"}, before...)...)
	args := []string{"--stack", "smoke", "--compare", file, "--config", "gpu.maxNodes=1"}
	for _, s := range after {
		args = append(args, "--config", s)
	}
	code, out, errOut := plantest.Main(t, args...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	return out
}

// compareLine is a resource line of `plan --compare`: its symbol, the Kubernetes type and the
// logical name.
var compareLine = regexp.MustCompile(`(?m)^  (\+-|\+|-|~)\s+(kubernetes:\S+) ([^:\s]+)`)

// saidChanges are the Kubernetes objects `plan --compare` says `pulumi up` changes, by type and
// name, with its symbol.
func saidChanges(out string) map[string]string {
	said := map[string]string{}
	for _, m := range compareLine.FindAllStringSubmatch(out, -1) {
		said[m[2]+" "+m[3]] = m[1]
	}
	return said
}

// symbols are `plan --compare`'s symbols of the engine's steps.
var symbols = map[apitype.OpType]string{
	apitype.OpCreate: "+", apitype.OpDelete: "-", apitype.OpUpdate: "~", apitype.OpReplace: "+-",
}

// engineChanges are the Kubernetes objects the engine changed, by type and name, with the
// symbol `plan --compare` prints for the step.
func engineChanges(steps engine.Steps) map[string]string {
	did := map[string]string{}
	for urn, op := range steps.Changing() {
		typ, name := engine.TypeAndName(urn)
		if strings.HasPrefix(typ, "kubernetes:") {
			did[typ+" "+name] = symbols[op]
		}
	}
	return did
}

func requireOK(t *testing.T, s *engine.Stack, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Log.String())
	}
}

// The life of a queue of experiments under the real engine: up; the controllers admit one and
// hold the other; `pulumi up --refresh` after they wrote their fields changes nothing, for an
// admitted, a waiting and a finished experiment; a priority change of the running experiment
// gives its GPUs to the waiting one, as `plan --compare` said; a learning-rate change replaces
// only that experiment's RayJob, which carries the new rate; a failed preparation fails the
// update without holding back the others and, fixed, recovers on the next `up`; destroy.
func TestLifecycleUnderTheRealEngine(t *testing.T) {
	base := []string{"jobs.first.maxSteps=4", "jobs.second.maxSteps=4"}
	plan := plantest.Queued(t, base...)
	c := newCluster(t, plan)
	s := engine.NewStack(t, plan, c.CP.Kubeconfig(t, kubetest.Admin))
	first, second := plantest.RayJobOf(t, plan, "first"), plantest.RayJobOf(t, plan, "second")

	steps, err := s.Up(false)
	requireOK(t, s, err)
	assert.Equal(t, apitype.OpCreate, steps.Of(rayJobType, "grpo-first-rayjob"))
	c.Running(t, first)
	c.Waits(t, second, 3*time.Second)

	// The day after: the controllers wrote Kueue's admission and KubeRay's status.
	steps, err = s.Preview(true)
	requireOK(t, s, err)
	assert.Empty(t, steps.Changing().String(), "`pulumi up --refresh` with one experiment admitted and one waiting")

	// A priority change of the running experiment: its RayJob is replaced, and the waiting
	// one takes the GPUs, as `plan --compare` says before `up`.
	urgent := append(append([]string{}, base...), "jobs.first.priority=10")
	said := compare(t, base, urgent)
	assert.Contains(t, said, "it gives its GPUs away: the queue admits the first waiting experiment that fits them (second, priority 0")
	s.Use(plantest.Queued(t, urgent...))
	steps, err = s.Up(true)
	requireOK(t, s, err)
	assert.Equal(t, map[string]string{
		rayJobType + " grpo-first-rayjob": "+-",
		// The launch of the new RayJob, which queues it.
		"kubernetes:batch/v1:Job grpo-first-launch": "+-",
		"kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass queue-workloadpriorityclass-gke-rl-smoke-priority-10": "+",
	}, engineChanges(steps), "the engine replaces the running experiment's RayJob and its launch, and creates its priority's class; the waiting one is not touched")
	assert.Equal(t, saidChanges(said), engineChanges(steps), "`plan --compare` said what the engine did")
	// The replacement is created suspended, for Kueue to admit, though the refresh read the
	// running one's spec.suspend (false) into the state.
	assert.Equal(t, true, suspendIn(t, s, "grpo-first-rayjob"), "the replacement RayJob is created suspended")
	secondRun := c.Running(t, second)
	c.Waits(t, first, 3*time.Second)

	// The waiting experiment, replaced after a refresh read its live state, waits; a finished
	// one stays as it is.
	c.Finish(t, secondRun)
	firstRun := c.Running(t, first)
	steps, err = s.Preview(true)
	requireOK(t, s, err)
	assert.Empty(t, steps.Changing().String(), "`pulumi up --refresh` with one experiment finished and one admitted")

	// A learning-rate change: only that experiment's RayJob is replaced, and the new one
	// carries the new rate.
	lr := append(append([]string{}, urgent...), "jobs.first.learningRate=5e-6")
	said = compare(t, urgent, lr)
	assert.Contains(t, said, "Changed: actor_rollout_ref.actor.optim.lr set to 5e-06 (jobs.first.learningRate): applies: the run resumes the weights with a fresh optimizer")
	s.Use(plantest.Queued(t, lr...))
	steps, err = s.Up(true)
	requireOK(t, s, err)
	assert.Equal(t, map[string]string{rayJobType + " grpo-first-rayjob": "+-", "kubernetes:batch/v1:Job grpo-first-launch": "+-"},
		engineChanges(steps), "only the changed experiment's RayJob is replaced, with its launch")
	assert.Equal(t, saidChanges(said), engineChanges(steps), "`plan --compare` said what the engine did")
	assert.Contains(t, c.RayJob(t, first).Spec.Entrypoint, "actor_rollout_ref.actor.optim.lr=5e-06", "the new RayJob trains with the new rate")
	assert.NotEqual(t, firstRun.UID, c.RayJob(t, first).UID, "a new RayJob, under the same name and checkpoint directory")

	// A change common to every experiment, with one of them finished: both RayJobs are
	// replaced; the running one goes back in the queue, and the finished one's launch reads the
	// record its run left and keeps it out: no workload, no Ray cluster, no GPU node.
	c.recordFinished(t, plantest.Queued(t, lr...), "second", "4 0")
	common := append(append([]string{}, lr...), "job.klCoef=0.002")
	said = compare(t, lr, common)
	s.Use(plantest.Queued(t, common...))
	steps, err = s.Up(true)
	requireOK(t, s, err)
	assert.Equal(t, map[string]string{
		rayJobType + " grpo-first-rayjob": "+-", "kubernetes:batch/v1:Job grpo-first-launch": "+-",
		rayJobType + " grpo-second-rayjob": "+-", "kubernetes:batch/v1:Job grpo-second-launch": "+-",
	}, engineChanges(steps), "both experiments' RayJobs are replaced, each with its launch")
	assert.Equal(t, saidChanges(said), engineChanges(steps), "`plan --compare` said what the engine did")
	assert.Contains(t, said, "a finished one stays out of the queue, suspended with no Ray cluster and no GPU node")
	c.Running(t, first)
	c.Waits(t, second, 3*time.Second)
	finished := c.RayJob(t, second)
	assert.NotContains(t, finished.Labels, "kueue.x-k8s.io/queue-name", "the finished experiment is not in the queue")
	assert.Contains(t, finished.Annotations["gke-rl/launch"], "finished before (maxSteps and epochs 4 0, now 4 0): not queued")
	steps, err = s.Preview(true)
	requireOK(t, s, err)
	assert.Empty(t, steps.Changing().String(), "`pulumi up --refresh` with one experiment queued by its launch and one left out")

	// A preparation that fails: the update fails on it, and the other experiments are not
	// held back; fixed, the next `up` replaces the failed Job and goes on.
	third := append(append([]string{}, common...), "jobs.third.maxSteps=4", "jobs.third.dataset=math")
	withThird := plantest.Queued(t, third...)
	prep := ""
	for _, r := range withThird.Resources {
		if r.Type == "kubernetes:batch/v1:Job" && r.Name == "grpo-third-data-prep" {
			m, _ := offline.ManifestOf(r)
			prep = m.Object["metadata"].(map[string]any)["name"].(string)
		}
	}
	require.NotEmpty(t, prep, "the third experiment has a preparation")
	c.fail(prep, false)
	s.Use(withThird)
	_, err = s.Up(false)
	require.Error(t, err, "the update fails on the failed preparation")
	c.fail(prep, true)
	steps, err = s.Up(false)
	requireOK(t, s, err)
	assert.Equal(t, apitype.OpReplace, steps.Of("kubernetes:batch/v1:Job", "grpo-third-data-prep"), steps.String())
	assert.Equal(t, apitype.OpCreate, steps.Of(rayJobType, "grpo-third-rayjob"), steps.String())

	// A new release of the framework: each experiment is a new one, under a name of its own,
	// its RayJob replaced under the same resource and its preparation run again for the
	// release's checkout, as `plan --compare` said; the queue admits the new ones as before.
	release := append(append([]string{}, third...), "job.frameworkRelease=v0.7.0",
		"ray.image=verlai/verl:vllm012.latest@sha256:"+strings.Repeat("5", 64), "ray.version=2.53.0")
	said = compare(t, third, release)
	assert.Contains(t, said, "Experiment first (queue): a new one under the same name, since what it trains changed (the framework or its release")
	withRelease := plantest.Queued(t, release...)
	newFirst := plantest.RayJobOf(t, withRelease, "first")
	require.NotEqual(t, first, newFirst, "the release names another experiment")
	s.Use(withRelease)
	steps, err = s.Up(false)
	requireOK(t, s, err)
	assert.Equal(t, saidChanges(said), engineChanges(steps), "`plan --compare` said what the engine did")
	assert.Equal(t, "+-", engineChanges(steps)[rayJobType+" grpo-first-rayjob"], steps.String())
	assert.Contains(t, c.RayJob(t, newFirst).Spec.Entrypoint, "actor_rollout_ref.rollout.mode=async", "the new experiment runs v0.7.0")
	_, err = c.CP.As(t, kubetest.Admin).Get(context.Background(), map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob",
		"metadata": map[string]any{"name": first, "namespace": c.Namespace}})
	assert.True(t, apierrors.IsNotFound(err), "the v0.6.0 experiment's RayJob is gone (its checkpoints stay on the volume): %v", err)
	first, second = newFirst, plantest.RayJobOf(t, withRelease, "second")
	newThird := plantest.RayJobOf(t, withRelease, "third")
	// The day after the move: the queue admits one of the new experiments (which one depends on
	// the order of the engine's steps: the old ones free the quota as the new ones appear) and
	// holds the others; `pulumi up --refresh` after the controllers wrote their fields proposes
	// nothing.
	admitted, _ := c.OneRunning(t, first, second, newThird)
	for _, name := range []string{first, second, newThird} {
		if name != admitted {
			c.Waits(t, name, time.Second)
		}
	}
	steps, err = s.Preview(true)
	requireOK(t, s, err)
	assert.Empty(t, steps.Changing().String(), "`pulumi up --refresh` after the move to v0.7.0")

	requireOK(t, s, s.Destroy())
	for _, name := range []string{first, second} {
		_, err := c.CP.As(t, kubetest.Admin).Get(context.Background(), map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob",
			"metadata": map[string]any{"name": name, "namespace": c.Namespace}})
		assert.True(t, apierrors.IsNotFound(err), "destroy deletes RayJob %s: %v", name, err)
	}
}

// recordFinished writes what run.sh writes when an experiment's run succeeds: its budget, in a
// record among its checkpoints, on the directory standing for the shared volume.
func (c *cluster) recordFinished(t *testing.T, plan *offline.Result, key, budget string) {
	t.Helper()
	for _, x := range plan.Blueprint.Run.Experiments {
		if x.Name != key {
			continue
		}
		dir := filepath.Join(c.volume, strings.TrimPrefix(x.Layout.Checkpoints(), plan.Blueprint.Run.Layout.Root))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".gke-rl-trained"), []byte(budget+"\n"), 0o644))
		return
	}
	t.Fatalf("no experiment %s in the plan", key)
}

// suspendIn is the spec.suspend the stack's state holds for a RayJob.
func suspendIn(t *testing.T, s *engine.Stack, name string) any {
	t.Helper()
	in, err := s.Inputs(rayJobType, name)
	require.NoError(t, err)
	spec, _ := in["spec"].(map[string]any)
	return spec["suspend"]
}
