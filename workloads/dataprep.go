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

	"gke-rl/internal/kinds"
	"gke-rl/internal/kube"
)

// VerifiedPythonPathEnv names the import path of the checked commands (run_verified, prep.sh):
// each entry must hold a checked directory, and the command imports from its checked copy. The
// Job's own PYTHONPATH holds nothing of the shared volume.
const VerifiedPythonPathEnv = "VERIFIED_PYTHONPATH"

// CompleteMarker is the file written beside a prepared directory as its step's last act
// (prep.sh): a directory without it is prepared again, so that an interrupted download never
// passes for a finished one. It is not inside the directory, which holds exactly what the step
// made.
func CompleteMarker(dir string) string { return dir + ".gke-rl-complete" }

//go:embed prep.sh
var prepSteps string

// prepLibrary is the data preparation's functions: prep.sh's, with treehash.sh's.
var prepLibrary = withLibrary(prepSteps, treeHashLibrary)

// XetCache is where the data preparation's Hugging Face downloads keep their Xet chunk cache:
// the container's own disk. By default it is $HF_HOME/xet (huggingface_hub's environment
// variables reference, HF_XET_CACHE), which was on the shared volume: chunks a download needs only
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

// NeMoRLDatasetSources are the Hugging Face datasets that NeMo RL v0.5.0 loads for each
// `data.dataset_name` of the math GRPO example, training then validation
// (nemo_rl/data/datasets/response_datasets/{deepscaler,dapo_math,openmathinstruct2}.py).
var NeMoRLDatasetSources = map[string][]string{
	"DeepScaler":         {"agentica-org/DeepScaleR-Preview-Dataset", "HuggingFaceH4/aime_2024"},
	"DAPOMath17K":        {"BytedTsinghua-SIA/DAPO-Math-17k", "BytedTsinghua-SIA/AIME-2024"},
	"OpenMathInstruct-2": {"nvidia/OpenMathInstruct-2"},
}

// modelStep downloads the model at its revision into its own directory, which both
// frameworks load by path (NeMo RL's policy.model_name, verl's actor_rollout_ref.model.path).
func modelStep(r Run) PrepStep {
	dir := r.ModelDir()
	return PrepStep{Name: "model " + r.Model, Dir: dir, Command: fetchCommand(hubModel, r.Model, r.Revisions[r.Model], dir)}
}

// NeMoRLPrepSteps stage the model on the shared volume and the datasets in its Hugging Face
// cache, so that the run's GPU nodes find them there instead of downloading on GPU time. NeMo
// RL loads its datasets by name (load_dataset): offline, the datasets library takes the copy in
// its cache.
func NeMoRLPrepSteps(r Run) []PrepStep {
	steps := []PrepStep{modelStep(r)}
	for _, id := range NeMoRLDatasetSources[r.Dataset] {
		rev := r.Revisions[id]
		steps = append(steps, PrepStep{Name: "dataset " + id,
			Dir:     atRevision(path.Join(r.Layout.Root, preparedDir, datasetsDir, id), rev),
			SizeOf:  []string{hubCacheDir(r.Layout, hubDataset, id)},
			Command: fetchCommand(hubDataset, id, rev, "")})
	}
	return steps
}

// hubCacheDir is where the Hugging Face hub cache keeps a repository: `<type>s--<org>--<name>`
// under HF_HUB_CACHE (huggingface_hub file_download.py, repo_folder_name).
func hubCacheDir(l Layout, repoType, repoID string) string {
	return path.Join(l.HubCache(), repoType+"s--"+strings.ReplaceAll(repoID, "/", "--"))
}

// VerlPrepSteps check out verl, download the dataset at its revision, turn it into parquet
// files with verl's script and download the model.
func VerlPrepSteps(r Run) []PrepStep {
	src, release := r.verlSource(), r.release(kinds.Verl)
	hub := VerlDatasetSources[r.Dataset]
	rev := r.Revisions[hub]
	raw := atRevision(path.Join(r.Layout.Root, datasetsDir, "hub", hub), rev)
	data := r.DatasetDir()
	return []PrepStep{
		{Name: "verl " + release.Tag, Dir: src, Fresh: true,
			Command: []string{"checkout_commit", src, VerlRepository, release.Source.Commit}},
		{Name: "dataset " + hub, Dir: raw, Command: fetchCommand(hubDataset, hub, rev, raw)},
		{Name: "dataset " + r.Dataset, Dir: data, Fresh: true,
			Command: []string{"run_verified", path.Join(src, VerlPreprocessDir), release.Source.PreprocessTree, path.Join(src, VerlPackageDir), release.Source.PackageTree, "--",
				"python3", path.Join(src, VerlDatasets[r.Dataset]), "--local_dataset_path", raw, "--local_save_dir", data}},
		modelStep(r),
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
	// Dirs are the directories of Storage the Job writes (Layout.PrepDirs): it mounts those
	// alone, never the checkpoints.
	Dirs []string
	Env  []corev1.EnvVar
	// Volumes and Mounts are further volumes (the token files).
	Volumes []corev1.Volume
	Mounts  []corev1.VolumeMount
}

// ReplaceUnreadyAnnotation makes pulumi-kubernetes replace a Job that is not Ready (failed, or
// still running) on the next update instead of awaiting it again.
const ReplaceUnreadyAnnotation = "pulumi.com/replaceUnready"

// PrepJob is the Job that runs the preparation script once, on a CPU node.
func PrepJob(a PrepJobArgs) *batchv1.Job {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
	}
	job := kube.RunOnceJob(a.Name, a.Namespace, 3, corev1.PodTemplateSpec{
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
				VolumeMounts: append(a.Storage.MountDirs(a.Dirs...), a.Mounts...),
			}},
			Volumes: append([]corev1.Volume{a.Storage.Volume()}, a.Volumes...),
		},
	})
	// A failed preparation is run again by the next `pulumi up`: without this, pulumi-kubernetes
	// awaits the same failed Job on every update and everything after it waits too
	// (pulumi-kubernetes v4.32.0 provider/pkg/provider/provider.go, Diff: a Job that is not
	// Ready is replaced when it carries pulumi.com/replaceUnready). The new Job skips the
	// downloads and conversions that the failed one finished (prep.sh). A Job still running
	// when an update starts is not Ready either: it starts again, from where it got to.
	job.Annotations = map[string]string{ReplaceUnreadyAnnotation: "true"}
	return job
}
