package workloads_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// The nodes of the hardware catalog: A4 (B200, 191.5 GB as CUDA reports it) and A3 Ultra (H200,
// 150.1 GB).
var (
	a4       = workloads.NodeMemory{GPUGB: 191.5, HostGiB: 3600, GPUsPerNode: 8}
	a3Ultra  = workloads.NodeMemory{GPUGB: 150.1, HostGiB: 2700, GPUsPerNode: 8}
	allNodes = 256
)

// sized is the b200-spot run with the model's size known.
func sized(billions float64) workloads.Run {
	r := run()
	r.ModelBillions = billions
	return r
}

func TestTheShippedRunFits(t *testing.T) {
	r := sized(72)
	fit := estimated(t, kinds.NeMoRL, r)
	// Megatron TP4 × PP4: 72e9 × (2 + 2) / 16 = 18 GB of bf16 weights and gradients, plus the
	// distributed optimizer's 72e9 × 12 / 64 GPUs = 13.5 GB.
	assert.InDelta(t, 31.5, fit.TrainGB, 0.01)
	// vLLM TP8: 72e9 × 2 / 8.
	assert.InDelta(t, 18, fit.RolloutGB, 0.01)
	assert.Zero(t, fit.HostGB)
	assert.Empty(t, workloads.CheckFit(kinds.NeMoRL, r, a4, "job.model", "B200", allNodes))
	// The update counts 9 % over its estimate (workloads.UpdateUnderEstimate): 85.6 GB × 1.09.
	// NeMo RL v0.7.0's recipe computes log-probabilities a micro batch of the update's size at a
	// time (policy.logprob_batch_size: ${policy.train_micro_batch_size}, 1), v0.5.0's four
	// sequences at a time.
	assert.Equal(t, "Megatron (tensor parallel 4 × pipeline parallel 4): training state ≈ 32 GB per GPU (up to 153 GB); vLLM with tensor parallel 8: weights ≈ 18 GB per GPU (up to 103 GB); "+
		"peaks per GPU: rollout ≈ 115 GB, log-prob ≈ 33 GB, update ≈ 93 GB (up to 188 GB)", fit.Summary())
	r.Release = "v0.5.0"
	fit = estimated(t, kinds.NeMoRL, r)
	assert.Contains(t, fit.Summary(), "log-prob ≈ 38 GB, update ≈ 93 GB")
}

// A 72B model on the 8B recipe's DTensor shards 16 bytes a parameter over one node's eight
// H200s: 144 GB each, above 80% of 150.1. Two nodes halve it, and the refusal says so. (Its
// update, 4,096-token sequences without activation checkpointing, is refused on its own.)
func TestTrainingStateThatDoesNotFitNamesTheNodesThatHoldIt(t *testing.T) {
	r := sized(72)
	r.Recipe, r.Nodes = workloads.DefaultNeMoRLRecipe, 1
	tp := 4
	r.Tuning.RolloutTensorParallel = &tp
	problems := workloads.CheckFit(kinds.NeMoRL, r, a3Ultra, "job.model", "H200", allNodes)
	state := problemWith(t, problems, "does not fit for training")
	assert.Equal(t, "job.model", state.Origin)
	assert.Contains(t, state.Message, "16 bytes per parameter (fp32 weights, gradients and Adam's two moments) over 8 GPUs ≈ 144 GB per GPU, above 80% of a H200's 150 GB")
	assert.Contains(t, state.Message, "the smallest gpu.nodes that holds it is 2")
	update := problemWith(t, problems, "does not fit the update phase")
	// 52.9 MB a token, and the measured under-estimate's 9 %: 57.7 MB.
	assert.Contains(t, update.Message, "1 sequence of up to 4096 tokens (policy.train_micro_batch_size) × 57.7 MB a token of activations, without gradient checkpointing; 9 % added")

	r.Nodes = 2
	for _, p := range workloads.CheckFit(kinds.NeMoRL, r, a3Ultra, "job.model", "H200", allNodes) {
		assert.NotContains(t, p.Message, "does not fit for training", "two nodes hold the state")
	}
}

// problemWith is the one problem whose message contains part.
// estimated is the run's fit on A4 nodes, which must be estimated.
func estimated(t *testing.T, f kinds.Framework, r workloads.Run) workloads.Fit {
	t.Helper()
	fit, ok := workloads.EstimateFit(f, r, a4)
	require.True(t, ok)
	return fit
}

// problemsWith are the problems whose message says part.
func problemsWith(problems []workloads.Problem, part string) []workloads.Problem {
	var found []workloads.Problem
	for _, p := range problems {
		if strings.Contains(p.Message, part) {
			found = append(found, p)
		}
	}
	return found
}

// problemWith is the one problem whose message says part.
func problemWith(t *testing.T, problems []workloads.Problem, part string) workloads.Problem {
	t.Helper()
	found := problemsWith(problems, part)
	require.Len(t, found, 1, "one problem with %q in %v", part, problems)
	return found[0]
}

