package workloads

import (
	_ "embed"
	"fmt"
	"strings"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// Run is what a GRPO run trains, framework aside.
type Run struct {
	// Release is the framework's release tag (job.frameworkRelease); empty, the framework's
	// default (DefaultRelease).
	Release string
	Model   string
	// ModelBillions is the model's parameter count in billions (0 when unknown), which sizes
	// verl's micro batches, rollout parallelism and offloading.
	ModelBillions float64
	// Shape is the model's shape when the stack gives it (job.modelShape); nil takes the
	// program's table (ShapeOf).
	Shape   *Shape
	Dataset string
	// Revisions pin the Hub downloads (a commit, a tag or a branch), keyed by repository ID:
	// the model's and the datasets' (HubDatasets). A repository without one is fetched at its
	// default branch as it is when the data preparation runs.
	Revisions map[string]string
	// Recipe is NeMo RL's config file, relative to its source directory.
	Recipe      string
	Nodes       int
	GPUsPerNode int
	// GPUMemoryGB is one GPU's memory as the device reports it: the defaults the program sizes
	// (verl's micro batches) are chosen to fit it. 0 sizes them from the model alone.
	GPUMemoryGB float64
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

// release is the run's release of framework f; a tag the program does not run (which the
// configuration's check refuses first) gives a release with no table, image or source, whose
// checks fail instead of panicking on a plan the check has not seen yet.
func (r Run) release(f kinds.Framework) Release {
	if rel, ok := LookupRelease(f, r.Release); ok {
		return rel
	}
	return Release{Framework: f, Tag: r.Release}
}

// verlSource is the run's verl checkout on the shared volume.
func (r Run) verlSource() string { return r.Layout.VerlSource(r.release(kinds.Verl).Tag) }

// ModelDir is the model as the data preparation downloads it to the shared volume, named after
// its revision. No training process loads it from there: other pods write that directory.
func (r Run) ModelDir() string { return atRevision(r.Layout.Model(r.Model), r.Revisions[r.Model]) }

// TrainingModelDir is the model as the training processes load it: run.sh's checked copy of
// ModelDir in the checkpoints' tree (promote_model), which only the training pods write.
// NeMo RL v0.5.0 loads the model with trust_remote_code=True in its driver, every vLLM worker
// and every policy worker (nemo_rl/algorithms/utils.py get_tokenizer,
// models/generation/vllm/vllm_worker.py, models/policy/workers/*): an auto_map in the model's
// JSON files would import Python from the directory it loads.
func (r Run) TrainingModelDir() string { return r.Layout.Trained(r.ModelDir()) }

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
	whyLogDir        = "the logs go to the shared volume, in the experiment's checkpoint directory (named by job.name), which only the training pods write"
	whyWandBName     = "the W&B run is named after the experiment: job.name"
	whyGRPO          = "the program runs GRPO"
	whyOffload       = "a model of more than 35B parameters (job.model, job.modelSize) trains with its parameters and optimizer state in host memory"
)

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
// keys and breaking the checks made on those. tags are the releases whose keys count: a run's
// own, or every release of the framework (none given).
func ManagedKeys(f kinds.Framework, tags ...string) map[string]Override {
	if len(tags) == 0 {
		tags = ReleaseTags(f)
	}
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
	// Every branch of the mapping: the KL in the loss and in the reward, validation on and off,
	// at every release (NeMo RL v0.7.0 names its datasets under data.train, and a validation set
	// for DeepScaler).
	for _, tag := range tags {
		for _, t := range []Tuning{all, inReward, noValidation} {
			sample := Run{Release: tag, MaxSteps: 1, Epochs: 1, WandB: true, Recipe: DefaultNeMoRLRecipe, Dataset: "DeepScaler", Tuning: t}
			for _, ov := range Overrides(f, sample) {
				if _, seen := keys[ov.Key]; !seen {
					keys[ov.Key] = ov
				}
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
