package workloads

import (
	_ "embed"
	"fmt"
	"path"
	"strings"

	"al.essio.dev/pkg/shellescape"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// Run is what a GRPO run trains, framework aside.
type Run struct {
	Model string
	// ModelBillions is the model's parameter count in billions (0 when unknown), which sizes
	// verl's micro batches, rollout parallelism and offloading.
	ModelBillions float64
	Dataset       string
	// Revisions pin the Hub downloads (a commit, a tag or a branch), keyed by repository ID:
	// the model's and the datasets' (HubDatasets). A repository without one is fetched at its
	// default branch as it is when the data preparation runs.
	Revisions map[string]string
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
	// Attempts is how many times the entrypoint runs the framework on the same cluster before
	// the run fails: 1 with a cluster of its own (KubeRay retries on a new one).
	Attempts int
	// DeadlineSeconds bounds the run from the entrypoint's start, its attempts included (run.sh,
	// RUN_DEADLINE_SECONDS): no attempt starts after it, and the one running then is stopped,
	// which ends the Ray job. 0 means no bound. Set on the long-lived cluster, where KubeRay's
	// deadline stops nothing.
	DeadlineSeconds int
	// WandB turns Weights & Biases logging on; it is set only when the key is.
	WandB bool
	// Layout.Run is the experiment's name: its checkpoint and log directories, its W&B run.
	Layout Layout
	// ResumeFrom is another experiment whose newest checkpoint this one starts from while it
	// has none of its own (verl only: ResumeRefusal).
	ResumeFrom string
	// Tuning are the job.* knobs; nil ones leave the program's or the recipe's value.
	Tuning Tuning
	// Extra are `job.args`: overrides appended after the program's own.
	Extra []string
}

// ModelDir is the model's copy on the shared volume, named after its revision.
func (r Run) ModelDir() string { return atRevision(r.Layout.Model(r.Model), r.Revisions[r.Model]) }

// DatasetDir is verl's prepared dataset, named after the revision of its Hub source.
func (r Run) DatasetDir() string {
	return atRevision(r.Layout.Dataset(r.Dataset), r.Revisions[VerlDatasetSources[r.Dataset]])
}

// Override is one `key=value` framework override and the config key it comes from.
type Override = frameworkconfig.Override

func set(key, value, origin string) Override { return Override{Key: key, Value: value, Origin: origin} }

// fixed is a value the program sets whatever the stack says, and why.
func fixed(key, value, why string) Override {
	return Override{Key: key, Value: value, Origin: "framework", Why: why}
}

// WandBProject is the Weights & Biases project a run logs to unless job.wandbProject says.
const WandBProject = "gke-rl"

// wandbProject is the run's W&B project.
func (r Run) wandbProject() string {
	if r.Tuning.WandBProject != nil {
		return *r.Tuning.WandBProject
	}
	return WandBProject
}

// Why the program fixes what no job.* key sets.
const (
	whyCheckpointDir = "each experiment keeps its checkpoints in its own directory, named by job.name (a new experiment: a new job.name; continuing another one's checkpoint: job.resumeFrom)"
	whyLogDir        = "the logs go to the shared volume, in the experiment's directory, named by job.name"
	whyWandBName     = "the W&B run is named after the experiment: job.name"
	whyGRPO          = "the program runs GRPO"
	whyOffload       = "a model of more than 35B parameters (job.model, job.modelSize) trains with its parameters and optimizer state in host memory"
)

// NeMoRLOverrides are the overrides of NeMo RL's GRPO example, in a fixed order. Every key is a
// key of the v0.5.0 recipes (frameworkconfig/data), which the plan checks.
func NeMoRLOverrides(r Run) []Override {
	o := []Override{
		set("policy.model_name", r.ModelDir(), "job.model"),
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
		set("data.dataset_name", r.Dataset, "job.dataset"),
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
		// attempt gets its own exp_<n> directory (run_grpo_math.py, get_next_experiment_dir).
		fixed("logger.log_dir", r.Layout.Logs(), whyLogDir),
	)
	if r.WandB {
		o = append(o, set("logger.wandb.project", r.wandbProject(), "job.wandbProject"), fixed("logger.wandb.name", r.Layout.Run, whyWandBName))
	}
	return append(o, nemoRLTuning(r)...)
}

//go:embed run.sh
var runScript string

// The run's script reaches the Ray pods as a file of a ConfigMap, not inlined in the entrypoint:
// Ray shows every job's entrypoint (`ray job list`, the dashboard) and stores it with the job,
// and run.sh with its comments is some 7 KB. The entrypoint stays a short command that names it.
const (
	// RunScriptConfigMap holds run.sh (key RunScriptKey) in the workload namespace.
	RunScriptConfigMap = "gke-rl-run-script"
	RunScriptKey       = "run.sh"
	// RunScriptDir is where the Ray pods mount it, read-only.
	RunScriptDir    = "/etc/gke-rl"
	runScriptVolume = "run-script"
)

// RunScriptPath is run.sh's path on the Ray pods.
var RunScriptPath = path.Join(RunScriptDir, RunScriptKey)

// RunScript is run.sh, what RunScriptPath holds.
func RunScript() string { return runScript }

// RunScriptObject is the ConfigMap that holds run.sh. A new release of the script updates it in
// place: the kubelet swaps the mounted file atomically, so an attempt that is running keeps
// reading the script it started with, and the next attempt runs the new one.
func RunScriptObject(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: RunScriptConfigMap, Namespace: namespace},
		Data:       map[string]string{RunScriptKey: runScript},
	}
}