func TestTrainingStateNoNodeCountHoldsSaysSo(t *testing.T) {
	r := sized(405)
	r.Recipe, r.Nodes = workloads.DefaultNeMoRLRecipe, 1
	tp := 8
	r.Tuning.RolloutTensorParallel = &tp
	problems := workloads.CheckFit(kinds.NeMoRL, r, a4, "job.modelSize", "B200", 2)
	require.NotEmpty(t, problems)
	assert.Equal(t, "job.modelSize", problems[0].Origin)
	assert.Contains(t, problems[0].Message, "no gpu.nodes up to 2 holds it")
}

// The rollout is one vLLM engine per tensor parallel group: more nodes do not shrink its
// weights, a wider group does. The refusal names the key that narrowed it.
func TestARolloutTooNarrowNamesItsKeyAndTheWidthThatHolds(t *testing.T) {
	r := sized(72)
	one := 1
	r.Tuning.RolloutTensorParallel = &one
	problems := workloads.CheckFit(kinds.NeMoRL, r, a4, "job.model", "B200", allNodes)
	require.Len(t, problems, 1)
	assert.Equal(t, "job.rolloutTensorParallel", problems[0].Origin)
	assert.Contains(t, problems[0].Message, "its bf16 weights over rollout tensor parallel 1 ≈ 144 GB per GPU, above 90% of the rollout's memory fraction 0.6 × 192 GB (103 GB")
	assert.Contains(t, problems[0].Message, "set job.rolloutTensorParallel to 2")

	// The recipe's own width, too narrow for the model, is the model's problem.
	r = sized(72)
	r.Recipe = workloads.DefaultNeMoRLRecipe
	rollout := problemWith(t, workloads.CheckFit(kinds.NeMoRL, r, a4, "job.model", "B200", allNodes), "does not fit in vLLM")
	assert.Equal(t, "job.model", rollout.Origin)
	assert.Contains(t, rollout.Message, "rollout tensor parallel 1")
}

func TestARolloutNoWidthHoldsSaysSo(t *testing.T) {
	r := sized(480) // 960 GB of bf16 weights: 120 GB a GPU at tensor parallel 8, above 0.9 × 0.6 × 191.5
	r.Model = "example/model-480b"
	rollout := problemWith(t, workloads.CheckFit(kinds.NeMoRL, r, a4, "job.model", "B200", allNodes), "does not fit in vLLM")
	assert.Contains(t, rollout.Message, "no tensor parallelism within one node holds it")
}

// Offloading moves the optimizer's state off the GPUs and onto the host: the estimate follows
// the framework's key, whoever set it.
func TestOffloadedStateCountsAgainstTheHost(t *testing.T) {
	r := sized(72)
	r.Extra = []string{"policy.megatron_cfg.optimizer.optimizer_cpu_offload=true"}
	fit := estimated(t, kinds.NeMoRL, r)
	assert.InDelta(t, 18, fit.TrainGB, 0.01, "the bf16 weights and gradients stay")
	assert.InDelta(t, 13.5*8, fit.HostGB, 0.01, "each node's eight GPUs' optimizer shards")
	assert.Contains(t, fit.Summary(), "offloaded ≈ 108 GB per node")
}

// verl sizes offloading from the model: a 405B model offloads the actor to the host, where
// one node's memory does not hold it and three do.
func TestVerlHostMemoryNamesTheNodesThatHoldIt(t *testing.T) {
	r := sized(405)
	r.Model = "meta-llama/Llama-3.1-405B-Instruct"
	r.Nodes = 1
	problems := workloads.CheckFit(kinds.Verl, r, a4, "job.model", "B200", allNodes)
	require.NotEmpty(t, problems)
	assert.Contains(t, problems[0].Message, "does not fit in host memory")
	assert.Contains(t, problems[0].Message, "the smallest gpu.nodes that holds it is 3")

	small := sized(0.5)
	small.Model = "Qwen/Qwen2.5-0.5B-Instruct"
	small.Nodes = 1
	assert.Empty(t, workloads.CheckFit(kinds.Verl, small, a4, "job.model", "B200", allNodes))
}

func TestAnUnknownSizeIsNotJudged(t *testing.T) {
	r := sized(0)
	_, ok := workloads.EstimateFit(kinds.NeMoRL, r, a4)
	assert.False(t, ok)
	assert.Empty(t, workloads.CheckFit(kinds.NeMoRL, r, a4, "job.model", "B200", allNodes))
}

// A GPU whose memory the catalog does not give (0 GB) is not judged either: every limit would be
// 0 and every run refused.
func TestAGPUWithoutAKnownMemoryIsNotJudged(t *testing.T) {
	r := sized(72)
	_, ok := workloads.EstimateFit(kinds.NeMoRL, r, workloads.NodeMemory{HostGiB: 3600, GPUsPerNode: 8})
	assert.False(t, ok)
	assert.Empty(t, workloads.CheckFit(kinds.NeMoRL, r, workloads.NodeMemory{HostGiB: 3600, GPUsPerNode: 8}, "job.model", "B200", allNodes))
	_, ok = workloads.EstimateFit(kinds.NeMoRL, r, workloads.NodeMemory{GPUGB: 0.5, HostGiB: 3600, GPUsPerNode: 8})
	assert.True(t, ok, "any memory above 0 is judged")
}

