package plan_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
	"gke-rl/infra/plan/plantest"
)

// The configuration reference documents every key the config types take, and no other: a key
// added to the program without a row, or a row left behind by a removed key, fails.
func TestConfigurationReferenceMatchesTheConfigTypes(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "configuration.md"))
	require.NoError(t, err)
	documented := map[string]bool{}
	name := regexp.MustCompile("`([A-Za-z:.]+)`")
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			documented[m[1]] = true
		}
	}
	for _, key := range infra.ConfigKeys() {
		assert.True(t, documented[key], "%s has no row in docs/configuration.md", key)
		delete(documented, key)
	}
	for key := range infra.RetiredTokenKeys {
		assert.True(t, documented[key], "the retired %s is documented as such", key)
		delete(documented, key)
	}
	assert.Empty(t, documented, "rows for keys the program does not take")
}

// The README leads to every document under docs/, and each links back.
func TestDocsAreLinked(t *testing.T) {
	root := plantest.RepoRoot()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	for _, doc := range docs {
		assert.Contains(t, string(readme), "(docs/"+filepath.Base(doc)+")", "the README links %s", filepath.Base(doc))
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		assert.Contains(t, string(text), "(../README.md)", "%s links back", filepath.Base(doc))
	}
}
