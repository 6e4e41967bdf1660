package workloads

import (
	_ "embed"
	"path"
	"strings"

	"al.essio.dev/pkg/shellescape"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/infra/kube"
)

// CompleteMarker is written into a prepared directory as the last step (prep.sh): a directory
// without it is prepared again, so that an interrupted download never passes for a finished one.
const CompleteMarker = ".gke-rl-complete"

//go:embed prep.sh
var prepLibrary string

// XetCache is where the data preparation's Hugging Face downloads keep their Xet chunk cache:
// the container's own disk. By default it is $HF_HOME/xet (huggingface_hub's environment
// variables reference, HF_XET_CACHE), which is on the shared volume: chunks a download needs only
// once would be written to the bucket or the Lustre instance and kept there.
const XetCache = "/tmp/hf-xet"

// XetCacheEnv moves the Xet chunk cache to XetCache.
func XetCacheEnv() corev1.EnvVar { return corev1.EnvVar{Name: "HF_XET_CACHE", Value: XetCache} }

// PrepStep prepares one directory on the shared volume, once.
type PrepStep struct {
	// Name says what the step prepares, in the Job's log.
	Name string
	// Dir is the directory the step fills (or, for a download into a cache, that marks it done).
	Dir string
	// Fresh empties Dir before the command runs (a clone, a conversion). Downloads are not
	// fresh: Hugging Face's downloads skip the files already complete, so an interrupted one
	// resumes.
	Fresh bool
	// SizeOf are where the step's data goes, whose size the log reports when it is done; none
	// means Dir. A download into the Hugging Face cache fills the cache, not Dir.
	SizeOf []string
	// Command fills Dir.
	Command []string
}

// PrepScript runs each step unless its directory is complete: prep.sh, then one `prep_step`
// line a step, its values shell-quoted.
func PrepScript(steps []PrepStep) string {
	var b strings.Builder
	b.WriteString(prepLibrary)
	for _, s := range steps {
		mode := "resume"
		if s.Fresh {
			mode = "fresh"
		}
		args := append([]string{"prep_step", s.Name, s.Dir, mode, strings.Join(s.SizeOf, ":"), "--"}, s.Command...)
		b.WriteString(shellescape.QuoteCommand(args) + "\n")
	}
	return b.String()
}

// downloadModel fetches a Hugging Face model into a directory (the token, when set, is read from
// HF_TOKEN_PATH); the Python API is used because the CLI's name changed across releases.
const downloadModel = "import sys; from huggingface_hub import snapshot_download; snapshot_download(repo_id=sys.argv[1], local_dir=sys.argv[2])"

// cacheModel fetches a Hugging Face model into the Hugging Face cache under HF_HOME, where
// NeMo RL's from_pretrained(policy.model_name) finds it.
const cacheModel = "import sys; from huggingface_hub import snapshot_download; print(snapshot_download(repo_id=sys.argv[1]))"

// cacheDatasets fetches Hugging Face datasets, every split, into the datasets cache under HF_HOME.
const cacheDatasets = "import sys, datasets; [print(name, datasets.load_dataset(name)) for name in sys.argv[1:]]"

// NeMoRLDatasetSources are the Hugging Face datasets that NeMo RL v0.5.0 loads for each
// `data.dataset_name` of the math GRPO example, training then validation
// (nemo_rl/data/datasets/response_datasets/{deepscaler,dapo_math,openmathinstruct2}.py).
var NeMoRLDatasetSources = map[string][]string{
	"DeepScaler":         {"agentica-org/DeepScaleR-Preview-Dataset", "HuggingFaceH4/aime_2024"},
	"DAPOMath17K":        {"BytedTsinghua-SIA/DAPO-Math-17k", "BytedTsinghua-SIA/AIME-2024"},
	"OpenMathInstruct-2": {"nvidia/OpenMathInstruct-2"},
}

// NeMoRLPrepSteps stage the model and the datasets in the Hugging Face cache on the shared
// volume, so that the run's GPU nodes find them there instead of downloading on GPU time.
func NeMoRLPrepSteps(r Run) []PrepStep {
	prepared := path.Join(r.Layout.Root, "prepared")
	return []PrepStep{
		{Name: "model " + r.Model, Dir: path.Join(prepared, "models", r.Model),
			SizeOf:  []string{hubCacheDir(r.Layout, "model", r.Model)},
			Command: []string{"python3", "-c", cacheModel, r.Model}},
		{Name: "dataset " + r.Dataset, Dir: path.Join(prepared, "datasets", r.Dataset),
			SizeOf:  datasetCacheDirs(r.Layout, NeMoRLDatasetSources[r.Dataset]),
			Command: append([]string{"python3", "-c", cacheDatasets}, NeMoRLDatasetSources[r.Dataset]...)},
	}
}

// hubCacheDir is where the Hugging Face hub cache keeps a repository: `<type>s--<org>--<name>`
// under $HF_HOME/hub (huggingface_hub file_download.py, repo_folder_name).
func hubCacheDir(l Layout, repoType, repoID string) string {
	return path.Join(l.HFHome(), "hub", repoType+"s--"+strings.ReplaceAll(repoID, "/", "--"))
}

// datasetCacheDirs are where the hub cache keeps datasets' downloaded files (the datasets
// library's Arrow copy, under $HF_HOME/datasets, is derived from them and not counted).
func datasetCacheDirs(l Layout, ids []string) []string {
	var dirs []string
	for _, id := range ids {
		dirs = append(dirs, hubCacheDir(l, "dataset", id))
	}
	return dirs
}

// VerlPrepSteps check out verl, turn the dataset into parquet files and download the model.
func VerlPrepSteps(r Run) []PrepStep {
	src := r.Layout.VerlSource()
	data := r.Layout.Dataset(r.Dataset)
	model := r.Layout.Model(r.Model)
	return []PrepStep{
		{Name: "verl " + VerlSourceTag, Dir: src, Fresh: true,
			Command: []string{"checkout_commit", src, VerlRepository, VerlSourceCommit}},
		{Name: "dataset " + r.Dataset, Dir: data, Fresh: true,
			Command: []string{"python3", path.Join(src, VerlDatasets[r.Dataset]), "--local_save_dir", data}},
		{Name: "model " + r.Model, Dir: model,
			Command: []string{"python3", "-c", downloadModel, r.Model, model}},
	}
}

// PrepJobArgs place the data preparation Job.
type PrepJobArgs struct {
	Name, Namespace string
	Image           string
	Script          string
	// NodeSelector keeps the Job on CPU nodes.
	NodeSelector map[string]string
	Storage      kube.SharedVolume
	Env          []corev1.EnvVar
	// Volumes and Mounts are further volumes (the token files).
	Volumes []corev1.Volume
	Mounts  []corev1.VolumeMount
}

// PrepJob is the Job that runs the preparation script once, on a CPU node.
func PrepJob(a PrepJobArgs) *batchv1.Job {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
	}
	return runOnceJob(a.Name, a.Namespace, 3, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: a.Storage.Annotations()},
		Spec: corev1.PodSpec{
			ServiceAccountName: a.Storage.ServiceAccountName,
			NodeSelector:       a.NodeSelector,
			Containers: []corev1.Container{{
				Name:         "prepare",
				Image:        a.Image,
				Command:      []string{"/bin/bash", "-c", a.Script},
				Env:          a.Env,
				Resources:    corev1.ResourceRequirements{Requests: res, Limits: res},
				VolumeMounts: append([]corev1.VolumeMount{a.Storage.Mount()}, a.Mounts...),
			}},
			Volumes: append([]corev1.Volume{a.Storage.Volume()}, a.Volumes...),
		},
	})
}
