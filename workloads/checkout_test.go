package workloads_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/clitest"
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
	assert.NoDirExists(t, filepath.Join(dst, ".git"), "the repository stays in the step's own directory")
}

// git runs nothing the volume holds: a hook, and configuration naming a hooks directory, planted
// in the checkout directory (as a writer of the volume could between two git commands) neither
// runs nor is read; the commit's files arrive all the same.
func TestCheckoutRunsNoHookFromTheVolume(t *testing.T) {
	repo, commit := gitRepo(t)
	dst := filepath.Join(t.TempDir(), "verl")
	ran := filepath.Join(t.TempDir(), "hook-ran")
	hook := "#!/bin/sh\ntouch " + ran + "\n"
	for _, dir := range []string{filepath.Join(dst, ".git", "hooks"), filepath.Join(dst, "planted-hooks")} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "post-checkout"), []byte(hook), 0o755))
	}
	clitest.Git(t, dst, "init", "-q")
	clitest.Git(t, dst, "config", "core.hooksPath", filepath.Join(dst, "planted-hooks"))
	res := clitest.RunScript(t, workloads.PrepScript(nil)+"checkout_commit "+dst+" "+repo+" "+commit+"\n")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.NoFileExists(t, ran, "no hook of the volume ran")
	body, err := os.ReadFile(filepath.Join(dst, "trainer.py"))
	require.NoError(t, err)
	assert.Equal(t, "print('v0.6.0')\n", string(body))
}

// submitterVerifying runs the submitter with the shipped code at dir, pinned to tree; it
// returns the output, the exit status and whether it submitted.
func submitterVerifying(t *testing.T, dir, tree string) (string, int, bool) {
	t.Helper()
	out, code, shipped := submitterShipping(t, dir, tree, t.TempDir())
	return out, code, shipped != ""
}

// submitterShipping runs the submitter as submitterVerifying does, its temporary files in tmp,
// and returns the directory `ray job submit` was given to package (py_modules), or "".
func submitterShipping(t *testing.T, dir, tree, tmp string) (string, int, string) {
	t.Helper()
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
		"job status": {{Code: 1}, {Files: []string{"ray-job-status-stopped.txt"}}},
		"job submit": {{Files: []string{"ray-job-submit-no-wait.txt"}}},
		"job logs":   {{Files: []string{"ray-job-logs.txt"}, Then: []string{"ray-job-status-stopped.txt"}}},
	})
	env, err := json.Marshal(workloads.RuntimeEnv{PyModules: []string{dir}})
	require.NoError(t, err)
	out, code := runSubmitter(t, ray, map[string]string{"POLL_SECONDS": "0", "VERIFY_DIR": dir, "VERIFY_TREE": tree,
		"RUNTIME_ENV_JSON": string(env), "TMPDIR": tmp})
	for _, call := range ray.Calls() {
		if _, rest, ok := strings.Cut(call, "--runtime-env-json "); ok && strings.HasPrefix(call, "job submit") {
			var shipped workloads.RuntimeEnv
			require.NoError(t, json.Unmarshal([]byte(strings.Fields(rest)[0]), &shipped))
			require.Len(t, shipped.PyModules, 1)
			return out, code, shipped.PyModules[0]
		}
	}
	return out, code, ""
}

// assertSubmitterRefuses runs the submitter on dir and checks that it fails with want and submits
// nothing.
func assertSubmitterRefuses(t *testing.T, dir, tree, want string) {
	t.Helper()
	out, code, submitted := submitterVerifying(t, dir, tree)
	assert.Equal(t, 1, code, out)
	assert.False(t, submitted, "nothing submitted")
	assert.Contains(t, out, want)
}

// packageRepo is a local repository whose commit holds a package `pkg` and a README; it returns
// the repository and the package's git tree hash (what the program pins for verl).
func packageRepo(t *testing.T) (string, string) {
	t.Helper()
	dir, _ := clitest.GitRepo(t, map[string]string{"pkg/__init__.py": "", "pkg/trainer.py": "print('v0.6.0')\n", "README.md": "verl\n"})
	return dir, clitest.Git(t, dir, "rev-parse", "HEAD:pkg")
}

