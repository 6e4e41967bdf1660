package repo_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/plantest"
)

// module is the module path; every package of the program is under it.
const module = "gke-rl"

// layers are the program's layers, from the bottom: a package may import one of a lower layer,
// or one of its own top-level folder (workloads and workloads/queue, cmd and cmd/plan), never
// one above it (docs/architecture.md, The layout).
var layers = [][]string{
	{"internal"},
	{"gate", "storage", "network", "ray"},
	{"monitoring", "workloads"},
	{"cluster"},
	{"infra"},
	{"cmd"},
	{""}, // main
}

// layerOf is the layer of a package directory (relative to the root, "" for main), and its
// top-level folder; -1 for test kits and anything outside the layers.
func layerOf(dir string) (int, string) {
	top, _, _ := strings.Cut(dir, "/")
	if top == "test" || strings.HasSuffix(dir, "test") {
		return -1, top
	}
	for i, names := range layers {
		if slices.Contains(names, top) {
			return i, top
		}
	}
	return -1, top
}

// programImports are the imports of the module's own packages by each file that is not a test,
// keyed by the file's directory.
func programImports(t *testing.T) map[string][]string {
	t.Helper()
	root := plantest.RepoRoot()
	out := map[string][]string{}
	fset := token.NewFileSet()
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// Other modules (.ci/kube, .ci/pulumi), data and version control are not the program.
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if dir == "." {
			dir = ""
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if p == module || strings.HasPrefix(p, module+"/") {
				out[dir] = append(out[dir], strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
			}
		}
		return nil
	}))
	require.NotEmpty(t, out["infra"], "the walk found the program")
	return out
}

// Every import of the program points down its layers: no component imports the program that
// composes it or a command, no leaf imports a component, and only tests import a test kit.
func TestImportsPointDown(t *testing.T) {
	for dir, imports := range programImports(t) {
		from, fromTop := layerOf(dir)
		for _, imp := range imports {
			to, toTop := layerOf(imp)
			isKit := toTop == "test" || strings.HasSuffix(imp, "test")
			switch {
			case isKit:
				assert.True(t, from < 0, "%s imports the test kit %s: only tests may", dir, imp)
			case from < 0:
				// A test kit may import anything of the program.
			case to < 0:
				assert.Fail(t, "unknown layer", "%s imports %s, which is in no layer of docs/architecture.md", dir, imp)
			case fromTop == toTop:
				// Within one folder (cmd → cmd/plan's shared cmd, workloads → workloads/queue).
			default:
				assert.Less(t, to, from, "%s imports %s, a package of a layer above or beside its own", dir, imp)
			}
		}
	}
}

// infra is the program alone: its one subfolder is the program run offline.
func TestInfraHoldsOnlyTheProgram(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(plantest.RepoRoot(), "infra"))
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			assert.Equal(t, "offline", e.Name(), "infra/%s: only infra/offline lives under infra (docs/architecture.md, The layout)", e.Name())
		}
	}
}

// repoPath is a backticked path of the repository in a document: its first folder is one of the
// top-level ones.
var repoPath = regexp.MustCompile("`((?:cmd|infra|network|cluster|storage|ray|workloads|gate|monitoring|internal|test|testdata|docs|\\.ci|\\.github)/[^` ]*)`")

// Every path the README and docs/ name in backticks exists: a moved or renamed file fails here
// instead of sending a reader to nothing.
func TestDocumentedPathsExist(t *testing.T) {
	found := 0
	for _, doc := range plantest.Documents(t) {
		for _, m := range repoPath.FindAllStringSubmatch(doc.Text, -1) {
			p := m[1]
			// A line (`run.sh:42`), an anchor or a package pattern (`cmd/...`) names the file or
			// folder before it.
			p, _, _ = strings.Cut(p, ":")
			p, _, _ = strings.Cut(p, "#")
			p = strings.TrimSuffix(p, "/...")
			if strings.ContainsAny(p, "<*{") {
				continue
			}
			found++
			_, err := os.Stat(filepath.Join(plantest.RepoRoot(), filepath.FromSlash(p)))
			assert.NoError(t, err, "%s names `%s`, which does not exist", doc.Rel, m[1])
		}
	}
	assert.Greater(t, found, 20, "the documents name the repository's paths")
}

// The shipped stacks the tests plan are the stack files the repository commits: a user's own copy
// beside them (the README's walk makes one) is theirs, and no test depends on it.
func TestTheShippedStacksAreTheCommittedStackFiles(t *testing.T) {
	out, err := exec.Command("git", "-C", plantest.RepoRoot(), "ls-files", "Pulumi.*.yaml").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var committed []string
	for _, f := range strings.Fields(string(out)) {
		committed = append(committed, strings.TrimSuffix(strings.TrimPrefix(f, "Pulumi."), ".yaml"))
	}
	assert.ElementsMatch(t, committed, plantest.Stacks)
}

// Every committed path is plain (letters, digits, '.', '_', '-', '/', '@', '+'): a file a test
// wrote by accident where it ran (one named after a test's input) stands out in review before it
// is committed, and no path needs quoting in a shell or a workflow.
func TestCommittedPathsArePlain(t *testing.T) {
	out, err := exec.Command("git", "-C", plantest.RepoRoot(), "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	plain := regexp.MustCompile(`^[A-Za-z0-9._/@+-]+$`)
	paths := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	require.Greater(t, len(paths), 100)
	for _, p := range paths {
		assert.Regexp(t, plain, p, "a committed path with other characters")
	}
}
