// Package recordertest holds what component tests share: recording a program and reading a
// resource's inputs, failing the test on any error.
package recordertest

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/recorder"
)

// Record runs program on the recording engine and fails the test on any error.
func Record(t testing.TB, program pulumi.RunFunc) *recorder.Recording {
	t.Helper()
	rec, err := recorder.Run(program)
	require.NoError(t, err)
	return rec
}

// Input reads a resource's input by dotted path and fails the test when it is not set.
func Input(t testing.TB, res *recorder.Resource, path string) any {
	t.Helper()
	require.NotNil(t, res)
	v, ok := res.Input(path)
	require.True(t, ok, "%s %s has no input %s", res.Type, res.Name, path)
	return v
}
