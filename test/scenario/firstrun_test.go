package scenario_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/infra"
	"gke-rl/test/clitest"
	"gke-rl/test/plantest"
	"gke-rl/workloads"
)

// The smoke stack's first run from an empty volume: its data preparation Job's script, then its
// RayJob's submitter, on the same directory. The submitter checks the verl checkout the
// preparation left, and submits the run.
func TestSmokeSubmitsItsRunAfterItsDataPreparation(t *testing.T) {
	volume := t.TempDir()
	// The pods see the volume at mountPath, each as its mounts let it.
	mountPath := filepath.Join(t.TempDir(), "data")
	bp := plantest.Resolve(t, "smoke", "storage.mountPath="+mountPath)
	standIn, commit := verlStandIn(t)
	py := downloads(t)
	shared := bp.Storage.Volume.Volume().Name

	prep := bp.Run.Prep.Spec.Template.Spec.Containers[0]
	unmount := mount(t, prep, shared, mountPath, volume)
	out, code := runPrep(t, bp, standIn, commit, py)
	require.Equal(t, 0, code, out)
	// The preparation wrote its directories alone, and nothing where it has no mount: it never
	// saw the checkpoints.
	assert.Empty(t, unmount(), "written outside the preparation's mounts, lost with its container")
	top, err := os.ReadDir(volume)
	require.NoError(t, err)
	var made []string
	for _, e := range top {
		made = append(made, e.Name())
	}
	assert.Subset(t, bp.Run.Layout.PrepDirs(), made)
	assert.NotContains(t, made, "checkpoints")
	assert.Contains(t, out, "checked out "+workloads.VerlRepository+" at "+commit)
	calls, err := os.ReadFile(filepath.Join(py, "calls"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(calls), "\n"), "\n")
	require.Len(t, lines, 3, string(calls))
	assert.Equal(t, "download dataset openai/gsm8k", lines[0])
	assert.Equal(t, "download model Qwen/Qwen2.5-0.5B-Instruct", lines[2])
	// verl's dataset script ran from the preparation's checked copy, not from the volume.
	script := filepath.Join(mountPath, "verl", bp.Run.Release.Tag, "examples/data_preprocess/gsm8k.py")
	assert.True(t, strings.HasPrefix(lines[1], "convert ") && strings.HasSuffix(lines[1], script) && lines[1] != "convert "+script, lines[1])
	// Each download filled its own directory on the volume, the model where the run loads it.
	assert.FileExists(t, filepath.Join(volume, "models", "Qwen/Qwen2.5-0.5B-Instruct@7ae557604adf67be50417f59c2c2f167def9a775", "stand-in"))
	assert.FileExists(t, filepath.Join(volume, "datasets", "hub", "openai/gsm8k@740312add88f781978c0658806c59bc2815b9866", "stand-in"))

	// A second preparation (the Job retried, or `up` again) skips every step.
	unmount = mount(t, prep, shared, mountPath, volume)
	out, code = runPrep(t, bp, standIn, commit, py)
	require.Equal(t, 0, code, out)
	assert.Equal(t, 4, strings.Count(out, ": ready, skipped"), out)
	assert.Empty(t, unmount())

	// The submitter mounts the whole volume, read-only.
	submitter := bp.Run.RayJob.Spec.SubmitterPodTemplate.Spec.Containers[0]
	mount(t, submitter, shared, mountPath, volume)
	submitAfterPrep(t, bp, standIn, commit)
}

// A volume prepared by an earlier release, which wrote each step's marker inside its directory:
// the checkout is made again (it has no marker beside it), without the stray file, and the
// submitter submits.
func TestSmokeSubmitsOnAVolumeOfTheEarlierRelease(t *testing.T) {
	volume := t.TempDir()
	bp := plantest.Resolve(t, "smoke", "storage.mountPath="+volume)
	standIn, commit := verlStandIn(t)
	checkout := filepath.Join(volume, "verl", bp.Run.Release.Tag)
	clitest.Git(t, volume, "clone", "-q", standIn, checkout)
	require.NoError(t, os.WriteFile(filepath.Join(checkout, ".gke-rl-complete"), nil, 0o644))

	out, code := runPrep(t, bp, standIn, commit, downloads(t))
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "verl "+bp.Run.Release.Tag+": preparing")
	assert.NoFileExists(t, filepath.Join(checkout, ".gke-rl-complete"))

	submitAfterPrep(t, bp, standIn, commit)
}

