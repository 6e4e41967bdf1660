package workloads_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// verlGuideCommand is the verl guide's command (shared seeds, 2 H200 nodes), which verl v0.6.0
// accepts.
var verlGuideCommand = []string{
	"data.train_files=/data/gsm8k/train.parquet", "data.val_files=/data/gsm8k/test.parquet",
	"data.train_batch_size=256", "data.max_prompt_length=512", "data.max_response_length=512",
	"actor_rollout_ref.model.path=Qwen/Qwen2.5-32B-Instruct", "actor_rollout_ref.actor.optim.lr=1e-5",
	"actor_rollout_ref.actor.ppo_mini_batch_size=256", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=64",
	"actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
	"actor_rollout_ref.rollout.tensor_model_parallel_size=8", "actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
	"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4", "actor_rollout_ref.actor.strategy=fsdp2",
	"algorithm.kl_ctrl.kl_coef=0.001", "trainer.logger=console", "trainer.val_before_train=False",
	"trainer.n_gpus_per_node=8", "trainer.nnodes=2", "trainer.save_freq=10", "trainer.test_freq=10",
	"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=8", "trainer.total_epochs=2",
}

func without(args []string, key string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, key+"=") {
			out = append(out, a)
		}
	}
	return out
}

// with is a copy of args with more, so that cases never share a backing array.
func with(args []string, more ...string) []string {
	return append(append([]string(nil), args...), more...)
}

// shippedNeMoRLArgs are the program's overrides for b200-spot's run, as command-line arguments.
func shippedNeMoRLArgs() []string {
	var args []string
	for _, o := range workloads.NeMoRLOverrides(run()) {
		args = append(args, o.Key+"="+o.Value)
	}
	return args
}

func messages(problems []workloads.Problem) string {
	var b strings.Builder
	for _, p := range problems {
		b.WriteString(p.Origin + ": " + p.Message + "\n")
	}
	return b.String()
}

func TestVerlStartupChecks(t *testing.T) {
	require.Empty(t, workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", verlGuideCommand), "the guide's command passes")

	cases := []struct {
		sentence string
		args     []string
		mentions string
	}{
		{"a missing actor micro batch size", without(verlGuideCommand, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"),
			"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu must be set (or the deprecated actor_rollout_ref.actor.ppo_micro_batch_size) (verl v0.6.0 verl/utils/config.py and verl/workers/config/actor.py)"},
		{"a missing rollout log-prob micro batch size", without(verlGuideCommand, "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"),
			"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu must be set"},
		{"a train batch below the default mini batch of 256", with(without(without(verlGuideCommand, "data.train_batch_size"), "actor_rollout_ref.actor.ppo_mini_batch_size"), "data.train_batch_size=32"),
			"data.train_batch_size (32) must be at least actor.ppo_mini_batch_size (256)"},
		{"samples that do not split over the GPUs", with(without(verlGuideCommand, "trainer.nnodes"), "trainer.nnodes=3"),
			"must be divisible by the 24 GPUs"},
		{"a rollout parallelism that does not divide the GPUs", with(without(verlGuideCommand, "actor_rollout_ref.rollout.tensor_model_parallel_size"), "actor_rollout_ref.rollout.tensor_model_parallel_size=3"),
			"(3) must divide the 16 GPUs"},
		{"a misspelled key", with(verlGuideCommand, "actor_rollout_ref.actor.ppo_mini_batch_sze=8"),
			"actor_rollout_ref.actor.ppo_mini_batch_sze is not a key of verl v0.6.0's config"},
		{"a NeMo RL key", with(verlGuideCommand, "policy.max_total_sequence_length=4096"),
			"it is a nemo-rl key: remove it with framework verl"},
		{"a key of an earlier NeMo RL release", with(verlGuideCommand, "policy.megatron_cfg.converter_type=Qwen2ForCausalLM"),
			"it is a nemo-rl key: remove it with framework verl"},
		{"adding a key that exists", with(verlGuideCommand, "+trainer.nnodes=2"),
			"+trainer.nnodes adds a key that verl v0.6.0's config already has"},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", tc.args)), tc.mentions)
		})
	}
	assert.Empty(t, workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(verlGuideCommand, "+trainer.new_key=1")), "+ adds a new key")
}

