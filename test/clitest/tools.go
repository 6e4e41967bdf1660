package clitest

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gke-rl/test/golden"
)

// RequireEnv makes a missing tool a failure instead of a skip; `.ci/run` sets it, so that CI
// always runs the tests that need the real tools.
const RequireEnv = "GKE_RL_REQUIRE_TOOLS"

// Tool is the path of a command-line tool a test runs. Without it the test is skipped, naming
// the package that provides it, or fails when RequireEnv is set.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	packages := map[string]string{
		"gcloud":     "Debian package google-cloud-cli",
		"kubectl":    "Debian package kubectl",
		"shellcheck": "Debian package shellcheck",
		"bash":       "Debian package bash",
		"pulumi":     "built by .ci/run: cd .ci/pulumi && go install github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
	}
	msg := name + " is not on PATH (" + packages[name] + "); this test runs the real tool"
	if os.Getenv(RequireEnv) != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Result is what a command did.
type Result struct {
	Stdout, Stderr string
	// Code is the exit status (-1 when it did not start or was killed).
	Code int
}

// Run runs name with args and env added to the test's environment, and returns what it did.
func Run(t testing.TB, env []string, name string, args ...string) Result {
	t.Helper()
	return RunIn(t, "", env, name, args...)
}

// RunIn is Run in the directory dir (the test's own when empty).
func RunIn(t testing.TB, dir string, env []string, name string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	default:
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// RunScript runs a script with bash, as the pulumi-command steps do (`/bin/bash -c <script>`).
func RunScript(t testing.TB, script string, env ...string) Result {
	t.Helper()
	return Run(t, env, Tool(t, "bash"), "-c", script)
}

// ReplyFile answers with a recorded response body under the repository's testdata/.
func ReplyFile(t testing.TB, w http.ResponseWriter, status int, name string) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata", name))
	if err != nil {
		t.Errorf("fake API: %v", err)
		status, body = http.StatusInternalServerError, []byte(`{}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Git runs the real git in dir, as a fixed author, fails the test unless it succeeds, and
// returns its output trimmed: for tests that make local repositories.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	res := Run(t, env, Tool(t, "git"), append([]string{"-C", dir}, args...)...)
	if res.Code != 0 {
		t.Fatalf("git %v: %s", args, res.Stderr)
	}
	return strings.TrimSpace(res.Stdout)
}

// GitRepo is a new local repository holding files (path: content) in one commit, made with the
// real git; it returns the repository's directory and the commit.
func GitRepo(t testing.TB, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "first"}} {
		Git(t, dir, args...)
	}
	return dir, Git(t, dir, "rev-parse", "HEAD")
}
