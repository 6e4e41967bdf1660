package repo_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/plantest"
)

// timingTables are the two places the docs give how long things take: the build (testing.md)
// and the deployment (operations.md). Every other mention links or quotes them.
var timingTables = []struct{ doc, heading string }{
	{"docs/testing.md", "## The build, measured"},
	{"docs/operations.md", "## Timings"},
}

// duration finds a stated duration: "359 s", "11 min 30 s", "about 10 minutes", "10–15 min",
// "15 to 30 minutes", "35 minutes to 2 hours".
var duration = regexp.MustCompile(`\b\d+(?:\.\d+)?(?: ?(?:–|to) ?\d+(?:\.\d+)?)? ?(?:s|min|minutes?|h|hours?)\b(?: (?:to )?\d+ ?(?:s|min|minutes?|h|hours?)\b)?`)

// timingContext marks a line that says how long the build or a deployment step takes, as
// opposed to a timeout or a setting the program applies.
var timingContext = regexp.MustCompile("(?i)`pulumi (up|destroy|preview)`|pulumi (up|destroy) +#|cold|compil|first build|the Pulumi CLI|go build")

// normalize writes a duration one way: "15 to 30 minutes" and "15–30 min" are the same figure.
func normalize(d string) string {
	d = strings.ReplaceAll(d, "–", " to ")
	for _, r := range [][2]string{{"minutes", "min"}, {"minute", "min"}, {"hours", "h"}, {"hour", "h"}} {
		d = strings.ReplaceAll(d, r[0], r[1])
	}
	return strings.Join(strings.Fields(d), " ")
}

// Every duration the README and the docs state for the build or a deployment step, outside the
// two tables, is one of theirs: a figure changes in one place, and no document keeps an old one.
func TestTimingsComeFromTheTables(t *testing.T) {
	root := plantest.RepoRoot()
	tabled := map[string]bool{}
	inTable := map[string][]string{}
	for _, tb := range timingTables {
		text, err := os.ReadFile(filepath.Join(root, tb.doc))
		require.NoError(t, err)
		_, section, ok := strings.Cut(string(text), "\n"+tb.heading+"\n")
		require.True(t, ok, "%s has a section %q", tb.doc, tb.heading)
		section, _, _ = strings.Cut(section, "\n## ")
		inTable[tb.doc] = strings.Split(section, "\n")
		for _, d := range duration.FindAllString(section, -1) {
			tabled[normalize(d)] = true
		}
	}
	require.NotEmpty(t, tabled)

	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	checked := 0
	for _, doc := range append(docs, filepath.Join(root, "README.md")) {
		rel, err := filepath.Rel(root, doc)
		require.NoError(t, err)
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		lines := strings.Split(string(text), "\n")
		table := strings.Join(inTable[rel], "\n")
		for i, line := range lines {
			if table != "" && strings.Contains(table, line) && strings.TrimSpace(line) != "" {
				continue
			}
			if !timingContext.MatchString(line) {
				continue
			}
			for _, d := range duration.FindAllString(line, -1) {
				checked++
				assert.True(t, tabled[normalize(d)], "%s:%d states %q, which neither timing table gives (docs/testing.md, The build, measured; docs/operations.md, Timings): %s", rel, i+1, d, line)
			}
		}
	}
	assert.Positive(t, checked, "the README states the deployment's time")
}

// The duration pattern and its normal form, on the shapes the docs use.
func TestDurationsAreReadAlike(t *testing.T) {
	for in, want := range map[string]string{
		"takes 15 to 30 minutes of it":         "15 to 30 min",
		"10–15 min":                            "10 to 15 min",
		"about 35 minutes to 2 hours":          "35 min to 2 h",
		"11 min 30 s":                          "11 min 30 s",
		"359 s":                                "359 s",
		"a 2-core, 24 GiB machine, 7 GiB peak": "",
	} {
		got := duration.FindString(in)
		if want == "" {
			assert.Empty(t, got, in)
			continue
		}
		assert.Equal(t, want, normalize(got), in)
	}
}