// A batch that does not split over the GPUs names the node counts it splits over, worked out:
// the guide's 256 prompts × 8 rollouts = 2048 samples split over 8, 16, 32, 64 or 128 GPUs (1,
// 2, 4, 8, 16 nodes of 8), and the mini batch per GPU, 256 × 8 / GPUs, is then 256, 128, 64, 32,
// 16: a multiple of the micro batch (64) on 1, 2 and 4 nodes. A micro batch of 512 fits none.
// Each problem is named by the first key the command set, as its argument's position.
func TestVerlBatchesThatDoNotSplitNameTheNodeCountsThatFit(t *testing.T) {
	args := with(without(verlGuideCommand, "trainer.nnodes"), "trainer.nnodes=3")
	problems := workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", args)
	require.NotEmpty(t, problems)
	assert.Equal(t, "data.train_batch_size × rollout.n = 256 × 8 = 2048 must be divisible by the 24 GPUs; node counts these batch sizes fit: trainer.nnodes (gpu.nodes, jobs.<name>.nodes) 1, 2, 4 (verl v0.6.0 verl/utils/config.py validate_config)", problems[0].Message)
	position := func(key string) string {
		return fmt.Sprintf("argument %d", slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, key+"=") })+1)
	}
	assert.Contains(t, messages(problems), "the mini batch per GPU, ppo_mini_batch_size × rollout.n / GPUs = 256 × 8 / 24 = 85, must be a positive multiple of ppo_micro_batch_size_per_gpu (64); node counts these batch sizes fit: trainer.nnodes (gpu.nodes, jobs.<name>.nodes) 1, 2, 4 (")
	assert.Equal(t, position("data.train_batch_size"), problems[0].Origin)
	assert.Equal(t, []string{position("data.train_batch_size"), position("actor_rollout_ref.rollout.n"), position("trainer.nnodes")}, problems[0].Origins)

	// Ulysses sequence parallel over 16 GPUs: a node of 8 is too few, and the mini batch per
	// GPU, 256 × 8 / (GPUs / 16), is 2048, 1024, 512 and 256 on 2, 4, 8 and 16 nodes, each a
	// multiple of 64.
	ulysses := with(args, "actor_rollout_ref.actor.ulysses_sequence_parallel_size=16")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", ulysses)),
		"must be divisible by the 24 GPUs; node counts these batch sizes fit: trainer.nnodes (gpu.nodes, jobs.<name>.nodes) 2, 4, 8, 16 (")
	assert.NotContains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", ulysses)), "the mini batch per GPU",
		"24 GPUs / 16 = 1 rank: 2048 a rank, a multiple of 64")

	// The rollout's engines span tensor × data × pipeline parallel GPUs: 8 × 3 = 24 does not
	// divide 16; 8 × 2 = 16 does.
	rollout := func(dp string) string {
		return messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(verlGuideCommand, "actor_rollout_ref.rollout.data_parallel_size="+dp)))
	}
	assert.Contains(t, rollout("3"), "the rollout's tensor × data × pipeline parallel size (24) must divide the 16 GPUs")
	assert.NotContains(t, rollout("2"), "must divide")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(verlGuideCommand, "actor_rollout_ref.rollout.pipeline_model_parallel_size=3"))),
		"the rollout's tensor × data × pipeline parallel size (24) must divide the 16 GPUs")

	// Without a micro batch size (refused on its own), only the samples' split counts: 1, 2, 4,
	// 8 and 16 nodes.
	unset := without(args, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", unset)),
		"node counts these batch sizes fit: trainer.nnodes (gpu.nodes, jobs.<name>.nodes) 1, 2, 4, 8, 16 (")
	// A mini batch of 1 prompt × 8 rollouts is 8 samples: 1 a GPU on one node, none (0) on more,
	// and 1 is no multiple of 64.
	tiny := with(without(without(args, "data.train_batch_size"), "actor_rollout_ref.actor.ppo_mini_batch_size"), "data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=1")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", tiny)),
		"16 × 8 = 128 must be divisible by the 24 GPUs; no node count up to 16 fits these batch sizes")

	// 2048 samples split over 8 nodes' 64 GPUs, 32 each; no GPUs (trainer.nnodes 0) is no split
	// to check.
	assert.NotContains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(without(args, "trainer.nnodes"), "trainer.nnodes=8"))), "must be divisible")
	assert.NotContains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(without(args, "trainer.nnodes"), "trainer.nnodes=0"))), "must be divisible")

	none := with(without(args, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"), "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=512")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", none)),
		"must be divisible by the 24 GPUs; no node count up to 16 fits these batch sizes")
}

