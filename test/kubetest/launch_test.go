package kubetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"gke-rl/infra/offline"
	"gke-rl/internal/kube"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

// replace applies what `pulumi up` replaces when the plan moves from before to after, as it
// does it: the changed RayJob and its launch Job deleted first, then created again and awaited.
func (c testCluster) replace(t *testing.T, w *kubetest.Walk, before, after *offline.Result) {
	t.Helper()
	ctx := context.Background()
	step := changed(before, after)
	admin := c.cp.As(t, kubetest.Admin)
	for _, r := range step.Resources {
		if r.Type != "kubernetes:batch/v1:Job" && r.Type != "kubernetes:ray.io/v1:RayJob" {
			continue
		}
		m, ok := offline.ManifestOf(r)
		require.True(t, ok, r.Name)
		u := &unstructured.Unstructured{Object: m.Object}
		objects, err := admin.Resource(u)
		require.NoError(t, err)
		err = objects.Delete(ctx, u.GetName(), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
		if apierrors.IsNotFound(err) {
			continue
		}
		require.NoError(t, err, "delete %s", r.Name)
		// pulumi-kubernetes deletes in the foreground and waits until the object is gone, its
		// dependents first (KubeRay's finalizer stops the run).
		kubetest.Eventually(t, kubetest.SettleTimeout, r.Name+" deleted", func() (bool, string) {
			_, err := objects.Get(ctx, u.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
	next := &kubetest.Walk{CP: c.cp, Nodes: c.nodes, Plan: step, PoolDelay: poolDelay, Volume: w.Volume}
	require.NoError(t, next.Run(t), "pulumi up of %s:\n%s", after.Stack, next.LaunchLog.String())
	w.LaunchLog.WriteString(next.LaunchLog.String())
}

// A finished experiment's RayJob, replaced by a change common to every experiment (a learning
// rate of `job`), stays suspended and out of Kueue's queue: its launch reads the record run.sh
// left, and KubeRay makes no Ray cluster, so no GPU node comes up for it. Its budget grown, the
// next replacement is queued, admitted and runs. An experiment that never finished is queued
// by the same change.
func TestAFinishedExperimentBringsUpNoGPUNode(t *testing.T) {
	c := queueCluster(t)
	base := []string{"jobs.first.maxSteps=4"}
	res := plantest.Queued(t, base...)
	ns := res.Blueprint.Namespace
	x := c.experiments(ns)
	w := c.up(t, res)
	name := plantest.RayJobOf(t, res, "first")
	first := x.Running(t, name)
	assert.Equal(t, "experiments", first.Labels["kueue.x-k8s.io/queue-name"], "the launch queued it")
	assert.Contains(t, first.Annotations[workloads.LaunchDecisionAnnotation], "queued in experiments (budget 4 0)")
	x.Finish(t, first)

	// What run.sh writes when the run succeeds: its BUDGET, in the experiment's checkpoints.
	var checkpoints string
	for _, e := range res.Blueprint.Run.Experiments {
		if e.Name == "first" {
			checkpoints = e.Layout.Checkpoints()
		}
	}
	record := filepath.Join(w.Volume, strings.TrimPrefix(checkpoints, res.Blueprint.Run.Layout.Root), ".gke-rl-trained")
	require.NoError(t, os.MkdirAll(filepath.Dir(record), 0o755))
	require.NoError(t, os.WriteFile(record, []byte("4 0\n"), 0o644))

	lr := plantest.Queued(t, append(base, "job.learningRate=5e-6")...)
	require.Equal(t, name, plantest.RayJobOf(t, lr, "first"), "the same experiment, its RayJob replaced")
	c.replace(t, w, res, lr)
	x.Waits(t, name, 5*time.Second)
	job := x.RayJob(t, name)
	assert.NotContains(t, job.Labels, "kueue.x-k8s.io/queue-name", "not in the queue")
	assert.Contains(t, job.Annotations[workloads.LaunchDecisionAnnotation], "finished before (maxSteps and epochs 4 0, now 4 0): not queued")
	kueueWorkloads, err := c.cp.As(t, kubetest.Admin).Resource(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": map[string]any{"namespace": ns}}})
	require.NoError(t, err)
	list, err := kueueWorkloads.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, wl := range list.Items {
		assert.NotEqual(t, name, ownerName(wl.GetOwnerReferences()), "Kueue made no workload of the finished experiment")
	}
	gpuNodes, err := c.cp.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "cloud.google.com/gke-accelerator"})
	require.NoError(t, err)
	for _, n := range gpuNodes.Items {
		pods, err := c.cp.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
		require.NoError(t, err)
		for _, p := range pods.Items {
			// The finished run's own cluster may still be going away (KubeRay deletes it when the
			// run ends); nothing of the experiment starts there.
			assert.False(t, strings.HasPrefix(p.Name, name) && p.DeletionTimestamp == nil, "%s runs on GPU node %s", p.Name, n.Name)
		}
	}

	grown := plantest.Queued(t, "jobs.first.maxSteps=8", "job.learningRate=5e-6")
	require.Equal(t, name, plantest.RayJobOf(t, grown, "first"), "the same experiment, trained on")
	c.replace(t, w, lr, grown)
	again := x.Running(t, name)
	assert.Contains(t, again.Annotations[workloads.LaunchDecisionAnnotation], "queued in experiments (budget 8 0)")
}

func ownerName(refs []metav1.OwnerReference) string {
	if len(refs) == 0 {
		return ""
	}
	return refs[0].Name
}

// The launch script on a real API server with RBAC, as the launches' account: it may patch only
// the RayJobs its Role names (a RayJob of another stack or experiment is refused, and the script
// fails naming the refusal); it queues a RayJob whose experiment has no record, and leaves one
// out whose record covers its budget, annotating each with what it decided.
func TestTheLaunchMayQueueOnlyTheStacksRayJobs(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	cp.InstallCRDs(t, kubetest.UpstreamCRDs(t)...)
	ctx := context.Background()
	admin := cp.As(t, kubetest.Admin)
	const ns = "gke-rl-smoke"
	_, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: queue.LauncherServiceAccount}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rayJob := func(name string) *rayv1.RayJob {
		return &rayv1.RayJob{TypeMeta: metav1.TypeMeta{APIVersion: "ray.io/v1", Kind: "RayJob"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: rayv1.RayJobSpec{Entrypoint: "python3 train.py", Suspend: true}}
	}
	ours, theirs := rayJob("a-1"), rayJob("b-1")
	for _, j := range []*rayv1.RayJob{ours, theirs} {
		_, err := admin.Apply(ctx, j, false)
		require.NoError(t, err)
	}
	for _, obj := range queue.Launcher(queue.Args{Name: ns, Namespace: ns, Jobs: []*rayv1.RayJob{ours}}) {
		_, err := admin.Apply(ctx, obj.Object, false)
		require.NoError(t, err)
	}
	volume := t.TempDir()
	launch := func(job *rayv1.RayJob, steps int) (string, bool) {
		t.Helper()
		l, err := workloads.LaunchJob(workloads.LaunchJobArgs{RayJob: job, Experiment: job.Name, CheckpointDir: "/data/checkpoints/" + job.Name,
			MaxSteps: steps, QueueLabel: queue.QueueLabel, Queue: queue.LocalQueueName, Image: "ray",
			Storage: kube.SharedVolume{ClaimName: "rl-shared", MountPath: "/data", ServiceAccountName: queue.LauncherServiceAccount}})
		require.NoError(t, err)
		var out string
		var ok bool
		// RBAC's authorizer learns of a new Role within moments.
		kubetest.Eventually(t, kubetest.SettleTimeout, "the launch ran", func() (bool, string) {
			var err error
			out, ok, err = cp.RunLaunchContainer(ctx, ns, queue.LauncherServiceAccount, l.Spec.Template.Spec.Containers[0], volume)
			return err == nil && (ok || job.Name == theirs.Name), out
		})
		return out, ok
	}
	read := func(name string) *rayv1.RayJob {
		t.Helper()
		u, err := admin.Get(ctx, rayJob(name))
		require.NoError(t, err)
		var job rayv1.RayJob
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job))
		return &job
	}

	out, ok := launch(theirs, 4)
	assert.False(t, ok)
	assert.Contains(t, out, "the API server refused the RayJob's patch: 403")
	assert.NotContains(t, read("b-1").Labels, queue.QueueLabel)

	out, ok = launch(ours, 4)
	require.True(t, ok, out)
	assert.Equal(t, "gke-rl launch a-1: queued in experiments (budget 4 0)\n", out)
	assert.Equal(t, queue.LocalQueueName, read("a-1").Labels[queue.QueueLabel])

	// The same experiment's next RayJob, after its run recorded 4 steps: left out at 4 steps,
	// queued at 8.
	jobs, err := admin.Resource(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": map[string]any{"namespace": ns}}})
	require.NoError(t, err)
	require.NoError(t, jobs.Delete(ctx, ours.Name, metav1.DeleteOptions{}))
	_, err = admin.Apply(ctx, ours, false)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(volume, "checkpoints", "a-1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(volume, "checkpoints", "a-1", ".gke-rl-trained"), []byte("4 0\n"), 0o644))
	out, ok = launch(ours, 4)
	require.True(t, ok, out)
	assert.Equal(t, "gke-rl launch a-1: finished before (maxSteps and epochs 4 0, now 4 0): not queued, it holds no GPU\n", out)
	left := read("a-1")
	assert.NotContains(t, left.Labels, queue.QueueLabel)
	assert.True(t, left.Spec.Suspend)
	assert.Equal(t, "finished before (maxSteps and epochs 4 0, now 4 0): not queued, it holds no GPU", left.Annotations[workloads.LaunchDecisionAnnotation])

	out, ok = launch(ours, 8)
	require.True(t, ok, out)
	assert.Equal(t, "gke-rl launch a-1: queued in experiments (budget 8 0)\n", out)
	assert.Equal(t, queue.LocalQueueName, read("a-1").Labels[queue.QueueLabel])
}
