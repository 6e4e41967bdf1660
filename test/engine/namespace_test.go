package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/cmd"
	"gke-rl/test/engine"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

// A stack whose cluster name does not start with gke-rl moves namespace with this version
// (gke-rl-smoke, which the stack named `gke-rl-smoke` has too, to rl-smoke: infra.WorkloadNamespace).
// Under the real engine, from the state the earlier version left (its plan: this one with the
// old namespace; that version named the volumes after the cluster, `smoke-gcsfuse`, where
// this one names them after the namespace, which the rename gives as gke-rl-smoke-gcsfuse:
// either way the volume's name changes), with one experiment admitted and one waiting: `pulumi up` moves every object
// to the new namespace and deletes the old one, does what `plan --compare` said, keeps the
// volume (its claim the new one, bound), and the queue admits an experiment in the new
// namespace; `pulumi up --refresh` then proposes nothing, and destroy leaves nothing.
func TestANamespaceMoveUnderTheRealEngine(t *testing.T) {
	const was, now = "gke-rl-smoke", "rl-smoke"
	settings := []string{"cluster.name=smoke", "jobs.first.maxSteps=4", "jobs.second.maxSteps=4"}
	moved := plantest.Queued(t, settings...)
	require.Equal(t, now, moved.Blueprint.Namespace)
	earlier := plantest.Renamed(moved, now, was)
	require.Equal(t, was, earlier.Blueprint.Namespace)
	c := newCluster(t, earlier)
	s := engine.NewStack(t, earlier, c.CP.Kubeconfig(t, kubetest.Admin))
	first, second := plantest.RayJobOf(t, moved, "first"), plantest.RayJobOf(t, moved, "second")

	_, err := s.Up(false)
	requireOK(t, s, err)
	admitted, _ := c.OneRunning(t, first, second)

	// What `plan --compare` says, against the earlier version's plan.
	args := []string{"--stack", "smoke", "--compare", plantest.PlanFileOf(t, earlier)}
	for _, v := range append([]string{"gpu.maxNodes=1"}, settings...) {
		args = append(args, "--config", v)
	}
	code, said, errOut := plantest.Main(t, args...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, said, "The workload namespace moves from gke-rl-smoke to rl-smoke")

	s.Use(moved)
	steps, err := s.Up(false)
	requireOK(t, s, err)
	assert.Equal(t, saidChanges(said), engineChanges(steps), "`plan --compare` said what the engine did")

	ctx := context.Background()
	_, err = c.CP.Client.CoreV1().Namespaces().Get(ctx, was, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the old namespace is gone: %v", err)
	claims, err := c.CP.Client.CoreV1().PersistentVolumeClaims(now).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, claims.Items, "the claims are in the new namespace")
	for _, claim := range claims.Items {
		pv, err := c.CP.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		require.NoError(t, err, "claim %s's volume", claim.Name)
		require.NotNil(t, pv.Spec.ClaimRef)
		assert.Equal(t, now+"/"+claim.Name, pv.Spec.ClaimRef.Namespace+"/"+pv.Spec.ClaimRef.Name, "volume %s names the new claim", pv.Name)
		assert.Eventually(t, func() bool {
			got, err := c.CP.Client.CoreV1().PersistentVolumeClaims(now).Get(ctx, claim.Name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == corev1.ClaimBound
		}, 30*time.Second, 200*time.Millisecond, "claim %s binds to its volume", claim.Name)
	}

	// The queue admits one of the moved experiments and holds the other, in the new namespace.
	c.Namespace = now
	admittedNow, _ := c.OneRunning(t, first, second)
	for _, name := range []string{first, second} {
		if name != admittedNow {
			c.Waits(t, name, time.Second)
		}
	}
	t.Logf("admitted before the move: %s; after: %s", admitted, admittedNow)

	steps, err = s.Preview(true)
	requireOK(t, s, err)
	assert.Empty(t, steps.Changing().String(), "`pulumi up --refresh` after the move")

	requireOK(t, s, s.Destroy())
	pvs, err := c.CP.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, pv := range pvs.Items {
		assert.False(t, strings.Contains(pv.Name, "smoke"), "destroy deletes volume %s", pv.Name)
	}
}
