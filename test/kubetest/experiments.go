package kubetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Experiments follows the queued experiments of one namespace as KubeRay and Kueue run them,
// and plays the Ray dashboard's part: the tests of the queue (here and test/engine) share it.
type Experiments struct {
	CP        *ControlPlane
	Dash      *Dashboard
	Namespace string
}

// RayJob reads an experiment's RayJob as the controllers left it.
func (e Experiments) RayJob(t testing.TB, name string) *rayv1.RayJob {
	t.Helper()
	u, err := e.CP.As(t, Admin).Get(context.Background(), map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob",
		"metadata": map[string]any{"name": name, "namespace": e.Namespace}})
	require.NoError(t, err)
	var job rayv1.RayJob
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job))
	return &job
}

// Pods are the pods KubeRay made for a RayJob: its cluster's and its submitter's.
func (e Experiments) Pods(t testing.TB, job string) []corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var pods []corev1.Pod
	selectors := []string{"batch.kubernetes.io/job-name=" + job}
	if cluster := e.RayJob(t, job).Status.RayClusterName; cluster != "" {
		selectors = append(selectors, utils.RayClusterLabelKey+"="+cluster)
	}
	for _, selector := range selectors {
		list, err := e.CP.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		require.NoError(t, err)
		pods = append(pods, list.Items...)
	}
	return pods
}

// Running waits until Kueue has admitted the experiment, its workers run on the GPU pool and
// its submitter has submitted the run, which the dashboard then reports RUNNING.
func (e Experiments) Running(t testing.TB, name string) *rayv1.RayJob {
	t.Helper()
	_, job := e.OneRunning(t, name)
	return job
}

// OneRunning waits until one of the experiments runs, as Running says, and returns which: when
// the engine replaces several at once, the order of its steps decides which one Kueue admits
// first into the quota they share.
func (e Experiments) OneRunning(t testing.TB, names ...string) (string, *rayv1.RayJob) {
	t.Helper()
	var (
		job     *rayv1.RayJob
		running string
	)
	Eventually(t, 120*time.Second, fmt.Sprintf("one of the experiments %v admitted and submitted", names), func() (bool, string) {
		var states []string
		for _, name := range names {
			cur := e.RayJob(t, name)
			workers, submitted := 0, false
			for _, p := range e.Pods(t, name) {
				if p.Status.Phase != corev1.PodRunning {
					continue
				}
				if p.Labels[utils.RayNodeTypeLabelKey] == string(rayv1.WorkerNode) {
					workers++
				}
				if p.Labels["batch.kubernetes.io/job-name"] == name {
					submitted = true
				}
			}
			if !cur.Spec.Suspend && workers > 0 && submitted && cur.Status.JobId != "" {
				job, running = cur, name
				return true, ""
			}
			states = append(states, fmt.Sprintf("%s: suspend %v, %s, %d running workers, submitted %v", name, cur.Spec.Suspend, cur.Status.JobDeploymentStatus, workers, submitted))
		}
		return false, fmt.Sprintf("%v; %s", states, e.CP.Pods(context.Background()))
	})
	e.Dash.SetJob(job.Status.JobId, "RUNNING")
	return running, job
}

// Waits checks, for a while, that the experiment stays suspended with no pod: it holds no GPU
// and no node.
func (e Experiments) Waits(t testing.TB, name string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		job := e.RayJob(t, name)
		require.True(t, job.Spec.Suspend, "experiment %s is suspended while it waits (%s)", name, job.Status.JobDeploymentStatus)
		require.Empty(t, e.Pods(t, name), "experiment %s has no pod while it waits", name)
	}
}

// Finish ends an experiment's Ray job: the submitter, which follows it, completes, and KubeRay
// marks the RayJob Complete.
func (e Experiments) Finish(t testing.TB, job *rayv1.RayJob) {
	t.Helper()
	e.Dash.SetJob(job.Status.JobId, "SUCCEEDED")
	require.NoError(t, e.CP.CompleteRunningPods(context.Background(), e.Namespace, "batch.kubernetes.io/job-name="+job.Name))
	Eventually(t, 60*time.Second, "experiment "+job.Name+" complete", func() (bool, string) {
		cur := e.RayJob(t, job.Name)
		return cur.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusComplete, string(cur.Status.JobDeploymentStatus)
	})
}
