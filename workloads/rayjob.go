package workloads

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// FinishedClusterTTLSeconds keeps a job's own cluster this long after the job ends, to read its
// dashboard and logs; its GPU nodes are released after.
const FinishedClusterTTLSeconds = 300

// JobArgs describe a RayJob.
type JobArgs struct {
	Name, Namespace string
	Entrypoint      string
	// Env are variables of the job's runtime environment: no secret belongs here.
	Env map[string]string
	// OwnCluster is the job's own cluster (spot and flex-start capacity): a preemption fails the
	// attempt, KubeRay deletes the cluster and retries with a new one, up to BackoffLimit times.
	// When nil, the job runs on the long-lived RayCluster named ClusterName.
	OwnCluster   *rayv1.RayClusterSpec
	ClusterName  string
	BackoffLimit int
	// ActiveDeadlineSeconds bounds the whole run, retries included; 0 means no bound.
	ActiveDeadlineSeconds int
}

// RayJob is the typed RayJob. It follows KubeRay's rules: exactly one of rayClusterSpec and
// clusterSelector; backoffLimit only with a cluster of its own; ttlSecondsAfterFinished only
// with shutdownAfterJobFinishes.
func RayJob(a JobArgs) (*rayv1.RayJob, error) {
	spec := rayv1.RayJobSpec{
		Entrypoint:     a.Entrypoint,
		SubmissionMode: rayv1.K8sJobMode,
	}
	if len(a.Env) > 0 {
		env, err := yaml.Marshal(map[string]any{"env_vars": a.Env})
		if err != nil {
			return nil, fmt.Errorf("runtime environment: %w", err)
		}
		spec.RuntimeEnvYAML = string(env)
	}
	if a.OwnCluster != nil {
		spec.RayClusterSpec = a.OwnCluster.DeepCopy()
		spec.ShutdownAfterJobFinishes = true
		spec.TTLSecondsAfterFinished = FinishedClusterTTLSeconds
		spec.BackoffLimit = ptr.To(int32(a.BackoffLimit))
	} else {
		spec.ClusterSelector = map[string]string{"ray.io/cluster": a.ClusterName}
	}
	if a.ActiveDeadlineSeconds > 0 {
		spec.ActiveDeadlineSeconds = ptr.To(int32(a.ActiveDeadlineSeconds))
	}
	return &rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob"},
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace},
		Spec:       spec,
	}, nil
}
