package workloads_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kinds"
	"gke-rl/monitoring"
	"gke-rl/test/clitest"
	"gke-rl/workloads"
)

// onHead is an entrypoint with run.sh's path on the Ray head moved to a file that holds what its
// ConfigMap holds, as the head's mount would.
func onHead(t *testing.T, entrypoint string) string {
	t.Helper()
	require.Contains(t, entrypoint, " "+workloads.RunScriptPath+" ", "the entrypoint runs run.sh from its ConfigMap's mount")
	script := filepath.Join(t.TempDir(), workloads.RunScriptKey)
	require.NoError(t, os.WriteFile(script, []byte(workloads.RunScriptObject("gke-rl").Data[workloads.RunScriptKey]), 0o444))
	return strings.ReplaceAll(entrypoint, " "+workloads.RunScriptPath+" ", " "+script+" ")
}

// stageModel puts a model where the data preparation downloads r's (ModelDir), complete: a
// Hugging Face repository's files as the Hub serves Qwen2.5's (weights, configuration, tokenizer).
func stageModel(t *testing.T, r workloads.Run) {
	t.Helper()
	dir := r.ModelDir()
	files := map[string]string{
		"config.json":                      `{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}`,
		"generation_config.json":           `{"do_sample": true}`,
		"tokenizer_config.json":            `{"model_max_length": 131072}`,
		"tokenizer.json":                   `{"version": "1.0"}`,
		"vocab.json":                       `{"a": 0}`,
		"merges.txt":                       "#version: 0.2\n",
		"model-00001-of-00002.safetensors": "weights",
		"model-00002-of-00002.safetensors": "weights",
		"model.safetensors.index.json":     `{"weight_map": {}}`,
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	require.NoError(t, os.WriteFile(workloads.CompleteMarker(dir), nil, 0o644))
}

// runEntrypoint runs an entrypoint's words (`env VAR=... bash /etc/gke-rl/run.sh ...`) with some
// of run.sh's values replaced, as the shell on the Ray head would run it, run.sh's path moved
// to a file that holds what its ConfigMap holds.
// Directories in first come before ray's on PATH.
func runEntrypoint(t *testing.T, entrypoint string, ray clitest.Replay, set map[string]string, first ...string) (string, int) {
	t.Helper()
	ws := words(t, onHead(t, entrypoint))
	for i, w := range ws {
		if k, _, ok := strings.Cut(w, "="); ok && set[k] != "" && i < len(ws)-1 {
			ws[i] = k + "=" + set[k]
		}
	}
	path := ray.Path()
	for _, dir := range first {
		path = strings.Replace(path, "PATH=", "PATH="+dir+":", 1)
	}
	res := clitest.Run(t, []string{path}, ws[0], ws[1:]...)
	return res.Stdout + res.Stderr, res.Code
}

// heldClock is a date(1) first on PATH whose `date +%s` prints the seconds the test holds it at,
// which run.sh's deadlines read: a deadline passes at the event the test stages (an attempt, a
// look at Ray's GPUs), never because a loaded machine was slow. Other uses of date are the
// real one's.
type heldClock struct{ dir, file string }

// clockStart is where a held clock starts, in seconds.
const clockStart = 1_000_000

func holdClock(t *testing.T) heldClock {
	t.Helper()
	c := heldClock{dir: t.TempDir()}
	c.file = filepath.Join(c.dir, "now")
	require.NoError(t, os.WriteFile(c.file, []byte(fmt.Sprintln(clockStart)), 0o644))
	date := fmt.Sprintf("#!%s\nif [[ $* == +%%s ]]; then exec cat %q; fi\nexec %q \"$@\"\n", clitest.Tool(t, "bash"), c.file, clitest.Tool(t, "date"))
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, "date"), []byte(date), 0o755))
	return c
}

// Set is a shell command that moves the clock to at.
func (c heldClock) Set(at int) string { return fmt.Sprintf("echo %d >%q", at, c.file) }

