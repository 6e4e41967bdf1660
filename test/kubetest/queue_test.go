package kubetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"gke-rl/infra/offline"
	"gke-rl/monitoring"
	"gke-rl/test/clitest"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

// queued is the smoke stack with experiments in `jobs` on a GPU pool of one node: the queue's
// quota is one experiment at a time.
func queued(t *testing.T, experiments ...string) *offline.Result {
	t.Helper()
	return plantest.Plan(t, "smoke", append([]string{"gpu.maxNodes=1"}, experiments...)...)
}

// jobOf is the RayJob of the experiment key in a plan: its key and the hash of what it trains.
func jobOf(t *testing.T, res *offline.Result, key string) string {
	t.Helper()
	for _, x := range res.Blueprint.Run.Experiments {
		if x.Name == key && x.RayJob != nil {
			return x.RayJob.Name
		}
	}
	t.Fatalf("no experiment %s with a RayJob in the plan", key)
	return ""
}

// queueCluster is the control plane with KubeRay's controllers and Kueue's manager.
func queueCluster(t *testing.T) testCluster {
	t.Helper()
	c := newCluster(t)
	c.cp.StartKueue(t)
	return c
}

// rayJobNamed reads a RayJob as the controllers left it.
func (c testCluster) rayJobNamed(t *testing.T, ns, name string) *rayv1.RayJob {
	t.Helper()
	u, err := c.cp.As(t, kubetest.Admin).Get(context.Background(), map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob",
		"metadata": map[string]any{"name": name, "namespace": ns}})
	require.NoError(t, err)
	var job rayv1.RayJob
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job))
	return &job
}

// podsOf are the pods KubeRay made for a RayJob: its cluster's and its submitter's.
func (c testCluster) podsOf(t *testing.T, ns, job string) []corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var pods []corev1.Pod
	selectors := []string{"batch.kubernetes.io/job-name=" + job}
	if cluster := c.rayJobNamed(t, ns, job).Status.RayClusterName; cluster != "" {
		selectors = append(selectors, utils.RayClusterLabelKey+"="+cluster)
	}
	for _, selector := range selectors {
		list, err := c.cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		require.NoError(t, err)
		pods = append(pods, list.Items...)
	}
	return pods
}

// running waits until Kueue has admitted the experiment, its workers run on the GPU pool and
// its submitter has submitted the run, which the fake dashboard then reports RUNNING.
func (c testCluster) running(t *testing.T, ns, name string) *rayv1.RayJob {
	t.Helper()
	var job *rayv1.RayJob
	kubetest.Eventually(t, 120*time.Second, "experiment "+name+" admitted and submitted", func() (bool, string) {
		job = c.rayJobNamed(t, ns, name)
		workers, submitted := 0, false
		for _, p := range c.podsOf(t, ns, name) {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			if p.Labels[utils.RayNodeTypeLabelKey] == string(rayv1.WorkerNode) {
				workers++
			}
			if p.Labels["batch.kubernetes.io/job-name"] == name {
				submitted = true
			}
		}
		return !job.Spec.Suspend && workers > 0 && submitted && job.Status.JobId != "",
			fmt.Sprintf("suspend %v, %s, %d running workers, submitted %v; %s", job.Spec.Suspend, job.Status.JobDeploymentStatus, workers, submitted, c.cp.Pods(context.Background()))
	})
	c.dash.SetJob(job.Status.JobId, "RUNNING")
	return job
}

// waits checks, for a while, that the experiment stays suspended with no pod: it holds no GPU
// and no node.
func (c testCluster) waits(t *testing.T, ns, name string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		job := c.rayJobNamed(t, ns, name)
		require.True(t, job.Spec.Suspend, "experiment %s is suspended while it waits (%s)", name, job.Status.JobDeploymentStatus)
		require.Empty(t, c.podsOf(t, ns, name), "experiment %s has no pod while it waits", name)
	}
}

// finish ends an experiment's Ray job: the submitter, which follows it, completes.
func (c testCluster) finish(t *testing.T, ns string, job *rayv1.RayJob) {
	t.Helper()
	c.dash.SetJob(job.Status.JobId, "SUCCEEDED")
	require.NoError(t, c.cp.CompleteRunningPods(context.Background(), ns, "batch.kubernetes.io/job-name="+job.Name))
	kubetest.Eventually(t, 60*time.Second, "experiment "+job.Name+" complete", func() (bool, string) {
		cur := c.rayJobNamed(t, ns, job.Name)
		return cur.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusComplete, string(cur.Status.JobDeploymentStatus)
	})
}

// onlyNew is the later plan's resources that the earlier one lacks: what `pulumi up` creates
// when an experiment is added (the others are unchanged, so not applied again).
func onlyNew(before, after *offline.Result) *offline.Result {
	had := map[string]bool{}
	for _, r := range before.Resources {
		had[r.URN] = true
	}
	rec := *after.Recording
	rec.Resources = nil
	for _, r := range after.Resources {
		if !had[r.URN] {
			rec.Resources = append(rec.Resources, r)
		}
	}
	out := *after
	out.Recording = &rec
	return &out
}