func TestTheDefaultRecipeFollowsTheModelsSize(t *testing.T) {
	for billions, want := range map[float64]string{
		0:   workloads.DefaultNeMoRLRecipe, // unknown
		0.5: "examples/configs/grpo_math_1B.yaml",
		1.5: "examples/configs/grpo_math_1B.yaml",
		// Each class up to its bound, inclusive: 2B, 10B, 40B.
		2:     "examples/configs/grpo_math_1B.yaml",
		2.01:  "examples/configs/grpo_math_8B.yaml",
		7:     "examples/configs/grpo_math_8B.yaml",
		10:    "examples/configs/grpo_math_8B.yaml",
		10.01: "examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml",
		14:    "examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml",
		32:    "examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml",
		40:    "examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml",
		40.01: "examples/configs/grpo_math_70B_megatron.yaml",
		72:    "examples/configs/grpo_math_70B_megatron.yaml",
		405:   "examples/configs/grpo_math_70B_megatron.yaml",
	} {
		recipe := workloads.NeMoRLRecipeFor(billions)
		assert.Equal(t, want, recipe, "%gB", billions)
		assert.NotEmpty(t, workloads.NeMoRLRecipeModel(recipe), "the plan has a table for %s", recipe)
	}
	assert.Equal(t, "Qwen/Qwen2.5-32B", workloads.NeMoRLRecipeModel(workloads.NeMoRLRecipeFor(32)))
	assert.Empty(t, workloads.NeMoRLRecipeModel("examples/configs/nope.yaml"))
}

// A peak that grows with the sequence names the length key the stack set, whichever of the two
// it set: the prompt's alone, or the response's alone. 72B on the shipped Megatron recipe (no
// activation checkpointing, 4 sequence parallel ranks): the update holds its state, 31.5 GB × 1.09
// = 34.3 GB, and (16 × 152,064 + 77 × 8,192 × 80) × 1.09 = 57.66 MB a token; the room beside the
// state, 191.5 − 3 − 34.3 = 154.2 GB, takes 154.165e9 × 4 / 57.66e6 = 10,695 tokens of one
// sequence. A 65,536-token prompt cannot fit, whatever the response: the refusal says how long a
// sequence fits, not that the state leaves no room (it leaves 154 GB).
func TestALongSequencesPeakNamesTheLengthKeyTheStackSet(t *testing.T) {
	long := 65536
	r := sized(72)
	r.Tuning.MaxPromptLength = &long
	update := problemWith(t, workloads.CheckFit(kinds.NeMoRL, r, a4, "job.model", "B200", allNodes), "update phase")
	assert.Equal(t, "job.maxPromptLength", update.Origin)
	assert.Contains(t, update.Message, "at most 10695 tokens of prompt and response together fit beside the state")
	assert.NotContains(t, update.Message, "leaves too little room")

	// The response alone: the recipe's prompt (4,096) and a response that fits one sequence a
	// micro batch: 10,695 − 4,096 = 6,599 tokens. The recipe's micro batch is already one
	// sequence, so the remedy is the response alone.
	r = sized(72)
	r.Tuning.MaxResponseLength = &long
	update = problemWith(t, workloads.CheckFit(kinds.NeMoRL, r, a4, "job.model", "B200", allNodes), "update phase")
	assert.Equal(t, "job.maxResponseLength", update.Origin)
	assert.True(t, strings.HasSuffix(update.Message, "1 sequence of up to 69632 tokens (policy.train_micro_batch_size) over 4 sequence parallel ranks × 57.7 MB a token of activations, without gradient checkpointing; 9 % added, the most the estimate fell under a peak measured on an H200), above a B200's 191.5 GB less 3 GB for CUDA and NCCL (188 GB); set job.maxResponseLength to at most 6599"), update.Message)

	// Two sequences a micro batch: the micro batch goes to one, and the response shortens.
	two := 2
	r.Tuning.MicroBatchSize = &two
	update = problemWith(t, workloads.CheckFit(kinds.NeMoRL, r, a4, "job.model", "B200", allNodes), "update phase")
	assert.Contains(t, update.Message, "2 sequences of up to 69632 tokens")
	assert.True(t, strings.HasSuffix(update.Message, "; one sequence a micro batch does not fit either: set job.microBatchSize to 1 and job.maxResponseLength to at most 6599"), update.Message)
}

// Without Megatron's distributed optimizer, Adam's state is split over the tensor and pipeline
// parallel ranks only: 72e9 × 12 / (4 × 4) = 54 GB a GPU, beside the 18 GB of bf16 weights and
// gradients (72e9 × 4 / 16): 72 GB, where the distributed optimizer's 64-way split gives 31.5.
func TestMegatronsOptimizerWithoutTheDistributedOptimizerSplitsOverTPTimesPP(t *testing.T) {
	r := sized(72)
	r.Extra = []string{"policy.megatron_cfg.optimizer.use_distributed_optimizer=false"}
	fit := estimated(t, kinds.NeMoRL, r)
	assert.InDelta(t, 72, fit.TrainGB, 0.01)
	assert.Contains(t, fit.TrainBasis, "12 of optimizer state over 16")
}

