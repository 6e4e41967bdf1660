package repocheck

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gke-rl/cmd"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repository is a fake GitHub that answers each path with a recorded response under
// testdata/github (SOURCES.md there); a path left out answers 404, as GitHub does for a
// setting the token may not read.
type repository map[string]string

const repo = "acme/gke-rl"

// protected is a repository set up as docs/ci.md asks.
var protected = repository{
	"/repos/acme/gke-rl/rules/branches/main":                                "rules-branches-main-protected.json",
	"/repos/acme/gke-rl/rulesets/18509013":                                  "ruleset-protected.json",
	"/repos/acme/gke-rl/environments/production":                            "environment-production.json",
	"/repos/acme/gke-rl/environments/production/deployment-branch-policies": "branch-policies-main.json",
	"/repos/acme/gke-rl/actions/permissions/workflow":                       "workflow-permissions-off.json",
}

func (r repository) with(path, file string) repository {
	c := repository{}
	for k, v := range r {
		c[k] = v
	}
	if file == "" {
		delete(c, path)
	} else {
		c[path] = file
	}
	return c
}

// check runs `go run . repo-check` against the fake, through the production client, and returns
// the exit status, the output and the requests' token headers.
func check(t *testing.T, r repository, args ...string) (int, string, []string) {
	t.Helper()
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		assert.Equal(t, http.MethodGet, req.Method, "read-only")
		assert.Equal(t, "application/vnd.github+json", req.Header.Get("Accept"))
		auth = append(auth, req.Header.Get("Authorization"))
		file, ok := r[req.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`))
			return
		}
		body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "github", file))
		require.NoError(t, err)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	code := run(append([]string{"--repo", repo}, args...), &out, &out, &Client{Base: srv.URL, Token: "ghp_test", HTTP: srv.Client()})
	return code, out.String(), auth
}

func line(t *testing.T, out, setting string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 30 && strings.TrimSpace(l[11:29]) == setting {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("no line for %s in\n%s", setting, out)
	return ""
}

func TestAProtectedRepositoryPasses(t *testing.T) {
	code, out, auth := check(t, protected)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, line(t, out, SettingMain), "ok       main protected      main takes changes through pull requests with 1 approval of their last push, and refuses force pushes and deletion")
	assert.Contains(t, line(t, out, SettingBypass), `no one bypasses "protect-fork-rails"`)
	assert.Contains(t, line(t, out, SettingEnvironment), "production requires 2 reviewers, prevents self-review, and administrators may not bypass it")
	assert.Contains(t, line(t, out, SettingBranches), "production takes deployments from main alone")
	assert.Contains(t, line(t, out, SettingApproval), "GitHub Actions may not approve pull requests")
	assert.Contains(t, out, "every setting holds")
	for _, a := range auth {
		assert.Equal(t, "Bearer ghp_test", a)
	}
	assert.NotContains(t, out, "ghp_test", "the token is never printed")
}

// A real repository's main (recorded): protected against deletion and nothing else.
func TestMainProtectedAgainstDeletionOnlyFails(t *testing.T) {
	r := protected.with("/repos/acme/gke-rl/rules/branches/main", "rules-branches-main-jcode.json").
		with("/repos/acme/gke-rl/rulesets/18509013", "ruleset-jcode-protect-fork-rails.json")
	code, out, _ := check(t, r)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, line(t, out, SettingMain), "FAIL     main protected      main's rules (deletion) lack changes through pull requests, no force push")
	assert.Contains(t, out, "fix: https://github.com/acme/gke-rl/settings/rules: a branch ruleset on main")
}

// An approval that stays valid when commits are pushed after it lets those commits reach main,
// and the deploy environment, unreviewed.
func TestApprovalsThatOutliveTheirCommitsFail(t *testing.T) {
	code, out, _ := check(t, protected.with("/repos/acme/gke-rl/rules/branches/main", "rules-branches-main-stale-approvals.json"))
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, line(t, out, SettingMain), "lack approvals dismissed when new commits are pushed (dismiss_stale_reviews_on_push), the last push approved by someone other than its author (require_last_push_approval)")
	assert.NotContains(t, out, "every setting holds")
}

// The token goes with every request: an API address that is not https is refused before any.
func TestTheAPIAddressMustBeHTTPS(t *testing.T) {
	asked := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { asked = true }))
	defer srv.Close()
	for _, base := range []string{srv.URL, "ftp://example.com", "https://"} {
		t.Setenv("GITHUB_API_URL", base)
		t.Setenv("GITHUB_TOKEN", "ghp_test")
		var out bytes.Buffer
		assert.Equal(t, cmd.ExitUsage, Main([]string{"--repo", repo}, &out, &out), base)
		assert.Contains(t, out.String(), "is not an https address: the token would travel in the clear")
		assert.NotContains(t, out.String(), "ghp_test")
	}
	assert.False(t, asked, "no request")
}

func TestAnAdministratorBypassFails(t *testing.T) {
	code, out, _ := check(t, protected.with("/repos/acme/gke-rl/rulesets/18509013", "ruleset-admin-bypass.json"))
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, line(t, out, SettingBypass), "main's rules can be bypassed: protect-fork-rails RepositoryRole (always)")
}

// GitHub's documented example environment: a reviewer, but self-review allowed; and its
// documented branch policies take release/* too. Whether administrators may bypass it is not in
// the example: reported, not guessed.
func TestTheDocumentedEnvironmentFails(t *testing.T) {
	r := protected.with("/repos/acme/gke-rl/environments/production", "environment-docs-example.json").
		with("/repos/acme/gke-rl/environments/production/deployment-branch-policies", "branch-policies-docs-example.json")
	code, out, _ := check(t, r)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, line(t, out, SettingEnvironment), "production: the person who started a deployment may approve it (prevent_self_review is off)")
	assert.Contains(t, line(t, out, SettingBranches), "production takes deployments from release/*, main, not main alone")
}

func TestAMissingEnvironmentFails(t *testing.T) {
	code, out, _ := check(t, protected.with("/repos/acme/gke-rl/environments/production", ""))
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, line(t, out, SettingEnvironment), "the environment production is not shown: not shown (HTTP 404)")
	assert.Contains(t, line(t, out, SettingBranches), "unknown")
}

// GitHub's documented example of the Actions setting: workflows may approve pull requests.
func TestWorkflowsThatMayApproveFail(t *testing.T) {
	code, out, _ := check(t, protected.with("/repos/acme/gke-rl/actions/permissions/workflow", "workflow-permissions-docs-example.json"))
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, line(t, out, SettingApproval), "FAIL     workflow approvals  GitHub Actions may approve pull requests")
	assert.Contains(t, out, `"Allow GitHub Actions to create and approve pull requests" off`)
}

// A token that may not read the administration settings: each setting it cannot see is named,
// and none is taken as holding.
func TestSettingsNotShownAreNamed(t *testing.T) {
	r := protected.with("/repos/acme/gke-rl/actions/permissions/workflow", "").with("/repos/acme/gke-rl/rulesets/18509013", "")
	code, out, _ := check(t, r)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.Contains(t, line(t, out, SettingApproval), "unknown")
	assert.Contains(t, line(t, out, SettingBypass), "ruleset 18509013 is not shown to this token")
	assert.Contains(t, out, "no setting fails; 2 not shown to this token")
}

func TestJSONIsTheFindings(t *testing.T) {
	code, out, _ := check(t, protected, "--json")
	require.Equal(t, cmd.ExitOK, code, out)
	var findings []cmd.Finding
	require.NoError(t, json.Unmarshal([]byte(out), &findings), out)
	assert.Len(t, findings, 5)
}

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	assert.Equal(t, cmd.ExitUsage, run([]string{"--repo", "not a repo"}, &out, &out, &Client{}))
	assert.Contains(t, out.String(), `error: --repo: "not a repo" is not OWNER/NAME`)
	out.Reset()
	assert.Equal(t, cmd.ExitCannotAsk, run([]string{"--repo", repo}, &out, &out, &Client{Base: "http://127.0.0.1:1", HTTP: http.DefaultClient}))
	assert.Contains(t, out.String(), "error: cannot ask GitHub's API at http://127.0.0.1:1")
	// Asked for, the usage is an answer, not a failure; an unknown flag is one.
	out.Reset()
	assert.Equal(t, cmd.ExitOK, run([]string{"--help"}, &out, &out, &Client{}))
	assert.Contains(t, out.String(), "usage: go run . repo-check --repo OWNER/NAME [--json]")
	assert.Equal(t, cmd.ExitUsage, run([]string{"--no-such-flag"}, &out, &out, &Client{}))
}
