package workloads_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// verlSettings are a verl run's overrides as "value from origin", by key.
func verlSettings(r workloads.Run) map[string]string {
	out := map[string]string{}
	for _, o := range workloads.Overrides(kinds.Verl, r) {
		out[o.Key] = o.Value + " from " + o.Origin
	}
	return out
}

const (
	updateMicro  = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
	logProbMicro = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
)

// The micro batches sized from the model (a 7B model: 4 sequences an update, 8 a log-prob pass)
// stay at that size where the sequences fit, and are lowered to what fits one GPU where they do
// not, naming the length that lowered them: on a B200 (191.5 GB), a 7B model's 32,768-token
// responses fit 1 sequence an update and 5 a log-prob pass (as the plan of the smoke stack
// says, infra's TestVerlRunsThatWouldRunOutOfMemoryAreRefused). Without the GPU's memory nothing is
// lowered.
func TestVerlLowersTheMicroBatchesSizedFromTheModelToWhatFits(t *testing.T) {
	r := workloads.Run{Model: "Qwen/Qwen2.5-7B-Instruct", ModelBillions: 7, Dataset: "gsm8k", Nodes: 1, GPUsPerNode: 8,
		GPUMemoryGB: 191.5, MaxSteps: 1, PromptsPerStep: 8, GenerationsPerPrompt: 8, CheckpointPeriod: 1, KeepCheckpoints: 1,
		Layout: workloads.Layout{Root: "/data", Run: "x"}}
	s := verlSettings(r)
	assert.Equal(t, "4 from job.model", s[updateMicro], "gsm8k's 512 + 1024 tokens fit")
	assert.Equal(t, "8 from job.model", s[logProbMicro])
	assert.Equal(t, "512 from job.maxPromptLength", s["data.max_prompt_length"], "gsm8k's prompts")

	long := 32768
	r.Tuning.MaxResponseLength = &long
	s = verlSettings(r)
	assert.Equal(t, "1 from job.maxResponseLength", s[updateMicro])
	assert.Equal(t, "5 from job.maxResponseLength", s[logProbMicro])

	// Where the state's share decides: 14,000-token responses (14,512 tokens with gsm8k's
	// prompt) at 2,884,608 bytes a token of activations × 1.09 = 45.63 GB a sequence; the state,
	// 7B × 16 bytes × 1.09 over the GPUs, leaves 188.5 − 15.26 = 173.24 GB on one node's 8 GPUs
	// (3.8 sequences: 3) and 188.5 − 1.91 = 186.59 GB over 8 nodes' 64 (4.09: the model's 4).
	mid := 14000
	r.Tuning.MaxResponseLength = &mid
	assert.Equal(t, "3 from job.maxResponseLength", verlSettings(r)[updateMicro])
	r.Nodes = 8
	assert.Equal(t, "4 from job.model", verlSettings(r)[updateMicro])
	r.Nodes = 1

	r.Tuning.MaxResponseLength, r.Tuning.MaxPromptLength = nil, &long
	s = verlSettings(r)
	assert.Equal(t, "1 from job.maxPromptLength", s[updateMicro], "the prompt's length lowered it")

	r.GPUMemoryGB = 0
	assert.Equal(t, "4 from job.model", verlSettings(r)[updateMicro], "no memory to fit to: the model's size")

	// Without the model's size (the largest class: 1 and 2), or with no tokens at all, nothing is
	// lowered either, however long the sequences: a million tokens would fit no log-prob pair.
	r.GPUMemoryGB, r.ModelBillions = 191.5, 0
	million := 1 << 20
	r.Tuning.MaxPromptLength = &million
	assert.Equal(t, "2 from job.model", verlSettings(r)[logProbMicro])
	r.ModelBillions = 7
	zero := 0
	r.Tuning.MaxPromptLength, r.Tuning.MaxResponseLength = &zero, &zero
	assert.Equal(t, "4 from job.model", verlSettings(r)[updateMicro])
	r.Tuning.MaxResponseLength = nil

	// The prompt length follows the dataset: math's prompts are longer; a dataset the table has
	// no length for gets gsm8k's.
	r.GPUMemoryGB, r.Tuning.MaxPromptLength = 191.5, nil
	r.Dataset = "math"
	assert.Equal(t, "1024 from job.maxPromptLength", verlSettings(r)["data.max_prompt_length"])
	r.Dataset = "openai/other"
	assert.Equal(t, "512 from job.maxPromptLength", verlSettings(r)["data.max_prompt_length"])
}