// vLLM's engine spans tensor × pipeline parallel GPUs: 8 × 2 = 16 halve the shipped run's weights
// per GPU, 72e9 × 2 / 16 = 9 GB. The training basis states both of the Megatron split's terms:
// bf16 weights and gradients, 2 + 2 bytes over TP × PP = 4 × 4, and 12 bytes over all 64 GPUs.
func TestTheRolloutSpansTensorTimesPipelineParallelGPUs(t *testing.T) {
	r := sized(72)
	r.Extra = []string{"policy.generation.vllm_cfg.pipeline_parallel_size=2"}
	fit := estimated(t, kinds.NeMoRL, r)
	assert.Equal(t, 16, fit.RolloutTensorParallel)
	assert.InDelta(t, 9, fit.RolloutGB, 0.01)
	assert.Equal(t, "4 bytes per parameter of weights and gradients over TP × PP = 16 GPUs, 12 of optimizer state over 64", fit.TrainBasis)
}

// verl's FSDP actor shards its 16 bytes a parameter over every GPU: 7B on two nodes of eight,
// 7e9 × 16 / 16 = 7 GB a GPU, nothing offloaded; its vLLM engine spans tensor × pipeline
// parallel GPUs, 2 × 2, so 7e9 × 2 / 4 = 3.5 GB of weights a GPU.
func TestVerlsActorShardsOverEveryGPUAndItsRolloutOverTensorTimesPipeline(t *testing.T) {
	r := sized(7)
	r.Model, r.Nodes = "Qwen/Qwen2.5-7B-Instruct", 2
	two := 2
	r.Tuning.RolloutTensorParallel = &two
	r.Extra = []string{"actor_rollout_ref.rollout.pipeline_model_parallel_size=2"}
	fit := estimated(t, kinds.Verl, r)
	assert.InDelta(t, 7, fit.TrainGB, 0.01)
	assert.Zero(t, fit.HostGB)
	assert.Equal(t, "16 bytes per parameter for the actor (fp32 weights, gradients and Adam's two moments), 16 of them on the GPUs, over 16 GPUs", fit.TrainBasis)
	assert.Equal(t, 4, fit.RolloutTensorParallel)
	assert.InDelta(t, 3.5, fit.RolloutGB, 0.01)
}

