package kubetest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/offline"
	"gke-rl/monitoring"
	"gke-rl/test/clitest"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

// queueCluster is the control plane with KubeRay's controllers and Kueue's manager.
func queueCluster(t *testing.T) testCluster {
	t.Helper()
	c := newCluster(t)
	c.cp.StartKueue(t)
	return c
}

// experiments follows the queued experiments of namespace ns.
func (c testCluster) experiments(ns string) kubetest.Experiments {
	return kubetest.Experiments{CP: c.cp, Dash: c.dash, Namespace: ns}
}

// changed is the later plan's resources that the earlier one lacks or has with other inputs:
// what `pulumi up` creates or updates when an experiment is added (the others are unchanged, so
// not applied again).
func changed(before, after *offline.Result) *offline.Result {
	had := map[string]*offline.Resource{}
	for _, r := range before.Resources {
		had[r.URN] = r
	}
	rec := *after.Recording
	rec.Resources = nil
	for _, r := range after.Resources {
		if old, ok := had[r.URN]; !ok || !old.Inputs.DeepEquals(r.Inputs) {
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
	res := plantest.Queued(t, "jobs.first.maxSteps=4", "jobs.second.maxSteps=4")
	ns := res.Blueprint.Namespace
	x := c.experiments(ns)
	c.up(t, res)

	first := x.Running(t, plantest.RayJobOf(t, res, "first"))
	x.Waits(t, plantest.RayJobOf(t, res, "second"), 5*time.Second)
	// The day after: `pulumi up --refresh` reads each object back, pruned to the program's
	// fields as pulumi-kubernetes does, and replaces nothing the controllers wrote (Kueue's
	// spec.suspend of the admitted experiment).
	assert.Empty(t, c.cp.RefreshReplacements(t, res), "one experiment admitted, one waiting")

	withUrgent := plantest.Queued(t, "jobs.first.maxSteps=4", "jobs.second.maxSteps=4", "jobs.urgent.maxSteps=4", "jobs.urgent.priority=10")
	added := changed(res, withUrgent)
	require.NotEmpty(t, added.Resources)
	for _, r := range added.Resources {
		// The launches' Role names the new RayJob too; the ClusterQueue covers what it requests.
		updated := r.Name == "queue-role-gke-rl-launcher" || r.Name == "queue-clusterqueue-"+ns
		assert.True(t, strings.Contains(r.Name, "urgent") || strings.HasSuffix(r.Name, "-priority-10") || updated,
			"adding an experiment creates its objects and its priority's class only, and updates the launches' Role and the ClusterQueue, not %s", r.Name)
	}
	c.up(t, added)
	x.Waits(t, plantest.RayJobOf(t, withUrgent, "urgent"), 3*time.Second)

	x.Finish(t, first)
	urgent := x.Running(t, plantest.RayJobOf(t, withUrgent, "urgent"))
	x.Waits(t, plantest.RayJobOf(t, res, "second"), 3*time.Second)

	x.Finish(t, urgent)
	x.Running(t, plantest.RayJobOf(t, res, "second"))
	assert.False(t, x.RayJob(t, first.Name).Spec.Suspend, "Kueue's admission is in the live object")
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
