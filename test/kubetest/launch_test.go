package kubetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"gke-rl/infra/offline"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
	"gke-rl/workloads"
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
