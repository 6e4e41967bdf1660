package workloads_test

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/internal/kube"
	"gke-rl/workloads"
)

func launchArgs(entrypoint string) workloads.LaunchJobArgs {
	job := &rayv1.RayJob{ObjectMeta: metav1.ObjectMeta{Name: "first-9f3889", Namespace: "ns"}, Spec: rayv1.RayJobSpec{Entrypoint: entrypoint}}
	return workloads.LaunchJobArgs{
		RayJob: job, Experiment: "first-9f3889", CheckpointDir: "/data/checkpoints/first-9f3889",
		MaxSteps: 4, QueueLabel: "kueue.x-k8s.io/queue-name", Queue: "experiments",
		Image: "ray:1", NodeSelector: map[string]string{"pool": "cpu"},
		Storage: kube.SharedVolume{ClaimName: "rl-shared", MountPath: "/data", ServiceAccountName: "rl-launcher"},
	}
}

// The launch runs as the launches' account with a token of its own (the program's pods mount
// none), reads the whole volume read-only, and is a new Job whenever its RayJob changes.
func TestLaunchJobRunsOncePerRayJobWithItsOwnToken(t *testing.T) {
	job, err := workloads.LaunchJob(launchArgs("python3 -m verl --lr 1e-6"))
	require.NoError(t, err)
	assert.Equal(t, "first-9f3889-launch", job.Name)
	assert.Equal(t, "true", job.Annotations["pulumi.com/replaceUnready"], "a failed launch runs again on the next up")
	spec := job.Spec.Template.Spec
	assert.Equal(t, "rl-launcher", spec.ServiceAccountName)
	assert.False(t, *spec.AutomountServiceAccountToken)
	c := spec.Containers[0]
	assert.Equal(t, "launch", c.Name)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, map[string]string{
		"EXPERIMENT": "first-9f3889", "CHECKPOINT_DIR": "/data/checkpoints/first-9f3889", "BUDGET": "4 0",
		"NAMESPACE": "ns", "RAYJOB": "first-9f3889", "QUEUE_LABEL": "kueue.x-k8s.io/queue-name", "QUEUE": "experiments",
		"DECISION_ANNOTATION": "gke-rl/launch", "SERVICE_ACCOUNT_DIR": "/var/run/secrets/gke-rl/launch",
	}, env)
	assert.Equal(t, []corev1.VolumeMount{
		{Name: "shared", MountPath: "/data", ReadOnly: true},
		{Name: "launch-token", MountPath: "/var/run/secrets/gke-rl/launch", ReadOnly: true},
	}, c.VolumeMounts)
	require.Len(t, spec.Volumes, 2)
	sources := spec.Volumes[1].Projected.Sources
	require.Len(t, sources, 2)
	assert.Equal(t, "token", sources[0].ServiceAccountToken.Path)
	assert.Equal(t, "kube-root-ca.crt", sources[1].ConfigMap.Name)

	same, err := workloads.LaunchJob(launchArgs("python3 -m verl --lr 1e-6"))
	require.NoError(t, err)
	other, err := workloads.LaunchJob(launchArgs("python3 -m verl --lr 5e-6"))
	require.NoError(t, err)
	digest := "gke-rl/rayjob-digest"
	assert.Len(t, job.Spec.Template.Annotations[digest], 64)
	assert.Equal(t, job.Spec.Template.Annotations[digest], same.Spec.Template.Annotations[digest])
	assert.NotEqual(t, job.Spec.Template.Annotations[digest], other.Spec.Template.Annotations[digest], "a replaced RayJob gets a new launch")
}
