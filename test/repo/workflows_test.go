package repo_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"gke-rl/test/golden"
)

type workflow struct {
	Permissions any            `json:"permissions"`
	Jobs        map[string]job `json:"jobs"`
}

type job struct {
	Needs       any            `json:"needs"`
	Environment any            `json:"environment"`
	Permissions map[string]any `json:"permissions"`
	Steps       []step         `json:"steps"`
}

type step struct {
	Uses string            `json:"uses"`
	With map[string]any    `json:"with"`
	Env  map[string]string `json:"env"`
}

func workflows(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(golden.RepoRoot(), ".github", "workflows", "*.yml"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// pinned is an action by full commit SHA with its release in a comment: a tag can be moved, a
// commit cannot (GitHub's security hardening guide).
var pinned = regexp.MustCompile(`^\s*- uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$`)

// The pipeline's identities, permissions and pins: every action by commit SHA, no workflow-wide
// permission and each job's own, no persisted git credentials, the Pulumi CLI and gcloud pinned,
// the deploy identity only in the `production` environment, and the deploy applying the plan its
// reviewers saw.
func TestWorkflowsAreLeastPrivilegeAndPinned(t *testing.T) {
	for name, text := range workflows(t) {
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "uses:") {
				assert.Regexp(t, pinned, line, name)
			}
		}
		var w workflow
		require.NoError(t, yaml.Unmarshal([]byte(text), &w), name)
		assert.Equal(t, map[string]any{}, w.Permissions, "%s: no workflow-wide permission", name)
		for jobName, j := range w.Jobs {
			where := name + " " + jobName
			require.NotNil(t, j.Permissions, where)
			assert.Equal(t, "read", j.Permissions["contents"], where)
			_, writesPRs := j.Permissions["pull-requests"]
			assert.Equal(t, name == "preview.yml", writesPRs, "%s: only the preview comments", where)
			for _, s := range j.Steps {
				action, _, _ := strings.Cut(s.Uses, "@")
				switch action {
				case "actions/checkout":
					assert.Equal(t, false, s.With["persist-credentials"], where)
				case "google-github-actions/setup-gcloud":
					assert.Equal(t, "528.0.0", s.With["version"], where)
				case "pulumi/actions":
					assert.Equal(t, "3.274.1", s.With["pulumi-version"], "%s: the CLI of the SDK in go.mod", where)
				case "google-github-actions/auth":
					deploy := s.With["service_account"] == "${{ vars.GCP_DEPLOY_SERVICE_ACCOUNT }}"
					assert.Equal(t, deploy, j.Environment == "production", "%s: the deploy identity only behind the production environment", where)
					// The deploy identity through its own pool's provider, whose condition admits
					// this job only (docs/ci.md; TestDeployIdentityAdmitsOnlyTheDeployJob).
					provider := map[bool]string{true: "${{ vars.GCP_DEPLOY_WORKLOAD_IDENTITY_PROVIDER }}", false: "${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}"}[deploy]
					assert.Equal(t, provider, s.With["workload_identity_provider"], where)
					if deploy {
						assert.Equal(t, "deploy.yml", name, "the deploy provider's condition names deploy.yml's workflow file")
					}
					assert.Equal(t, "write", j.Permissions["id-token"], where)
				}
			}
		}
	}
	var deploy workflow
	require.NoError(t, yaml.Unmarshal([]byte(workflows(t)["deploy.yml"]), &deploy))
	up := deploy.Jobs["up"]
	assert.Equal(t, "plan", up.Needs)
	last := up.Steps[len(up.Steps)-1]
	assert.Equal(t, "up", last.With["command"])
	assert.Equal(t, "plan-${{ matrix.stack }}.json", last.With["plan"], "up applies the saved plan")
	planLast := deploy.Jobs["plan"].Steps[len(deploy.Jobs["plan"].Steps)-2]
	assert.Equal(t, "preview", planLast.With["command"])
	assert.Equal(t, "plan-${{ matrix.stack }}.json", planLast.With["plan"], "the plan job saves it")
	assert.Equal(t, true, planLast.With["comment-on-summary"], "and shows the diff to the reviewers")
}