// The submitter ships the package only when its files are exactly the pinned tree's.
func TestSubmitterVerifiesTheShippedCode(t *testing.T) {
	repo, tree := packageRepo(t)
	pkg := filepath.Join(repo, "pkg")
	tmp := t.TempDir()
	out, code, shipped := submitterShipping(t, pkg, tree, tmp)
	require.Equal(t, 0, code, out)
	// What Ray packages is the submitter's own copy, the one checked: a writer of the volume
	// cannot change the code between the check and the packaging.
	assert.True(t, strings.HasPrefix(shipped, tmp+"/"), "ships %s, a copy under the submitter's TMPDIR", shipped)
	assert.Equal(t, "pkg", filepath.Base(shipped), "the copy keeps the module's name")
	assert.Contains(t, out, shipped+" is "+tree+" (git tree hash), as pinned")
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "trainer.py"), []byte("import os; os.system('curl evil')\n"), 0o644))
	body, err := os.ReadFile(filepath.Join(shipped, "trainer.py"))
	require.NoError(t, err)
	assert.Equal(t, "print('v0.6.0')\n", string(body), "a write to the volume after the check does not reach what is shipped")
	clitest.Git(t, repo, "checkout", "--", "pkg")

	// Executable bits do not count (a volume may show every file executable).
	require.NoError(t, os.Chmod(filepath.Join(pkg, "trainer.py"), 0o755))
	out, code, _ = submitterVerifying(t, pkg, tree)
	require.Equal(t, 0, code, out)

	require.NoError(t, os.WriteFile(filepath.Join(pkg, "trainer.py"), []byte("import os; os.system('curl evil')\n"), 0o644))
	assertSubmitterRefuses(t, pkg, tree, "is not the code this program pins")
	assertSubmitterRefuses(t, filepath.Join(t.TempDir(), "missing"), tree, "cannot be read")
}

