// Package plantest holds the helpers that tests share: planning the shipped stacks on the
// recording engine and comparing output with golden files under testdata/.
package plantest

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"gke-rl/infra/plan"
)

// Update rewrites golden files instead of comparing: `go test ./... -update`. Every test package
// imports plantest, so that every test binary accepts the flag.
var Update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Stacks are the stacks shipped in the repository.
var Stacks = []string{"b200-spot", "h200-reserved"}

// RepoRoot is the directory holding Pulumi.yaml, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Plan plans a shipped stack with overrides and fails the test on any error.
func Plan(t testing.TB, stack string, overrides ...string) *plan.Result {
	t.Helper()
	res, err := TryPlan(stack, overrides...)
	require.NoError(t, err, "planning %s with %v", stack, overrides)
	return res
}

// TryPlan plans a shipped stack with overrides and returns the error.
func TryPlan(stack string, overrides ...string) (*plan.Result, error) {
	sc, err := plan.LoadStackConfig(RepoRoot(), stack, overrides)
	if err != nil {
		return nil, err
	}
	return plan.Run(sc, stack)
}

// Golden compares got with testdata/<name>, or rewrites it under -update.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join(RepoRoot(), "testdata", name)
	if *Update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run `go test ./... -update`")
	require.Equal(t, string(want), string(got), "%s differs; if the change is intended, run `go test ./... -update` and review the diff", name)
}

// Input reads a plain input of a resource by dotted path (`nodeConfig.machineType`).
func Input(t testing.TB, res *plan.Resource, path string) any {
	t.Helper()
	require.NotNil(t, res)
	v, ok := plan.LookupInput(res, path)
	require.True(t, ok, "%s %s has no input %s", res.Type, res.Name, path)
	return v
}