// The size classes at their bounds: up to 8B, up to 35B, and above; a mid-size model's vLLM
// spans at most 4 GPUs, fewer on a smaller node.
func TestVerlSizeClassesAtTheirBounds(t *testing.T) {
	for billions, micro := range map[float64]int{0.5: 4, 8: 4, 8.01: 2, 35: 2, 35.01: 1} {
		assert.Equal(t, micro, workloads.SizeVerl(billions, 8).MicroBatchPerGPU, "%gB", billions)
	}
	assert.Equal(t, 4, workloads.SizeVerl(32, 8).RolloutTensorParallel)
	assert.Equal(t, 2, workloads.SizeVerl(32, 2).RolloutTensorParallel)
}

// verl v0.7.0's runs name the asynchronous rollout (v0.7.0 refuses the synchronous one, the
// default of v0.6.0, which names none); a run bounded by steps alone sets no epochs, and one
// bounded by epochs alone no steps.
func TestVerlOverridesByReleaseAndBound(t *testing.T) {
	r := workloads.Run{Model: "Qwen/Qwen2.5-7B-Instruct", ModelBillions: 7, Dataset: "gsm8k", Nodes: 1, GPUsPerNode: 8,
		MaxSteps: 5, PromptsPerStep: 8, GenerationsPerPrompt: 8, CheckpointPeriod: 1, KeepCheckpoints: 1,
		Layout: workloads.Layout{Root: "/data", Run: "x"}}
	r.Release = "v0.7.0"
	s := verlSettings(r)
	assert.Equal(t, "async from framework", s["actor_rollout_ref.rollout.mode"])
	assert.Equal(t, "5 from job.maxSteps", s["trainer.total_training_steps"])
	assert.NotContains(t, s, "trainer.total_epochs")
	r.Release, r.MaxSteps, r.Epochs = "v0.6.0", 0, 3
	s = verlSettings(r)
	assert.NotContains(t, s, "actor_rollout_ref.rollout.mode")
	assert.Equal(t, "3 from job.epochs", s["trainer.total_epochs"])
	assert.NotContains(t, s, "trainer.total_training_steps")
}

// GRPO's KL term is on only with a coefficient above 0, in the loss or (job.klInLoss=false) in
// the reward; validation every N steps, or (0) never, not even before training.
func TestVerlKLAndValidationAtZero(t *testing.T) {
	r := workloads.Run{Model: "Qwen/Qwen2.5-7B-Instruct", ModelBillions: 7, Dataset: "gsm8k", Nodes: 1, GPUsPerNode: 8,
		MaxSteps: 5, PromptsPerStep: 8, GenerationsPerPrompt: 8, CheckpointPeriod: 1, KeepCheckpoints: 1,
		Layout: workloads.Layout{Root: "/data", Run: "x"}}
	zero, some, no := 0.0, 0.01, false
	r.Tuning.KLCoef = &zero
	s := verlSettings(r)
	assert.Equal(t, "False from job.klInLoss", s["actor_rollout_ref.actor.use_kl_loss"])
	assert.Equal(t, "0 from job.klCoef", s["actor_rollout_ref.actor.kl_loss_coef"])
	r.Tuning.KLCoef = &some
	assert.Equal(t, "True from job.klInLoss", verlSettings(r)["actor_rollout_ref.actor.use_kl_loss"])
	r.Tuning.KLInLoss = &no
	s = verlSettings(r)
	assert.Equal(t, "False from job.klInLoss", s["actor_rollout_ref.actor.use_kl_loss"])
	assert.Equal(t, "True from job.klInLoss", s["algorithm.use_kl_in_reward"])
	assert.Equal(t, "0.01 from job.klCoef", s["algorithm.kl_ctrl.kl_coef"])
	r.Tuning.KLCoef = &zero
	assert.Equal(t, "False from job.klInLoss", verlSettings(r)["algorithm.use_kl_in_reward"])

	never, every := 0, 5
	r.Tuning.ValidationPeriod = &never
	s = verlSettings(r)
	assert.Equal(t, "-1 from job.validationPeriod", s["trainer.test_freq"])
	assert.Equal(t, "False from job.validationPeriod", s["trainer.val_before_train"])
	r.Tuning.ValidationPeriod = &every
	s = verlSettings(r)
	assert.Equal(t, "5 from job.validationPeriod", s["trainer.test_freq"])
	assert.NotContains(t, s, "trainer.val_before_train", "verl's default: validate before training too")
}