// What the volume's own repository says is not trusted: a package planted in the shipped code
// and hidden by the repository's .git/info/exclude (the old check, `git status --porcelain`,
// found that checkout clean) is refused, and a core.fsmonitor command in its .git/config (which
// `git status` would run in the submitter) never runs.
func TestSubmitterTrustsNoRepositoryStateOnTheVolume(t *testing.T) {
	repo, tree := packageRepo(t)
	pkg := filepath.Join(repo, "pkg")
	require.NoError(t, os.MkdirAll(filepath.Join(pkg, "evil"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "evil", "__init__.py"), []byte("import os; os.system('curl evil')\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte("pkg/evil/\n"), 0o644))
	assert.Empty(t, clitest.Git(t, repo, "status", "--porcelain"), "the planted package is hidden from git status")
	assertSubmitterRefuses(t, pkg, tree, "is not the code this program pins")

	require.NoError(t, os.RemoveAll(filepath.Join(pkg, "evil")))
	ran := filepath.Join(t.TempDir(), "fsmonitor-ran")
	clitest.Git(t, repo, "config", "core.fsmonitor", "touch "+ran+"; false")
	clitest.Git(t, repo, "status", "--porcelain")
	require.FileExists(t, ran, "git status runs the volume's fsmonitor command")
	require.NoError(t, os.Remove(ran))
	out, code, submitted := submitterVerifying(t, pkg, tree)
	require.Equal(t, 0, code, out)
	assert.True(t, submitted)
	assert.NoFileExists(t, ran, "the submitter runs nothing the volume's repository names")
}

// The data preparation runs verl's dataset script from the volume only once the scripts'
// directory is the pinned tree, and writes no bytecode into it.
func TestPrepRunsOnlyVerifiedCode(t *testing.T) {
	repo, tree := packageRepo(t)
	pkg := filepath.Join(repo, "pkg")
	run := func() clitest.Result {
		return clitest.RunScript(t, workloads.PrepScript(nil)+"run_verified "+pkg+" "+tree+" "+pkg+" "+tree+" -- python3 -c 'import sys; print(sys.dont_write_bytecode)'\n")
	}
	clitest.Tool(t, "python3")
	res := run()
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "as pinned\nTrue\n")

	require.NoError(t, os.WriteFile(filepath.Join(pkg, "gsm8k.py"), []byte("import os; os.system('curl evil')\n"), 0o644))
	res = run()
	assert.Equal(t, 1, res.Code)
	assert.Contains(t, res.Stderr, "is not the code this program pins")
	assert.NotContains(t, res.Stdout, "True", "the command did not run")
}

// The copy is checked as it is: a symbolic link the volume holds stays a link, which the pinned
// tree of plain files refuses (following it would ship whatever it points to).
func TestSubmitterRefusesALinkInTheShippedCode(t *testing.T) {
	repo, tree := packageRepo(t)
	pkg := filepath.Join(repo, "pkg")
	outside := filepath.Join(t.TempDir(), "trainer.py")
	require.NoError(t, os.WriteFile(outside, []byte("print('v0.6.0')\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(pkg, "trainer.py")))
	require.NoError(t, os.Symlink(outside, filepath.Join(pkg, "trainer.py")))
	assertSubmitterRefuses(t, pkg, tree, "held a symbolic link when it was copied, "+filepath.Join(pkg, "trainer.py"))
}

// A writer of the volume who swaps the checked directory for a link after verified_copy looked
// at it (here the moment cp starts: a cp first on the PATH makes the swap, then runs the real one)
// gets a link copied, whose target holds the pinned files: hashed through the link, it would pass,
// and what runs or ships would be the volume's. The copy is checked, and refused.
func TestVerifiedCopyRefusesALinkSwappedInDuringTheCopy(t *testing.T) {
	repo, tree := packageRepo(t)
	pkg := filepath.Join(repo, "pkg")
	same := filepath.Join(t.TempDir(), "pkg")
	clitest.Run(t, nil, clitest.Tool(t, "cp"), "-R", pkg, same)
	bin := t.TempDir()
	swap := "#!/bin/bash\nmv " + pkg + " " + pkg + ".moved && ln -s " + same + " " + pkg + "\nexec " + clitest.Tool(t, "cp") + ` "$@"` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "cp"), []byte(swap), 0o755))
	res := clitest.RunScript(t, workloads.PrepScript(nil)+"run_verified "+pkg+" "+tree+" -- echo the command ran\n",
		"PATH="+bin+":"+os.Getenv("PATH"), "TMPDIR="+t.TempDir())
	assert.Equal(t, 1, res.Code, res.Stdout+res.Stderr)
	assert.Contains(t, res.Stderr, pkg+" held a symbolic link when it was copied, "+pkg+": refused")
	assert.NotContains(t, res.Stdout, "the command ran")
	target, err := os.Readlink(pkg)
	require.NoError(t, err, "the swap happened")
	assert.Equal(t, same, target)
}

// A checked directory that is itself a link (or is reached through one) would hash the link's
// target of the moment and ship a link back onto the volume: refused before the copy, though the
// target holds exactly the pinned files.
func TestSubmitterRefusesACheckedDirectoryThatIsALink(t *testing.T) {
	repo, tree := packageRepo(t)
	pkg := filepath.Join(repo, "pkg")
	moved := filepath.Join(t.TempDir(), "pkg")
	require.NoError(t, os.Rename(pkg, moved))
	require.NoError(t, os.Symlink(moved, pkg))
	assertSubmitterRefuses(t, pkg, tree, pkg+" is a symbolic link, or is reached through one")

	// Reached through a linked parent.
	require.NoError(t, os.Remove(pkg))
	require.NoError(t, os.Rename(moved, pkg))
	linked := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, os.Symlink(repo, linked))
	assertSubmitterRefuses(t, filepath.Join(linked, "pkg"), tree, "is reached through one")
}

// A checked directory that the runtime environment does not ship would leave the shipped code
// unchecked: the submitter refuses it.
func TestSubmitterRefusesToShipOtherCodeThanItChecked(t *testing.T) {
	repo, tree := packageRepo(t)
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{"job status": {{Code: 1}}})
	out, code := runSubmitter(t, ray, map[string]string{"POLL_SECONDS": "0", "VERIFY_DIR": filepath.Join(repo, "pkg"), "VERIFY_TREE": tree,
		"RUNTIME_ENV_JSON": `{"py_modules":["/data/verl/v0.6.0/verl"]}`})
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "the runtime environment does not ship "+filepath.Join(repo, "pkg"))
	assert.Empty(t, ray.Calls(), "nothing asked of Ray, nothing submitted")
}

