package repo_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/infra"
	"gke-rl/internal/cost"
	"gke-rl/test/plantest"
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

// Every `go run . plan` command of the README and docs/ runs, offline, as written: it plans, or,
// where the document shows the errors it prints, prints exactly those. File arguments go to
// temporary files: the documented price file for --prices, the stack's own JSON plan for
// --compare, a directory for --manifests.
func TestDocumentedPlanCommandsRun(t *testing.T) {
	ran := 0
	// my-<stack> is the user's copy of a shipped stack file (the README's first steps copy it, so
	// that the shipped files stay untouched): DocumentedCommands plans it as the shipped one.
	for _, dc := range plantest.DocumentedCommands(t, "plan") {
		args := dc.Args
		if len(args) == 0 {
			continue
		}
		if i := slices.Index(args, "--stack"); i >= 0 && i+1 < len(args) && !slices.Contains(plantest.Stacks, args[i+1]) {
			assert.Contains(t, []string{"new", "stack"}, args[i+1], "%s: only the placeholders <new> and <stack> name a stack that is not shipped", dc.Source)
			continue
		}
		t.Run(dc.Source, func(t *testing.T) {
			for i := 0; i+1 < len(args); i++ {
				switch args[i] {
				case "--manifests":
					args[i+1] = t.TempDir()
				case "--prices":
					args[i+1] = documentedPriceFile(t)
				case "--compare":
					args[i+1] = plantest.PlanFile(t, args[slices.Index(args, "--stack")+1], nil)
				}
			}
			code, _, errOut := plantest.Main(t, args...)
			if want := shownErrors(dc.Doc.Text, dc.Source); want != "" {
				assert.Equal(t, cmd.ExitInvalidConfig, code)
				assert.Equal(t, want, errOut, "the errors the document shows are the ones printed")
				return
			}
			assert.Equal(t, cmd.ExitOK, code, errOut)
		})
		ran++
	}
	assert.GreaterOrEqual(t, ran, 15, "the documents' plan commands were found")
}

// shownErrors are the `error:` lines a document prints right after the command at source
// ("README.md:<block line>:<line in block>"), or "".
func shownErrors(text, source string) string {
	parts := strings.Split(source, ":")
	block, _ := strconv.Atoi(parts[1])
	inner, _ := strconv.Atoi(parts[2])
	lines := strings.Split(text, "\n")
	var out strings.Builder
	for _, l := range lines[block+inner-1:] {
		if !strings.HasPrefix(l, "error: ") {
			break
		}
		out.WriteString(l + "\n")
	}
	return out.String()
}

// documentedPriceFile writes the price file docs/testing.md shows, after checking that it
// parses.
func documentedPriceFile(t *testing.T) string {
	text, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "testing.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(text), "### Prices")
	require.True(t, ok)
	_, block, ok := strings.Cut(after, "```json\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```")
	_, err = cost.ParseFile("docs/testing.md", []byte(block))
	require.NoError(t, err, "the documented price file parses")
	file := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(file, []byte(block), 0o600))
	return file
}