// RunScriptVolume and RunScriptMount put RunScriptObject's file at RunScriptPath, read-only.
func RunScriptVolume() corev1.Volume {
	return corev1.Volume{Name: runScriptVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: RunScriptConfigMap},
		DefaultMode:          ptr.To(int32(0o444)),
	}}}
}

// RunScriptMount mounts RunScriptVolume at RunScriptDir.
func RunScriptMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: runScriptVolume, MountPath: RunScriptDir, ReadOnly: true}
}

// NeMoRLConvertedDir is where NeMo RL v0.5.0 converts a Hugging Face model to Megatron's format
// on its first attempt: $HF_HOME/nemo_rl/<model name>, a local path's name as
// model_<path with _> (nemo_rl/models/policy/utils.py get_megatron_checkpoint_dir;
// megatron_policy_worker.py, hf_model_subdir).
func NeMoRLConvertedDir(l Layout, model string) string {
	sub := model
	if strings.HasPrefix(model, "/") {
		sub = "model_" + strings.ReplaceAll(model, "/", "_")
	}
	return path.Join(l.HFHome(), "nemo_rl", sub)
}

// Retry pauses of run.sh between a failed attempt and the next, on the long-lived cluster.
const (
	// RetryPauseSeconds lets Ray notice a lost node before the retry counts the GPUs (Ray's
	// GCS marks a node dead after its health checks fail, some tens of seconds).
	RetryPauseSeconds = 120
	// RetryGPUWaitSeconds is how long a retry waits for the cluster's GPUs: a GKE auto-repair
	// or a host maintenance event re-creates the node and KubeRay its worker pod.
	RetryGPUWaitSeconds = 2 * 3600
	// RetryPollSeconds is how often it looks.
	RetryPollSeconds = 30
)