// Advance is a shell command that moves the clock on by seconds.
func (c heldClock) Advance(seconds int) string {
	return fmt.Sprintf("echo $(($(cat %[1]q) + %[2]d)) >%[1]q", c.file, seconds)
}

// beforeRay puts a ray first on PATH that runs shell, then the replay's ray: an event staged at
// each of the run's looks at Ray (the clock moved while it asks for the GPUs).
func beforeRay(t *testing.T, shell string, replay clitest.Replay) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf("#!%s\n%s\nexec %q \"$@\"\n", clitest.Tool(t, "bash"), shell, filepath.Join(replay.Dir(), "ray"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ray"), []byte(script), 0o755))
	return dir
}

// On the long-lived cluster a failed attempt is retried on the same cluster once Ray counts the
// run's GPUs again, after the resume preparation has cleared what the attempt left: here a save
// cut short (tmp_step_4) that the second attempt must not find.
func TestRunRetriesAFailedAttemptOnceTheGPUsAreBack(t *testing.T) {
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 2, 8, 3
	r.Layout.Root = t.TempDir()
	stageModel(t, r)
	ckpt := r.Layout.Checkpoints()
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{
		// Ray does not answer at first (the head lost its node), then counts 16 GPUs.
		"status": {{Code: 1}, {Files: []string{"ray-status-2-nodes-16-gpus.txt"}}},
	})
	framework := fmt.Sprintf(`if [[ -e %[1]s/attempted ]]; then ls %[1]s; exit 0; fi
mkdir -p %[1]s/tmp_step_4; touch %[1]s/attempted; exit 3`, ckpt)
	out, code := runEntrypoint(t, workloads.Command(kinds.NeMoRL, r, r.Layout.Root, []string{"bash", "-c", framework}), ray,
		map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0"})
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "gke-rl run ray-a4-grpo: attempt 1 of 3")
	assert.Contains(t, out, "attempt 1 failed (exit 3)")
	assert.Contains(t, out, "waiting for the Ray cluster's 16 GPUs (0 now)")
	assert.Contains(t, out, "the Ray cluster has its 16 GPUs")
	assert.Contains(t, out, "removed "+ckpt+"/tmp_step_4: a save cut short")
	assert.Contains(t, out, "gke-rl run ray-a4-grpo: attempt 2 of 3")
	assert.NotContains(t, out, "tmp_step_4\n", "the second attempt starts without the first one's partial save")
	assert.Equal(t, []string{"status", "status"}, ray.Calls())
	// The failed-attempt alert matches the line the retry printed (the submitter streams it).
	m := regexp.MustCompile(`textPayload=~"(.*)"`).FindStringSubmatch(monitoring.RunFailedFilter("rl", "gke-rl"))
	require.NotNil(t, m)
	assert.Regexp(t, m[1], out)
}

// A failed attempt's placement group can still hold the GPUs when the retry counts them: Ray then
// ends the GPU line with what the groups reserve, and the count is still the cluster's total, so
// the retry starts at once instead of waiting out GPU_WAIT_SECONDS with every GPU present.
func TestRunCountsGPUsHeldByPlacementGroups(t *testing.T) {
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 1, 2, 2
	r.Layout.Root = t.TempDir()
	stageModel(t, r)
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{"status": {{Files: []string{"ray-status-placement-group-2-gpus.txt"}}}})
	mark := filepath.Join(t.TempDir(), "attempted")
	framework := fmt.Sprintf(`if [[ -e %[1]s ]]; then exit 0; fi; touch %[1]s; exit 3`, mark)
	out, code := runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"bash", "-c", framework}), ray,
		map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0", "GPU_WAIT_SECONDS": "0"})
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "the Ray cluster has its 2 GPUs")
	assert.Contains(t, out, "gke-rl run ray-a4-grpo: attempt 2 of 2")
	assert.Equal(t, []string{"status"}, ray.Calls(), "one look: the GPUs were there")
}