// verl's three phases on a GPU, worked out for 7B on two nodes of eight B200s at gsm8k's
// lengths (512 + 1024 = 1536 tokens a sequence), 7e9 / 16 = 437.5M parameters a GPU:
//   - rollout: vLLM's 0.6 × 191.5 = 114.9 GB beside the actor's fp32 weights and Adam's two
//     moments, 12 bytes × 437.5M = 5.25 GB: 120.15 GB;
//   - log-prob: those 5.25 GB and 8 sequences × 1536 tokens × 3 × 2 bytes × 152,064 vocabulary
//     entries = 11.21 GB: 16.46 GB;
//   - update: 16 bytes × 437.5M × 1.09 = 7.63 GB and 4 × 1536 tokens × 2,884,608 bytes × 1.09 =
//     19.32 GB: 26.95 GB.
func TestVerlsPhasesWorkedOut(t *testing.T) {
	r := sized(7)
	r.Model, r.Nodes, r.Dataset = "Qwen/Qwen2.5-7B-Instruct", 2, "gsm8k"
	fit := estimated(t, kinds.Verl, r)
	require.Len(t, fit.Phases, 3)
	gbs := map[string]float64{}
	for _, p := range fit.Phases {
		gbs[p.Name] = p.GB
	}
	assert.InDelta(t, 120.15, gbs["rollout"], 0.005)
	assert.InDelta(t, 16.46, gbs["log-prob"], 0.005)
	assert.InDelta(t, 26.95, gbs["update"], 0.005)
	assert.Equal(t, "vLLM's 0.6 of the GPU's 191.5 GB, beside the actor's fp32 weights and Adam's two moments (12 bytes per parameter over 16 GPUs), which stay on the GPU", fit.Phases[0].Basis)
	// 3 × 2 × 152,064 = 912,384 bytes, 0.9 MB a token; 2,884,608 × 1.09 = 3.14 MB.
	assert.Equal(t, "the actor's fp32 weights and Adam's moments over 16 GPUs, and 8 sequences of up to 1536 tokens (actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu) × 0.9 MB a token (bf16 logits, softmax and pd × logits for the entropy over 152064 vocabulary entries)", fit.Phases[1].Basis)
	assert.Equal(t, "16 bytes per parameter over 16 GPUs, and 4 sequences of up to 1536 tokens (actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu) × 3.1 MB a token of activations, with gradient checkpointing; 9 % added, the most the estimate fell under a peak measured on an H200", fit.Phases[2].Basis)

	// The rollout at the GPU's limit: on a 16.5 GB GPU (13.5 GB less the 3 reserved), vLLM's
	// half, 8.25 GB, beside the 5.25 GB of state is 13.5 GB exactly and fits; 0.51 does not,
	// and the remedy is the most that fits, (13.5 − 5.25) / 16.5 = 0.5.
	rollout := func(memory float64) workloads.Phase {
		r.Tuning.RolloutGPUMemory = &memory
		fit, ok := workloads.EstimateFit(kinds.Verl, r, workloads.NodeMemory{GPUGB: 16.5, HostGiB: 3600, GPUsPerNode: 8})
		require.True(t, ok)
		return fit.Phases[0]
	}
	for _, p := range fit.Phases {
		assert.Empty(t, p.Remedy, "%s fits", p.Name)
	}
	// Four 33,280-token sequences (32,768-token responses) a micro batch: the update, 7.63 GB of
	// state and 4 × 33,280 × 3.14 MB = 418.6 GB, goes down to what the 180.87 GB beside the state
	// holds: 180.87 / (33,280 × 3.14 MB) = 1.7, one sequence.
	long, four := 32768, 4
	r.Tuning.MaxResponseLength, r.Tuning.MicroBatchSize = &long, &four
	over := estimated(t, kinds.Verl, r)
	assert.InDelta(t, 7.63+4*33280*2884608*1.09/1e9, over.Phases[2].GB, 0.005)
	assert.Equal(t, "set job.microBatchSize to at most 1", over.Phases[2].Remedy)
	r.Tuning.MaxResponseLength, r.Tuning.MicroBatchSize = nil, nil

	// With the actor's parameters offloaded, only Adam's moments stay beside vLLM: 8 bytes.
	r.Extra = []string{"actor_rollout_ref.actor.fsdp_config.param_offload=True"}
	offloaded := estimated(t, kinds.Verl, r)
	assert.Equal(t, "vLLM's 0.6 of the GPU's 191.5 GB, beside Adam's two moments (8 bytes per parameter over 16 GPUs), which stay on the GPU", offloaded.Phases[0].Basis)
	assert.InDelta(t, 114.9+3.5, offloaded.Phases[0].GB, 0.005, "437.5M × 8 bytes = 3.5 GB")
	r.Extra = nil

	assert.InDelta(t, 13.5, rollout(0.5).GB, 1e-9)
	assert.Empty(t, rollout(0.5).Remedy)
	assert.Equal(t, "set job.rolloutGpuMemory to at most 0.50", rollout(0.51).Remedy)
	// And the refusals say the same: no rollout phase at exactly its limit, one above it (the
	// log-prob and update phases, 16.46 and 26.95 GB, are refused on this GPU either way).
	small := workloads.NodeMemory{GPUGB: 16.5, HostGiB: 3600, GPUsPerNode: 8}
	rolloutRefused := func(memory float64) []workloads.Problem {
		r.Tuning.RolloutGPUMemory = &memory
		return problemsWith(workloads.CheckFit(kinds.Verl, r, small, "job.model", "B200", 2), "the rollout phase")
	}
	assert.Empty(t, rolloutRefused(0.5))
	assert.Len(t, rolloutRefused(0.51), 1)
	r.Tuning.RolloutGPUMemory = nil

	// The least fraction the remedy names is 0.10: on a 9.2 GB GPU the room beside the 5.25 GB
	// of state, 9.2 − 3 − 5.25 = 0.95 GB, is 0.103 of it, which rounds down to 0.10; on a 9.1 GB
	// GPU 0.85 / 9.1 = 0.093 is too little for vLLM at all: the state is what to shrink.
	onGPU := func(gpuGB float64) workloads.Phase {
		fit, ok := workloads.EstimateFit(kinds.Verl, r, workloads.NodeMemory{GPUGB: gpuGB, HostGiB: 3600, GPUsPerNode: 8})
		require.True(t, ok)
		return fit.Phases[0]
	}
	assert.Equal(t, "set job.rolloutGpuMemory to at most 0.10", onGPU(9.2).Remedy)
	assert.Empty(t, onGPU(9.1).Remedy)
	assert.Contains(t, problemWith(t, workloads.CheckFit(kinds.Verl, r, workloads.NodeMemory{GPUGB: 9.1, HostGiB: 3600, GPUsPerNode: 8}, "job.model", "B200", 2), "the rollout phase").Message,
		"the state on each GPU leaves too little room")
}

// NeMo RL's phases for the shipped run (72B, Megatron TP4, 31.5 GB of training state a GPU,
// 4,096-token sequences, one a micro batch, split over the 4 tensor parallel ranks):
//   - rollout: vLLM's 0.6 × 191.5 = 114.9 GB (the state waits in host memory);
//   - log-prob: 31.5 GB and 4096 / 4 = 1024 tokens × 10 bytes × 152,064 vocabulary entries =
//     1.557 GB: 33.057 GB;
//   - update: 31.5 × 1.09 = 34.335 GB and 1024 tokens × (16 × 152,064 + 77 × 8,192 × 80) bytes
//     × 1.09 = 59.040 GB: 93.375 GB.
//
// Context parallel 2 splits the sequence again, 512 tokens a GPU: 32.279 and 63.855 GB.
func TestNeMoRLsPhasesWorkedOut(t *testing.T) {
	phases := func(r workloads.Run) map[string]float64 {
		gbs := map[string]float64{}
		for _, p := range estimated(t, kinds.NeMoRL, r).Phases {
			gbs[p.Name] = p.GB
		}
		return gbs
	}
	shipped := phases(sized(72))
	assert.InDelta(t, 114.9, shipped["rollout"], 0.0005)
	assert.InDelta(t, 33.057, shipped["log-prob"], 0.0005)
	assert.InDelta(t, 93.375, shipped["update"], 0.0005)
	r := sized(72)
	r.Extra = []string{"policy.megatron_cfg.context_parallel_size=2"}
	split := phases(r)
	assert.InDelta(t, 32.279, split["log-prob"], 0.0005)
	assert.InDelta(t, 63.855, split["update"], 0.0005)
	fit := estimated(t, kinds.NeMoRL, sized(72))
	assert.Equal(t, "the training state (32 GB), and 1 sequence of up to 4096 tokens (policy.logprob_batch_size) over 4 sequence parallel ranks × 1.5 MB a token (bf16 logits, their fp32 copy and log_softmax over 152064 vocabulary entries)", fit.Phases[1].Basis)

	// The 8B recipe trains with DTensor: its tensor and context parallel sizes split the same way.
	dtensor := sized(8)
	dtensor.Model, dtensor.Recipe, dtensor.Nodes = "meta-llama/Llama-3.1-8B-Instruct", workloads.DefaultNeMoRLRecipe, 1
	one := phases(dtensor)
	dtensor.Extra = []string{"policy.dtensor_cfg.context_parallel_size=2"}
	two := phases(dtensor)
	state := estimated(t, kinds.NeMoRL, dtensor).TrainGB
	assert.InDelta(t, (one["log-prob"]-state)/2, two["log-prob"]-state, 1e-9, "half the tokens a GPU")
}

