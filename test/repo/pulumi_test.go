package repo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/test/clitest"
	"gke-rl/test/plantest"
)

// workstationIP stands for `$(curl -4 -s ifconfig.me)` in the documented commands: an address
// out of the documentation ranges, which the program takes for the shipped placeholder.
const workstationIP = "100.64.0.9"

// runsOffline reports whether a pulumi command works on a local state backend without the cloud
// or the providers' plugins: logging in to it, creating and selecting stacks, setting config.
// The others (preview, up, destroy, state, stack output, a login to a bucket) are checked for
// their command line only, with `--help`.
func runsOffline(args []string) bool {
	switch {
	case args[0] == "login":
		return len(args) == 1 || slices.Contains(args, "--local")
	case args[0] == "stack" && len(args) > 1 && (args[1] == "select" || args[1] == "init"):
		return !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--secrets-provider") })
	case args[0] == "config":
		return true
	}
	return false
}

// Every pulumi command line a user is told to run, run with the real Pulumi CLI (v3.274.1, built
// by .ci/run from .ci/pulumi): in a copy of the project on a local state backend, the commands
// that need no cloud run in document order (README first), and every other one must pass the
// CLI's own parsing (with `--help` before its flags: an unknown flag or a flag without its value
// fails). The
// stacks the README's deploy steps configure must then plan: what `pulumi config set --path`
// writes is what the planner reads.
func TestDocumentedPulumiCommands(t *testing.T) {
	pulumi := clitest.Tool(t, "pulumi")
	work := t.TempDir()
	root := plantest.RepoRoot()
	files, err := filepath.Glob(filepath.Join(root, "Pulumi*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(work, filepath.Base(f)), data, 0o600))
	}
	env := []string{
		"PULUMI_BACKEND_URL=file://" + filepath.Join(work, ".state"),
		"PULUMI_HOME=" + filepath.Join(work, ".pulumi"),
		"PULUMI_CONFIG_PASSPHRASE=documented-commands",
		"PULUMI_SKIP_UPDATE_CHECK=true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true",
	}
	run := func(args ...string) (int, string) {
		r := clitest.RunIn(t, work, env, pulumi, args...)
		return r.Code, r.Stdout + r.Stderr
	}
	require.NoError(t, os.MkdirAll(filepath.Join(work, ".state"), 0o700))
	// The CI setup configures every shipped stack by name in a loop; they exist beforehand here.
	for _, stack := range plantest.Stacks {
		code, out := run("stack", "init", stack)
		require.Zero(t, code, out)
	}

	// The README copies a shipped stack file to a stack of the user's own before configuring it:
	// its cp commands run here, with the real cp.
	copied := 0
	for _, dc := range documentedCommandsOf(t, "cp") {
		if len(dc.Args) == 3 && strings.HasPrefix(dc.Args[1], "Pulumi.") && strings.HasPrefix(dc.Args[2], "Pulumi.my-") {
			r := clitest.RunIn(t, work, env, "cp", dc.Args[1:]...)
			require.Zero(t, r.Code, r.Stderr)
			copied++
		}
	}
	require.Positive(t, copied, "the README copies a stack file")
	shipped, err := os.ReadFile(filepath.Join(work, "Pulumi.smoke.yaml"))
	require.NoError(t, err)

	cmds := documentedCommandsOf(t, "pulumi")
	seen := map[string]bool{}
	ran, parsed := 0, 0
	for _, dc := range cmds {
		args := slices.Clone(dc.Args[1:])
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "x/32", workstationIP+"/32")
		}
		key := strings.Join(args, "\x00")
		if len(args) == 0 || seen[key] {
			continue
		}
		seen[key] = true
		if runsOffline(args) {
			code, out := run(args...)
			assert.Zero(t, code, "%s: pulumi %s\n%s", dc.Source, strings.Join(args, " "), out)
			ran++
			continue
		}
		// --help goes before the flags, so that a flag documented without its value cannot take
		// it for one: `pulumi up --plan` then fails as "flag needs an argument".
		first := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") })
		if first < 0 {
			first = len(args)
		}
		code, out := run(slices.Concat(args[:first], []string{"--help"}, args[first:])...)
		assert.Zero(t, code, "%s: pulumi %s is refused by the CLI\n%s", dc.Source, strings.Join(args, " "), out)
		parsed++
	}
	t.Logf("%d pulumi command lines run, %d parsed", ran, parsed)
	assert.GreaterOrEqual(t, ran, 5, "the README's deploy steps ran")
	assert.GreaterOrEqual(t, parsed, 5)

	smoke, err := os.ReadFile(filepath.Join(work, "Pulumi.my-smoke.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(smoke), "\nencryptionsalt: ", "creating the stack adds encryptionsalt, as the README says")
	after, err := os.ReadFile(filepath.Join(work, "Pulumi.smoke.yaml"))
	require.NoError(t, err)
	assert.Equal(t, string(shipped), string(after), "the shipped stack file stays as it is")
	for _, stack := range plantest.Stacks {
		var stdout, stderr bytes.Buffer
		code := plan.Main([]string{"--stack", stack}, plantest.Env(work, &stdout, &stderr))
		assert.Equal(t, cmd.ExitOK, code, "%s after the documented config commands:\n%s", stack, stderr.String())
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, cmd.ExitOK, plan.Main([]string{"--stack", "my-smoke", "--json"}, plantest.Env(work, &stdout, &stderr)), stderr.String())
	assert.NotContains(t, stderr.String(), "placeholder:", "the README's steps replace every placeholder of smoke")
	assert.Contains(t, stdout.String(), workstationIP+"/32", "the authorized network the README sets reaches the cluster")
	assert.Contains(t, stdout.String(), "gke-rl-smoke-hf-token", "tokens.huggingFace set by the README turns the token on")
	assert.Contains(t, stdout.String(), `"project": "my-project-id"`, "the project the README sets")
}