// A retry that never gets its GPUs back ends the run with the attempt's failure, and a run out of
// attempts fails without waiting.
func TestRunGivesUp(t *testing.T) {
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 4, 8, 2
	r.Layout.Root = t.TempDir()
	stageModel(t, r)
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{"status": {{Files: []string{"ray-status-2-nodes-16-gpus.txt"}}}})
	out, code := runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"false"}), ray,
		map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0", "GPU_WAIT_SECONDS": "0"})
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "the Ray cluster has 16 of its 32 GPUs after 0s; giving up")
	assert.NotContains(t, out, "attempt 2 of 2")

	r.Attempts = 1 // a cluster of its own: KubeRay retries on a new cluster
	ray = clitest.NewReplay(t, "ray", nil)
	out, code = runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"bash", "-c", "exit 7"}), ray, nil)
	assert.Equal(t, 7, code, out)
	assert.Contains(t, out, "attempt 1 failed (exit 7); no attempt left")
	assert.Empty(t, ray.Calls(), "no wait for GPUs")
}

// The run's deadline ends the run on the long-lived cluster: the attempt running when it passes
// is stopped, which ends the Ray job's entrypoint, and no attempt starts after it, whatever
// attempts are left. The clock is held (holdClock): the deadline passes at the staged events.
func TestRunDeadlineStopsTheRun(t *testing.T) {
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 2, 8, 3
	r.Layout.Root = t.TempDir()
	stageModel(t, r)
	const start = clockStart
	status := map[string][]clitest.Reply{"status": {{Files: []string{"ray-status-2-nodes-16-gpus.txt"}}}}

	// The attempt starts with the whole deadline left (the clock stood still while the model was
	// copied) and would train for a minute: timeout(1) stops it after the second that was left,
	// and the clock, moved to the deadline exactly as the attempt started, says it has passed.
	clock := holdClock(t)
	r.DeadlineSeconds = 1
	marks := filepath.Join(t.TempDir(), "attempts")
	attempt := []string{"bash", "-c", `echo started >>"$0"; ` + clock.Set(start+1) + `; exec sleep 60`, marks}
	ray := clitest.NewReplay(t, "ray", status)
	began := time.Now()
	out, code := runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, attempt), ray, nil, clock.dir)
	assert.Equal(t, 124, code, out)
	assert.Less(t, time.Since(began), 30*time.Second, "stopped at the deadline, not after the attempt's minute")
	assert.Contains(t, out, "attempt 1 stopped (exit 124): the run's deadline of 1s has passed")
	assert.NotContains(t, out, "attempt 2 of 3")
	got, err := os.ReadFile(marks)
	require.NoError(t, err)
	assert.Equal(t, "started\n", string(got), "one attempt started")
	assert.Empty(t, ray.Calls(), "no wait for GPUs after the deadline")

	// retry runs attempt on a clock held at start, which each look at Ray's GPUs moves to
	// lookAt: the deadline passes there, or not.
	retry := func(attempt []string, lookAt int) (string, int, clitest.Replay) {
		clock := holdClock(t)
		ray := clitest.NewReplay(t, "ray", status)
		out, code := runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, attempt), ray,
			map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0"}, clock.dir, beforeRay(t, clock.Set(lookAt), ray))
		return out, code, ray
	}

	// A deadline that passes while a retry waits for its GPUs ends the wait there: at exactly
	// 10 s of a 10 s deadline, the first look at Ray's 16 of 32 GPUs gives up.
	r.DeadlineSeconds, r.Nodes = 10, 4
	out, code, ray = retry([]string{"false"}, start+10)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "attempt 1 failed (exit 1); the next starts once the cluster has its GPUs")
	assert.Contains(t, out, "the Ray cluster has 16 of its 32 GPUs and the run's deadline of 10s has passed; giving up")
	assert.NotContains(t, out, "attempt 2 of 3")
	assert.Equal(t, []string{"status"}, ray.Calls(), "one look at the GPUs")

	// A deadline that passes while the GPUs come back: the cluster has its 16 GPUs, and no
	// attempt starts after the deadline.
	r.Nodes = 2
	out, code, _ = retry([]string{"false"}, start+10)
	assert.Equal(t, 124, code, out)
	assert.Contains(t, out, "the Ray cluster has its 16 GPUs")
	assert.Contains(t, out, "the run's deadline of 10s has passed; no attempt starts")
	assert.NotContains(t, out, "attempt 2 of 3")

	// One second before the deadline, the next attempt starts with that second.
	out, code, _ = retry([]string{"bash", "-c", `[[ -e "$0" ]] || { touch "$0"; exit 1; }`, marks + ".failed"}, start+9)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "attempt 2 of 3")
}

