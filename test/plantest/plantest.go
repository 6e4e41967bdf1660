// Package plantest holds the helpers that whole-program tests share: resolving and planning the
// shipped stacks on the recording engine.
package plantest

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/test/clitest"
	"gke-rl/test/golden"
)

// PlanTime is the clock of every planned test stack, so that the plans, their warnings and the
// golden files do not change with the date the tests run on.
var PlanTime = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// Env is a command's environment in dir, printing to stdout and stderr, at PlanTime.
func Env(dir string, stdout, stderr io.Writer) cmd.Env {
	return cmd.Env{Dir: dir, Stdout: stdout, Stderr: stderr, Now: func() time.Time { return PlanTime }}
}

// Stacks are the stacks shipped in the repository.
var Stacks = []string{"b200-spot", "h200-reserved", "smoke"}

// RepoRoot is the directory holding Pulumi.yaml.
func RepoRoot() string { return golden.RepoRoot() }

// Plan plans a shipped stack with overrides at PlanTime and fails the test on any error.
func Plan(t testing.TB, stack string, overrides ...string) *offline.Result {
	t.Helper()
	return PlanAt(t, PlanTime, stack, overrides...)
}

// PlanAt plans a shipped stack with overrides as of now and fails the test on any error.
func PlanAt(t testing.TB, now time.Time, stack string, overrides ...string) *offline.Result {
	t.Helper()
	res, err := tryPlan(now, stack, overrides...)
	require.NoError(t, err, "planning %s with %v", stack, overrides)
	return res
}

// TryPlan plans a shipped stack with overrides at PlanTime and returns the error.
func TryPlan(stack string, overrides ...string) (*offline.Result, error) {
	return tryPlan(PlanTime, stack, overrides...)
}

func tryPlan(now time.Time, stack string, overrides ...string) (*offline.Result, error) {
	sc, err := offline.LoadStackConfig(RepoRoot(), stack, overrides)
	if err != nil {
		return nil, err
	}
	return offline.Run(sc, stack, now)
}

// Resolve resolves a shipped stack with overrides, registering nothing, and fails the test on
// any error.
func Resolve(t testing.TB, stack string, overrides ...string) *infra.Blueprint {
	t.Helper()
	bp, err := TryResolve(stack, overrides...)
	require.NoError(t, err, "resolving %s with %v", stack, overrides)
	return bp
}

// TryResolve resolves a shipped stack with overrides and returns the error.
func TryResolve(stack string, overrides ...string) (*infra.Blueprint, error) {
	sc, err := offline.LoadStackConfig(RepoRoot(), stack, overrides)
	if err != nil {
		return nil, err
	}
	return offline.Resolve(sc, stack, PlanTime)
}

// Golden compares got with testdata/<name>, or rewrites it under -update.
func Golden(t testing.TB, name string, got []byte) { golden.Compare(t, name, got) }

// Input reads a plain input of a resource by dotted path (`nodeConfig.machineType`).
func Input(t testing.TB, res *offline.Resource, path string) any {
	t.Helper()
	require.NotNil(t, res)
	v, ok := offline.LookupInput(res, path)
	require.True(t, ok, "%s %s has no input %s", res.Type, res.Name, path)
	return v
}

// GPU is the overrides that switch a shipped stack to gpu: its type and, since each GPU is
// offered in its own zones (internal/offers), a zone that offers it (the shipped stacks' own).
func GPU(gpu string) []string {
	zone := map[string][2]string{"b200": {"us-east1", "us-east1-b"}, "h200": {"us-south1", "us-south1-b"}}[gpu]
	return []string{"gpu.type=" + gpu, "gcp:region=" + zone[0], "zone=" + zone[1]}
}

// Document is the README or a file under docs/: its path, its path from the repository root, and
// its text.
type Document struct {
	Path, Rel, Text string
}

// Documents reads the README and every file under docs/, the documents the tests check.
func Documents(t testing.TB) []Document {
	t.Helper()
	root := RepoRoot()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	var out []Document
	for _, path := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, path)
		require.NoError(t, err)
		out = append(out, Document{Path: path, Rel: rel, Text: string(text)})
	}
	return out
}