func TestNeMoRLStartupChecks(t *testing.T) {
	const recipe = "examples/configs/grpo_math_70B_megatron.yaml"
	args := shippedNeMoRLArgs()
	require.Empty(t, workloads.CheckCommand(workloads.DefaultRelease(kinds.NeMoRL), recipe, args), "b200-spot's command passes")

	cases := []struct {
		sentence string
		args     []string
		mentions string
	}{
		{"a dataset the math example does not load", with(args, "data.train.dataset_name=gsm8k"),
			`"gsm8k" is not a dataset that the math GRPO example loads`},
		{"a world that the model parallelism does not divide", with(args, "cluster.num_nodes=3"),
			"PP × CP × TP (16) must divide the 24 GPUs"},
		{"a global batch the data-parallel ranks cannot split", with(args, "policy.train_global_batch_size=250", "grpo.num_prompts_per_step=125", "grpo.num_generations_per_prompt=2"),
			"policy.train_global_batch_size (250) must be a multiple of the data-parallel size"},
		{"a step that is not a whole number of global batches", with(args, "policy.train_global_batch_size=192"),
			"must be a multiple of policy.train_global_batch_size (192)"},
		{"a verl key", with(args, "trainer.nnodes=2"), "it is a verl key: remove it with framework nemo-rl"},
		{"context parallel multiplies the model's GPUs", with(args, "cluster.num_nodes=3", "policy.megatron_cfg.context_parallel_size=2"),
			"PP × CP × TP (32) must divide the 24 GPUs"},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.NeMoRL), recipe, tc.args)), tc.mentions)
		})
	}
	// The model's 16 GPUs (TP4 × PP4) on exactly 16: taken.
	assert.NotContains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.NeMoRL), recipe, with(args, "cluster.num_nodes=2"))), "must divide")
}

// NeMo RL's vLLM generation checks its parallel sizes when it starts, at both releases
// (nemo_rl/models/generation/vllm/vllm_generation.py VllmGeneration.__init__ at v0.5.0 and
// v0.7.0). The 70B recipe's vLLM runs TP 8, PP 1, EP 1, synchronously, colocated with the
// training on its 16 GPUs (2 nodes; TP4 × PP4 for the training).
func TestNeMoRLsVLLMParallelSizes(t *testing.T) {
	const (
		recipe = "examples/configs/grpo_math_70B_megatron.yaml"
		pp     = "policy.generation.vllm_cfg.pipeline_parallel_size="
		ep     = "policy.generation.vllm_cfg.expert_parallel_size="
		async  = "policy.generation.vllm_cfg.async_engine="
	)
	args := with(shippedNeMoRLArgs(), "cluster.num_nodes=2")
	// The program's 17 overrides, then cluster.num_nodes as argument 18: a case's own arguments
	// are 19 and 20, and a refusal names those that set its keys.
	require.Len(t, args, 18)
	cases := []struct {
		sentence string
		args     []string
		refused  string // "" when taken
		origins  []string
	}{
		{"the recipe's vLLM", nil, "", nil},
		// 8 × 2 = 16 divides 16 GPUs; 8 × 4 = 32 does not (8 / 4 = 2 would).
		{"a pipeline of two stages over the 16 GPUs", []string{pp + "2", async + "true"}, "", nil},
		{"a pipeline of four stages", []string{pp + "4", async + "true"}, "vLLM's TP × PP (8 × 4 = 32) must divide the 16 GPUs", []string{"argument 19", "argument 18"}},
		{"a pipeline without the asynchronous engine", []string{pp + "2"},
			"policy.generation.vllm_cfg.pipeline_parallel_size=2 needs policy.generation.vllm_cfg.async_engine=true", []string{"argument 19"}},
		{"expert parallel equal to TP, asynchronous", []string{ep + "8", async + "true"}, "", nil},
		{"expert parallel twice TP, synchronous", []string{ep + "16"}, "", nil},
		{"expert parallel not a multiple of TP", []string{ep + "12"}, "expert_parallel_size (12) must be a multiple of policy.generation.vllm_cfg.tensor_parallel_size (8)", []string{"argument 19"}},
		{"expert parallel twice TP, asynchronous", []string{ep + "16", async + "true"}, "runs data parallel inside vLLM, which policy.generation.vllm_cfg.async_engine=true does not", []string{"argument 19", "argument 20"}},
		// Not colocated, vLLM has GPUs of its own (policy.generation.colocated.resources).
		{"a pipeline of four stages on vLLM's own GPUs", []string{"policy.generation.colocated.enabled=false", pp + "4", async + "true"}, "", nil},
		{"Megatron's generation builds no vLLM", []string{"policy.generation.backend=megatron", pp + "4"}, "", nil},
	}
	for _, rel := range []workloads.Release{workloads.ReleaseOf(kinds.NeMoRL, "v0.5.0"), workloads.ReleaseOf(kinds.NeMoRL, "v0.7.0")} {
		for _, tc := range cases {
			t.Run(rel.Tag+" "+tc.sentence, func(t *testing.T) {
				var vllm []workloads.Problem
				for _, p := range workloads.CheckCommand(rel, recipe, with(args, tc.args...)) {
					if strings.Contains(p.Message, "vllm_generation.py") {
						vllm = append(vllm, p)
					}
				}
				if tc.refused == "" {
					assert.Empty(t, messages(vllm))
					return
				}
				require.Len(t, vllm, 1, messages(vllm))
				assert.Contains(t, vllm[0].Message, tc.refused)
				assert.Equal(t, tc.origins, vllm[0].Origins)
			})
		}
	}
}

