package workloads_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/clitest"
	"gke-rl/workloads"
)

// gitRepo is a local repository with two commits; it returns its path and the first commit,
// which a tag would name.
func gitRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	clitest.Git(t, dir, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trainer.py"), []byte("print('v0.6.0')\n"), 0o644))
	clitest.Git(t, dir, "add", "trainer.py")
	clitest.Git(t, dir, "commit", "-qm", "v0.6.0")
	first := clitest.Git(t, dir, "rev-parse", "HEAD")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trainer.py"), []byte("print('moved')\n"), 0o644))
	clitest.Git(t, dir, "commit", "-qam", "a later commit a moved tag could name")
	return dir, first
}

// The data preparation fetches verl by commit with the real git, and checks what it got.
func TestCheckoutFetchesTheCommit(t *testing.T) {
	repo, commit := gitRepo(t)
	dst := filepath.Join(t.TempDir(), "verl")
	require.NoError(t, os.MkdirAll(dst, 0o755))
	script := workloads.PrepScript(nil) + "checkout_commit " + dst + " " + repo + " " + commit + "\n"
	res := clitest.RunScript(t, script)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "checked out "+repo+" at "+commit)
	body, err := os.ReadFile(filepath.Join(dst, "trainer.py"))
	require.NoError(t, err)
	assert.Equal(t, "print('v0.6.0')\n", string(body), "the commit's code, not the branch head's")
}

// The submitter submits nothing when the checkout the job would ship is at another commit or
// has changed; it submits when it is the commit, unchanged.
func TestSubmitterVerifiesTheCheckout(t *testing.T) {
	repo, commit := gitRepo(t)
	verify := func(dir, want string) (string, int) {
		ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
			"job status": {{Code: 1}, {Files: []string{"ray-job-status-stopped.txt"}}},
			"job submit": {{Files: []string{"ray-job-submit-no-wait.txt"}}},
			"job logs":   {{Files: []string{"ray-job-logs.txt"}, Then: []string{"ray-job-status-stopped.txt"}}},
		})
		out, code := runSubmitter(t, ray, map[string]string{"POLL_SECONDS": "0", "VERIFY_DIR": dir, "VERIFY_COMMIT": want})
		if code != 0 {
			assert.NotContains(t, strings.Join(ray.Calls(), "\n"), "job submit", "nothing submitted")
		}
		return out, code
	}
	head := clitest.Git(t, repo, "rev-parse", "HEAD")
	out, code := verify(repo, commit)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "is at "+head+", not "+commit)

	out, code = verify(repo, head)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "unchanged")

	require.NoError(t, os.WriteFile(filepath.Join(repo, "trainer.py"), []byte("import os; os.system('curl evil')\n"), 0o644))
	out, code = verify(repo, head)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "differs from")
	assert.Contains(t, out, "M trainer.py")

	out, code = verify(t.TempDir(), commit)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "is not a checkout")
}
