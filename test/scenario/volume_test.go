package scenario_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/test/clitest"
	"gke-rl/test/golden"
	"gke-rl/workloads"
)

// verlStandIn is a local repository standing for verl's at a release: verl's own .gitignore of that
// tag (testdata/verl/v0.6.0.gitignore), a package and the GSM8K preparation script's path. It
// returns the repository and its commit, which stands for the release's (Release.Source.Commit).
func verlStandIn(t *testing.T) (string, string) {
	t.Helper()
	ignore, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata", "verl", "v0.6.0.gitignore"))
	require.NoError(t, err)
	return clitest.GitRepo(t, map[string]string{
		".gitignore":                        string(ignore),
		"verl/__init__.py":                  "",
		"examples/data_preprocess/gsm8k.py": "# stands for verl's GSM8K conversion\n",
	})
}

// verlRedirect makes git fetch verl's repository from the stand-in (git's url.<base>.insteadOf,
// given in the environment as GIT_CONFIG_COUNT/KEY/VALUE), so the rendered script runs as it is.
func verlRedirect(standIn string) []string {
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=url." + standIn + ".insteadOf", "GIT_CONFIG_VALUE_0=" + workloads.VerlRepository}
}

// downloads is a directory holding a python3 that stands for the data preparation's Python
// steps, which need the network: the Hugging Face downloads (`python3 -I -c <hub_fetch.py> KIND
// REPO REVISION [DIR]`: DIR, when given, is the directory it fills, the Hub cache otherwise; one
// without -I, isolated from the working directory and PYTHON* variables, is refused) and
// verl's conversion (--local_save_dir). It fills the directory with one file and logs its
// arguments' first words to calls.
func downloads(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!` + clitest.Tool(t, "bash") + `
set -euo pipefail
out=
prev=
for a in "$@"; do
  [[ $prev == --local_save_dir ]] && out=$a
  prev=$a
done
if [[ $1 == -c ]]; then echo "a download without -I: it would import from its working directory" >&2; exit 2; fi
if [[ $1 == -I && $2 == -c ]]; then out=${7:-$HOME/hub-cache}; echo "download $4 $5" >>"$(dirname "$0")/calls"
else echo "convert $1" >>"$(dirname "$0")/calls"; fi
mkdir -p "$out"
echo data >"$out/stand-in"
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755))
	return dir
}

// envOf is a container's environment as VAR=value lines, with values replaced by set.
func envOf(c corev1.Container, set map[string]string) []string {
	var env []string
	for _, e := range c.Env {
		if v, ok := set[e.Name]; ok {
			e.Value = v
		}
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	return env
}

// run runs a container's command, as the kubelet would, with env added, and returns its
// output and exit code.
func run(t *testing.T, c corev1.Container, env []string) (string, int) {
	t.Helper()
	cmd := append(append([]string{}, c.Command...), c.Args...)
	res := clitest.Run(t, env, cmd[0], cmd[1:]...)
	return res.Stdout + res.Stderr, res.Code
}

// mount lays out at mountPath what container c of a pod sees of the shared volume (the pod
// volume named shared), backed by the directory volume, and returns the unmount: the whole
// volume for a mount without a subPath, else each subPath directory alone (made in the volume
// when missing, as kubelet does). Each mounted directory is moved in place, not linked (the
// scripts refuse code reached through a link, which a bind mount is not), and moved back by the
// unmount; what c wrote under mountPath outside its mounts stays out of the volume, as it
// stays in the container's own filesystem in a pod, and the unmount returns its names.
func mount(t *testing.T, c corev1.Container, shared, mountPath, volume string) (unmount func() []string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(mountPath))
	type moved struct{ from, to string }
	var mounts []moved
	for _, m := range c.VolumeMounts {
		if m.Name != shared {
			continue
		}
		if m.SubPath == "" {
			mounts = append(mounts, moved{volume, mountPath})
			continue
		}
		from := filepath.Join(volume, m.SubPath)
		require.NoError(t, os.MkdirAll(from, 0o755))
		mounts = append(mounts, moved{from, m.MountPath})
	}
	require.NotEmpty(t, mounts, "%s mounts the shared volume", c.Name)
	require.NoError(t, os.MkdirAll(mountPath, 0o755))
	for _, m := range mounts {
		require.NoError(t, os.MkdirAll(filepath.Dir(m.to), 0o755))
		require.NoError(t, os.RemoveAll(m.to))
		require.NoError(t, os.Rename(m.from, m.to))
	}
	return func() []string {
		for _, m := range mounts {
			require.NoError(t, os.Rename(m.to, m.from))
		}
		var stray []string
		if entries, err := os.ReadDir(mountPath); err == nil {
			for _, e := range entries {
				stray = append(stray, e.Name())
			}
		}
		require.NoError(t, os.RemoveAll(mountPath))
		return stray
	}
}
