// Package golden compares test output with files under the repository's testdata/, and
// rewrites them under `go test ./... -update`. Every test package imports it, so that every test
// binary accepts the flag; it imports nothing of the program, so that a test binary of a package
// that registers no cloud resource does not link the cloud SDKs.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Update rewrites golden files instead of comparing: `go test ./... -update`.
var Update = flag.Bool("update", false, "rewrite golden files under testdata/")

// RepoRoot is the directory holding Pulumi.yaml, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Compare compares got with testdata/<name>, or rewrites it under -update.
func Compare(t testing.TB, name string, got []byte) {
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