// Command is the entrypoint of a run: run.sh (the file at RunScriptPath) with its values, then
// the framework's command line. It is one list of words with no shell operator, quoted for bash,
// which alone reads it: the submitter hands it to Ray encoded (submit.sh), so Ray's `/bin/sh -c`
// on the head expands nothing of it.
func Command(f kinds.Framework, r Run, workdir string, argv []string) string {
	attempts := max(r.Attempts, 1)
	env := []string{
		"EXPERIMENT=" + r.Layout.Run,
		"FRAMEWORK=" + string(f),
		"CHECKPOINT_DIR=" + r.Layout.Checkpoints(),
		"KEEP_CHECKPOINTS=" + fmt.Sprint(r.KeepCheckpoints),
		"WORKDIR=" + workdir,
		"ATTEMPTS=" + fmt.Sprint(attempts),
		"GPUS=" + fmt.Sprint(r.Nodes*r.GPUsPerNode),
		"GPU_WAIT_SECONDS=" + fmt.Sprint(RetryGPUWaitSeconds),
		"PAUSE_SECONDS=" + fmt.Sprint(RetryPauseSeconds),
		"POLL_SECONDS=" + fmt.Sprint(RetryPollSeconds),
		"RUN_DEADLINE_SECONDS=" + fmt.Sprint(r.DeadlineSeconds),
	}
	if f == kinds.NeMoRL {
		env = append(env, "CONVERTED_DIR="+NeMoRLConvertedDir(r.Layout, r.ModelDir()))
	}
	if f == kinds.Verl && r.ResumeFrom != "" {
		env = append(env, "RESUME_FROM="+r.Layout.Of(r.ResumeFrom).Checkpoints())
	}
	words := append([]string{"env"}, env...)
	// `bash FILE ARGS...`: ARGS are the script's "$@".
	words = append(words, "bash", RunScriptPath)
	return shellescape.QuoteCommand(append(words, argv...))
}

// NeMoRLSourceDir is where the NeMo RL image keeps its source and examples.
const NeMoRLSourceDir = "/opt/nemo-rl"

// NeMoRLEntrypoint is the RayJob entrypoint of a NeMo RL GRPO run.
func NeMoRLEntrypoint(r Run) string {
	// NeMo RL hands its own runtime environment to Ray actors; as a Ray job it must be allowed
	// to override the job's.
	argv := []string{"env", "RAY_OVERRIDE_JOB_RUNTIME_ENV=1", "uv", "run", "python", "examples/run_grpo_math.py", "--config", r.Recipe}
	argv = append(argv, overrideArgs(NeMoRLOverrides(r), r.Extra)...)
	return Command(kinds.NeMoRL, r, NeMoRLSourceDir, argv)
}

// VerlSizing is what verl v0.6.0 requires set and what the model's size decides: micro batch
// sizes (verl/workers/config/actor.py and verl/utils/config.py reject a run without them),
// rollout tensor parallelism and memory, and offloading for models that do not fit otherwise.
type VerlSizing struct {
	MicroBatchPerGPU, LogProbMicroBatchPerGPU int
	RolloutTensorParallel                     int
	Offload                                   bool
}

// SizeVerl sizes a run from the model's parameter count: small models take larger micro
// batches and split vLLM across fewer GPUs; a 70B-class model takes one sequence per GPU, vLLM
// across the whole node and offloads to host memory. The verl guide runs 32B on two H200 nodes
// with rollout memory 0.6. An unknown size gets the settings of the largest class.
func SizeVerl(billions float64, gpusPerNode int) VerlSizing {
	switch {
	case billions > 0 && billions <= 8:
		return VerlSizing{MicroBatchPerGPU: 4, LogProbMicroBatchPerGPU: 8, RolloutTensorParallel: 2}
	case billions > 0 && billions <= 35:
		return VerlSizing{MicroBatchPerGPU: 2, LogProbMicroBatchPerGPU: 4, RolloutTensorParallel: min(4, gpusPerNode)}
	default:
		// 70B-class: one sequence per GPU, vLLM across the node, parameters and optimizer
		// state offloaded to host memory (an A4 or A3 Ultra node has 2.9 to 3.9 TiB).
		return VerlSizing{MicroBatchPerGPU: 1, LogProbMicroBatchPerGPU: 2, RolloutTensorParallel: gpusPerNode, Offload: true}
	}
}

