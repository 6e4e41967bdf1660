package infra_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/recorder"
	"gke-rl/test/plantest"
)

// yours replaces the shipped stacks' placeholders by values of a user's own, as the README's
// first steps do.
var yours = []string{"gcp:project=acme-rl", "cluster.authorizedNetworks[0]=35.235.240.0/20", "gpu.reservation=acme-h200"}

// runProgram runs infra.Program itself, as `pulumi up` does: the config keys come from the
// engine's environment variable. The placeholders are replaced unless the test names its own
// overrides of them.
func runProgram(t *testing.T, stack string, overrides ...string) (*recorder.Recording, error) {
	t.Helper()
	base := yours
	if stack != "h200-reserved" {
		base = yours[:2] // the others take no reservation
	}
	sc, err := offline.LoadStackConfig(plantest.RepoRoot(), stack, append(slices.Clone(base), overrides...))
	require.NoError(t, err)
	env, err := json.Marshal(sc.Values)
	require.NoError(t, err)
	t.Setenv(pulumi.EnvConfig, string(env))
	rec := recorder.New(sc.Project, stack)
	ctx, err := rec.NewContext(recorder.Config{Project: sc.Project, Stack: stack, Values: sc.Values, SecretKeys: sc.SecretKeys})
	require.NoError(t, err)
	return rec.Run(ctx, infra.Program)
}

func TestProgramExportsWhatThePlannerPrints(t *testing.T) {
	rec, err := runProgram(t, "h200-reserved")
	require.NoError(t, err)
	planned := plantest.Plan(t, "h200-reserved")
	assert.Equal(t, slices.Sorted(maps.Keys(planned.Outputs)), slices.Sorted(maps.Keys(rec.Exports)))
	assert.Len(t, rec.Resources, len(planned.Resources))
}

// `pulumi config set gpu.nodes 2` without --path stores a key named "gpu.nodes": the refusal
// shows the two commands that set gpu's key nodes instead.
func TestProgramShowsTheKeySetWithoutPath(t *testing.T) {
	sc, err := offline.LoadStackConfig(plantest.RepoRoot(), "smoke", yours[:2])
	require.NoError(t, err)
	sc.Values["gke-rl:gpu.nodes"] = "2"
	env, err := json.Marshal(sc.Values)
	require.NoError(t, err)
	t.Setenv(pulumi.EnvConfig, string(env))
	rec := recorder.New(sc.Project, "smoke")
	ctx, err := rec.NewContext(recorder.Config{Project: sc.Project, Stack: "smoke", Values: sc.Values, SecretKeys: sc.SecretKeys})
	require.NoError(t, err)
	_, err = rec.Run(ctx, infra.Program)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `gpu.nodes: unknown key; "gpu.nodes" is gpu's key nodes only when set with --path: `+"`pulumi config rm gpu.nodes`, then `pulumi config set --path gpu.nodes <value>`.")
}

func TestProgramRejectsUnknownKeysFromTheEngine(t *testing.T) {
	rec, err := runProgram(t, "b200-spot", "gpuType=b200")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gpuType: unknown key")
	assert.Empty(t, rec.Resources)
}

// A config that a rule rejects registers nothing, whichever component the rule belongs to.
func TestRejectedConfigRegistersNothing(t *testing.T) {
	cases := map[string][]string{
		"network":   {"network.nodeCidr=10.0.0.1/20"},
		"cluster":   {"cluster.mode=serverless"},
		"GPU pool":  {"gpu.provisioning=reservation"},
		"storage":   {"storage.capacityGib=20000"},
		"ray":       {"ray.image=rayproject/ray:latest"},
		"workloads": {"job.args[0]=cluster.num_nodes=4"},
		// The case: H200 in a zone of B200 only, found by Google at the GPU pool 20 to 40
		// minutes into `up` before the zone table.
		"zone": {"gpu.type=h200"},
	}
	for component, overrides := range cases {
		t.Run(component, func(t *testing.T) {
			rec, err := runProgram(t, "b200-spot", overrides...)
			var problems infra.Errors
			require.ErrorAs(t, err, &problems)
			assert.Empty(t, rec.Resources, "nothing registered")
		})
	}
}

