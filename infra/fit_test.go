package infra_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/infra"
	"gke-rl/test/plantest"
)

// A model that cannot fit fails the plan, naming the numbers and the key to change, before any
// resource is registered: not an hour into the run with CUDA out of memory.
func TestAModelThatCannotFitIsRefused(t *testing.T) {
	assertRefused(t, []refusal{
		{"a model whose offloaded state the hosts cannot hold is refused with the nodes that can", "smoke",
			append(plantest.Shape(16384, 126, 128256), "job.model=meta-llama/Llama-3.1-405B-Instruct"), "job.model", "the smallest gpu.nodes that holds it is 3"},
		{"a rollout too narrow for the model is refused with the width that holds it", "b200-spot",
			[]string{"job.rolloutTensorParallel=1"}, "job.rolloutTensorParallel", "set job.rolloutTensorParallel to 2"},
		{"a model too large for the recipe on one node is refused", "h200-reserved",
			[]string{"framework=nemo-rl", "job.dataset=DeepScaler", "job.recipe=examples/configs/grpo_math_8B.yaml", "job.args=[]", "gpu.nodes=1",
				"job.modelSize=72B", "job.model=example/private-model", "job.rolloutTensorParallel=4",
				"job.modelShape.hiddenSize=8192", "job.modelShape.numHiddenLayers=80", "job.modelShape.vocabSize=152064"},
			"job.modelSize", "the smallest gpu.nodes that holds it is 2"},
	})
}

// Unset, job.recipe is the one NeMo RL wrote for the model's size class, and the plan says
// what it estimated.
func TestTheRecipeFollowsTheModelsSize(t *testing.T) {
	for model, recipe := range map[string]string{
		"Qwen/Qwen2.5-72B-Instruct":  "examples/configs/grpo_math_70B_megatron.yaml",
		"Qwen/Qwen2.5-32B-Instruct":  "examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml",
		"Qwen/Qwen2.5-7B-Instruct":   "examples/configs/grpo_math_8B.yaml",
		"Qwen/Qwen2.5-1.5B-Instruct": "examples/configs/grpo_math_1B.yaml",
		"example/private-model":      "examples/configs/grpo_math_8B.yaml", // size unknown
	} {
		overrides := []string{"job.recipe=", "job.args=[]", "job.model=" + model}
		if model == "example/private-model" {
			overrides = append(overrides, plantest.Shape(4096, 32, 128256)...)
		}
		bp := plantest.Resolve(t, "b200-spot", overrides...)
		assert.Contains(t, bp.Run.RayJob.Spec.Entrypoint, "--config "+recipe+" ", model)
		if model != "example/private-model" {
			assert.Contains(t, bp.Run.MemoryEstimate, "; recipe "+recipe, model)
		} else {
			assert.Empty(t, bp.Run.MemoryEstimate, "no estimate without a size")
		}
	}
}

// A recipe written for a smaller model than the stack's is allowed when it fits, with a warning
// that names the recipe for the model's size; the recipe for that size, or a larger one, is not
// warned about.
func TestARecipeForASmallerModelIsWarnedAbout(t *testing.T) {
	// Two nodes: on one, its update (177 GB, and 9 % for the measured under-estimate: 193 GB) is
	// above the B200's 188 GB.
	bp := plantest.Resolve(t, "b200-spot", "job.recipe=examples/configs/grpo_math_8B.yaml", "job.args=[]", "job.model=Qwen/Qwen2.5-32B-Instruct", "gpu.nodes=2")
	w := recipeWarning(bp)
	assert.Contains(t, w, "written for meta-llama/Llama-3.1-8B-Instruct, a smaller model than Qwen/Qwen2.5-32B-Instruct (32B parameters)")
	assert.Contains(t, w, "the recipe for this size is examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml")
	assert.Empty(t, recipeWarning(plantest.Resolve(t, "b200-spot")), "the shipped 70B recipe for a 72B model")
	assert.Empty(t, recipeWarning(plantest.Resolve(t, "b200-spot", "job.model=Qwen/Qwen2.5-7B-Instruct")), "a larger recipe")
	// 7B and the 8B recipe's Llama-3.1-8B are both of the class up to 10B.
	assert.Empty(t, recipeWarning(plantest.Resolve(t, "b200-spot", "job.model=Qwen/Qwen2.5-7B-Instruct", "job.recipe=examples/configs/grpo_math_8B.yaml", "job.args=[]")), "a recipe of the model's own class")
}

func recipeWarning(bp *infra.Blueprint) string {
	for _, w := range bp.Warnings {
		if w.Key == "job.recipe" {
			return w.Message
		}
	}
	return ""
}
