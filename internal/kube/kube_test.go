package kube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/internal/kube"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

func TestToUnstructuredDropsWhatTheServerOwns(t *testing.T) {
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "prep"},
		Status:     batchv1.JobStatus{Active: 1},
	}
	m, err := kube.ToUnstructured(job)
	require.NoError(t, err)
	assert.NotContains(t, m, "status")
	assert.Equal(t, map[string]any{"name": "prep"}, m["metadata"], "no creationTimestamp")
	assert.Equal(t, "Job", m["kind"])
}

func TestNewObjectNeedsTypeMeta(t *testing.T) {
	_, err := kube.NewObject(nil, "prep", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "prep"}})
	assert.ErrorContains(t, err, "has no apiVersion and kind")
}

func TestSharedVolume(t *testing.T) {
	v := kube.SharedVolume{ClaimName: "rl-shared", MountPath: "/data", PodAnnotations: map[string]string{"gke-gcsfuse/volumes": "true"}}
	assert.Equal(t, "rl-shared", v.Volume().PersistentVolumeClaim.ClaimName)
	assert.Equal(t, v.Volume().Name, v.Mount().Name, "the mount names the volume")
	assert.Equal(t, "/data", v.Mount().MountPath)

	ann := v.Annotations()
	ann["networking.gke.io/default-interface"] = "eth0"
	assert.Len(t, v.PodAnnotations, 1, "callers get a copy")
	assert.Nil(t, kube.SharedVolume{PodAnnotations: map[string]string{}}.Annotations(), "an empty map never renders")
}

// A core kind registered as a custom resource would get the type token kubernetes:v1:<kind>,
// which the provider does not know: NewObject refuses it before registering anything.
func TestNewObjectRefusesCoreKinds(t *testing.T) {
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	_, err := kube.NewObject(nil, "x", sa)
	assert.ErrorContains(t, err, "core kind")
}
