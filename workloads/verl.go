package workloads

import (
	"fmt"
	"path"

	"gke-rl/internal/kinds"
)

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

// verlFittingMicro is the largest micro batch up to want sequences of seq tokens whose update
// (or, logProb, log-probability pass) fits one GPU by verl's phase estimate (verlPhases), at least
// one: the default the model's size gives, lowered for long sequences. Without the GPU's memory or
// the model's size it is want.
func (r Run) verlFittingMicro(want, seq int, offload, logProb bool) int {
	if r.GPUMemoryGB <= 0 || r.ModelBillions <= 0 || seq <= 0 {
		return want
	}
	shape := r.ShapeOf()
	perGPU := r.ModelBillions * 1e9 / float64(max(1, r.Nodes*r.GPUsPerNode))
	// The update as the phase check counts it, with the measured under-estimate.
	resident, perToken := updateCalibrated(perGPU*fp32MasterState), updateCalibrated(UpdateActivationBytesPerToken(shape, true))
	if logProb {
		resident, perToken = perGPU*verlLogProbResident(offload), verlLogProbBytesPerToken(shape)
	}
	room := (r.GPUMemoryGB-GPUReserveGB)*1e9 - resident
	return max(1, min(want, int(room/(float64(seq)*perToken))))
}

// lengthOrigin is the key that lowered a micro batch sized from the model: the length the stack
// set, or the model.
func lengthOrigin(t Tuning) string {
	switch {
	case t.MaxResponseLength != nil:
		return "job.maxResponseLength"
	case t.MaxPromptLength != nil:
		return "job.maxPromptLength"
	}
	return "job.model"
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
	if t.MicroBatchSize != nil {
		micro, microOrigin = *t.MicroBatchSize, "job.microBatchSize"
	} else if fits := r.verlFittingMicro(micro, prompt+response, size.Offload, false); fits < micro {
		micro, microOrigin = fits, lengthOrigin(t)
	}
	if t.LogProbMicroBatchSize != nil {
		logProbMicro, logProbOrigin = *t.LogProbMicroBatchSize, "job.logProbMicroBatchSize"
	} else if fits := r.verlFittingMicro(logProbMicro, prompt+response, size.Offload, true); fits < logProbMicro {
		logProbMicro, logProbOrigin = fits, lengthOrigin(t)
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
		set("actor_rollout_ref.model.path", r.TrainingModelDir(), "job.model"),
		fixed("custom_reward_function.path", RewardPath, whyReward),
		set("custom_reward_function.name", VerlRewardFunctions[r.Dataset], "job.dataset"),
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
	)
	if mode := r.release(kinds.Verl).RolloutMode; mode != "" {
		o = append(o, fixed("actor_rollout_ref.rollout.mode", mode, whyRolloutMode))
	}
	o = append(o,
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

// whyRolloutMode is why a verl run names its rollout mode: the default changed between the
// releases the program runs.
const whyRolloutMode = "verl v0.7.0 removed the synchronous rollout that v0.6.0 ran by default (verl/workers/config/rollout.py: mode sync raises); its runs serve the rollout asynchronously, named so that no default decides it"

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

// VerlRuntimeEnv ships the verl checkout's package to every node of the run: `ray job submit`
// packages it from the shared volume once, and Ray unpacks it on each node's local disk and puts
// it on the import path of the driver and every actor. Python then reads verl's code from local
// disk, not through the shared volume (a GCS FUSE bucket mounted with metadata caching off
// would make every import of every process a round trip to Cloud Storage, and write
// __pycache__ into the bucket).
func VerlRuntimeEnv(r Run) RuntimeEnv {
	return RuntimeEnv{PyModules: []string{path.Join(r.verlSource(), VerlPackageDir)}}
}

// The directories of verl's checkout whose code runs (Release.Source holds their hashes).
const (
	VerlPackageDir    = "verl"
	VerlPreprocessDir = "examples/data_preprocess"
)

// VerlRepository is where the verl source comes from.
const VerlRepository = "https://github.com/volcengine/verl.git"

// whyReward is why a verl run scores with the program's reward module (reward.py).
const whyReward = "the program's reward module scores every row with the scorer of job.dataset: verl's default picks it by each row's data_source, which whoever writes the dataset chooses (some scorers run code from the row)"

// VerlRewardFunctions maps each of VerlDatasets to the function of the program's reward module
// (reward.py, at RewardPath) that scores it: the dataset's own scorer in verl, the one verl's
// default reward picks for the data_source that the dataset's preprocessing script writes
// (verl/utils/reward_score/__init__.py, default_compute_score, v0.6.0).
var VerlRewardFunctions = map[string]string{
	"gsm8k": "gsm8k",
	"math":  "math",
}

// VerlDatasets maps the `job.dataset` values verl can prepare to their preprocessing script in
// verl's examples.
var VerlDatasets = map[string]string{
	"gsm8k": "examples/data_preprocess/gsm8k.py",
	"math":  "examples/data_preprocess/math_dataset.py",
}