// verl v0.7.0 refuses the synchronous rollout it removed (verl/workers/config/rollout.py), which
// v0.6.0 runs by default; both take the asynchronous one.
func TestVerl070RefusesTheSynchronousRollout(t *testing.T) {
	v060, v070 := workloads.ReleaseOf(kinds.Verl, "v0.6.0"), workloads.ReleaseOf(kinds.Verl, "v0.7.0")
	assert.Contains(t, messages(workloads.CheckCommand(v070, "", with(verlGuideCommand, "actor_rollout_ref.rollout.mode=sync"))),
		"actor_rollout_ref.rollout.mode sync was removed in verl v0.7.0; allowed: async (verl v0.7.0 verl/workers/config/rollout.py RolloutConfig.__post_init__)")
	assert.Empty(t, workloads.CheckCommand(v070, "", verlGuideCommand), "the guide's command names no mode: v0.7.0's default, async")
	assert.Empty(t, workloads.CheckCommand(v070, "", with(verlGuideCommand, "actor_rollout_ref.rollout.mode=async")))
	assert.Empty(t, workloads.CheckCommand(v060, "", with(verlGuideCommand, "actor_rollout_ref.rollout.mode=sync")))
}

// NeMo RL v0.7.0's run: its launcher, its datasets under data.train, the validation set its
// DeepScaler and DAPOMath17K loaders no longer bring named in data.validation, and each rule at
// its limit: validation on without a set is refused, off (or OpenMathInstruct-2's own split)
// passes.
func TestNeMoRL070Launch(t *testing.T) {
	const recipe = "examples/configs/grpo_math_1B.yaml"
	release := workloads.ReleaseOf(kinds.NeMoRL, "v0.7.0")
	for dataset, validation := range map[string]string{"DeepScaler": "{dataset_name:AIME2024}", "DAPOMath17K": "{dataset_name:DAPOMathAIME2024}", "OpenMathInstruct-2": ""} {
		t.Run(dataset, func(t *testing.T) {
			r := run()
			r.Recipe, r.Dataset, r.Release = recipe, dataset, "v0.7.0"
			assert.Contains(t, workloads.NeMoRLEntrypoint(r), " examples/run_grpo.py --config "+recipe+" ", "v0.7.0's one GRPO launcher")
			args := map[string]string{}
			var words []string
			for _, o := range workloads.NeMoRLOverrides(r) {
				args[o.Key] = o.Value
				words = append(words, o.Key+"="+o.Value)
			}
			assert.Equal(t, dataset, args["data.train.dataset_name"])
			assert.NotContains(t, args, "data.dataset_name", "v0.7.0 moved it")
			assert.Equal(t, validation, args["data.validation"])
			require.Empty(t, workloads.CheckCommand(release, recipe, words), "the run passes v0.7.0's checks")
			if validation == "" {
				return
			}
			// The recipe validates every 10 steps (grpo.val_period): without the set, the run
			// would stop at setup.
			without := slices.DeleteFunc(slices.Clone(words), func(w string) bool { return strings.HasPrefix(w, "data.validation=") })
			assert.Contains(t, messages(workloads.CheckCommand(release, recipe, without)), "validation is on (grpo.val_period, val_at_start, val_at_end) but "+dataset+" brings no validation set")
			assert.Empty(t, workloads.CheckCommand(release, recipe, with(without, "grpo.val_period=0")), "validation off needs no set")
		})
	}
	// With Megatron, v0.7.0 names its conversion after policy.hf_config_overrides too, where
	// run.sh does not clean: refused there, not at v0.5.0 nor with DTensor.
	megatron := "examples/configs/grpo_math_70B_megatron.yaml"
	mr := run()
	mr.Recipe, mr.Dataset, mr.Release = megatron, "DeepScaler", "v0.7.0"
	var words []string
	for _, o := range workloads.NeMoRLOverrides(mr) {
		words = append(words, o.Key+"="+o.Value)
	}
	require.Empty(t, workloads.CheckCommand(release, megatron, words))
	assert.Contains(t, messages(workloads.CheckCommand(release, megatron, with(words, "+policy.hf_config_overrides.rope_theta=1000000"))),
		"policy.hf_config_overrides.rope_theta renames the Megatron conversion's directory (<model>__hfovr_<hash>)")
	assert.Empty(t, workloads.CheckCommand(release, recipe, with(words, "+policy.hf_config_overrides.rope_theta=1000000")), "DTensor converts nothing")
	mr.Release = "v0.5.0"
	words = nil
	for _, o := range workloads.NeMoRLOverrides(mr) {
		words = append(words, o.Key+"="+o.Value)
	}
	assert.Empty(t, workloads.CheckCommand(workloads.ReleaseOf(kinds.NeMoRL, "v0.5.0"), megatron, with(words, "+policy.hf_config_overrides.rope_theta=1000000")), "v0.5.0 keeps the directory's name")

	r := run()
	r.Recipe, r.Dataset, r.Release = recipe, "DeepScaler", "v0.5.0"
	assert.Contains(t, workloads.NeMoRLEntrypoint(r), " examples/run_grpo_math.py --config ", "v0.5.0's launcher")
	for _, o := range workloads.NeMoRLOverrides(r) {
		assert.NotEqual(t, "data.validation", o.Key, "v0.5.0's DeepScaler loader brings AIME 2024 itself")
	}
	r.Release = ""
	assert.Contains(t, workloads.NeMoRLEntrypoint(r), " examples/run_grpo.py --config ", "the default release is v0.7.0")
	assert.Contains(t, messages(workloads.CheckCommand(release, recipe, []string{"data.train.dataset_name=gsm8k"})), `"gsm8k" is not a dataset that the math GRPO example loads`, "the dataset check reads v0.7.0's key")
}