// removedOnPurpose are earlier resources that the program deletes on the next `pulumi up`: the
// node service account's hand-picked roles, replaced by roles/container.defaultNodeServiceAccount
// (issue 12), and the tokens' Kubernetes Secret, whose tokens moved to Secret Manager. Deleting
// an IAM binding or that Secret loses nothing kept: the values are added to Secret Manager anew.
func removedOnPurpose(urn string) bool {
	if strings.HasSuffix(urn, "kubernetes:core/v1:Secret::tokens") {
		return true
	}
	for _, role := range []string{"logging.logWriter", "monitoring.metricWriter", "monitoring.viewer", "stackdriver.resourceMetadata.writer"} {
		if strings.HasSuffix(urn, "IAMMember::nodes-"+role) {
			return true
		}
	}
	return false
}

// Resources renamed when child names became derived from their component's name keep the URNs
// they had: each carries an alias to its former URN, so `pulumi up` renames it in the state
// instead of replacing it. testdata/urns-before-blueprint holds the URNs the program registered
// before, for the shipped stacks and variants that cover every resource kind.
func TestRenamedResourcesKeepTheirURNs(t *testing.T) {
	variants := []struct {
		file, stack string
		overrides   []string
	}{
		{"b200-spot", "b200-spot", nil},
		{"h200-reserved", "h200-reserved", nil},
		{"b200-spot-autopilot-gcsfuse-tokens", "b200-spot", []string{"cluster.mode=autopilot", "storage.type=gcsfuse", "tokens.huggingFace=true"}},
		{"h200-reserved-lustre-nojob", "h200-reserved", []string{"storage.type=lustre", "job.enabled=false", "framework=nemo-rl", "job.dataset=DeepScaler"}},
	}
	for _, v := range variants {
		variant, stack, overrides := v.file, v.stack, v.overrides
		t.Run(variant, func(t *testing.T) {
			before, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "testdata", "urns-before-blueprint", variant+".txt"))
			require.NoError(t, err)
			res := plantest.Plan(t, stack, overrides...)
			now := map[string]string{}
			for _, r := range res.Resources {
				now[r.URN] = r.URN
				for _, a := range r.Options.Aliases {
					_, taken := now[a]
					require.False(t, taken, "%s is claimed twice", a)
					now[a] = r.URN
				}
			}
			for _, urn := range strings.Fields(string(before)) {
				if removedOnPurpose(urn) {
					continue
				}
				_, ok := now[urn]
				assert.True(t, ok, "%s of the earlier program has no URN or alias now: `pulumi up` would replace it", urn)
			}
		})
	}
}

// A stack that still holds the shipped placeholders is refused by the program under the engine
// (`pulumi preview`, `pulumi up`) before anything is registered, each named with the command
// that sets it; the offline plan shows the same stack.
func TestProgramRefusesThePlaceholders(t *testing.T) {
	rec, err := runProgram(t, "h200-reserved", "gcp:project=your-project-id", "cluster.authorizedNetworks[0]=203.0.113.7/32", "gpu.reservation=your-h200-reservation")
	var refused *infra.PlaceholderError
	require.ErrorAs(t, err, &refused)
	assert.Empty(t, rec.Resources, "nothing registered")
	var keys []string
	for _, p := range refused.Placeholders {
		keys = append(keys, p.Key)
	}
	assert.Equal(t, []string{"gcp:project", "cluster.authorizedNetworks[0]", "gpu.reservation"}, keys)
	assert.Contains(t, err.Error(), "pulumi config set gcp:project <project-id>")
	assert.Contains(t, err.Error(), `pulumi config set --path 'cluster.authorizedNetworks[0]' "$(curl -4 -s ifconfig.me)/32"`)
	assert.Contains(t, err.Error(), "pulumi config set --path gpu.reservation <name>")

	// Any documentation address is a placeholder; a real one is not.
	_, err = runProgram(t, "b200-spot", "cluster.authorizedNetworks[0]=198.51.100.0/24")
	require.ErrorAs(t, err, &refused)
	_, err = runProgram(t, "b200-spot")
	require.NoError(t, err)

	planned := plantest.Plan(t, "h200-reserved")
	assert.Len(t, planned.Placeholders, 3, "the plan of the shipped stack names them and goes on")
}