// The preparation runs the copies it checked: a command argument inside a checked directory, and
// the package PYTHONPATH finds, are read from the copy, so that a write to the volume after the
// check does not reach the command.
func TestPrepRunsTheCopiesItChecked(t *testing.T) {
	clitest.Tool(t, "python3")
	repo, tree := packageRepo(t)
	pkg := filepath.Join(repo, "pkg")
	tmp := t.TempDir()
	res := clitest.RunScript(t, workloads.PrepScript(nil)+"run_verified "+pkg+" "+tree+" -- python3 -c 'import sys; print(sys.argv[1])' "+filepath.Join(pkg, "trainer.py")+"\n",
		"TMPDIR="+tmp, "VERIFIED_PYTHONPATH="+repo)
	require.Equal(t, 0, res.Code, res.Stderr)
	arg := strings.TrimSpace(res.Stdout[strings.LastIndex(strings.TrimSpace(res.Stdout), "\n")+1:])
	assert.True(t, strings.HasPrefix(arg, tmp+"/") && strings.HasSuffix(arg, filepath.Join(pkg, "trainer.py")), "the argument names the copy: %s", arg)

	// The command overwrites the volume's trainer.py (named outside its arguments), then imports
	// the package: the checked copy's trainer runs.
	prog := filepath.Join(t.TempDir(), "plant.py")
	require.NoError(t, os.WriteFile(prog, []byte(`import os, pathlib
pathlib.Path(os.environ["PLANT"]).write_text("raise SystemExit('the volume code ran')\n")
import pkg.trainer
print(pkg.trainer.__file__)
`), 0o644))
	res = clitest.RunScript(t, workloads.PrepScript(nil)+"run_verified "+pkg+" "+tree+" -- python3 "+prog+"\n",
		"TMPDIR="+tmp, "VERIFIED_PYTHONPATH="+repo, "PLANT="+filepath.Join(pkg, "trainer.py"))
	require.Equal(t, 0, res.Code, res.Stdout+res.Stderr)
	assert.Contains(t, res.Stdout, "v0.6.0\n"+tmp+"/", "the package is imported from the checked copy")
	assert.NotContains(t, res.Stdout+res.Stderr, "the volume code ran")
}

// A package planted on the volume beside the checked code (huggingface_hub, which the download
// steps import while they hold the token) is not on any step's import path: a checked command
// imports only its checked copies, and an import path entry that holds no checked directory is
// refused.
func TestPrepImportsNothingUncheckedFromTheVolume(t *testing.T) {
	clitest.Tool(t, "python3")
	repo, tree := packageRepo(t)
	pkg := filepath.Join(repo, "pkg")
	planted := filepath.Join(repo, "huggingface_hub")
	require.NoError(t, os.MkdirAll(planted, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(planted, "__init__.py"), []byte("print('PLANTED: the token is read')\n"), 0o644))
	probe := `python3 -c 'import importlib.util as u; s = u.find_spec("huggingface_hub"); print("PLANTED" if s and "PLANTED" in open(s.origin).read() else "clean")'`
	res := clitest.RunScript(t, workloads.PrepScript(nil)+"run_verified "+pkg+" "+tree+" -- "+probe+"\n",
		"TMPDIR="+t.TempDir(), workloads.VerifiedPythonPathEnv+"="+repo)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.True(t, strings.HasSuffix(res.Stdout, "\nclean\n"), "the planted package is not found from the checked copy: %s", res.Stdout)
	// As the Job's PYTHONPATH, the volume's directory would hand it to every step.
	res = clitest.RunScript(t, probe+"\n", "PYTHONPATH="+repo)
	require.Equal(t, "PLANTED\n", res.Stdout, res.Stderr)

	res = clitest.RunScript(t, workloads.PrepScript(nil)+"run_verified "+pkg+" "+tree+" -- true\n",
		"TMPDIR="+t.TempDir(), workloads.VerifiedPythonPathEnv+"="+planted)
	assert.Equal(t, 1, res.Code)
	assert.Contains(t, res.Stderr, "VERIFIED_PYTHONPATH names "+planted+", which holds no directory this step checks: refused")
}
