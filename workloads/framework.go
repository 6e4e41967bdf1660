// Package workloads builds the GRPO training run: the framework's command line from typed
// options (NeMo RL or verl), the one-time data preparation, the Secret Manager secrets that
// carry the Hugging Face and Weights & Biases tokens, and the KubeRay RayJob that runs it all.
package workloads

import (
	"math"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// Release pins what a framework runs: every node of a run must use the same code.
type Release struct {
	// Image is the container image of the head, the workers and the data preparation.
	Image string
	// RayVersion is the Ray inside Image; KubeRay reads it to gate features.
	RayVersion string
}

// Releases are the pinned defaults of `ray.image` and `ray.version`.
var Releases = map[kinds.Framework]Release{
	// NeMo RL v0.5.0 (January 2026) is the release the NeMo RL guide targets; its pyproject pins
	// ray[default]==2.49.2.
	kinds.NeMoRL: {Image: "nvcr.io/nvidia/nemo-rl:v0.5.0", RayVersion: "2.49.2"},
	// The verl guide uses verlai/verl:vllm011.latest, a moving tag. vllm011.dev7 is the fixed
	// build of that line (vLLM 0.11.0, Megatron core 0.14) that verl's own docs name as a
	// runtime image. It ships verl's dependencies but not verl (its Dockerfile uninstalls it),
	// so the data preparation clones verl at VerlSourceTag onto the shared volume. vLLM 0.11.0
	// requires ray>=2.48; the image resolves 2.49.x.
	kinds.Verl: {Image: "verlai/verl:vllm011.dev7", RayVersion: "2.49.2"},
}

// HeadRayCPUs are the CPUs the Ray head must advertise for a framework's startup to finish.
// NeMo RL v0.5.0 builds its worker environments with one {"CPU": 1} bundle on every alive Ray
// node, STRICT_SPREAD, and waits for the placement group without a timeout
// (nemo_rl/utils/venvs.py lines 161-167, create_local_venv_on_each_node, called for every
// worker group whose Python environment is a `uv` command, nemo_rl/distributed/worker_groups.py
// line 446): a head with no CPU makes that group unplaceable and the run waits forever. (v0.7.0
// skips CPU-less nodes, commit a760f1c3c.) One CPU admits that bundle; the head still has no GPU,
// so no training lands on it. verl v0.6.0 places its TaskRunner on a worker: its head
// advertises none.
func HeadRayCPUs(f kinds.Framework) int {
	if f == kinds.NeMoRL {
		return 1
	}
	return 0
}

// OfflineEnv keeps the Ray pods off the Hugging Face Hub once the data preparation has staged
// the model and the datasets: every rank would otherwise resolve them on the Hub at every start
// and retry, through the cluster's one NAT address. A job on the long-lived cluster that needs
// the Hub sets them to 0 in its runtime environment.
func OfflineEnv() []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "HF_HUB_OFFLINE", Value: "1"}, {Name: "HF_DATASETS_OFFLINE", Value: "1"}}
}

// VerlSourceTag is the verl release whose code runs on the vllm011 image (the image's
// Dockerfile builds against it).
const VerlSourceTag = "v0.6.0"

// VerlRuntimeEnv ships the verl checkout's package to every node of the run: `ray job submit`
// packages it from the shared volume once, and Ray unpacks it on each node's local disk and puts
// it on the import path of the driver and every actor. Python then reads verl's code from local
// disk, not through the shared volume (a GCS FUSE bucket mounted with metadata caching off
// would make every import of every process a round trip to Cloud Storage, and write
// __pycache__ into the bucket).
func VerlRuntimeEnv(l Layout) RuntimeEnv {
	return RuntimeEnv{PyModules: []string{path.Join(l.VerlSource(), VerlPackageDir)}}
}

// VerlSourceCommit is VerlSourceTag's commit (volcengine/verl, `git rev-parse v0.6.0^{commit}`):
// the checkout fetches it, and the submitter checks it before every run.
const VerlSourceCommit = "ddd86f527a4af75095e4677b02b5aa272913a088"