// VerlOverrides are the overrides of verl's PPO trainer for GRPO, in a fixed order. Every key is
// a key of verl v0.6.0's composed config (frameworkconfig/data), which the plan checks. The
// knobs (Tuning) replace what the model's size decides.
func VerlOverrides(r Run) []Override {
	data := r.DatasetDir()
	loggers := `["console"]`
	if r.WandB {
		loggers = `["console","wandb"]`
	}
	t := r.Tuning
	size := SizeVerl(r.ModelBillions, r.GPUsPerNode)
	micro, logProbMicro, rolloutTP, rolloutMemory := size.MicroBatchPerGPU, size.LogProbMicroBatchPerGPU, size.RolloutTensorParallel, 0.6
	microOrigin, logProbOrigin, tpOrigin, memoryOrigin := "job.model", "job.model", "job.model", "job.model"
	if t.MicroBatchSize != nil {
		micro, microOrigin = *t.MicroBatchSize, "job.microBatchSize"
	}
	if t.LogProbMicroBatchSize != nil {
		logProbMicro, logProbOrigin = *t.LogProbMicroBatchSize, "job.logProbMicroBatchSize"
	}
	if t.RolloutTensorParallel != nil {
		rolloutTP, tpOrigin = *t.RolloutTensorParallel, "job.rolloutTensorParallel"
	}
	if t.RolloutGPUMemory != nil {
		rolloutMemory, memoryOrigin = *t.RolloutGPUMemory, "job.rolloutGpuMemory"
	}
	prompt, response := VerlPromptTokens[r.Dataset], VerlResponseTokens
	if prompt == 0 {
		prompt = VerlPromptTokens["gsm8k"]
	}
	if t.MaxPromptLength != nil {
		prompt = *t.MaxPromptLength
	}
	if t.MaxResponseLength != nil {
		response = *t.MaxResponseLength
	}
	o := []Override{
		fixed("algorithm.adv_estimator", "grpo", whyGRPO),
		set("data.train_files", data+"/train.parquet", "job.dataset"),
		set("data.val_files", data+"/test.parquet", "job.dataset"),
		set("data.train_batch_size", fmt.Sprint(r.PromptsPerStep), "job.promptsPerStep"),
		set("data.max_prompt_length", fmt.Sprint(prompt), "job.maxPromptLength"),
		set("data.max_response_length", fmt.Sprint(response), "job.maxResponseLength"),
		// A prompt longer than max_prompt_length stops the run (truncation=error, verl's
		// default) at the same step after every resume; verl's own examples filter them out
		// when the dataset loads.
		fixed("data.filter_overlong_prompts", "True", "a prompt longer than job.maxPromptLength would stop the run at the same step after every resume (data.truncation=error); it is left out when the dataset loads, as in verl's examples"),
		set("actor_rollout_ref.model.path", r.ModelDir(), "job.model"),
		fixed("actor_rollout_ref.model.use_remove_padding", "True", "padding is removed before the forward pass, which the models the program sizes support (verl's GRPO examples)"),
		// One optimizer step per GRPO step, as with NeMo RL; verl requires
		// train_batch_size >= ppo_mini_batch_size (default 256).
		set("actor_rollout_ref.actor.ppo_mini_batch_size", fmt.Sprint(r.PromptsPerStep), "job.promptsPerStep"),
		set("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", fmt.Sprint(micro), microOrigin),
	}
	if t.LearningRate != nil {
		o = append(o, set("actor_rollout_ref.actor.optim.lr", num(*t.LearningRate), "job.learningRate"))
	}
	o = append(o, verlKL(t)...)
	if t.EntropyCoef != nil {
		o = append(o, set("actor_rollout_ref.actor.entropy_coeff", num(*t.EntropyCoef), "job.entropyCoef"))
	}
	if t.ClipRatio != nil {
		// verl v0.6.0 clips with clip_ratio_low and clip_ratio_high, which default to 0.2 of
		// their own: clip_ratio alone changes nothing (verl/trainer/ppo/core_algos.py,
		// compute_policy_loss_vanilla).
		c := num(*t.ClipRatio)
		o = append(o,
			set("actor_rollout_ref.actor.clip_ratio", c, "job.clipRatio"),
			set("actor_rollout_ref.actor.clip_ratio_low", c, "job.clipRatio"),
			set("actor_rollout_ref.actor.clip_ratio_high", c, "job.clipRatio"))
	}
	o = append(o,
		fixed("actor_rollout_ref.rollout.name", "vllm", "the framework's image serves the rollout with vLLM"),
		set("actor_rollout_ref.rollout.n", fmt.Sprint(r.GenerationsPerPrompt), "job.generationsPerPrompt"),
	)
	if t.Temperature != nil {
		o = append(o, set("actor_rollout_ref.rollout.temperature", num(*t.Temperature), "job.temperature"))
	}
	o = append(o,
		set("actor_rollout_ref.rollout.tensor_model_parallel_size", fmt.Sprint(rolloutTP), tpOrigin),
		set("actor_rollout_ref.rollout.gpu_memory_utilization", num(rolloutMemory), memoryOrigin),
		set("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", fmt.Sprint(logProbMicro), logProbOrigin),
		set("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", fmt.Sprint(logProbMicro), logProbOrigin),
	)
	if size.Offload {
		o = append(o,
			fixed("actor_rollout_ref.actor.fsdp_config.param_offload", "True", whyOffload),
			fixed("actor_rollout_ref.actor.fsdp_config.optimizer_offload", "True", whyOffload),
			fixed("actor_rollout_ref.ref.fsdp_config.param_offload", "True", whyOffload),
		)
	}
	o = append(o,
		set("trainer.nnodes", fmt.Sprint(r.Nodes), "gpu.nodes"),
		set("trainer.n_gpus_per_node", fmt.Sprint(r.GPUsPerNode), "gpu.type"),
	)
	if r.Epochs > 0 {
		o = append(o, set("trainer.total_epochs", fmt.Sprint(r.Epochs), "job.epochs"))
	}
	if r.MaxSteps > 0 {
		o = append(o, set("trainer.total_training_steps", fmt.Sprint(r.MaxSteps), "job.maxSteps"))
	}
	if v := t.ValidationPeriod; v != nil {
		if *v == 0 {
			// test_freq -1 never validates during the run; val_before_train would still
			// validate once before it (verl/trainer/ppo/ray_trainer.py, fit).
			o = append(o, set("trainer.test_freq", "-1", "job.validationPeriod"), set("trainer.val_before_train", "False", "job.validationPeriod"))
		} else {
			o = append(o, set("trainer.test_freq", fmt.Sprint(*v), "job.validationPeriod"))
		}
	}
	return append(o,
		set("trainer.save_freq", fmt.Sprint(r.CheckpointPeriod), "job.checkpointPeriod"),
		set("trainer.max_actor_ckpt_to_keep", fmt.Sprint(r.KeepCheckpoints), "job.keepCheckpoints"),
		fixed("trainer.default_local_dir", r.Layout.Checkpoints(), whyCheckpointDir),
		// Resume from the newest checkpoint in default_local_dir, if any: a retried RayJob
		// after a spot preemption continues where it stopped. (With job.resumeFrom, run.sh
		// loads the other experiment's newest instead while this one has none.)
		fixed("trainer.resume_mode", "auto", whyCheckpointDir),
		set("trainer.logger", loggers, "tokens.wandb"),
		set("trainer.project_name", r.wandbProject(), "job.wandbProject"),
		fixed("trainer.experiment_name", r.Layout.Run, whyWandBName),
	)
}