// A retry waits for its GPUs for GPU_WAIT_SECONDS on the clock: Ray is asked again until they
// have passed, and not after. Here each look at Ray's GPUs takes 150 s of a 300 s wait: the
// first (150 s in) waits on, the second (at exactly 300 s) gives up.
func TestARetryWaitsForItsGPUsForTheirWait(t *testing.T) {
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 4, 8, 2
	r.Layout.Root = t.TempDir()
	stageModel(t, r)
	clock := holdClock(t)
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{"status": {{Files: []string{"ray-status-2-nodes-16-gpus.txt"}}}})
	out, code := runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"false"}), ray,
		map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0", "GPU_WAIT_SECONDS": "300"}, clock.dir, beforeRay(t, clock.Advance(150), ray))
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "waiting for the Ray cluster's 32 GPUs (16 now)")
	assert.Contains(t, out, "the Ray cluster has 16 of its 32 GPUs after 300s; giving up")
	assert.Equal(t, []string{"status", "status"}, ray.Calls())
	assert.NotContains(t, out, "attempt 2 of 2")
}

// job.resumeFrom with verl: while the experiment has no checkpoint of its own, its attempt loads
// the other experiment's newest (resume_path and that global_step_N); once it has saved, a retry
// resumes from its own (auto), never going back to the other's.
func TestRunStartsFromAnotherExperimentUntilItHasItsOwn(t *testing.T) {
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 1, 2, 2
	r.Layout = workloads.Layout{Root: t.TempDir(), Run: "kl-0-01"}
	stageModel(t, r)
	r.ResumeFrom = "baseline"
	from := r.Layout.Of("baseline").Checkpoints()
	require.NoError(t, os.MkdirAll(filepath.Join(from, "global_step_6"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(from, "latest_checkpointed_iteration.txt"), []byte("6"), 0o644))
	own := r.Layout.Checkpoints()
	seen := filepath.Join(t.TempDir(), "argv")
	// Each attempt records its verl arguments; the first saves step 8 of its own, then fails.
	framework := fmt.Sprintf(`printf '%%s\n' "$*" >>%[1]s
if [[ -e %[2]s/global_step_8 ]]; then exit 0; fi
mkdir -p %[2]s/global_step_8 && echo 8 >%[2]s/latest_checkpointed_iteration.txt; exit 3`, seen, own)
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{"status": {{Files: []string{"ray-status-placement-group-2-gpus.txt"}}}})
	out, code := runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"bash", "-c", framework, "verl", "trainer.resume_mode=auto", "trainer.default_local_dir=" + own}), ray,
		map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0"})
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "gke-rl run kl-0-01: starts from "+from+"/global_step_6 (job.resumeFrom)")
	got, err := os.ReadFile(seen)
	require.NoError(t, err)
	attempts := strings.Split(strings.TrimSpace(string(got)), "\n")
	require.Len(t, attempts, 2, out)
	assert.Equal(t, "trainer.resume_mode=resume_path trainer.default_local_dir="+own+" trainer.resume_from_path="+from+"/global_step_6", attempts[0])
	assert.Equal(t, "trainer.resume_mode=auto trainer.default_local_dir="+own, attempts[1], "the retry resumes from its own step 8")

	// The other experiment has saved nothing: the run stops before training, naming the key.
	require.NoError(t, os.RemoveAll(from))
	require.NoError(t, os.RemoveAll(own))
	out, code = runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"bash", "-c", framework, "verl", "trainer.resume_mode=auto"}), ray, nil)
	assert.Equal(t, 25, code, out)
	assert.Contains(t, out, "job.resumeFrom: "+from+" holds no complete checkpoint")
	assert.NotContains(t, out, "attempt 1 of 2", "no attempt starts")
}

