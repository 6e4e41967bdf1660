package kubetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/test/kubetest"
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