// A phase at exactly its limit, the GPU's memory less the 3 GB reserved, fits: no remedy. The
// log-prob and update phases of both frameworks' runs above (each phase's size does not depend
// on the GPU's memory, since verl's vLLM frees its memory before the training phases) on a GPU
// of exactly that size plus 3 GB, and on one a megabyte smaller, which needs one.
func TestAPhaseAtExactlyItsLimitHasNoRemedy(t *testing.T) {
	verl := sized(7)
	verl.Model, verl.Nodes, verl.Dataset = "Qwen/Qwen2.5-7B-Instruct", 2, "gsm8k"
	for _, tc := range []struct {
		framework kinds.Framework
		run       workloads.Run
	}{{kinds.NeMoRL, sized(72)}, {kinds.Verl, verl}} {
		for i, name := range []string{"log-prob", "update"} {
			t.Run(string(tc.framework)+" "+name, func(t *testing.T) {
				phase := func(gpuGB float64) workloads.Phase {
					fit, ok := workloads.EstimateFit(tc.framework, tc.run, workloads.NodeMemory{GPUGB: gpuGB, HostGiB: 3600, GPUsPerNode: 8})
					require.True(t, ok)
					require.Equal(t, name, fit.Phases[i+1].Name)
					return fit.Phases[i+1]
				}
				gb := phase(191.5).GB
				exact := gb + workloads.GPUReserveGB
				require.Equal(t, gb, exact-workloads.GPUReserveGB, "a GPU whose limit is the phase to the last bit")
				require.Equal(t, gb, phase(exact).GB)
				assert.Empty(t, phase(exact).Remedy)
				assert.NotEmpty(t, phase(exact-0.001).Remedy)
			})
		}
	}
}

// NeMo RL's DTensor with cpu_offload keeps its whole fp32 state, 16 bytes a parameter, in each
// node's host memory instead of on the GPUs: the 8B recipe's Llama 3.1 8B on two nodes holds
// 8e9 × 16 / 2 = 64 GB a node there and nothing on a GPU.
func TestNeMoRLsDTensorOffloadsItsStateToTheHost(t *testing.T) {
	r := sized(8)
	r.Model, r.Recipe, r.Nodes = "meta-llama/Llama-3.1-8B-Instruct", workloads.DefaultNeMoRLRecipe, 2
	r.Extra = []string{"policy.dtensor_cfg.cpu_offload=true"}
	fit := estimated(t, kinds.NeMoRL, r)
	assert.InDelta(t, 64, fit.HostGB, 1e-9)
	assert.Zero(t, fit.TrainGB)
	assert.Equal(t, "16 bytes per parameter (fp32 weights, gradients and Adam's two moments) over 16 GPUs (offloaded to host memory)", fit.TrainBasis)
}

// The training state may take 80 % of a GPU: the shipped run's 31.5 GB a GPU fits one of
// 39.375 GB exactly (0.8 × 39.375 = 31.5) and not one of 39.37.
func TestTheTrainingStateFitsUpToItsShareOfTheGPU(t *testing.T) {
	r := sized(72)
	training := func(gpuGB float64) []workloads.Problem {
		m := workloads.NodeMemory{GPUGB: gpuGB, HostGiB: 3600, GPUsPerNode: 8}
		return problemsWith(workloads.CheckFit(kinds.NeMoRL, r, m, "job.model", "B200", 8), "does not fit for training")
	}
	assert.Empty(t, training(39.375))
	assert.Len(t, training(39.37), 1)

	// On seven nodes the distributed optimizer's share grows to 72e9 × 12 / 56 = 15.4 GB, 33.4 GB
	// in all: refused, and eight nodes, which bring it to the 31.5 GB limit exactly, hold it.
	r.Nodes = 7
	refused := training(39.375)
	require.Len(t, refused, 1)
	assert.Contains(t, refused[0].Message, "the smallest gpu.nodes that holds it is 8")
}

