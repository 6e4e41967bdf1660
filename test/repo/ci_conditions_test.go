package repo_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/clitest"
	"gke-rl/test/plantest"
)

// ciCommands are docs/ci.md's gcloud command lines, with the setup's variables as
// clitest.Vars gives them and the IAM loop at its first stack (b200-spot's cluster and region).
func ciCommands(t *testing.T) []clitest.Command {
	t.Helper()
	saved := maps.Clone(clitest.Vars)
	t.Cleanup(func() { clitest.Vars = saved })
	clitest.Vars["cluster"], clitest.Vars["region"] = "ray-a4-gpu-spot", "us-east1"
	text, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "ci.md"))
	require.NoError(t, err)
	cmds, err := clitest.MarkdownCommands("docs/ci.md", string(text), "gcloud")
	require.NoError(t, err)
	return cmds
}

// flag is the value of a command line's flag, or "".
func flag(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// celTrue evaluates a condition with the Common Expression Language, which Workload Identity
// Federation's attribute conditions and IAM conditions are written in, binding name to value. A
// condition that cannot be evaluated (a claim the token lacks) denies, as both do.
func celTrue(t *testing.T, expr, name string, value map[string]any) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable(name, cel.MapType(cel.StringType, cel.DynType)))
	require.NoError(t, err)
	ast, iss := env.Compile(expr)
	require.NoError(t, iss.Err(), expr)
	prg, err := env.Program(ast)
	require.NoError(t, err)
	out, _, err := prg.Eval(map[string]any{name: value})
	if err != nil {
		return false
	}
	b, ok := out.Value().(bool)
	require.True(t, ok, "%s is not a condition", expr)
	return b
}

// claims are the recorded example token's claims (GitHub's documentation) with changes.
func claims(t *testing.T, set map[string]any) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "testdata", "recorded", "github-oidc-token-claims.json"))
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(raw, &c))
	for k, v := range set {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// The deploy identity's provider admits deploy.yml's job on a push to main, in the production
// environment, of this repository, and nothing else that GitHub can issue: a pull request's job
// that names the environment, a push to another branch, another workflow file, a job without
// the environment. The preview provider admits this repository's jobs only.
func TestDeployIdentityAdmitsOnlyTheDeployJob(t *testing.T) {
	var deploy, preview string
	for _, cmd := range ciCommands(t) {
		if !slices.Contains(cmd.Args, "create-oidc") {
			continue
		}
		switch flag(cmd.Args, "--workload-identity-pool") {
		case "github-deploy":
			deploy = flag(cmd.Args, "--attribute-condition")
		case "github":
			preview = flag(cmd.Args, "--attribute-condition")
		}
	}
	require.NotEmpty(t, deploy, "docs/ci.md creates the deploy pool's provider with a condition")
	require.NotEmpty(t, preview)

	repo := clitest.Vars["REPO"]
	ours := map[string]any{
		"repository_id": clitest.Vars["REPO_ID"], "repository_owner_id": clitest.Vars["OWNER_ID"], "repository": repo,
		"sub": "repo:" + repo + ":environment:production", "environment": "production",
		"ref": "refs/heads/main", "event_name": "push",
		"job_workflow_ref": repo + "/.github/workflows/deploy.yml@refs/heads/main",
	}
	with := func(changes map[string]any) map[string]any {
		c := maps.Clone(ours)
		maps.Copy(c, changes)
		return claims(t, c)
	}
	assert.True(t, celTrue(t, deploy, "assertion", with(nil)), "deploy.yml's up job, on a push to main")
	for name, changes := range map[string]map[string]any{
		"a pull request's job naming the environment": {"event_name": "pull_request", "ref": "refs/pull/7/merge"},
		"a pull_request_target job (base ref main)":   {"event_name": "pull_request_target"},
		"a push to another branch":                    {"ref": "refs/heads/feature", "job_workflow_ref": repo + "/.github/workflows/deploy.yml@refs/heads/feature"},
		"another workflow file on main":               {"job_workflow_ref": repo + "/.github/workflows/preview.yml@refs/heads/main"},
		"a job without the environment":               {"environment": nil, "sub": "repo:" + repo + ":ref:refs/heads/main"},
		"a manual run":                                {"event_name": "workflow_dispatch"},
		"a fork's repository id":                      {"repository_id": "74"},
	} {
		assert.False(t, celTrue(t, deploy, "assertion", with(changes)), name)
	}
	assert.False(t, celTrue(t, deploy, "assertion", claims(t, nil)), "the documentation's example, another repository")

	assert.True(t, celTrue(t, preview, "assertion", with(map[string]any{"event_name": "pull_request", "ref": "refs/pull/7/merge"})), "a pull request of this repository previews")
	assert.False(t, celTrue(t, preview, "assertion", claims(t, nil)), "another repository does not")

	var deployBinding string
	for _, cmd := range ciCommands(t) {
		if slices.Contains(cmd.Args, "gke-rl-deploy@"+clitest.Vars["PROJECT"]+".iam.gserviceaccount.com") && flag(cmd.Args, "--role") == "roles/iam.workloadIdentityUser" {
			deployBinding = cmd.Text
		}
	}
	assert.Contains(t, deployBinding, `--member "principal://iam.googleapis.com/$DEPLOY_POOL/subject/repo:$REPO:environment:production"`,
		"the deploy account trusts its own pool's subject only")
	doc, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "docs", "ci.md"))
	require.NoError(t, err)
	assert.Contains(t, string(doc), "\nDEPLOY_POOL=projects/$NUMBER/locations/global/workloadIdentityPools/github-deploy\n")
}