// DocumentedCommand is a `go run . <command> ...` line of the README or docs/.
type DocumentedCommand struct {
	clitest.Command
	Doc Document
	// Args are its words after `go run . <command>`, a user's copy of a shipped stack (--stack
	// my-<stack>, which the README's walk makes) named as the stack it copies.
	Args []string
}

// DocumentedCommands are the documents' `go run . <command>` lines, in document order.
func DocumentedCommands(t testing.TB, command string) []DocumentedCommand {
	t.Helper()
	prefix := []string{"go", "run", ".", command}
	var out []DocumentedCommand
	for _, doc := range Documents(t) {
		cmds, err := clitest.MarkdownCommands(doc.Rel, doc.Text, "go")
		require.NoError(t, err)
		for _, cmd := range cmds {
			if len(cmd.Args) < len(prefix) || !slices.Equal(cmd.Args[:len(prefix)], prefix) {
				continue
			}
			args := slices.Clone(cmd.Args[len(prefix):])
			if i := slices.Index(args, "--stack"); i >= 0 && i+1 < len(args) && slices.Contains(Stacks, strings.TrimPrefix(args[i+1], "my-")) {
				args[i+1] = strings.TrimPrefix(args[i+1], "my-")
			}
			out = append(out, DocumentedCommand{Command: cmd, Doc: doc, Args: args})
		}
	}
	return out
}

// Main runs `go run . plan ARGS...` in the repository and returns its exit status, stdout and
// stderr.
func Main(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := plan.Main(args, Env(RepoRoot(), &stdout, &stderr))
	return code, stdout.String(), stderr.String()
}

// PlanFile writes the JSON plan of a shipped stack with overrides to a file, as an earlier
// version of the program would have (the --compare input), and lets edit change the decoded
// document first.
func PlanFile(t testing.TB, stack string, edit func(doc map[string]any), overrides ...string) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, plan.WriteJSON(&buf, Plan(t, stack, overrides...)))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	if edit != nil {
		edit(doc)
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	return writePlan(t, data)
}

// PlanFileOf is res as `plan --json` writes it, in a file of the test's: an earlier plan for
// --compare, such as one Renamed made.
func PlanFileOf(t testing.TB, res *offline.Result) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, plan.WriteJSON(&buf, res))
	return writePlan(t, buf.Bytes())
}

func writePlan(t testing.TB, data []byte) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "before.json")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	return file
}

// Shape are the overrides of job.modelShape, which a model outside the program's table of
// shapes needs: a test's own values, not a real model's unless its test says so.
func Shape(hidden, layers, vocab int) []string {
	return []string{
		"job.modelShape.hiddenSize=" + strconv.Itoa(hidden),
		"job.modelShape.numHiddenLayers=" + strconv.Itoa(layers),
		"job.modelShape.vocabSize=" + strconv.Itoa(vocab),
	}
}

// Queued plans the smoke stack with experiments in `jobs` (settings such as
// jobs.first.maxSteps=4) on a GPU pool of one node: the queue admits one experiment at a time.
func Queued(t testing.TB, settings ...string) *offline.Result {
	t.Helper()
	return Plan(t, "smoke", append([]string{"gpu.maxNodes=1"}, settings...)...)
}

// RayJobOf is the name of the RayJob of the experiment key of a plan: its key and the hash of
// what it trains.
func RayJobOf(t testing.TB, res *offline.Result, key string) string {
	t.Helper()
	for _, x := range res.Blueprint.Run.Experiments {
		if x.Name == key && x.RayJob != nil {
			return x.RayJob.Name
		}
	}
	t.Fatalf("no experiment %s with a RayJob in the plan", key)
	return ""
}

// ProjectDir is a directory of the test's holding the project's Pulumi.yaml and no stack file,
// for stack files a test writes (a second stack of the project, a stack that sets fewer keys).
func ProjectDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	project, err := os.ReadFile(filepath.Join(RepoRoot(), "Pulumi.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), project, 0o644))
	return dir
}