// The training state and the offloaded state are refused each on its own limit: one over its
// limit does not bring in the other at exactly its own. verl's actor keeps 8 bytes a parameter
// (fp32 weights and gradients) where param_offload does not move them and 8 (Adam's moments)
// where optimizer_offload does not; one node of 8 GPUs.
func TestTheTrainingAndHostLimitsAreEachTheirOwn(t *testing.T) {
	check := func(billions float64, offload string, m workloads.NodeMemory) []workloads.Problem {
		r := sized(billions)
		r.Model, r.Nodes = "example/model-7b", 1
		r.Extra = []string{"actor_rollout_ref.actor.fsdp_config." + offload + "=true"}
		return workloads.CheckFit(kinds.Verl, r, m, "job.model", "B200", 1)
	}
	// Adam's moments offloaded: 6.7108864e9 × 8 / 8 GPUs = 6.7108864 GB on each GPU, 0.8 of an
	// 8.388608 GB GPU exactly; 53.69 GB on the host, over 0.8 × 62 GiB = 53.26 GB.
	atTraining := check(6.7108864, "optimizer_offload", workloads.NodeMemory{GPUGB: 8.388608, HostGiB: 62, GPUsPerNode: 8})
	assert.Len(t, problemsWith(atTraining, "does not fit in host memory"), 1)
	assert.Empty(t, problemsWith(atTraining, "does not fit for training"))
	// The weights offloaded: 13.4217728e9 × 8 / 1 node = 107.3741824 GB on the host, 0.8 × 125
	// GiB exactly; 13.42 GB on each GPU, over 0.8 × 16 = 12.8 GB.
	atHost := check(13.4217728, "param_offload", workloads.NodeMemory{GPUGB: 16, HostGiB: 125, GPUsPerNode: 8})
	assert.Len(t, problemsWith(atHost, "does not fit for training"), 1)
	assert.Empty(t, problemsWith(atHost, "does not fit in host memory"))
}

// Sizes read with one decimal below 10 GB and none from 10 on: a 40B model's weights over vLLM's
// tensor parallel 8 are 40e9 × 2 / 8 = 10 GB exactly, a 36B model's 9 GB.
func TestSizesHaveADecimalBelowTenGB(t *testing.T) {
	assert.Contains(t, estimated(t, kinds.NeMoRL, sized(40)).Summary(), "weights ≈ 10 GB per GPU")
	assert.Contains(t, estimated(t, kinds.NeMoRL, sized(36)).Summary(), "weights ≈ 9.0 GB per GPU")
}

// vLLM's weights may take 90 % of its memory fraction: the shipped run's 18 GB a GPU (72e9 × 2
// over tensor parallel 8) fit a fraction of 0.5 of a 40 GB GPU exactly (0.9 × 0.5 × 40 = 18),
// not of a 39.99 GB one.
func TestTheRolloutsWeightsFitUpToTheirShareOfItsMemory(t *testing.T) {
	r := sized(72)
	half := 0.5
	r.Tuning.RolloutGPUMemory = &half
	inVLLM := func(gpuGB float64) []workloads.Problem {
		m := workloads.NodeMemory{GPUGB: gpuGB, HostGiB: 3600, GPUsPerNode: 8}
		return problemsWith(workloads.CheckFit(kinds.NeMoRL, r, m, "job.model", "B200", 8), "does not fit in vLLM")
	}
	assert.Empty(t, inVLLM(40))
	assert.Len(t, inVLLM(39.99), 1)
}

// Offloaded state may take 80 % of the Ray worker's memory: verl's actor offloaded whole, 16
// bytes a parameter, of a 6.7108864B model on one node is 107.3741824 GB, exactly 0.8 × 125 GiB;
// 124 GiB do not hold it.
func TestOffloadedStateFitsUpToItsShareOfTheHost(t *testing.T) {
	r := sized(6.7108864)
	r.Model, r.Nodes = "example/model-7b", 1
	r.Extra = []string{"actor_rollout_ref.actor.fsdp_config.param_offload=true", "actor_rollout_ref.actor.fsdp_config.optimizer_offload=true"}
	host := func(gib int) []workloads.Problem {
		m := workloads.NodeMemory{GPUGB: 191.5, HostGiB: gib, GPUsPerNode: 8}
		fit, ok := workloads.EstimateFit(kinds.Verl, r, m)
		require.True(t, ok)
		require.InDelta(t, 107.3741824, fit.HostGB, 1e-9)
		return problemsWith(fit.Problems(kinds.Verl, r, m, "job.model", "B200", 1), "does not fit in host memory")
	}
	assert.Empty(t, host(125))
	assert.Len(t, host(124), 1)

	// Twice the model on one node is twice over; two nodes, each offloading half, hold it exactly.
	r.ModelBillions = 2 * 6.7108864
	m := workloads.NodeMemory{GPUGB: 191.5, HostGiB: 125, GPUsPerNode: 8}
	// gpu.maxNodes of 2: the answer may be the largest count allowed.
	refused := problemWith(t, workloads.CheckFit(kinds.Verl, r, m, "job.model", "B200", 2), "does not fit in host memory")
	assert.Contains(t, refused.Message, "the state offloaded from the GPUs ≈ 215 GB per node, above 80% of the Ray worker's 125 GiB (107 GB)")
	assert.Contains(t, refused.Message, "the smallest gpu.nodes that holds it is 2")
}

