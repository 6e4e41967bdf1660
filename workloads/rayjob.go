package workloads

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"gke-rl/internal/kube"
	"gke-rl/ray"
)

// FinishedClusterTTLSeconds keeps a job's own cluster this long after the job ends, to read its
// dashboard and logs; its GPU nodes are released after.
const FinishedClusterTTLSeconds = 300

// SubmitterContainer is the submitter's container name: KubeRay's default
// (ray-operator v1.5.0 controllers/ray/utils/constant.go), which the monitoring's log filters
// select.
const SubmitterContainer = "ray-job-submitter"

// Submitter timing (submit.sh): how often it looks again after the log stream ends, and how long
// Ray's job API may stay silent before the submission counts as failed.
const (
	SubmitterPollSeconds        = 30
	SubmitterUnreachableSeconds = 900
)

//go:embed submit.sh
var submitBody string

// submitScript is the submitter's script: submit.sh, with treehash.sh's functions.
var submitScript = withLibrary(submitBody, treeHashLibrary)

// RuntimeEnv is a Ray job's runtime environment: no secret belongs here.
type RuntimeEnv struct {
	EnvVars map[string]string `json:"env_vars,omitempty"`
	// PyModules are directories that `ray job submit` packages from the submitter's file
	// system; Ray unpacks them on the local disk of every node and puts them on the import path
	// of the driver and every actor.
	PyModules []string `json:"py_modules,omitempty"`
}

// JobArgs describe a RayJob.
type JobArgs struct {
	Name, Namespace string
	Entrypoint      string
	RuntimeEnv      RuntimeEnv
	// OwnCluster is the job's own cluster (spot and flex-start capacity): a preemption fails the
	// attempt, KubeRay deletes the cluster and retries with a new one, up to BackoffLimit times.
	// When nil, the job runs on Cluster, the long-lived RayCluster, and carries its spec's
	// fingerprint (ClusterSpecKey): a change of the cluster, which replaces it and ends the
	// job's driver on its head, replaces the job too and starts the run again on the new one.
	OwnCluster   *rayv1.RayClusterSpec
	Cluster      *rayv1.RayCluster
	BackoffLimit int
	// ActiveDeadlineSeconds bounds each attempt of a job with its own cluster (KubeRay counts it
	// from each attempt's start); 0 means no bound. A job on the long-lived cluster takes none:
	// there KubeRay would only mark the RayJob Failed and leave its Ray job running (the
	// entrypoint bounds the run instead: Run.DeadlineSeconds).
	ActiveDeadlineSeconds int
	// SubmitterImage is the head's image (it has Ray's CLI); the submitter runs on
	// NodeSelector's nodes and mounts Storage read-only, from which `ray job submit` packages
	// RuntimeEnv.PyModules.
	SubmitterImage string
	NodeSelector   map[string]string
	Storage        kube.SharedVolume
	// Verify is the code on the shared volume the submitter checks before it submits: Dir must
	// hold exactly Tree's files. Empty Dir checks nothing.
	Verify PinnedTree
}

// ClusterSpecKey is the RayJob metadata key (spec.metadata, which KubeRay also stores with the
// Ray job) that holds the fingerprint of the long-lived cluster the job runs on.
const ClusterSpecKey = "gke-rl/raycluster-spec"

// Fingerprint is a short digest of a value's JSON: equal values, equal fingerprints.
func Fingerprint(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// PinnedTree is a directory that must hold exactly the files of a git tree (Tree, its hash).
type PinnedTree struct{ Dir, Tree string }

// RayJob is the typed RayJob. It follows KubeRay's rules: exactly one of rayClusterSpec and
// clusterSelector; backoffLimit only with a cluster of its own (a retry deletes the job's
// cluster, even one chosen by clusterSelector: rayjob_controller.go, the Retrying state);
// ttlSecondsAfterFinished only with shutdownAfterJobFinishes. The submitter is the program's
// (submit.sh), not KubeRay's default.
func RayJob(a JobArgs) (*rayv1.RayJob, error) {
	spec := rayv1.RayJobSpec{
		Entrypoint:     a.Entrypoint,
		SubmissionMode: rayv1.K8sJobMode,
	}
	var envJSON []byte
	if a.RuntimeEnv.EnvVars != nil || a.RuntimeEnv.PyModules != nil {
		var err error
		envJSON, err = json.Marshal(a.RuntimeEnv)
		if err != nil {
			return nil, fmt.Errorf("runtime environment: %w", err)
		}
		env, err := yaml.JSONToYAML(envJSON)
		if err != nil {
			return nil, fmt.Errorf("runtime environment: %w", err)
		}
		spec.RuntimeEnvYAML = string(env)
	} else {
		envJSON = []byte("{}")
	}
	spec.SubmitterPodTemplate = submitterTemplate(a, string(envJSON))
	if a.OwnCluster != nil {
		spec.RayClusterSpec = a.OwnCluster.DeepCopy()
		spec.ShutdownAfterJobFinishes = true
		spec.TTLSecondsAfterFinished = FinishedClusterTTLSeconds
		spec.BackoffLimit = ptr.To(int32(a.BackoffLimit))
	} else {
		if a.Cluster == nil {
			return nil, fmt.Errorf("RayJob %s: neither a cluster of its own nor a long-lived one", a.Name)
		}
		fingerprint, err := Fingerprint(a.Cluster.Spec)
		if err != nil {
			return nil, fmt.Errorf("cluster fingerprint: %w", err)
		}
		spec.ClusterSelector = map[string]string{"ray.io/cluster": a.Cluster.Name}
		spec.Metadata = map[string]string{ClusterSpecKey: fingerprint}
	}
	if a.ActiveDeadlineSeconds > 0 && a.OwnCluster != nil {
		spec.ActiveDeadlineSeconds = ptr.To(int32(a.ActiveDeadlineSeconds))
	}
	return &rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob"},
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace},
		Spec:       spec,
	}, nil
}

// submitterTemplate is the submitter's pod: submit.sh with the job's entrypoint and runtime
// environment (the same values as the RayJob's own fields, which KubeRay's default submitter
// would have read), KubeRay's default resources, and the shared volume read-only.
func submitterTemplate(a JobArgs, runtimeEnvJSON string) *corev1.PodTemplateSpec {
	mount := a.Storage.ReadOnlyMount()
	t := &corev1.PodTemplateSpec{
		// The label lets the pods reach the head's job API (ray.HeadIngressPolicy).
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(ray.SubmitterLabels), Annotations: a.Storage.Annotations()},
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: a.Storage.ServiceAccountName,
			NodeSelector:       a.NodeSelector,
			Volumes:            []corev1.Volume{a.Storage.Volume()},
			Containers: []corev1.Container{{
				Name:    SubmitterContainer,
				Image:   a.SubmitterImage,
				Command: []string{"bash", "-c", submitScript},
				Env: []corev1.EnvVar{
					{Name: "ENTRYPOINT", Value: a.Entrypoint},
					{Name: "RUNTIME_ENV_JSON", Value: runtimeEnvJSON},
					{Name: "POLL_SECONDS", Value: fmt.Sprint(SubmitterPollSeconds)},
					{Name: "UNREACHABLE_SECONDS", Value: fmt.Sprint(SubmitterUnreachableSeconds)},
					{Name: "VERIFY_DIR", Value: a.Verify.Dir},
					{Name: "VERIFY_TREE", Value: a.Verify.Tree},
				},
				// KubeRay's default submitter's (controllers/ray/common/job.go,
				// GetDefaultSubmitterContainer).
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{mount},
			}},
		},
	}
	kube.Harden(&t.Spec)
	return t
}
