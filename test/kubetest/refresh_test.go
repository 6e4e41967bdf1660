package kubetest_test

import (
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

// The prune keeps what the program set, in the program's shape: fields the API server or a
// controller added are dropped, values the controllers changed are kept, and a list keeps the
// program's length (pulumi-kubernetes v4.32.0, pruneMap and pruneSlice).
func TestPruneKeepsTheProgramsShape(t *testing.T) {
	program := map[string]any{"spec": map[string]any{"suspend": true, "entrypoint": "x",
		"containers": []any{map[string]any{"name": "a"}}}}
	live := map[string]any{"status": map[string]any{"jobStatus": "RUNNING"}, "spec": map[string]any{"suspend": false, "entrypoint": "x", "shutdownAfterJobFinishes": true,
		"containers": []any{map[string]any{"name": "a", "imagePullPolicy": "Always"}, map[string]any{"name": "b"}}}}
	assert.Equal(t, map[string]any{"spec": map[string]any{"suspend": false, "entrypoint": "x",
		"containers": []any{map[string]any{"name": "a"}}}}, kubetest.Prune(live, program))
}

// A changed value under a replace-on-change path is a replacement unless it is ignored; one
// outside every such path is an update, not reported.
func TestReplacementsAreChangesUnderReplaceOnChangeOnly(t *testing.T) {
	program := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1"}}, "spec": map[string]any{"suspend": true, "n": int64(1)}}
	live := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1", "added": "x"}}, "spec": map[string]any{"suspend": false, "n": int64(1)}}
	assert.Equal(t, []string{"spec.suspend: applied true, refreshed false"}, kubetest.Replacements(program, live, []string{"spec"}, nil))
	assert.Empty(t, kubetest.Replacements(program, live, []string{"spec"}, []string{"spec.suspend"}))
	assert.Empty(t, kubetest.Replacements(program, live, []string{"metadata.labels"}, nil), "a label a controller adds is pruned")
	rc := map[string]any{"spec": map[string]any{"workerGroupSpecs": []any{map[string]any{"replicas": int64(1), "template": "t"}}}}
	scaled := map[string]any{"spec": map[string]any{"workerGroupSpecs": []any{map[string]any{"replicas": int64(2), "template": "t"}}}}
	assert.Empty(t, kubetest.Replacements(rc, scaled, []string{"spec.workerGroupSpecs[*].template"}, nil), "the autoscaler's replicas are an update")
	assert.Len(t, kubetest.Replacements(rc, scaled, []string{"spec.workerGroupSpecs[*].replicas"}, nil), 1)
}

// The day after, on one control plane with KubeRay's and Kueue's controllers: two experiments of
// a queue on one GPU node, the first admitted, run and finished, the second admitted after it
// and running. The stack is refreshed as pulumi-kubernetes refreshes it (each object read back
// and pruned to the program's fields) and compared with the program's objects: nothing the
// controllers wrote (Kueue's spec.suspend, KubeRay's status) makes `pulumi up --refresh`
// replace an experiment. The single run, submitted, holds the same.
func TestRefreshAfterTheControllersReplacesNothing(t *testing.T) {
	t.Run("queue", func(t *testing.T) {
		c := queueCluster(t)
		res := queued(t, "jobs.first.maxSteps=4", "jobs.second.maxSteps=4")
		ns := res.Blueprint.Namespace
		c.up(t, res)
		first := c.running(t, ns, jobOf(t, res, "first"))
		c.waits(t, ns, jobOf(t, res, "second"), 3*time.Second)
		assert.Empty(t, c.cp.RefreshReplacements(t, res), "one experiment admitted, one waiting")
		c.finish(t, ns, first)
		c.running(t, ns, jobOf(t, res, "second"))
		assert.False(t, c.rayJobNamed(t, ns, first.Name).Spec.Suspend, "Kueue's admission is in the live object")
		assert.Empty(t, c.cp.RefreshReplacements(t, res), "one experiment finished, the other admitted after it")
	})
	t.Run("single run", func(t *testing.T) {
		c := newCluster(t)
		res := plantest.Plan(t, "smoke")
		c.up(t, res)
		job := c.submitted(t, res.Blueprint)
		require.Equal(t, rayv1.JobStatusRunning, job.Status.JobStatus)
		assert.Empty(t, c.cp.RefreshReplacements(t, res))
	})
}