// Two experiments applied in Pulumi's order on a GPU pool that holds one: Kueue admits the
// first, whose pods run; the second waits suspended with no pod until the first ends, then
// runs by itself. A third of higher priority, added while the second waits, goes ahead of it.
func TestQueueRunsExperimentsInTurnByPriority(t *testing.T) {
	c := queueCluster(t)
	res := queued(t, "jobs.first.maxSteps=4", "jobs.second.maxSteps=4")
	ns := res.Blueprint.Namespace
	c.up(t, res)

	first := c.running(t, ns, jobOf(t, res, "first"))
	c.waits(t, ns, jobOf(t, res, "second"), 5*time.Second)
	// The day after: `pulumi up --refresh` reads each object back, pruned to the program's
	// fields as pulumi-kubernetes does, and replaces nothing the controllers wrote (Kueue's
	// spec.suspend of the admitted experiment).
	assert.Empty(t, c.cp.RefreshReplacements(t, res), "one experiment admitted, one waiting")

	withUrgent := queued(t, "jobs.first.maxSteps=4", "jobs.second.maxSteps=4", "jobs.urgent.maxSteps=4", "jobs.urgent.priority=10")
	added := onlyNew(res, withUrgent)
	require.NotEmpty(t, added.Resources)
	for _, r := range added.Resources {
		assert.True(t, strings.Contains(r.Name, "urgent") || strings.HasSuffix(r.Name, "-priority-10"),
			"adding an experiment creates its objects and its priority's class only, not %s", r.Name)
	}
	c.up(t, added)
	c.waits(t, ns, jobOf(t, withUrgent, "urgent"), 3*time.Second)

	c.finish(t, ns, first)
	urgent := c.running(t, ns, jobOf(t, withUrgent, "urgent"))
	c.waits(t, ns, jobOf(t, res, "second"), 3*time.Second)

	c.finish(t, ns, urgent)
	c.running(t, ns, jobOf(t, res, "second"))
	assert.False(t, c.rayJobNamed(t, ns, first.Name).Spec.Suspend, "Kueue's admission is in the live object")
	assert.Empty(t, c.cp.RefreshReplacements(t, withUrgent), "two experiments finished, the third admitted after them")

	// The operations commands read the queue as it is: the real kubectl, on the stack's outputs.
	status := kubectlOutput(t, c, withUrgent.Outputs["queue"].(string))
	assert.Regexp(t, `(?m)^first-[0-9a-f]{6}\s+0\s+True\s+True\s`, status, "the first experiment finished")
	assert.Regexp(t, `(?m)^urgent-[0-9a-f]{6}\s+10\s+True\s+True\s`, status, "the urgent one finished")
	assert.Regexp(t, `(?m)^second-[0-9a-f]{6}\s+0\s+True\s+<none>\s`, status, "the second one is admitted and runs")
	quota := kubectlOutput(t, c, withUrgent.Outputs["queueQuota"].(string))
	assert.Regexp(t, `(?m)^`+ns+`\s+8\s+8\s+1\s+0\s*$`, quota, "8 GPUs, all used by the one admitted experiment, none pending")

	// The dashboard's queue panels select Kueue's own log lines: each admission of the three,
	// and the requeues of those that waited.
	logLines, err := os.ReadFile(filepath.Join(c.cp.Dir, "kueue.log"))
	require.NoError(t, err)
	// Each line as Cloud Logging parses it (jsonPayload), selected as the panels' filters do:
	// the event's text, and jsonPayload.workload.namespace.
	matching := func(event string) []string {
		var names []string
		for _, l := range strings.Split(string(logLines), "\n") {
			var entry struct {
				Msg      string `json:"msg"`
				Workload struct{ Name, Namespace string }
			}
			if json.Unmarshal([]byte(l), &entry) == nil && entry.Msg == event && entry.Workload.Namespace == ns {
				names = append(names, entry.Workload.Name)
			}
		}
		return names
	}
	filter := monitoring.QueueLogsFilter(res.Blueprint.Cluster.Name, ns, monitoring.QueueAdmitted)
	require.Contains(t, filter, `jsonPayload.workload.namespace="`+ns+`"`)
	admitted, requeued := matching(monitoring.QueueAdmitted), matching(monitoring.QueueWaiting)
	assert.Len(t, admitted, 3, "one admission line for each experiment: %v", admitted)
	for _, name := range []string{"first", "urgent", "second"} {
		assert.True(t, slices.ContainsFunc(admitted, func(w string) bool { return strings.HasPrefix(w, "rayjob-"+name+"-") }), "%s's admission is logged: %v", name, admitted)
	}
	assert.True(t, slices.ContainsFunc(requeued, func(w string) bool { return strings.HasPrefix(w, "rayjob-second-") }), "second's wait is logged: %v", requeued)

	// So do the operations guide's (written for smoke's namespace and queue).
	guide, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "operations.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(guide), "## Several experiments: a queue")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n## ")
	cmds, err := clitest.MarkdownCommands("docs/operations.md", section, "kubectl")
	require.NoError(t, err)
	require.Len(t, cmds, 3)
	for _, cmd := range cmds {
		out := kubectlOutput(t, c, cmd.Text)
		assert.GreaterOrEqual(t, strings.Count(out, "\n"), 1, "%s lists something:\n%s", cmd.Text, out)
	}
}

// kubectlOutput runs a documented kubectl command line against the control plane.
func kubectlOutput(t *testing.T, c testCluster, command string) string {
	t.Helper()
	clitest.Tool(t, "kubectl")
	require.True(t, strings.HasPrefix(command, "kubectl "), command)
	r := clitest.RunScript(t, command, "KUBECONFIG="+c.cp.Kubeconfig(t, kubetest.Admin))
	require.Zero(t, r.Code, "%s: %s", command, r.Stderr)
	t.Logf("%s\n%s", command, r.Stdout)
	return strings.TrimSpace(r.Stdout)
}
