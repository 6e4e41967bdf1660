package preflight

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/test/clitest"
	"gke-rl/test/plantest"
)

// failing is a project on which every check fails that can, one stack each.
func failing() map[string]project {
	apis, noQuota, noMachine := ready, ready, ready
	apis.services = "googleapis/preflight/serviceusage-batchget-smoke-new-project.json"
	noQuota.region = "googleapis/preflight/compute-region-us-east1-no-b200.json"
	noQuota.denied = []string{"container.clusters.create"}
	noMachine.machineTypes = nil
	unreadable := ready
	unreadable.projectGet = "googleapis/preflight/cloudresourcemanager-error-403.json"
	return map[string]project{"apis": apis, "quota and permissions": noQuota, "machine type": noMachine, "project": unreadable}
}

// Every gcloud line a failure's fix tells the user to run parses with the real gcloud 528.
func TestFixCommandsParse(t *testing.T) {
	clitest.Tool(t, "gcloud")
	var out strings.Builder
	for _, p := range failing() {
		_, text, _ := preflight(t, p, append([]string{"--stack", "smoke"}, yours...)...)
		out.WriteString(text)
	}
	for _, res := range []string{"", "googleapis/preflight/compute-reservation-a4x-highgpu-4g.json"} {
		_, text, _ := preflight(t, reservedProject(res), append(reserved, yours...)...)
		out.WriteString(text)
	}
	for _, list := range []string{"googleapis/preflight/lustre-instances-list-20.json", "googleapis/lustre-instances-list-empty.json"} {
		_, text, _ := preflight(t, withLustre(list), append(b200Spot, "--config", "gke-rl:storage.adopt="+strconv.FormatBool(strings.Contains(list, "empty")))...)
		out.WriteString(text)
	}
	billingOff := ready
	billingOff.skus = nil
	_, text, _ := preflight(t, billingOff, append(append([]string{"--stack", "smoke"}, yours...), "--prices-out", filepath.Join(t.TempDir(), "prices.json"))...)
	out.WriteString(text)
	var fixes []string
	for _, line := range strings.Split(out.String(), "\n") {
		if _, fix, ok := strings.Cut(line, "fix: "); ok {
			fixes = append(fixes, fix)
		}
	}
	cmds, err := clitest.MarkdownCommands("preflight fixes", strings.Join(fixes, "\n"), "gcloud")
	require.NoError(t, err)
	var names []string
	for _, c := range cmds {
		names = append(names, strings.Join(c.Args[:3], " "))
	}
	for _, want := range []string{"gcloud services enable", "gcloud projects describe", "gcloud compute machine-types", "gcloud compute reservations", "gcloud lustre instances"} {
		assert.True(t, slices.Contains(names, want), "a fix runs %s: %v", want, names)
	}
	google := clitest.NewGoogle(t, clitest.NotFound())
	kubeconfig := clitest.NewKube(t).KubeconfigFile(t)
	for _, dc := range cmds {
		t.Run(dc.Text, func(t *testing.T) { clitest.Parses(t, google, kubeconfig, dc) })
	}
}

// Every `go run . preflight` command of the README and docs/ runs as written on the user's copy
// of a shipped stack (my-<stack>, with the project set) against a project that is ready.
func TestDocumentedPreflightCommandsRun(t *testing.T) {
	ran := 0
	for _, dc := range plantest.DocumentedCommands(t, "preflight") {
		args := dc.Args
		i := slices.Index(args, "--stack")
		require.True(t, i >= 0 && i+1 < len(args), "%s: names a stack", dc.Source)
		if args[i+1] == "NAME" || args[i+1] == "stack" { // the placeholders NAME and <stack>
			continue
		}
		t.Run(dc.Source, func(t *testing.T) {
			args := append(args, yours...)
			if i := slices.Index(args, "--prices-out"); i >= 0 && i+1 < len(args) {
				// The recorded catalog pages price us-central1 only; the file goes to a
				// temporary directory, and must be written.
				args[i+1] = filepath.Join(t.TempDir(), args[i+1])
				args = append(args, inIowa...)
				defer func() { assert.FileExists(t, args[i+1]) }()
			}
			code, out, _ := preflight(t, ready, args...)
			assert.Equal(t, cmd.ExitOK, code, out)
		})
		ran++
	}
	assert.GreaterOrEqual(t, ran, 1, "the README's walk runs preflight")
}