func TestVerlSizingFollowsTheModel(t *testing.T) {
	small, mid, large := workloads.SizeVerl(7, 8), workloads.SizeVerl(32, 8), workloads.SizeVerl(72, 8)
	assert.Greater(t, small.MicroBatchPerGPU, mid.MicroBatchPerGPU)
	assert.Greater(t, mid.MicroBatchPerGPU, large.MicroBatchPerGPU)
	assert.False(t, mid.Offload)
	assert.True(t, large.Offload, "a 72B model offloads parameters and optimizer state")
	assert.Equal(t, 8, large.RolloutTensorParallel, "vLLM across the node")
	assert.Equal(t, large, workloads.SizeVerl(0, 8), "an unknown size gets the largest class")
}

// A NeMo RL run converts the model to Megatron's format when its effective configuration trains
// with Megatron: its 70B recipe does, its 8B one does not, and an override decides over the
// recipe; verl never does.
func TestConvertsToMegatronReadsTheEffectiveConfiguration(t *testing.T) {
	const megatron = "examples/configs/grpo_math_70B_megatron.yaml"
	for _, tag := range workloads.ReleaseTags(kinds.NeMoRL) {
		rel := workloads.ReleaseOf(kinds.NeMoRL, tag)
		assert.True(t, workloads.ConvertsToMegatron(rel, megatron, nil), tag)
		assert.False(t, workloads.ConvertsToMegatron(rel, megatron, []string{"policy.megatron_cfg.enabled=false"}), tag)
		assert.False(t, workloads.ConvertsToMegatron(rel, workloads.DefaultNeMoRLRecipe, nil), tag)
		assert.True(t, workloads.ConvertsToMegatron(rel, workloads.DefaultNeMoRLRecipe, []string{"policy.megatron_cfg.enabled=true"}), tag)
	}
	assert.False(t, workloads.ConvertsToMegatron(workloads.DefaultRelease(kinds.Verl), "", nil))
}

// ConvertsToMegatron reads the recipe and job.args only: the program's own overrides of a NeMo RL
// run never turn Megatron on or off, so what it reports is what the run does.
func TestTheProgramsOverridesLeaveMegatronAsTheRecipeSays(t *testing.T) {
	for _, recipe := range []string{"examples/configs/grpo_math_70B_megatron.yaml", workloads.DefaultNeMoRLRecipe} {
		r := run()
		r.Recipe = recipe
		for _, o := range workloads.Overrides(kinds.NeMoRL, r) {
			assert.NotEqual(t, "policy.megatron_cfg.enabled", o.Key, recipe)
		}
	}
}
