package workloads

import corev1 "k8s.io/api/core/v1"

// The Hugging Face directories that stay on each pod's own disk (HFEnv).
const (
	// PodHFHome is HF_HOME: what no other pod may choose (the modules below, a token file).
	PodHFHome = "/tmp/gke-rl-hf-home"
	// PodHFModules is HF_MODULES_CACHE, where transformers and datasets copy a repository's
	// Python before importing it.
	PodHFModules = "/tmp/gke-rl-hf-modules"
)

// HFEnv is the Hugging Face environment of every pod that uses the shared volume's caches (the
// data preparation, which fills them, and the Ray pods, which read them offline): the hub's cache
// and the datasets' on the volume, HF_HOME and the modules cache on the pod's own disk.
//
// HF_HOME is not the volume's huggingface/ directory, as it was: NeMo RL v0.5.0 puts
// $HF_HOME/modules on the PYTHONPATH of its driver, and of every actor, whenever that directory
// exists (nemo_rl/__init__.py, patch_transformers_module_dir; worker_groups.py hands the driver's
// environment to the actors), and PYTHONPATH comes before the standard library and the installed
// packages: any writer of huggingface/ (the data preparation, a support principal on a bucket)
// would choose modules that every GPU process imports in place of its own. HF_HUB_CACHE and
// HF_DATASETS_CACHE are the paths their defaults take from the old HF_HOME (huggingface_hub
// constants.py, datasets config.py), so the caches the data preparation fills are the ones the
// runs read.
func HFEnv(l Layout) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "HF_HOME", Value: PodHFHome},
		{Name: "HF_MODULES_CACHE", Value: PodHFModules},
		{Name: "HF_HUB_CACHE", Value: l.HubCache()},
		{Name: "HF_DATASETS_CACHE", Value: l.DatasetsCache()},
	}
}
