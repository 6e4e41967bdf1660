package infra_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/shlex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kinds"
	"gke-rl/test/plantest"
	"gke-rl/workloads"
)

// frameworkCommand is the framework's argv of a resolved stack's RayJob (after run.sh) and the
// NeMo RL recipe it names.
func frameworkCommand(t *testing.T, entrypoint string) (overrides []string, recipe string) {
	t.Helper()
	words, err := shlex.Split(entrypoint)
	require.NoError(t, err)
	prep := slices.Index(words, "bash")
	require.Equal(t, workloads.RunScriptPath, words[prep+1])
	words = words[prep+2:]
	for i, w := range words {
		if w == "--config" {
			recipe = words[i+1]
		}
		if k, _, ok := strings.Cut(w, "="); ok && strings.Contains(k, ".") {
			overrides = append(overrides, w)
		}
	}
	return overrides, recipe
}

// Each knob researchers tune is a job.* key that reaches each framework as the keys its pinned
// release reads (and passes the framework rules the plan runs), or is refused naming the
// framework and why. The NeMo RL learning rate follows the recipe's training backend.
func TestKnobsReachEachFramework(t *testing.T) {
	stacks := map[string][]string{
		"nemo-rl megatron": {"framework=nemo-rl", "job.dataset=DeepScaler"},
		"nemo-rl dtensor":  {"framework=nemo-rl", "job.dataset=DeepScaler", "job.recipe=examples/configs/grpo_math_8B.yaml", "job.model=meta-llama/Llama-3.1-8B-Instruct", "job.args=[]", "tokens.huggingFace=true"},
		"verl":             {"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"},
	}
	cases := []struct {
		knob string
		want map[string][]string // by stack; nil: refused
	}{
		{"job.learningRate=3e-06", map[string][]string{
			"nemo-rl megatron": {"policy.megatron_cfg.optimizer.lr=3e-06"},
			"nemo-rl dtensor":  {"policy.optimizer.kwargs.lr=3e-06"},
			"verl":             {"actor_rollout_ref.actor.optim.lr=3e-06"}}},
		{"job.klCoef=0.02", map[string][]string{
			"nemo-rl megatron": {"loss_fn.reference_policy_kl_penalty=0.02"},
			"nemo-rl dtensor":  {"loss_fn.reference_policy_kl_penalty=0.02"},
			"verl":             {"actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.actor.kl_loss_coef=0.02"}}},
		{"job.klInLoss=false", map[string][]string{
			"verl": {"actor_rollout_ref.actor.use_kl_loss=False", "algorithm.use_kl_in_reward=True", "algorithm.kl_ctrl.kl_coef=0.001"}}},
		{"job.entropyCoef=0.001", map[string][]string{
			"verl": {"actor_rollout_ref.actor.entropy_coeff=0.001"}}},
		{"job.clipRatio=0.28", map[string][]string{
			"nemo-rl megatron": {"loss_fn.ratio_clip_min=0.28", "loss_fn.ratio_clip_max=0.28"},
			"nemo-rl dtensor":  {"loss_fn.ratio_clip_min=0.28", "loss_fn.ratio_clip_max=0.28"},
			"verl":             {"actor_rollout_ref.actor.clip_ratio=0.28", "actor_rollout_ref.actor.clip_ratio_low=0.28", "actor_rollout_ref.actor.clip_ratio_high=0.28"}}},
		{"job.temperature=0.7", map[string][]string{
			"nemo-rl megatron": {"policy.generation.temperature=0.7"},
			"nemo-rl dtensor":  {"policy.generation.temperature=0.7"},
			"verl":             {"actor_rollout_ref.rollout.temperature=0.7"}}},
		{"job.maxPromptLength=1024", map[string][]string{
			"nemo-rl megatron": {"data.max_input_seq_length=1024", "policy.max_total_sequence_length=5120"},
			"nemo-rl dtensor":  {"data.max_input_seq_length=1024", "policy.max_total_sequence_length=5120"},
			"verl":             {"data.max_prompt_length=1024", "data.filter_overlong_prompts=True"}}},
		{"job.maxResponseLength=2048", map[string][]string{
			"nemo-rl megatron": {"policy.generation.max_new_tokens=2048", "policy.max_total_sequence_length=6144"},
			"nemo-rl dtensor":  {"policy.generation.max_new_tokens=2048", "policy.max_total_sequence_length=6144"},
			"verl":             {"data.max_response_length=2048"}}},
		{"job.rolloutTensorParallel=8", map[string][]string{
			"nemo-rl megatron": {"policy.generation.vllm_cfg.tensor_parallel_size=8"},
			"nemo-rl dtensor":  {"policy.generation.vllm_cfg.tensor_parallel_size=8"},
			"verl":             {"actor_rollout_ref.rollout.tensor_model_parallel_size=8"}}},
		{"job.rolloutGpuMemory=0.5", map[string][]string{
			"nemo-rl megatron": {"policy.generation.vllm_cfg.gpu_memory_utilization=0.5"},
			"nemo-rl dtensor":  {"policy.generation.vllm_cfg.gpu_memory_utilization=0.5"},
			"verl":             {"actor_rollout_ref.rollout.gpu_memory_utilization=0.5"}}},
		{"job.microBatchSize=2", map[string][]string{
			"nemo-rl megatron": {"policy.train_micro_batch_size=2"},
			"nemo-rl dtensor":  {"policy.train_micro_batch_size=2"},
			"verl":             {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"}}},
		{"job.logProbMicroBatchSize=4", map[string][]string{
			"nemo-rl megatron": {"policy.logprob_batch_size=4"},
			"nemo-rl dtensor":  {"policy.logprob_batch_size=4"},
			"verl":             {"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"}}},
		{"job.validationPeriod=5", map[string][]string{
			"nemo-rl megatron": {"grpo.val_period=5"},
			"nemo-rl dtensor":  {"grpo.val_period=5"},
			"verl":             {"trainer.test_freq=5"}}},
		{"job.validationPeriod=0", map[string][]string{
			"nemo-rl megatron": {"grpo.val_period=0"},
			"nemo-rl dtensor":  {"grpo.val_period=0"},
			"verl":             {"trainer.test_freq=-1", "trainer.val_before_train=False"}}},
		{"job.wandbProject=rl-sweeps", map[string][]string{
			"nemo-rl megatron": {"logger.wandb.project=rl-sweeps"},
			"nemo-rl dtensor":  {"logger.wandb.project=rl-sweeps"},
			"verl":             {"trainer.project_name=rl-sweeps"}}},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		key, _, _ := strings.Cut(tc.knob, "=")
		covered[key] = true
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range stacks {
				if !yield(k) {
					return
				}
			}
		}) {
			t.Run(tc.knob+" "+name, func(t *testing.T) {
				overrides := append(slices.Clone(stacks[name]), tc.knob, "tokens.wandb=true")
				want, takes := tc.want[name]
				if !takes {
					cfgErr := problems(t, "b200-spot", overrides...)
					for _, p := range cfgErr.Problems {
						if p.Key == key {
							assert.Contains(t, p.Message, "framework nemo-rl cannot take it")
							return
						}
					}
					t.Fatalf("%s not refused: %v", key, cfgErr)
				}
				bp := plantest.Resolve(t, "b200-spot", overrides...)
				args, recipe := frameworkCommand(t, bp.Run.RayJob.Spec.Entrypoint)
				for _, w := range want {
					assert.Contains(t, args, w)
				}
				fw := kinds.NeMoRL
				if name == "verl" {
					fw = kinds.Verl
				}
				assert.Empty(t, workloads.CheckCommand(workloads.DefaultRelease(fw), recipe, args), "the framework's rules pass")
			})
		}
	}
	for _, k := range workloads.Knobs {
		assert.True(t, covered[k.Key], "%s has a case", k.Key)
	}
}

func TestKnobsOutOfRangeAreRefused(t *testing.T) {
	assertRefused(t, []refusal{
		{"a learning rate of 0", "h200-reserved", []string{"job.learningRate=0"}, "job.learningRate", "allowed: a number greater than 0 and at most 0.001"},
		{"a learning rate that is not a number", "h200-reserved", []string{"job.learningRate=fast"}, "job.learningRate", "is not a number"},
		{"a negative KL coefficient", "h200-reserved", []string{"job.klCoef=-0.1"}, "job.klCoef", "from 0 (no KL term) to 1"},
		{"a clip ratio of 1", "h200-reserved", []string{"job.clipRatio=1"}, "job.clipRatio", "less than 1"},
		{"a temperature of 0", "h200-reserved", []string{"job.temperature=0"}, "job.temperature", "greater than 0 and at most 2"},
		{"a prompt of 8 tokens", "h200-reserved", []string{"job.maxPromptLength=8"}, "job.maxPromptLength", "from 16 to 131072"},
		{"a rollout over 3 GPUs", "h200-reserved", []string{"job.rolloutTensorParallel=3"}, "job.rolloutTensorParallel", "1, 2, 4 or 8"},
		{"all of the GPU's memory for vLLM", "h200-reserved", []string{"job.rolloutGpuMemory=1"}, "job.rolloutGpuMemory", "0.1 to 0.95"},
		{"a micro batch of 0", "h200-reserved", []string{"job.microBatchSize=0"}, "job.microBatchSize", "1 to 256"},
		{"a negative validation period", "h200-reserved", []string{"job.validationPeriod=-1"}, "job.validationPeriod", "0 (no validation)"},
		{"a W&B project with a space", "h200-reserved", []string{"job.wandbProject=my project"}, "job.wandbProject", "letters, digits"},
		{"an entropy term with NeMo RL", "b200-spot", []string{"job.entropyCoef=0.01"}, "job.entropyCoef", "ClippedPGLossFn only logs approx_entropy"},
		{"KL as a reward penalty with NeMo RL", "b200-spot", []string{"job.klInLoss=false"}, "job.klInLoss", "NeMo RL runs keep the KL term in the loss"},
	})
}
