package repo_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/clitest"
	"gke-rl/test/plantest"
)

// script is one script that ships: a .sh file of the repository, or a script in a plan (a
// command step's create or delete, a container's `<shell> -c` argument).
type script struct {
	source, shell, text string
}

// shippedScripts are every .sh file in the repository and every script the plans of both
// shipped stacks contain, with the shell that runs it.
func shippedScripts(t *testing.T) []script {
	t.Helper()
	root := plantest.RepoRoot()
	var scripts []script
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".sh") {
			body, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			shell := "bash"
			if strings.HasPrefix(string(body), "#!/bin/sh") {
				shell = "sh"
			}
			scripts = append(scripts, script{source: rel, shell: shell, text: string(body)})
		}
		return nil
	}))
	for _, stack := range plantest.Stacks {
		res := plantest.Plan(t, stack)
		for _, r := range res.Resources {
			inputs := r.Inputs.Mappable()
			if r.Type == "command:local:Command" {
				for _, step := range []string{"create", "delete", "update"} {
					if s, ok := inputs[step].(string); ok {
						scripts = append(scripts, script{source: stack + " " + r.Name + " " + step, shell: "bash", text: s})
					}
				}
				continue
			}
			walkScripts(inputs, func(shell, text string) {
				scripts = append(scripts, script{source: stack + " " + r.Type + " " + r.Name, shell: shell, text: text})
			})
		}
	}
	return scripts
}

// walkScripts calls found for every `[<shell>, "-c", <script>, ...]` list in v: a container's
// command or its command and args together.
func walkScripts(v any, found func(shell, text string)) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkScripts(v[k], found)
		}
		if cmd, ok := v["command"].([]any); ok {
			if args, ok := v["args"].([]any); ok {
				if len(cmd) == 2 && len(args) > 0 {
					shellScript(append(append([]any{}, cmd...), args...), found)
				}
			}
		}
	case []any:
		shellScript(v, found)
		for _, e := range v {
			walkScripts(e, found)
		}
	}
}

func shellScript(list []any, found func(shell, text string)) {
	if len(list) < 3 {
		return
	}
	shell, _ := list[0].(string)
	flag, _ := list[1].(string)
	text, ok := list[2].(string)
	if !ok || flag != "-c" {
		return
	}
	switch shell {
	case "/bin/bash", "bash":
		found("bash", text)
	case "/bin/sh", "sh":
		found("sh", text)
	}
}

// Every script that `pulumi up`, `pulumi destroy` or a Job runs passes shellcheck, as shipped
// (the .sh files) and as rendered into the plans, and says `set -euo pipefail` (a POSIX sh script
// `set -eu`, with its reason).
func TestShippedScriptsPassShellcheck(t *testing.T) {
	shellcheck := clitest.Tool(t, "shellcheck")
	scripts := shippedScripts(t)
	seen := map[string]bool{}
	var files, rendered int
	for _, s := range scripts {
		if seen[s.shell+s.text] {
			continue
		}
		seen[s.shell+s.text] = true
		if strings.HasSuffix(s.source, ".sh") {
			files++
		} else {
			rendered++
		}
		t.Run(s.source, func(t *testing.T) {
			// The shell options come first, before any command (after the shebang, if any).
			head := strings.Join(slices.DeleteFunc(strings.SplitN(s.text, "\n", 3)[:2], func(l string) bool { return strings.HasPrefix(l, "#!") }), "\n")
			if s.shell == "bash" {
				assert.True(t, strings.HasPrefix(head, "set -euo pipefail"), "the script does not start with set -euo pipefail:\n%s", head)
			} else {
				assert.True(t, strings.HasPrefix(head, "set -eu"), "the script does not start with set -eu:\n%s", head)
			}
			file := filepath.Join(t.TempDir(), "script")
			require.NoError(t, os.WriteFile(file, []byte(s.text), 0o600))
			res := clitest.Run(t, nil, shellcheck, "--shell="+s.shell, "--severity=style", "--external-sources", file)
			assert.Equal(t, 0, res.Code, "shellcheck:\n%s%s", res.Stdout, res.Stderr)
		})
	}
	t.Logf("%d .sh files and %d distinct rendered scripts (of %d found)", files, rendered, len(scripts))
	var sources []string
	for _, s := range scripts {
		sources = append(sources, s.source)
	}
	for _, want := range []string{"storage/psa-cleanup.sh", "b200-spot storage-psa-cleanup delete", "b200-spot cluster-crds create",
		"h200-reserved gate-results create", "kubernetes:apps/v1:DaemonSet cluster-rdma", "kubernetes:batch/v1:Job grpo-data-prep",
		"kubernetes:batch/v1:Job gate-nccl", "kubernetes:batch/v1:Job gate-storage"} {
		assert.True(t, slices.ContainsFunc(sources, func(s string) bool { return strings.Contains(s, want) }), "no script found for %s", want)
	}
}
