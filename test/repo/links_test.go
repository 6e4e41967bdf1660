package repo_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gke-rl/test/plantest"

	"github.com/stretchr/testify/assert"
)

var (
	// markdownLink is a link of the README or the docs to a file of the repository, with or
	// without a section: [text](path#section) or [text](#section).
	markdownLink = regexp.MustCompile(`\]\(([^)\s]*)\)`)
	heading      = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	// notInSlug is what GitHub drops from a heading's text to make its anchor: everything but
	// letters, digits, spaces, hyphens and underscores.
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	// fencedCode is a fenced code block, whose text is neither a link nor a heading (a shell
	// comment starts with #, gcloud's --format='csv[no-heading](...)' looks like a link).
	fencedCode = regexp.MustCompile("(?ms)^ *```.*?^ *```")
)

// prose is a Markdown file's text without its fenced code blocks.
func prose(text string) string { return fencedCode.ReplaceAllString(text, "") }

// anchors are the section anchors GitHub makes for a Markdown file's headings: lower case,
// punctuation dropped, spaces as hyphens.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(prose(text), -1) {
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		out[slug] = true
	}
	return out
}

// Every link of the README and the docs to a file of the repository resolves: the file exists,
// and its section, when the link names one, is a heading of that file. Text that cites a
// section by name ("see Deploy") is not a link and is not checked here.
func TestInternalLinksResolve(t *testing.T) {
	checked := 0
	for _, doc := range plantest.Documents(t) {
		for _, m := range markdownLink.FindAllStringSubmatch(prose(doc.Text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || target == "" {
				continue
			}
			path, section, _ := strings.Cut(target, "#")
			file := doc.Path
			if path != "" {
				file = filepath.Join(filepath.Dir(doc.Path), path)
			}
			body, err := os.ReadFile(file)
			if !assert.NoError(t, err, "%s links to %s, which does not exist", doc.Rel, target) {
				continue
			}
			if section != "" {
				assert.True(t, anchors(string(body))[section], "%s links to %s: no such section in %s", doc.Rel, target, path)
			}
			checked++
		}
	}
	assert.Greater(t, checked, 10)
}
