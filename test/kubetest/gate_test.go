package kubetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"gke-rl/gate"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

// The gate's NCCL Job as planned for spot, on a real control plane (kube-controller-manager's Job
// controller, kube-scheduler) with a GPU pool that scales from zero: its pods wait for the nodes
// the autoscaler adds; a pod that a spot preemption ends (the DisruptionTarget condition, as
// the kubelet sets it when the node shuts down) is replaced and the gate goes on; a failed check
// fails the Job at once with a condition that names the check's exit status, which
// troubleshooting reads back into the cause.
func TestGateJobOnSpotNodes(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	nodes := cp.NewNodes(t)
	res := plantest.Plan(t, "b200-spot", "gate.enabled=true", "gpu.nodes=2")
	bp := res.Blueprint
	ctx := context.Background()
	pool, err := kubetest.PoolOf(res.Find("gcp:container/nodePool:NodePool", "cluster-gpu"), bp.Zone)
	require.NoError(t, err)
	require.Zero(t, pool.Initial, "a spot pool starts empty")
	require.NoError(t, nodes.CreatePool(ctx, pool))
	_, err = cp.Client.SchedulingV1().PriorityClasses().Create(ctx, gate.PriorityClassObject(), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bp.Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	job := bp.Run.Gate.NCCL
	_, err = cp.Client.BatchV1().Jobs(bp.Namespace).Create(ctx, job.DeepCopy(), metav1.CreateOptions{})
	require.NoError(t, err)

	byIndex := func() map[string]corev1.Pod {
		pods, err := cp.Client.CoreV1().Pods(bp.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
		require.NoError(t, err)
		out := map[string]corev1.Pod{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				out[p.Labels[batchv1.JobCompletionIndexAnnotation]] = p
			}
		}
		return out
	}
	var running map[string]corev1.Pod
	kubetest.Eventually(t, 120*time.Second, "both gate pods run, on the GPU nodes added for them", func() (bool, string) {
		running = byIndex()
		return len(running) == 2, fmt.Sprintf("%d running", len(running))
	})

	preempted := running["1"]
	fail(t, cp, preempted, 137, &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: "Pod was terminated in response to imminent node shutdown."})
	kubetest.Eventually(t, 60*time.Second, "a new pod of index 1 replaces the preempted one", func() (bool, string) {
		p, ok := byIndex()["1"]
		return ok && p.UID != preempted.UID, "none yet"
	})
	got, err := cp.Client.BatchV1().Jobs(bp.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	require.NoError(t, err)
	for _, c := range got.Status.Conditions {
		assert.NotEqual(t, batchv1.JobFailed, c.Type, "a preemption does not fail the gate: %s", c.Message)
	}

	fail(t, cp, byIndex()["0"], gate.ExitGPUHealth, nil)
	var failed batchv1.JobCondition
	kubetest.Eventually(t, 60*time.Second, "the Job fails, naming the exit status", func() (bool, string) {
		got, err := cp.Client.BatchV1().Jobs(bp.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		require.NoError(t, err)
		for _, c := range got.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				failed = c
				return true, ""
			}
		}
		return false, fmt.Sprintf("%v", got.Status.Conditions)
	})
	assert.Equal(t, batchv1.JobReasonPodFailurePolicy, failed.Reason)
	assert.Contains(t, failed.Message, fmt.Sprintf("exit code %d", gate.ExitGPUHealth), "troubleshooting reads the cause from it")
}

// fail ends a running pod's container with code, as its kubelet would, with a pod condition.
func fail(t *testing.T, cp *kubetest.ControlPlane, pod corev1.Pod, code int32, condition *corev1.PodCondition) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodFailed
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].Ready = false
			p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", FinishedAt: now}}
		}
		if condition != nil {
			c := *condition
			c.LastTransitionTime = now
			p.Status.Conditions = append(p.Status.Conditions, c)
		}
		_, err = cp.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	}))
}