// The git tree hashes of the directories of VerlSourceCommit whose code runs (volcengine/verl,
// `git rev-parse v0.6.0:verl` and `git rev-parse v0.6.0:examples/data_preprocess`; every file in
// them has mode 100644, so treehash.sh computes the same hash from the files alone): the
// package the run ships to every node, which the submitter checks, and the dataset scripts,
// which the data preparation checks before it runs one. A content hash fixed here: nothing of
// the repository on the shared volume is trusted.
const (
	VerlPackageDir     = "verl"
	VerlPackageTree    = "21dba16c55f23a0d01e69f444817769d91ce3465"
	VerlPreprocessDir  = "examples/data_preprocess"
	VerlPreprocessTree = "d4b2959ebe2b070646015de73a487a558325cd13"
)

// VerlRepository is where the verl source comes from.
const VerlRepository = "https://github.com/volcengine/verl.git"

// VerlDatasets maps the `job.dataset` values verl can prepare to their preprocessing script in
// verl's examples.
var VerlDatasets = map[string]string{
	"gsm8k": "examples/data_preprocess/gsm8k.py",
	"math":  "examples/data_preprocess/math_dataset.py",
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

// NeMoRLRecipeModel is the model a NeMo RL recipe was written for (its policy.model_name), or
// "" when the plan has no table for it.
func NeMoRLRecipeModel(recipe string) string {
	t, err := frameworkconfig.Load("nemo-rl", NeMoRLConfigTag, recipe)
	if err != nil {
		return ""
	}
	name, _ := t.Keys["policy.model_name"].(string)
	return name
}

// Layout is where a run keeps its files on the shared volume.
type Layout struct {
	Root string
	// Run is the experiment's name (job.name), which names its checkpoint and log directories:
	// the same on every retry, so that a re-created cluster resumes from the newest checkpoint,
	// and another for each experiment, so that a new one starts from step 0.
	Run string
}

// Of is the layout of another experiment on the same volume.
func (l Layout) Of(experiment string) Layout { return Layout{Root: l.Root, Run: experiment} }

// ResumeRefusal says why a framework cannot start an experiment from another one's checkpoint,
// or "" when it can (verl: trainer.resume_mode=resume_path, which run.sh gives while the
// experiment has no checkpoint of its own).
func ResumeRefusal(f kinds.Framework) string {
	if f == kinds.NeMoRL {
		// nemo_rl/algorithms/grpo.py setup: CheckpointManager(checkpointing).get_latest_checkpoint_path()
		// reads checkpointing.checkpoint_dir alone; no key of v0.5.0 loads another directory.
		return "NeMo RL " + NeMoRLConfigTag + " resumes only from its own checkpointing.checkpoint_dir (nemo_rl/algorithms/grpo.py, setup: get_latest_checkpoint_path); no key loads another experiment's checkpoint"
	}
	return ""
}

// HFHome is the Hugging Face cache: models download once for every node and retry.
func (l Layout) HFHome() string { return path.Join(l.Root, hfHomeDir) }

// Checkpoints is the run's checkpoint directory.
func (l Layout) Checkpoints() string { return path.Join(l.Root, checkpointsDir, l.Run) }

// The volume's top-level directories.
const (
	checkpointsDir = "checkpoints"
	hfHomeDir      = "huggingface"
	modelsDir      = "models"
	datasetsDir    = "datasets"
	preparedDir    = "prepared"
	verlDir        = "verl"
)

// CheckpointsPrefix is the object prefix of every experiment's checkpoints on a bucket mounted
// at Root: the support principal's access stops there (storage.OutsideCheckpoints).
func (l Layout) CheckpointsPrefix() string { return checkpointsDir + "/" }

// PrepDirs are the directories the data preparation writes, relative to Root: the only ones it
// mounts, so that it never reaches a checkpoint. A test runs prep.sh with these alone.
func (l Layout) PrepDirs() []string {
	return []string{hfHomeDir, modelsDir, datasetsDir, preparedDir, verlDir}
}

// Logs is the run's logs directory (NeMo RL's metrics and TensorBoard logs).
func (l Layout) Logs() string { return path.Join(l.Root, "logs", l.Run) }

// VerlSource is the verl checkout.
func (l Layout) VerlSource() string { return path.Join(l.Root, verlDir, VerlSourceTag) }

// Dataset is a prepared dataset's directory.
func (l Layout) Dataset(name string) string { return path.Join(l.Root, datasetsDir, name) }

// Model is a model's local copy (`Qwen/Qwen2.5-32B-Instruct` → models/Qwen/Qwen2.5-32B-Instruct).
func (l Layout) Model(id string) string {
	return path.Join(l.Root, modelsDir, strings.TrimPrefix(path.Clean("/"+id), "/"))
}
