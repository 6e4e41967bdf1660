package repo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd/plan"
	"gke-rl/test/clitest"
	"gke-rl/test/plantest"
)

// cliPrograms are the CLIs whose command lines TestDocumentedCommandsParse runs against fake
// APIs; pulumi's run in TestDocumentedPulumiCommands, go's in TestDocumentedPlanCommandsRun, and
// the others (sh, curl) are not ours to check.
var cliPrograms = []string{"gcloud", "kubectl"}

// documentedCommands are every gcloud and kubectl command line a user is told to run: the
// README's and docs' code blocks and inline code, the stack outputs that hold a command, the
// destroy plans' texts and the alert policies' documentation, of every shipped stack.
func documentedCommands(t *testing.T) []clitest.Command {
	t.Helper()
	return documentedCommandsOf(t, cliPrograms...)
}

// documentedCommandsOf are documentedCommands of the given programs.
func documentedCommandsOf(t *testing.T, cliPrograms ...string) []clitest.Command {
	t.Helper()
	var cmds []clitest.Command
	for _, doc := range plantest.Documents(t) {
		found, err := clitest.MarkdownCommands(doc.Rel, doc.Text, cliPrograms...)
		require.NoError(t, err)
		cmds = append(cmds, found...)
	}
	for _, stack := range plantest.Stacks {
		// With the tokens on, for the commands that store them.
		res := plantest.Plan(t, stack, "tokens.huggingFace=true", "tokens.wandb=true")
		names := make([]string, 0, len(res.Outputs))
		for name := range res.Outputs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			values := []any{res.Outputs[name]}
			if list, ok := res.Outputs[name].([]any); ok {
				values = list
			}
			for _, v := range values {
				if s, ok := v.(string); ok && (strings.HasPrefix(s, "gcloud ") || strings.HasPrefix(s, "kubectl ")) {
					found, err := clitest.ShellCommands(stack+" output "+name, s, cliPrograms...)
					require.NoError(t, err)
					cmds = append(cmds, found...)
				}
			}
		}
		var destroy bytes.Buffer
		require.NoError(t, plan.WriteDestroy(&destroy, plan.Destroy(res)))
		found, err := clitest.MarkdownCommands(stack+" destroy plan", destroy.String(), cliPrograms...)
		require.NoError(t, err)
		cmds = append(cmds, found...)
		for _, policy := range res.OfType("gcp:monitoring/alertPolicy:AlertPolicy") {
			doc, _ := policy.Input("documentation.content")
			text, _ := doc.(string)
			found, err := clitest.MarkdownCommands(stack+" alert "+policy.Name, text, cliPrograms...)
			require.NoError(t, err)
			cmds = append(cmds, found...)
		}
	}
	return cmds
}

// Every gcloud and kubectl command line a user is told to run parses with the real CLI: gcloud
// 528 and kubectl, run against local fakes of their APIs (what the fakes answer does not matter;
// a refused command line fails before any call).
func TestDocumentedCommandsParse(t *testing.T) {
	clitest.Tool(t, "gcloud")
	clitest.Tool(t, "kubectl")
	cmds := documentedCommands(t)
	require.NotEmpty(t, cmds)
	google := clitest.NewGoogle(t, clitest.NotFound())
	kubeconfig := clitest.NewKube(t).ReadOnly().KubeconfigFile(t)
	seen := map[string]bool{}
	for _, cmd := range cmds {
		key := strings.Join(cmd.Args, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		t.Run(cmd.Source, func(t *testing.T) {
			t.Logf("%s", cmd.Text)
			clitest.Parses(t, google, kubeconfig, cmd)
		})
	}
	t.Logf("%d command lines, %d distinct", len(cmds), len(seen))
}

var lineNumbers = regexp.MustCompile(`(:[0-9]+)+$`)

// The sources the command test reads hold the commands it must find.
func TestDocumentedCommandsAreFound(t *testing.T) {
	var texts []string
	for _, cmd := range documentedCommands(t) {
		texts = append(texts, lineNumbers.ReplaceAllString(cmd.Source, "")+": "+strings.Join(cmd.Args, " "))
	}
	all := strings.Join(texts, "\n")
	assert.Contains(t, all, "b200-spot output checkpointExport: gcloud lustre instances export-data ray-a4-gpu-spot-lustre")
	assert.Contains(t, all, "b200-spot destroy plan: gcloud lustre instances export-data ray-a4-gpu-spot-lustre")
	assert.Contains(t, all, "h200-reserved output kubeconfigCommand: gcloud container clusters get-credentials verl-h200")
	assert.Contains(t, all, "b200-spot alert monitoring-run-failed: kubectl -n rl-ray-a4-gpu-spot get rayjob")
	assert.Contains(t, all, "README.md: gcloud services enable")
}

// The export command has one source, storage.ExportCommand: the operations guide shows
// b200-spot's stack output verbatim, and the destroy plan quotes the same output.
func TestCheckpointExportIsOneCommand(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	export, ok := res.Outputs["checkpointExport"].(string)
	require.True(t, ok)
	guide, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "operations.md"))
	require.NoError(t, err)
	assert.Contains(t, string(guide), "\n"+export+"\n", "the operations guide's export block is the stack output")
	var destroy bytes.Buffer
	require.NoError(t, plan.WriteDestroy(&destroy, plan.Destroy(res)))
	assert.Contains(t, destroy.String(), "`"+export+"`")
}
