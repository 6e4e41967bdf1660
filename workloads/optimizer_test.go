package workloads_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kinds"
	"gke-rl/test/clitest"
	"gke-rl/workloads"
)

func TestOptimizerSettingsAreTheKeysTheOptimizerStateHolds(t *testing.T) {
	lr := 5e-6
	r := run()
	r.Tuning.LearningRate = &lr
	r.Extra = []string{"actor_rollout_ref.actor.optim.weight_decay=0.1", "actor_rollout_ref.actor.entropy_coeff=0.01"}
	assert.Equal(t, "actor_rollout_ref.actor.optim.lr=5e-06 actor_rollout_ref.actor.optim.weight_decay=0.1",
		workloads.OptimizerSettings(kinds.Verl, workloads.Overrides(kinds.Verl, r)), "the rate and job.args' optimizer keys; not the entropy, read anew on every start")
	r.Extra = []string{"policy.optimizer.kwargs.weight_decay=0.1"}
	assert.Equal(t, "policy.megatron_cfg.optimizer.lr=5e-06 policy.optimizer.kwargs.weight_decay=0.1",
		workloads.OptimizerSettings(kinds.NeMoRL, workloads.Overrides(kinds.NeMoRL, r)))
	assert.Empty(t, workloads.OptimizerSettings(kinds.Verl, workloads.Overrides(kinds.Verl, run())), "no optimizer key set: the recipe's own")

	assert.Contains(t, workloads.SettingChangeEffect("actor_rollout_ref.actor.optim.lr"), "applies: the run resumes the weights with a fresh optimizer")
	assert.Contains(t, workloads.SettingChangeEffect("policy.optimizer.kwargs.lr"), "refused when the run resumes")
	assert.Contains(t, workloads.SettingChangeEffect("policy.megatron_cfg.scheduler.lr_warmup_iters"), "refused when the run resumes")
	assert.Empty(t, workloads.SettingChangeEffect("actor_rollout_ref.actor.kl_loss_coef"), "read anew on every start")

	assert.Contains(t, workloads.RunScript(), "verl_fresh_optimizer='"+workloads.VerlFreshOptimizer+"'")
	args := with(verlGuideCommand, workloads.VerlFreshOptimizer)
	assert.Empty(t, workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", args), "verl v0.6.0's config has the key run.sh adds")
}

// optimizerRun runs r's entrypoint with a framework that records its arguments, saves
// saveStep's checkpoint and fails on its first attempt, and succeeds on the next. It returns the
// log, the exit status and each attempt's arguments.
func optimizerRun(t *testing.T, f kinds.Framework, r workloads.Run, saveStep int) (string, int, []string) {
	t.Helper()
	seen := filepath.Join(t.TempDir(), "argv")
	own := r.Layout.Checkpoints()
	save := fmt.Sprintf("mkdir -p %[1]s/global_step_%[2]d && echo %[2]d >%[1]s/latest_checkpointed_iteration.txt", own, saveStep)
	if f == kinds.NeMoRL {
		save = fmt.Sprintf("mkdir -p %s/step_%d", own, saveStep)
	}
	framework := fmt.Sprintf("printf '%%s\\n' \"$*\" >>%s\nif [[ -e %s.failed ]]; then exit 0; fi\n%s; touch %s.failed; exit 3", seen, seen, save, seen)
	ray := clitest.NewReplay(t, "ray", map[string][]clitest.Reply{"status": {{Files: []string{"ray-status-placement-group-2-gpus.txt"}}}})
	out, code := runEntrypoint(t, workloads.Command(f, r, r.Layout.Root, []string{"bash", "-c", framework, "fw", "trainer.resume_mode=auto"}), ray,
		map[string]string{"PAUSE_SECONDS": "0", "POLL_SECONDS": "0"})
	got, _ := os.ReadFile(seen)
	return out, code, strings.Split(strings.TrimSpace(string(got)), "\n")
}

// rateRun is a one-node run of attempts attempts at learning rate lr, its model staged.
func rateRun(t *testing.T, attempts int, lr float64) workloads.Run {
	t.Helper()
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 1, 2, attempts
	r.Layout.Root = t.TempDir()
	r.Tuning.LearningRate = &lr
	stageModel(t, r)
	return r
}

// A new learning rate on an experiment that has saved applies: verl resumes its weights with a
// fresh optimizer and scheduler until it has saved with the new rate, then resumes all of it.
func TestANewLearningRateAppliesToAVerlExperimentThatHasSaved(t *testing.T) {
	lr := 5e-6
	r := rateRun(t, 2, 1e-6)
	ck := r.Layout.Checkpoints()

	// The first run records its settings and saves step 4; its retry resumes all of it.
	out, code, attempts := optimizerRun(t, kinds.Verl, r, 4)
	require.Equal(t, 0, code, out)
	require.Len(t, attempts, 2, out)
	for _, a := range attempts {
		assert.NotContains(t, a, "load_contents", "the same settings: the optimizer resumes")
	}
	record, err := os.ReadFile(filepath.Join(ck, ".gke-rl-optimizer"))
	require.NoError(t, err)
	assert.Equal(t, "actor_rollout_ref.actor.optim.lr=1e-06\n-1\n", string(record))

	// The rate changes: the first attempt loads the weights of step 4 alone and saves step 6,
	// cut short by a failure; the retry resumes step 6 whole, made with the new rate.
	// (As if that run had stopped short of its budget: a finished one trains nothing more.)
	require.NoError(t, os.Remove(filepath.Join(ck, ".gke-rl-trained")))
	r.Tuning.LearningRate = &lr
	out, code, attempts = optimizerRun(t, kinds.Verl, r, 6)
	require.Equal(t, 0, code, out)
	require.Len(t, attempts, 2, out)
	assert.Equal(t, "trainer.resume_mode=auto "+workloads.VerlFreshOptimizer, attempts[0])
	assert.Equal(t, "trainer.resume_mode=auto", attempts[1], "step 6 holds the new rate's optimizer")
	assert.Contains(t, out, "the optimizer settings changed since step 4 (were 'actor_rollout_ref.actor.optim.lr=1e-06', now 'actor_rollout_ref.actor.optim.lr=5e-06')")
	assert.Contains(t, out, "resumes the weights of step 4 with a fresh optimizer and LR scheduler")
}

// Preempted before it saves with the new rate, the next attempt again loads the weights alone.
func TestAVerlRetryBeforeTheFirstSaveWithNewSettingsStillStartsAFreshOptimizer(t *testing.T) {
	r := rateRun(t, 2, 5e-6)
	ck := r.Layout.Checkpoints()
	require.NoError(t, os.MkdirAll(filepath.Join(ck, "global_step_4"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ck, "latest_checkpointed_iteration.txt"), []byte("4\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ck, ".gke-rl-optimizer"), []byte("actor_rollout_ref.actor.optim.lr=5e-06\n4\n"), 0o644))
	out, code, attempts := optimizerRun(t, kinds.Verl, r, 4) // saves nothing newer
	require.Equal(t, 0, code, out)
	require.Len(t, attempts, 2, out)
	for _, a := range attempts {
		assert.Contains(t, a, workloads.VerlFreshOptimizer, "step 4 still holds the old rate's optimizer")
	}
}

// job.resumeFrom branches an experiment with new settings: they apply from its first step.
func TestAVerlBranchWithANewLearningRateStartsAFreshOptimizer(t *testing.T) {
	lr := 5e-6
	r := run()
	r.Nodes, r.GPUsPerNode, r.Attempts = 1, 2, 1
	r.Layout = workloads.Layout{Root: t.TempDir(), Run: "lr-5e-6"}
	r.Tuning.LearningRate = &lr
	stageModel(t, r)
	r.ResumeFrom = "baseline"
	from := r.Layout.Of("baseline").Checkpoints()
	require.NoError(t, os.MkdirAll(filepath.Join(from, "global_step_6"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(from, "latest_checkpointed_iteration.txt"), []byte("6"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(from, ".gke-rl-optimizer"), []byte("actor_rollout_ref.actor.optim.lr=1e-06\n-1\n"), 0o644))
	out, code, attempts := optimizerRun(t, kinds.Verl, r, 8)
	assert.Equal(t, 3, code, out)
	require.Len(t, attempts, 1, out)
	assert.Equal(t, "trainer.resume_mode=resume_path trainer.resume_from_path="+from+"/global_step_6 "+workloads.VerlFreshOptimizer, attempts[0])
	assert.Contains(t, out, "starts from "+from+"'s weights with a fresh optimizer and LR scheduler")

	// The same settings as the branch's source: its optimizer comes along.
	require.NoError(t, os.WriteFile(filepath.Join(from, ".gke-rl-optimizer"), []byte("actor_rollout_ref.actor.optim.lr=5e-06\n-1\n"), 0o644))
	require.NoError(t, os.RemoveAll(r.Layout.Checkpoints()))
	_, _, attempts = optimizerRun(t, kinds.Verl, r, 8)
	assert.NotContains(t, attempts[0], "load_contents")
}

// NeMo RL restores the optimizer whenever it resumes and has no switch to skip it: a change is
// refused before the framework starts, naming the two ways on; a checkpoint saved before the
// record existed resumes as saved.
func TestANewLearningRateOnANeMoRLExperimentThatHasSavedIsRefused(t *testing.T) {
	lr := 5e-6
	r := rateRun(t, 1, 1e-6)
	ck := r.Layout.Checkpoints()
	require.NoError(t, os.MkdirAll(filepath.Join(ck, "step_4"), 0o755))

	out, _, attempts := optimizerRun(t, kinds.NeMoRL, r, 6)
	assert.Contains(t, out, "no record of the optimizer settings of step 4 (saved before gke-rl recorded them): resumes its optimizer and scheduler as saved")
	assert.Len(t, attempts, 1)

	r.Tuning.LearningRate = &lr
	out, code, attempts := optimizerRun(t, kinds.NeMoRL, r, 8)
	assert.Equal(t, 28, code, out)
	assert.Contains(t, out, "the optimizer settings changed since step 6 (were 'policy.megatron_cfg.optimizer.lr=1e-06', now 'policy.megatron_cfg.optimizer.lr=5e-06'), and NeMo RL restores the checkpoint's optimizer and scheduler, so the new values would not apply: refused; allowed: a new experiment (another job.name) from step 0, or the old values back")
	assert.Equal(t, []string{""}, attempts, "the framework did not start")
}
