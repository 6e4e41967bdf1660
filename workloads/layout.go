package workloads

import (
	"path"
	"strings"
)

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

// HFHome is the shared volume's Hugging Face directory: the hub's cache (HubCache) and the
// datasets' (DatasetsCache), which the data preparation fills once for every node and retry.
// No pod's HF_HOME is this directory (HFEnv says why).
func (l Layout) HFHome() string { return path.Join(l.Root, hfHomeDir) }

// HubCache is the Hugging Face hub's cache on the volume (HF_HUB_CACHE; by default $HF_HOME/hub).
func (l Layout) HubCache() string { return path.Join(l.HFHome(), "hub") }

// DatasetsCache is the datasets library's cache on the volume (HF_DATASETS_CACHE; by default
// $HF_HOME/datasets), where load_dataset keeps the Arrow tables it builds from the hub's files.
func (l Layout) DatasetsCache() string { return path.Join(l.HFHome(), "datasets") }

// Trained is where the training pods keep their own copy of a directory of the volume that
// another pod prepared (the data preparation's model, ModelDir): the same path under the
// checkpoints' tree, in a directory no experiment can be named (names are DNS labels, which never
// begin with a dot). Only the training pods write the checkpoints' tree (the data preparation
// does not mount it, and the bucket's condition keeps every support principal off it), so what
// run.sh copies there and checks (promote_model) stays what it checked.
func (l Layout) Trained(dir string) string {
	rel := strings.TrimPrefix(path.Clean(dir), path.Clean(l.Root)+"/")
	return path.Join(l.Root, checkpointsDir, programDir, rel)
}

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
	// programDir, under the checkpoints, holds what the program keeps there for every
	// experiment (Trained).
	programDir = ".gke-rl"
)

// CheckpointsPrefix is the object prefix of every experiment's checkpoints on a bucket mounted
// at Root: the support principal's access stops there (storage.OutsideCheckpoints).
func (l Layout) CheckpointsPrefix() string { return checkpointsDir + "/" }

// PrepDirs are the directories the data preparation writes, relative to Root: the only ones it
// mounts, so that it never reaches a checkpoint. A test runs prep.sh with these alone.
func (l Layout) PrepDirs() []string {
	return []string{hfHomeDir, modelsDir, datasetsDir, preparedDir, verlDir}
}

// Logs is the run's logs directory (NeMo RL's metrics and TensorBoard logs): in the
// experiment's checkpoint directory, which only the training pods write, so that no other
// principal can steer the trainer's writes with a link planted where they go (the volume's
// logs/, where they were, is every support principal's to write). NeMo RL reads only step_<n>
// there as checkpoints (nemo_rl/utils/checkpoint.py, get_latest_checkpoint_path).
func (l Layout) Logs() string { return path.Join(l.Checkpoints(), "logs") }

// VerlSource is the checkout of verl's release tag: one directory a release, so that
// experiments of two releases share the volume.
func (l Layout) VerlSource(tag string) string { return path.Join(l.Root, verlDir, tag) }

// Dataset is a prepared dataset's directory.
func (l Layout) Dataset(name string) string { return path.Join(l.Root, datasetsDir, name) }

// Model is a model's local copy (`Qwen/Qwen2.5-32B-Instruct` → models/Qwen/Qwen2.5-32B-Instruct).
func (l Layout) Model(id string) string {
	return path.Join(l.Root, modelsDir, strings.TrimPrefix(path.Clean("/"+id), "/"))
}