// The rollout's remedy takes the whole node's width when only it holds the weights, at exactly
// the limit: 72e9 × 2 = 144 GB of weights over tensor parallel 8 are 18 GB a GPU, 0.9 × 0.5 ×
// 40 GB, on a node of eight GPUs.
func TestTheRolloutsRemedyTakesTheWholeNodeAtTheLimit(t *testing.T) {
	r := sized(72)
	one, half := 1, 0.5
	r.Tuning.RolloutTensorParallel, r.Tuning.RolloutGPUMemory = &one, &half
	m := workloads.NodeMemory{GPUGB: 40, HostGiB: 3600, GPUsPerNode: 8}
	rollout := problemWith(t, workloads.CheckFit(kinds.NeMoRL, r, m, "job.model", "B200", 8), "does not fit in vLLM")
	assert.Contains(t, rollout.Message, "set job.rolloutTensorParallel to 8 (or raise job.rolloutGpuMemory)")
	m.GPUsPerNode = 4
	rollout = problemWith(t, workloads.CheckFit(kinds.NeMoRL, r, m, "job.model", "B200", 8), "does not fit in vLLM")
	assert.Contains(t, rollout.Message, "no tensor parallelism within one node holds it")
}

// The node count a refusal names is the first at which the phase fits, exactly at its limit
// included: 72B on the 8B recipe's DTensor computes log-probabilities in 156.46 GB a GPU on one
// node (144 GB of state) and 84.46 GB on two (72 GB); on a GPU whose limit is the two nodes'
// phase to the last bit, one node is refused and told 2, not 3.
func TestAPhasesNodeCountHoldsItAtExactlyItsLimit(t *testing.T) {
	r := sized(72)
	r.Recipe = workloads.DefaultNeMoRLRecipe
	tp := 4
	r.Tuning.RolloutTensorParallel = &tp
	logProb := func(nodes int, gpuGB float64) workloads.Phase {
		r.Nodes = nodes
		fit, ok := workloads.EstimateFit(kinds.NeMoRL, r, workloads.NodeMemory{GPUGB: gpuGB, HostGiB: 3600, GPUsPerNode: 8})
		require.True(t, ok)
		require.Equal(t, "log-prob", fit.Phases[1].Name)
		return fit.Phases[1]
	}
	atTwo := logProb(2, 150.1).GB
	assert.InDelta(t, 84.46, atTwo, 0.005)
	gpu := atTwo + workloads.GPUReserveGB
	require.Equal(t, atTwo, gpu-workloads.GPUReserveGB, "a GPU whose limit is the phase to the last bit")
	require.Equal(t, atTwo, logProb(2, gpu).GB)
	assert.InDelta(t, 156.46, logProb(1, gpu).GB, 0.005)

	r.Nodes = 1
	refused := problemWith(t, workloads.CheckFit(kinds.NeMoRL, r, workloads.NodeMemory{GPUGB: gpu, HostGiB: 3600, GPUsPerNode: 8}, "job.model", "H200", 8), "the log-prob phase")
	assert.Contains(t, refused.Message, "the state on each GPU leaves too little room: the smallest gpu.nodes that holds it is 2")
}

// A phase whose state alone does not fit names the smallest node count that holds it, and still
// finds it when that count is gpu.maxNodes itself: the answer does not depend on how far the
// search may go (72B on the 8B recipe's DTensor, one node of H200s).
func TestAPhasesNodeCountIsFoundUpToGPUMaxNodes(t *testing.T) {
	r := sized(72)
	r.Recipe, r.Nodes = workloads.DefaultNeMoRLRecipe, 1
	tp := 4
	r.Tuning.RolloutTensorParallel = &tp
	smallest := regexp.MustCompile(`the state on each GPU leaves too little room: the smallest gpu.nodes that holds it is (\d+)`)
	var phase string
	var nodes int
	for _, p := range workloads.CheckFit(kinds.NeMoRL, r, a3Ultra, "job.model", "H200", allNodes) {
		if m := smallest.FindStringSubmatch(p.Message); m != nil && strings.Contains(p.Message, "phase") {
			phase, nodes = p.Message, atoi(t, m[1])
			break
		}
	}
	require.NotEmpty(t, phase, "a phase that only more nodes hold")
	require.Greater(t, nodes, 1)
	// The count named holds the phase, and one fewer does not.
	name := regexp.MustCompile(`does not fit the ([a-z-]+) phase`).FindStringSubmatch(phase)
	require.NotNil(t, name)
	holds := func(n int) bool {
		more := r
		more.Nodes = n
		fit, ok := workloads.EstimateFit(kinds.NeMoRL, more, a3Ultra)
		require.True(t, ok)
		for _, p := range fit.Phases {
			if p.Name == name[1] {
				return p.GB <= fit.PhaseLimitGB
			}
		}
		t.Fatalf("no %s phase", name[1])
		return false
	}
	assert.True(t, holds(nodes), "%d nodes hold the %s phase", nodes, name[1])
	assert.False(t, holds(nodes-1), "%d nodes do not", nodes-1)
	again := workloads.CheckFit(kinds.NeMoRL, r, a3Ultra, "job.model", "H200", nodes)
	assert.Contains(t, fmt.Sprint(again), fmt.Sprintf("the state on each GPU leaves too little room: the smallest gpu.nodes that holds it is %d", nodes))
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