// runPrep runs the stack's data preparation container on its volume, with verl's repository
// standing in at commit and the downloads stood for by the python3 in downloads.
func runPrep(t *testing.T, bp *infra.Blueprint, standIn, commit, downloads string) (string, int) {
	t.Helper()
	prep := bp.Run.Prep.Spec.Template.Spec.Containers[0]
	prep.Command = slices.Clone(prep.Command)
	script := len(prep.Command) - 1
	// The stand-in's commit and trees take the place of the plan's release's.
	source := bp.Run.Release.Source
	prep.Command[script] = strings.NewReplacer(source.Commit, commit,
		source.PackageTree, clitest.Git(t, standIn, "rev-parse", commit+":"+workloads.VerlPackageDir),
		source.PreprocessTree, clitest.Git(t, standIn, "rev-parse", commit+":"+workloads.VerlPreprocessDir)).Replace(prep.Command[script])
	env := append(envOf(prep, nil), verlRedirect(standIn)...)
	return run(t, prep, append(env, "PATH="+downloads+":"+os.Getenv("PATH"), "HOME="+t.TempDir()))
}

// submitAfterPrep runs the stack's submitter on the prepared volume and checks that it submits.
func submitAfterPrep(t *testing.T, bp *infra.Blueprint, standIn, commit string) {
	t.Helper()
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
		"job status": {{Code: 1}, {Files: []string{"ray-job-status-stopped.txt"}}},
		"job submit": {{Files: []string{"ray-job-submit-no-wait.txt"}}},
		"job logs":   {{Files: []string{"ray-job-logs.txt"}, Then: []string{"ray-job-status-stopped.txt"}}},
	})
	submitter := bp.Run.RayJob.Spec.SubmitterPodTemplate.Spec.Containers[0]
	tree := clitest.Git(t, standIn, "rev-parse", commit+":"+workloads.VerlPackageDir)
	env := envOf(submitter, map[string]string{"VERIFY_TREE": tree, "POLL_SECONDS": "0"})
	out, code := run(t, submitter, append(env, ray.Path(),
		"RAY_DASHBOARD_ADDRESS="+bp.Run.RayJob.Name+"-head-svc.gke-rl.svc.cluster.local:8265",
		"RAY_JOB_SUBMISSION_ID=raysubmit_tUAuCKubPAEXh6CW"))
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "is "+tree+" (git tree hash), as pinned")
	calls := strings.Join(ray.Calls(), "\n")
	assert.Contains(t, calls, "job submit ")
	// What is shipped is the submitter's checked copy, not the volume's directory.
	verifyDir := envValue(submitter, "VERIFY_DIR")
	require.NotEmpty(t, verifyDir)
	assert.NotContains(t, calls, `"`+verifyDir+`"`)
	assert.Contains(t, calls, "/"+workloads.VerlPackageDir+`"]}`)
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// The day after on one volume: the smoke stack's experiment at verl v0.6.0 prepared and
// submitted, then the stack moved to v0.7.0 (a new experiment): its preparation checks out v0.7.0
// beside v0.6.0's checkout, which it leaves as it was, and its submitter checks and ships
// v0.7.0's package. Each release's checkout has a directory of its own, so experiments of both
// can share the volume.
func TestTwoReleasesPrepareAndSubmitOnOneVolume(t *testing.T) {
	volume := t.TempDir()
	old := plantest.Resolve(t, "smoke", "storage.mountPath="+volume)
	moved := plantest.Resolve(t, "smoke", "storage.mountPath="+volume, "job.frameworkRelease=v0.7.0",
		"ray.image=verlai/verl:vllm012.latest@sha256:"+strings.Repeat("5", 64), "ray.version=2.53.0")
	require.Equal(t, "v0.6.0", old.Run.Release.Tag)
	require.Equal(t, "v0.7.0", moved.Run.Release.Tag)
	require.NotEqual(t, old.Run.Layout.Run, moved.Run.Layout.Run, "a new experiment")
	standIn, commit := verlStandIn(t)

	out, code := runPrep(t, old, standIn, commit, downloads(t))
	require.Equal(t, 0, code, out)
	submitAfterPrep(t, old, standIn, commit)
	before := filepath.Join(volume, "verl", "v0.6.0")
	stamp, err := os.Stat(filepath.Join(before, workloads.VerlPackageDir, "__init__.py"))
	require.NoError(t, err)

	out, code = runPrep(t, moved, standIn, commit, downloads(t))
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "verl v0.7.0: preparing")
	assert.DirExists(t, filepath.Join(volume, "verl", "v0.7.0", workloads.VerlPackageDir))
	after, err := os.Stat(filepath.Join(before, workloads.VerlPackageDir, "__init__.py"))
	require.NoError(t, err)
	assert.Equal(t, stamp.ModTime(), after.ModTime(), "v0.6.0's checkout is left as it was")
	submitAfterPrep(t, moved, standIn, commit)
	assert.Contains(t, moved.Run.RayJob.Spec.RuntimeEnvYAML, "/verl/v0.7.0/verl", "the new experiment ships v0.7.0's package")
	submitter := moved.Run.RayJob.Spec.SubmitterPodTemplate.Spec.Containers[0]
	assert.Equal(t, filepath.Join(volume, "verl", "v0.7.0", workloads.VerlPackageDir), envValue(submitter, "VERIFY_DIR"), "and checks v0.7.0's checkout, not v0.6.0's")
}