// verlKL is GRPO's KL term: a loss against the reference policy (verl's
// examples/grpo_trainer), or with job.klInLoss=false a penalty on the reward
// (algorithm.use_kl_in_reward, with its own coefficient); job.klCoef=0 turns it off.
func verlKL(t Tuning) []Override {
	coef, coefOrigin := 0.001, "job.klCoef"
	if t.KLCoef != nil {
		coef = *t.KLCoef
	}
	inLoss := t.KLInLoss == nil || *t.KLInLoss
	if !inLoss {
		return []Override{
			set("actor_rollout_ref.actor.use_kl_loss", "False", "job.klInLoss"),
			set("algorithm.use_kl_in_reward", pyBool(coef > 0), "job.klInLoss"),
			set("algorithm.kl_ctrl.kl_coef", num(coef), coefOrigin),
		}
	}
	return []Override{
		set("actor_rollout_ref.actor.use_kl_loss", pyBool(coef > 0), "job.klInLoss"),
		set("actor_rollout_ref.actor.kl_loss_coef", num(coef), coefOrigin),
		fixed("actor_rollout_ref.actor.kl_loss_type", "low_var_kl", "GRPO's KL estimator (k3), as in verl's GRPO examples"),
	}
}

// VerlWorkdir is where a verl run's driver starts: a local directory, not the checkout, so that
// Python imports verl from the copy the job's runtime environment ships to every node
// (VerlRuntimeEnv), not from the shared volume.
const VerlWorkdir = "/tmp"