// The deploy identity's roles that reach the project's data hold on the stack's own resources
// only: its secrets, its bucket and objects, its mirror's repositories, as the program names them
// (read from the stack's plan); the project-level calls that create or list them carry another
// resource type and stay allowed.
func TestDeployRolesHoldOnTheStacksResourcesOnly(t *testing.T) {
	conditions := map[string]string{}
	for _, cmd := range ciCommands(t) {
		if c := flag(cmd.Args, "--condition"); c != "" && flag(cmd.Args, "--member") == "serviceAccount:gke-rl-deploy@"+clitest.Vars["PROJECT"]+".iam.gserviceaccount.com" {
			_, expr, ok := strings.Cut(c, ",expression=")
			require.True(t, ok, "the expression comes last (it may hold commas no more than gcloud's dict allows): %s", c)
			conditions[flag(cmd.Args, "--role")] = expr
		}
	}
	project, number := clitest.Vars["PROJECT"], clitest.Vars["NUMBER"]
	require.Len(t, conditions, 3, "%v", conditions)
	resource := func(typ, name string) map[string]any { return map[string]any{"type": typ, "name": name} }
	projectLevel := resource("cloudresourcemanager.googleapis.com/Project", "projects/"+project)
	// The stack's own resources, as the program names them: b200-spot (the loop's first stack)
	// with the tokens and a bucket.
	own := map[string][]map[string]any{}
	res := plantest.Plan(t, "b200-spot", "gcp:project="+project, "storage.type=gcsfuse", "tokens.huggingFace=true", "tokens.wandb=true")
	for _, r := range res.OfType("gcp:secretmanager/secret:Secret") {
		own["projects/"+project+"/roles/gkeRlSecrets"] = append(own["projects/"+project+"/roles/gkeRlSecrets"],
			resource("secretmanager.googleapis.com/Secret", "projects/"+number+"/secrets/"+plantest.Input(t, r, "secretId").(string)))
	}
	for _, r := range res.OfType("gcp:storage/bucket:Bucket") {
		bucket := "projects/_/buckets/" + plantest.Input(t, r, "name").(string)
		own["roles/storage.admin"] = append(own["roles/storage.admin"],
			resource("storage.googleapis.com/Bucket", bucket), resource("storage.googleapis.com/Object", bucket+"/objects/checkpoints/step_10"))
	}
	for _, r := range res.OfType("gcp:artifactregistry/repository:Repository") {
		own["roles/artifactregistry.admin"] = append(own["roles/artifactregistry.admin"], resource("artifactregistry.googleapis.com/Repository",
			"projects/"+project+"/locations/"+plantest.Input(t, r, "location").(string)+"/repositories/"+plantest.Input(t, r, "repositoryId").(string)))
	}
	for role, tc := range map[string]struct{ own, others []map[string]any }{
		"projects/" + project + "/roles/gkeRlSecrets": {
			own: own["projects/"+project+"/roles/gkeRlSecrets"],
			others: []map[string]any{
				resource("secretmanager.googleapis.com/Secret", "projects/"+number+"/secrets/prod-database-password"),
				resource("secretmanager.googleapis.com/Secret", "projects/"+number+"/secrets/verl-h200-hf-token"),
			},
		},
		"roles/storage.admin": {
			own: own["roles/storage.admin"],
			others: []map[string]any{
				resource("storage.googleapis.com/Bucket", "projects/_/buckets/"+project+"-pulumi-state"),
				resource("storage.googleapis.com/Object", "projects/_/buckets/"+project+"-pulumi-state/objects/.pulumi/stacks/b200-spot.json"),
				resource("storage.googleapis.com/Bucket", "projects/_/buckets/"+project+"-ray-a4-gpu-spot-rl-other"),
			},
		},
		"roles/artifactregistry.admin": {
			own:    own["roles/artifactregistry.admin"],
			others: []map[string]any{resource("artifactregistry.googleapis.com/Repository", "projects/"+project+"/locations/us-east1/repositories/team-images")},
		},
	} {
		require.NotEmpty(t, tc.own, "%s: the plan has the stack's resources", role)
		expr, ok := conditions[role]
		require.True(t, ok, "%s has a condition", role)
		assert.True(t, celTrue(t, expr, "resource", projectLevel), "%s: the project-level calls (create, list)", role)
		for _, r := range tc.own {
			assert.True(t, celTrue(t, expr, "resource", r), "%s: the stack's %s", role, r["name"])
		}
		for _, r := range tc.others {
			assert.False(t, celTrue(t, expr, "resource", r), "%s: %s is not the stack's", role, r["name"])
		}
	}
}
