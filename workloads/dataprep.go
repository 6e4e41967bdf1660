package workloads

import (
	"path"
	"strings"

	"al.essio.dev/pkg/shellescape"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/infra/kube"
)

// CompleteMarker is written into a prepared directory as the last step: a directory without it
// is prepared again from scratch, so that an interrupted download never passes for a finished one.
const CompleteMarker = ".gke-rl-complete"

// PrepStep prepares one directory on the shared volume, once.
type PrepStep struct {
	// Name says what the step prepares, in the Job's log.
	Name string
	// Dir is the directory the step fills; it is emptied first.
	Dir string
	// Command fills Dir.
	Command []string
}

// PrepScript runs each step unless its directory is complete.
func PrepScript(steps []PrepStep) string {
	var b strings.Builder
	b.WriteString("set -euo pipefail\n")
	for _, s := range steps {
		dir := shellescape.Quote(s.Dir)
		marker := shellescape.Quote(path.Join(s.Dir, CompleteMarker))
		name := shellescape.Quote(s.Name)
		b.WriteString("if [ -e " + marker + " ]; then echo " + name + "': ready, skipped'; else\n")
		b.WriteString("  echo " + name + "': preparing'; rm -rf " + dir + " && mkdir -p " + dir + "\n")
		b.WriteString("  " + shellescape.QuoteCommand(s.Command) + "\n")
		b.WriteString("  touch " + marker + "\nfi\n")
	}
	return b.String()
}

// downloadModel fetches a Hugging Face model into a directory (HF_TOKEN, when set, comes from
// the environment); the Python API is used because the CLI's name changed across releases.
const downloadModel = "import sys; from huggingface_hub import snapshot_download; snapshot_download(repo_id=sys.argv[1], local_dir=sys.argv[2])"

// VerlPrepSteps check out verl, turn the dataset into parquet files and download the model.
func VerlPrepSteps(r Run) []PrepStep {
	src := r.Layout.VerlSource()
	data := r.Layout.Dataset(r.Dataset)
	model := r.Layout.Model(r.Model)
	return []PrepStep{
		{Name: "verl " + VerlSourceTag, Dir: src,
			Command: []string{"git", "clone", "--depth", "1", "--branch", VerlSourceTag, VerlRepository, src}},
		{Name: "dataset " + r.Dataset, Dir: data,
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
}

// PrepJob is the Job that runs the preparation script once, on a CPU node.
func PrepJob(a PrepJobArgs) *batchv1.Job {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(3)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: a.Storage.Annotations()},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: a.Storage.ServiceAccountName,
					NodeSelector:       a.NodeSelector,
					Containers: []corev1.Container{{
						Name:         "prepare",
						Image:        a.Image,
						Command:      []string{"/bin/bash", "-c", a.Script},
						Env:          a.Env,
						Resources:    corev1.ResourceRequirements{Requests: res, Limits: res},
						VolumeMounts: []corev1.VolumeMount{a.Storage.Mount()},
					}},
					Volumes: []corev1.Volume{a.Storage.Volume()},
				},
			},
		},
	}
}