// A finished experiment whose RayJob is replaced (a change common to every experiment, an
// upgrade, a new label) trains nothing it trained already: the run that succeeded recorded its
// budget, and the next RayJob of the same experiment exits at once, successfully, unless the
// budget grew; then it trains on from the newest checkpoint, and records the new budget.
func TestAFinishedRunDoesNotTrainAgain(t *testing.T) {
	r := run()
	r.Layout.Root = t.TempDir()
	stageModel(t, r)
	ray := clitest.NewReplay(t, "ray", nil)
	ran := filepath.Join(r.Layout.Root, "ran")
	framework := []string{"bash", "-c", "echo trained >> " + ran}
	times := func() int {
		data, err := os.ReadFile(ran)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(data), "trained")
	}
	out, code := runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, framework), ray, nil)
	require.Zero(t, code, out)
	require.Equal(t, 1, times(), out)

	out, code = runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, framework), ray, nil)
	require.Zero(t, code, out)
	assert.Equal(t, 1, times(), "the replaced RayJob of a finished run trains nothing:\n%s", out)
	assert.Contains(t, out, "gke-rl run ray-a4-grpo: finished before (maxSteps and epochs 20 0, now 20 0): this RayJob trains nothing more")

	r.MaxSteps = 10
	out, code = runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, framework), ray, nil)
	require.Zero(t, code, out)
	assert.Equal(t, 1, times(), "a smaller budget is done already:\n%s", out)

	r.MaxSteps = 30
	out, code = runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, framework), ray, nil)
	require.Zero(t, code, out)
	assert.Equal(t, 2, times(), "a grown budget trains on:\n%s", out)
	assert.Contains(t, out, "finished before (maxSteps and epochs 20 0); trains on to 30 0 from the newest checkpoint")
	marker, err := os.ReadFile(filepath.Join(r.Layout.Checkpoints(), ".gke-rl-trained"))
	require.NoError(t, err)
	assert.Equal(t, "30 0\n", string(marker))

	// A run that fails records nothing: its retry trains.
	r.Layout.Run = "other"
	out, code = runEntrypoint(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"bash", "-c", "exit 3"}), ray, nil)
	assert.Equal(t, 3, code, out)
	assert.NoFileExists(t, filepath.Join(r.Layout.Checkpoints(), ".gke-rl-trained"))
}

// verl removed its only save before writing the next, and that save was cut short: the tracker
// names a directory that is gone and nothing earlier remains. The run stops, naming the ways on,
// instead of letting verl print "Training from scratch" over the experiment.
func TestVerlRunRefusesToRestartFromScratchOverALostSave(t *testing.T) {
	bash := clitest.Tool(t, "bash")
	r := run()
	r.Layout.Root = t.TempDir()
	stageModel(t, r)
	ck := r.Layout.Checkpoints()
	require.NoError(t, os.MkdirAll(filepath.Join(ck, "global_step_8"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ck, "latest_checkpointed_iteration.txt"), []byte("6\n"), 0o644))
	ran := filepath.Join(t.TempDir(), "ran")
	res := clitest.Run(t, nil, bash, "-c", onHead(t, workloads.Command(kinds.Verl, r, r.Layout.Root, []string{"touch", ran})))
	assert.Equal(t, 27, res.Code, res.Stdout+res.Stderr)
	assert.Contains(t, res.Stdout, "latest_checkpointed_iteration.txt names step 6, whose directory global_step_6 is gone, and no earlier save remains: refused")
	assert.Contains(t, res.Stdout, "allowed: restore global_step_6, start a new experiment (another job.name), or remove")
	assert.NoFileExists(t, ran, "the framework did not start")
	assert.FileExists(t, filepath.Join(ck, "latest_checkpointed_iteration.txt"), "the tracker is left for the user to decide")
}