// VerlEntrypoint is the RayJob entrypoint of a verl GRPO run.
func VerlEntrypoint(r Run) string {
	argv := append([]string{"python3", "-m", "verl.trainer.main_ppo"}, overrideArgs(VerlOverrides(r), r.Extra)...)
	return Command(kinds.Verl, r, VerlWorkdir, argv)
}

// Overrides are every override a run gives its framework, the program's then `job.args`, with
// the config key each comes from.
func Overrides(f kinds.Framework, r Run) []Override {
	own := NeMoRLOverrides(r)
	if f == kinds.Verl {
		own = VerlOverrides(r)
	}
	for i, arg := range r.Extra {
		own = append(own, frameworkconfig.ParseOverride(arg, fmt.Sprintf("job.args[%d]", i)))
	}
	return own
}

// ManagedKeys are the override keys the program sets for a framework, each with what sets it
// (Origin: a config key, or "framework" with Why). `job.args` may not set them again: both
// frameworks would take the last value (Hydra 1.3 and NeMo RL's parse_hydra_overrides apply
// overrides in order), silently replacing what the program derived from the job.* and gpu.*
// keys and breaking the checks made on those.
func ManagedKeys(f kinds.Framework) map[string]Override {
	one, lr, length, period, project := 1, 1e-6, 1024, 10, "p"
	half, no := 0.5, false
	all := Tuning{LearningRate: &lr, KLCoef: &lr, EntropyCoef: &lr, ClipRatio: &half, Temperature: &half,
		MaxPromptLength: &length, MaxResponseLength: &length, RolloutTensorParallel: &one, RolloutGPUMemory: &half,
		MicroBatchSize: &one, LogProbMicroBatchSize: &one, ValidationPeriod: &period, WandBProject: &project}
	inReward := all
	inReward.KLInLoss = &no
	off := 0
	noValidation := all
	noValidation.ValidationPeriod = &off
	keys := map[string]Override{}
	// Every branch of the mapping: the KL in the loss and in the reward, validation on and off.
	for _, t := range []Tuning{all, inReward, noValidation} {
		sample := Run{MaxSteps: 1, Epochs: 1, WandB: true, Recipe: DefaultNeMoRLRecipe, Tuning: t}
		for _, ov := range Overrides(f, sample) {
			if _, seen := keys[ov.Key]; !seen {
				keys[ov.Key] = ov
			}
		}
	}
	// The learning rate of the other NeMo RL backend.
	if f == kinds.NeMoRL {
		for _, k := range []string{"policy.optimizer.kwargs.lr", "policy.megatron_cfg.optimizer.lr"} {
			keys[k] = set(k, "", "job.learningRate")
		}
	}
	return keys
}

// SetterOf says what sets a managed override key, for an error about a `job.args` entry that
// sets it too: the job.* (or gpu.*) key to set instead, or why the program fixes it.
func SetterOf(o Override) string {
	if o.Origin == "framework" {
		return "the program fixes it: " + o.Why
	}
	return "set " + o.Origin + " instead"
}

// OverrideKey is the key of a `key=value` override, without Hydra's `+`/`++`/`~` prefixes.
func OverrideKey(arg string) string {
	key, _, _ := strings.Cut(arg, "=")
	return strings.TrimLeft(key, "+~")
}

func overrideArgs(own []Override, extra []string) []string {
	out := make([]string, 0, len(own)+len(extra))
	for _, o := range own {
		out = append(out, o.Key+"="+o.Value)
	}
	return append(out, extra...)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
