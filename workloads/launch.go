package workloads

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/internal/kube"
)

//go:embed launch.sh
var launchSteps string

// LaunchScript is launch.sh with trained.sh's functions: what the launch Job runs.
func LaunchScript() string { return withLibrary(launchSteps, trainedLibrary) }

// The launch's names.
const (
	// LaunchDecisionAnnotation is where launch.sh writes on the RayJob what it decided: queued,
	// or finished before and left out of the queue.
	LaunchDecisionAnnotation = "gke-rl/launch"
	// RayJobDigestAnnotation on the launch Job's pod template is the digest of the RayJob as the
	// program sends it: every change that replaces the RayJob changes it, so the launch Job is
	// replaced too and decides again for the new RayJob.
	RayJobDigestAnnotation = "gke-rl/rayjob-digest"
	// launchTokenDir is where the launch container finds its service account's token and the
	// cluster's CA: the pods of this program mount no token (kube.Harden), and only this
	// container needs one.
	launchTokenDir = "/var/run/secrets/gke-rl/launch"
	// launchTokenSeconds is the token's lifetime: the script runs for seconds; the kubelet
	// refuses less than ten minutes.
	launchTokenSeconds = 600
)

// LaunchJobArgs are an experiment's launch: its RayJob, where its finished run's record is and
// what it trains to, and where the Job runs.
type LaunchJobArgs struct {
	// RayJob is the experiment's RayJob, created suspended and outside the queue.
	RayJob *rayv1.RayJob
	// Experiment names it in the log; CheckpointDir holds its record (trained.sh).
	Experiment, CheckpointDir string
	// MaxSteps and Epochs are its budget (job.maxSteps, job.epochs; 0 for the framework's own).
	MaxSteps, Epochs int
	// QueueLabel and Queue are the label that puts a job in Kueue's queue and the LocalQueue.
	QueueLabel, Queue string
	// Image and NodeSelector are the Ray head's: a CPU node, an image it already pulled.
	Image        string
	NodeSelector map[string]string
	// Storage is the shared volume as the launch reads it: running as ServiceAccountName, the
	// account the launch's Role is bound to. It mounts the whole claim, read-only.
	Storage kube.SharedVolume
}

// LaunchJobName is the launch Job of a RayJob.
func LaunchJobName(rayJob string) string { return rayJob + "-launch" }

// LaunchJob is the Job that puts an experiment's RayJob in the queue unless the experiment
// already trained its budget (launch.sh). It runs once per RayJob: its pod template carries the
// RayJob's digest.
func LaunchJob(a LaunchJobArgs) (*batchv1.Job, error) {
	digest, err := rayJobDigest(a.RayJob)
	if err != nil {
		return nil, err
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("256Mi"),
	}
	annotations := a.Storage.Annotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[RayJobDigestAnnotation] = digest
	env := []corev1.EnvVar{
		{Name: "EXPERIMENT", Value: a.Experiment},
		{Name: "CHECKPOINT_DIR", Value: a.CheckpointDir},
		{Name: "BUDGET", Value: fmt.Sprintf("%d %d", a.MaxSteps, a.Epochs)},
		{Name: "NAMESPACE", Value: a.RayJob.Namespace},
		{Name: "RAYJOB", Value: a.RayJob.Name},
		{Name: "QUEUE_LABEL", Value: a.QueueLabel},
		{Name: "QUEUE", Value: a.Queue},
		{Name: "DECISION_ANNOTATION", Value: LaunchDecisionAnnotation},
		{Name: "SERVICE_ACCOUNT_DIR", Value: launchTokenDir},
	}
	token := corev1.Volume{Name: "launch-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(launchTokenSeconds))}},
			// Every namespace has the cluster's CA in this ConfigMap (the kube-controller-manager's
			// root CA publisher).
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		},
	}}}
	job := kube.RunOnceJob(LaunchJobName(a.RayJob.Name), a.RayJob.Namespace, 3, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec: corev1.PodSpec{
			ServiceAccountName: a.Storage.ServiceAccountName,
			NodeSelector:       a.NodeSelector,
			Containers: []corev1.Container{{
				Name:      "launch",
				Image:     a.Image,
				Command:   []string{"/bin/bash", "-c", LaunchScript()},
				Env:       env,
				Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
				VolumeMounts: []corev1.VolumeMount{a.Storage.ReadOnlyMount(),
					{Name: token.Name, MountPath: launchTokenDir, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{a.Storage.Volume(), token},
		},
	})
	// A failed launch is run again by the next `pulumi up` (PrepJob says why).
	job.Annotations = map[string]string{ReplaceUnreadyAnnotation: "true"}
	return job, nil
}

// rayJobDigest is the SHA-256 of the RayJob as the program sends it.
func rayJobDigest(job *rayv1.RayJob) (string, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return "", fmt.Errorf("RayJob %s: %w", job.Name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
