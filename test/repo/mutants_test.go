package repo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/plantest"
)

// Every bug of .ci/mutants.tsv still applies to the code it names: its text occurs once in its
// file, and its packages exist. .ci/mutants runs outside .ci/run (it takes minutes a bug); a
// mutant whose text the code no longer has would be reported as an error there, long after the
// change that made it stale, and its bug would go untested meanwhile.
func TestEveryMutantStillApplies(t *testing.T) {
	root := plantest.RepoRoot()
	list, err := os.ReadFile(filepath.Join(root, ".ci", "mutants.tsv"))
	require.NoError(t, err)
	count := 0
	for i, line := range strings.Split(string(list), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		require.Len(t, fields, 5, ".ci/mutants.tsv line %d: file, packages, text, replacement, what", i+1)
		file, packages, old, replacement, what := fields[0], fields[1], fields[2], fields[3], fields[4]
		code, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err, "line %d (%s)", i+1, what)
		assert.Equal(t, 1, strings.Count(string(code), old), "line %d (%s): its text must occur once in %s", i+1, what, file)
		assert.NotEqual(t, old, replacement, "line %d (%s) changes nothing", i+1, what)
		for _, p := range strings.Fields(packages) {
			if strings.HasPrefix(p, "-run=") {
				continue // go test's flag, which narrows a slow package to the test that catches it
			}
			dir := strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/...")
			assert.DirExists(t, filepath.Join(root, dir), "line %d (%s): package %s", i+1, what, p)
		}
		count++
	}
	t.Logf("%d mutants apply", count)
	assert.GreaterOrEqual(t, count, 39)
}
