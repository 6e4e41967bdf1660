package kubetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"gke-rl/test/kubetest"
)

// A volume bound to a claim keeps that claim's UID: naming another claim in its claimRef (what
// an update of the volume in place did when an earlier version moved a stack's namespace) leaves
// the new claim pending, "already bound to a different claim", with the real PV controller.
// docs/troubleshooting.md's remedy, the claimRef naming the new claim's namespace without the old
// claim's uid and resourceVersion, lets the controller bind the volume to the new claim. (This version gives a moved stack a new
// volume instead: test/engine, TestANamespaceMoveUnderTheRealEngine.)
func TestAVolumeMovedToAnotherClaimBindsOnceItsUIDIsRemoved(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	c := cp.Client
	for _, ns := range []string{"old", "new"} {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	empty := ""
	claim := func(ns string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "rl-shared", Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				StorageClassName: &empty,
				VolumeName:       "smoke-gcsfuse",
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
	}
	_, err := c.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke-gcsfuse"},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Name: "rl-shared", Namespace: "old"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "gcsfuse.csi.storage.gke.io", VolumeHandle: "bucket"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.CoreV1().PersistentVolumeClaims("old").Create(ctx, claim("old"), metav1.CreateOptions{})
	require.NoError(t, err)
	phase := func(ns string) corev1.PersistentVolumeClaimPhase {
		got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "rl-shared", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return got.Status.Phase
	}
	require.Eventually(t, func() bool { return phase("old") == corev1.ClaimBound }, kubetest.SettleTimeout, 100*time.Millisecond, "the first claim binds")

	// The move as the earlier version did it: the volume names the new claim, the new claim is
	// created, the old one deleted.
	patch := `{"spec":{"claimRef":{"namespace":"new"}}}`
	_, err = c.CoreV1().PersistentVolumes().Patch(ctx, "smoke-gcsfuse", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = c.CoreV1().PersistentVolumeClaims("new").Create(ctx, claim("new"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, c.CoreV1().PersistentVolumeClaims("old").Delete(ctx, "rl-shared", metav1.DeleteOptions{}))
	time.Sleep(5 * time.Second)
	assert.Equal(t, corev1.ClaimPending, phase("new"), "the volume still holds the old claim's UID")

	remedy := `{"spec":{"claimRef":{"namespace":"new","uid":null,"resourceVersion":null}}}`
	_, err = c.CoreV1().PersistentVolumes().Patch(ctx, "smoke-gcsfuse", types.MergePatchType, []byte(remedy), metav1.PatchOptions{})
	require.NoError(t, err)
	ok := assert.Eventually(t, func() bool { return phase("new") == corev1.ClaimBound }, kubetest.SettleTimeout, 100*time.Millisecond, "the remedy binds the new claim")
	if !ok {
		pv, _ := c.CoreV1().PersistentVolumes().Get(ctx, "smoke-gcsfuse", metav1.GetOptions{})
		t.Logf("pv: %+v %+v", pv.Spec.ClaimRef, pv.Status)
		ev, _ := c.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		for _, e := range ev.Items {
			t.Logf("%s %s: %s", e.InvolvedObject.Kind, e.Reason, e.Message)
		}
	}
}
