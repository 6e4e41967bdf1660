package workloads

import (
	"fmt"
	"math"
	"path"
	"strings"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// NeMoRLOverrides are the overrides of NeMo RL's GRPO example, in a fixed order. Every key is a
// key of the run's release's recipes (frameworkconfig/data), which the plan checks.
func NeMoRLOverrides(r Run) []Override {
	release := r.release(kinds.NeMoRL)
	o := []Override{
		set("policy.model_name", r.TrainingModelDir(), "job.model"),
		// The 10-40B recipe names its tokenizer by Hub ID (policy.tokenizer.name:
		// Qwen/Qwen2.5-32B), which NeMo RL loads with trust_remote_code from the shared
		// volume's Hub cache (modelSourceChecks says why that is refused): the tokenizer is
		// the model's own, from the checked copy.
		set("policy.tokenizer.name", r.TrainingModelDir(), "job.model"),
		set("cluster.num_nodes", fmt.Sprint(r.Nodes), "gpu.nodes"),
		set("cluster.gpus_per_node", fmt.Sprint(r.GPUsPerNode), "gpu.type"),
		set("grpo.num_prompts_per_step", fmt.Sprint(r.PromptsPerStep), "job.promptsPerStep"),
		set("grpo.num_generations_per_prompt", fmt.Sprint(r.GenerationsPerPrompt), "job.generationsPerPrompt"),
		// One optimizer step per GRPO step: every generation of every prompt.
		set("policy.train_global_batch_size", fmt.Sprint(r.PromptsPerStep*r.GenerationsPerPrompt), "job.promptsPerStep"),
	}
	if r.MaxSteps > 0 {
		o = append(o, set("grpo.max_num_steps", fmt.Sprint(r.MaxSteps), "job.maxSteps"))
	}
	if r.Epochs > 0 {
		o = append(o, set("grpo.max_num_epochs", fmt.Sprint(r.Epochs), "job.epochs"))
	}
	o = append(o,
		set(release.DatasetKey, r.Dataset, "job.dataset"),
	)
	if v := release.ValidationSets[r.Dataset]; v != "" {
		o = append(o, set("data.validation", "{dataset_name:"+v+"}", "job.dataset"))
	}
	o = append(o,
		set("checkpointing.enabled", "True", "job.checkpointPeriod"),
		// NeMo RL resumes from the newest checkpoint in checkpoint_dir by itself: the same
		// directory on every retry.
		fixed("checkpointing.checkpoint_dir", r.Layout.Checkpoints(), whyCheckpointDir),
		set("checkpointing.save_period", fmt.Sprint(r.CheckpointPeriod), "job.checkpointPeriod"),
		set("checkpointing.keep_top_k", fmt.Sprint(r.KeepCheckpoints), "job.keepCheckpoints"),
		// Without a metric, keep_top_k keeps the newest checkpoints: the ones a resume needs.
		set("checkpointing.metric_name", "null", "job.keepCheckpoints"),
		set("logger.wandb_enabled", pyBool(r.WandB), "tokens.wandb"),
		// The recipes' "logs" is relative to the head container's working directory: the
		// metrics and TensorBoard logs would go with the container. On the shared volume, each
		// attempt gets its own exp_<n> directory (the launcher's get_next_experiment_dir).
		fixed("logger.log_dir", r.Layout.Logs(), whyLogDir),
	)
	if r.WandB {
		o = append(o, set("logger.wandb.project", r.wandbProject(), "job.wandbProject"), fixed("logger.wandb.name", r.Layout.Run, whyWandBName))
	}
	return append(o, nemoRLTuning(r)...)
}

// NeMoRLConversionDir is where NeMo RL v0.5.0 converts the experiment's Hugging Face model to
// Megatron's format (NRL_MEGATRON_CHECKPOINT_DIR; without it $HF_HOME/nemo_rl,
// nemo_rl/models/policy/utils.py get_megatron_checkpoint_dir). Every rank instantiates the
// conversion's run_config.yaml with Megatron-Bridge's instantiate, which calls any importable
// _target_ (megatron_policy_worker.py), so it lives in the experiment's own checkpoint directory,
// which only the training pods write, and is the experiment's alone: run.sh deletes a conversion
// that no checkpoint shows finished, which it could not do under a sibling's running run.
// NeMo RL lists its checkpoints as step_<n> (nemo_rl/utils/checkpoint.py), so the directory is
// not taken for one. The driver's environment reaches every worker: NeMo RL hands it to its
// actors (nemo_rl/distributed/worker_groups.py, "Update env_vars with the current environment
// variables").
func NeMoRLConversionDir(l Layout) string { return path.Join(l.Checkpoints(), "megatron-conversion") }

// NeMoRLConvertedDir is the conversion of the model loaded from path model: model_<path with _>
// in NeMoRLConversionDir (megatron_policy_worker.py, hf_model_subdir).
func NeMoRLConvertedDir(l Layout, model string) string {
	sub := model
	if strings.HasPrefix(model, "/") {
		sub = "model_" + strings.ReplaceAll(model, "/", "_")
	}
	return path.Join(NeMoRLConversionDir(l), sub)
}

// NeMoRLSourceDir is where the NeMo RL image keeps its source and examples.
const NeMoRLSourceDir = "/opt/nemo-rl"

// NeMoRLEntrypoint is the RayJob entrypoint of a NeMo RL GRPO run.
func NeMoRLEntrypoint(r Run) string {
	// NeMo RL hands its own runtime environment to Ray actors; as a Ray job it must be allowed
	// to override the job's.
	argv := []string{"env", "RAY_OVERRIDE_JOB_RUNTIME_ENV=1", "uv", "run", "python", r.release(kinds.NeMoRL).Launcher, "--config", r.Recipe}
	argv = append(argv, overrideArgs(NeMoRLOverrides(r), r.Extra)...)
	return Command(kinds.NeMoRL, r, NeMoRLSourceDir, argv)
}

// DefaultNeMoRLRecipe is the NeMo RL GRPO recipe used when `job.recipe` is not set and the
// model's size is unknown: the math recipe written for Llama-3.1-8B.
const DefaultNeMoRLRecipe = "examples/configs/grpo_math_8B.yaml"

// nemoRLRecipeBySize are the default recipes by the model's size: each is the NeMo RL v0.5.0
// recipe written for the largest model of its class (its policy.model_name), whose parallelism
// and offloading hold that class on one node or, past 40B, on the nodes it asks for.
var nemoRLRecipeBySize = []struct {
	UpToBillions float64
	Recipe       string
}{
	{2, "examples/configs/grpo_math_1B.yaml"}, // Qwen/Qwen2.5-1.5B: DTensor, vLLM TP1
	{10, DefaultNeMoRLRecipe},                 // meta-llama/Llama-3.1-8B-Instruct: DTensor, vLLM TP1
	// Qwen/Qwen2.5-32B: DTensor with tensor parallel 8 and activation checkpointing, vLLM TP4.
	{40, "examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml"},
	// meta-llama/Llama-3.3-70B-Instruct: Megatron TP4 × PP4 (two nodes of eight GPUs or more),
	// vLLM TP8.
	{math.Inf(1), "examples/configs/grpo_math_70B_megatron.yaml"},
}

// NeMoRLRecipeFor is the default recipe for a model of billions parameters (0: unknown).
func NeMoRLRecipeFor(billions float64) string {
	if billions <= 0 {
		return DefaultNeMoRLRecipe
	}
	i := NeMoRLSizeClass(billions)
	return nemoRLRecipeBySize[i].Recipe
}

// NeMoRLSizeClass is the index of the size class of a model of billions parameters in the
// default recipes, smallest first: a recipe written for a smaller class than the model's sets
// parallelism and batch sizes for a smaller model.
func NeMoRLSizeClass(billions float64) int {
	for i, c := range nemoRLRecipeBySize {
		if billions <= c.UpToBillions {
			return i
		}
	}
	return len(nemoRLRecipeBySize) - 1
}

// NeMoRLRecipeModel is the model a NeMo RL recipe was written for (its policy.model_name, the
// same at every release the program runs), or "" when the plan has no table for it.
func NeMoRLRecipeModel(recipe string) string {
	t, err := frameworkconfig.Load("nemo-rl", DefaultRelease(kinds.NeMoRL).Tag, recipe)
	if err != nil {
		return ""
	}
	name, _ := t.Keys["policy.model_name"].(string)
	return name
}
