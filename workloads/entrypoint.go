package workloads

import (
	"fmt"
	"strings"

	"al.essio.dev/pkg/shellescape"

	"gke-rl/infra/kinds"
)

// Run is what a GRPO run trains, framework aside.
type Run struct {
	Model   string
	Dataset string
	// Recipe is NeMo RL's config file, relative to its source directory.
	Recipe      string
	Nodes       int
	GPUsPerNode int
	// MaxSteps and Epochs bound the run; 0 leaves the framework's value.
	MaxSteps             int
	Epochs               int
	PromptsPerStep       int
	GenerationsPerPrompt int
	CheckpointPeriod     int
	KeepCheckpoints      int
	// WandB turns Weights & Biases logging on; it is set only when the key is.
	WandB  bool
	Layout Layout
	// Extra are `job.args`: overrides appended after the program's own.
	Extra []string
}

// Override is one `key=value` framework override.
type Override struct {
	Key, Value string
}

func (o Override) String() string { return o.Key + "=" + o.Value }

// WandBProject is the Weights & Biases project every run logs to.
const WandBProject = "gke-rl"

// NeMoRLOverrides are the overrides of NeMo RL's GRPO example, in a fixed order.
func NeMoRLOverrides(r Run) []Override {
	o := []Override{
		{"policy.model_name", r.Model},
		{"cluster.num_nodes", fmt.Sprint(r.Nodes)},
		{"cluster.gpus_per_node", fmt.Sprint(r.GPUsPerNode)},
		{"grpo.num_prompts_per_step", fmt.Sprint(r.PromptsPerStep)},
		{"grpo.num_generations_per_prompt", fmt.Sprint(r.GenerationsPerPrompt)},
		// One optimizer step per GRPO step: every generation of every prompt.
		{"policy.train_global_batch_size", fmt.Sprint(r.PromptsPerStep * r.GenerationsPerPrompt)},
	}
	if r.MaxSteps > 0 {
		o = append(o, Override{"grpo.max_num_steps", fmt.Sprint(r.MaxSteps)})
	}
	if r.Epochs > 0 {
		o = append(o, Override{"grpo.max_num_epochs", fmt.Sprint(r.Epochs)})
	}
	o = append(o,
		Override{"data.dataset_name", r.Dataset},
		Override{"checkpointing.enabled", "True"},
		Override{"checkpointing.checkpoint_dir", r.Layout.Checkpoints()},
		Override{"checkpointing.save_period", fmt.Sprint(r.CheckpointPeriod)},
		Override{"checkpointing.keep_top_k", fmt.Sprint(r.KeepCheckpoints)},
		// Without a metric, keep_top_k keeps the newest checkpoints: the ones a resume needs.
		Override{"checkpointing.metric_name", "null"},
		Override{"logger.wandb_enabled", pyBool(r.WandB)},
	)
	if r.WandB {
		o = append(o, Override{"logger.wandb.project", WandBProject}, Override{"logger.wandb.name", r.Layout.Run})
	}
	return o
}

// NeMoRLSourceDir is where the NeMo RL image keeps its source and examples.
const NeMoRLSourceDir = "/opt/nemo-rl"

// NeMoRLEntrypoint is the RayJob entrypoint of a NeMo RL GRPO run. NeMo RL resumes from the
// newest checkpoint in checkpointing.checkpoint_dir by itself.
func NeMoRLEntrypoint(r Run) string {
	argv := []string{"uv", "run", "python", "examples/run_grpo_math.py", "--config", r.Recipe}
	argv = append(argv, overrideArgs(NeMoRLOverrides(r), r.Extra)...)
	// NeMo RL hands its own runtime environment to Ray actors; as a Ray job it must be allowed
	// to override the job's.
	return "cd " + shellescape.Quote(NeMoRLSourceDir) + " && RAY_OVERRIDE_JOB_RUNTIME_ENV=1 " + shellescape.QuoteCommand(argv)
}

// VerlOverrides are the overrides of verl's PPO trainer for GRPO, in a fixed order.
func VerlOverrides(r Run) []Override {
	data := r.Layout.Dataset(r.Dataset)
	loggers := `["console"]`
	if r.WandB {
		loggers = `["console","wandb"]`
	}
	o := []Override{
		{"algorithm.adv_estimator", "grpo"},
		{"data.train_files", data + "/train.parquet"},
		{"data.val_files", data + "/test.parquet"},
		{"data.train_batch_size", fmt.Sprint(r.PromptsPerStep)},
		{"actor_rollout_ref.model.path", r.Layout.Model(r.Model)},
		{"actor_rollout_ref.rollout.name", "vllm"},
		{"actor_rollout_ref.rollout.n", fmt.Sprint(r.GenerationsPerPrompt)},
		{"trainer.nnodes", fmt.Sprint(r.Nodes)},
		{"trainer.n_gpus_per_node", fmt.Sprint(r.GPUsPerNode)},
	}
	if r.Epochs > 0 {
		o = append(o, Override{"trainer.total_epochs", fmt.Sprint(r.Epochs)})
	}
	if r.MaxSteps > 0 {
		o = append(o, Override{"trainer.total_training_steps", fmt.Sprint(r.MaxSteps)})
	}
	return append(o,
		Override{"trainer.save_freq", fmt.Sprint(r.CheckpointPeriod)},
		Override{"trainer.max_actor_ckpt_to_keep", fmt.Sprint(r.KeepCheckpoints)},
		Override{"trainer.default_local_dir", r.Layout.Checkpoints()},
		// Resume from the newest checkpoint in default_local_dir, if any: a retried RayJob
		// after a spot preemption continues where it stopped.
		Override{"trainer.resume_mode", "auto"},
		Override{"trainer.logger", loggers},
		Override{"trainer.project_name", WandBProject},
		Override{"trainer.experiment_name", r.Layout.Run},
	)
}

// VerlEntrypoint is the RayJob entrypoint of a verl GRPO run; the job's runtime environment
// puts the verl source on PYTHONPATH.
func VerlEntrypoint(r Run) string {
	argv := append([]string{"python3", "-m", "verl.trainer.main_ppo"}, overrideArgs(VerlOverrides(r), r.Extra)...)
	return "cd " + shellescape.Quote(r.Layout.VerlSource()) + " && " + shellescape.QuoteCommand(argv)
}

// ManagedKeys are the override keys the program sets for a framework: `job.args` may not set
// them again (verl's Hydra rejects a key given twice; NeMo RL would silently take the last).
func ManagedKeys(f kinds.Framework) []string {
	var o []Override
	sample := Run{MaxSteps: 1, Epochs: 1, WandB: true}
	if f == kinds.Verl {
		o = VerlOverrides(sample)
	} else {
		o = NeMoRLOverrides(sample)
	}
	keys := make([]string, len(o))
	for i, ov := range o {
		keys[i] = ov.Key
	}
	return keys
}

// OverrideKey is the key of a `key=value` override, without Hydra's `+`/`++`/`~` prefixes.
func OverrideKey(arg string) string {
	key, _, _ := strings.Cut(arg, "=")
	return strings.TrimLeft(key, "+~")
}

func overrideArgs(own []Override, extra []string) []string {
	out := make([]string, 0, len(own)+len(extra))
	for _, o := range own {
		out = append(out, o.String())
	}
	return append(out, extra...)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
