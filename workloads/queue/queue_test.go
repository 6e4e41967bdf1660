package queue_test

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"gke-rl/workloads/queue"
)

func pod(cpu, gpus string) corev1.PodTemplateSpec {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if gpus != "" {
		req[queue.GPUResource] = resource.MustParse(gpus)
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: req}}}}}
}

func job(workers int32) *rayv1.RayJob {
	return &rayv1.RayJob{Spec: rayv1.RayJobSpec{
		SubmissionMode: rayv1.K8sJobMode,
		RayClusterSpec: &rayv1.RayClusterSpec{
			HeadGroupSpec:    rayv1.HeadGroupSpec{Template: pod("8", "")},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{Replicas: ptr.To(workers), NumOfHosts: 1, Template: pod("200", "8")}},
		},
		SubmitterPodTemplate: ptr.To(pod("1", "")),
	}}
}

// A RayJob's pods as Kueue counts them: head, every worker replica, the submitter.
func TestDemandCountsEveryPod(t *testing.T) {
	j := job(2)
	assert.Equal(t, 16, queue.GPUs(j))
	cpu := queue.Demand(j)[corev1.ResourceCPU]
	assert.Equal(t, "409", cpu.String())
	assert.Equal(t, 3, queue.PodSets(j))

	// A worker group of two hosts per replica: 2 replicas × 2 hosts × 8 GPUs.
	j.Spec.RayClusterSpec.WorkerGroupSpecs[0].NumOfHosts = 2
	assert.Equal(t, 32, queue.GPUs(j))
	// KubeRay's default submission mode is K8sJobMode: the submitter is a pod set; in HTTPMode
	// the operator submits and there is none.
	j.Spec.SubmissionMode = ""
	assert.Equal(t, 3, queue.PodSets(j))
	j.Spec.SubmissionMode = rayv1.HTTPMode
	assert.Equal(t, 2, queue.PodSets(j))
}

// Only GPUs decide what runs: the quota covers every other resource with what the jobs request
// together, and the GPUs with the pool's.
func TestTheQuotaIsTheGPUs(t *testing.T) {
	objs := queue.Objects(queue.Args{Name: "ns", Namespace: "ns", GPUs: 16, Jobs: []*rayv1.RayJob{job(1), job(2)}, Priorities: map[string]int{"a": 0, "b": 5}})
	kinds := []string{}
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	assert.Equal(t, []string{"ResourceFlavor/ns", "ClusterQueue/ns", "LocalQueue/experiments", "WorkloadPriorityClass/ns-priority-0", "WorkloadPriorityClass/ns-priority-5"}, kinds)
	assert.Equal(t, "ns", objs[2].GetNamespace(), "the LocalQueue is the stack's namespace's")
	assert.NotContains(t, objs[1].Object["metadata"], "namespace", "a ClusterQueue belongs to no namespace")
	groups, _, _ := unstructured.NestedSlice(objs[1].Object, "spec", "resourceGroups")
	require.Len(t, groups, 1)
	g := groups[0].(map[string]any)
	assert.Equal(t, []any{"nvidia.com/gpu", "cpu"}, g["coveredResources"])
	quotas := g["flavors"].([]any)[0].(map[string]any)["resources"].([]any)
	assert.Equal(t, map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "16"}, quotas[0])
	assert.Equal(t, map[string]any{"name": "cpu", "nominalQuota": "618"}, quotas[1], "what both request together")
	never, _, _ := unstructured.NestedString(objs[1].Object, "spec", "preemption", "withinClusterQueue")
	assert.Equal(t, "Never", never, "a running experiment is never stopped for another")
}

// A queued RayJob carries its priority class and is created suspended, outside the queue: the
// queue's label is its launch's to add (a finished experiment's RayJob never gets it). The
// original is untouched.
func TestQueuedLabelsAndSuspends(t *testing.T) {
	j := job(1)
	j.Spec.TTLSecondsAfterFinished = 300
	q := queue.Queued(j, "ns", 5)
	assert.True(t, q.Spec.Suspend)
	assert.Zero(t, q.Spec.TTLSecondsAfterFinished)
	assert.Equal(t, map[string]string{"kueue.x-k8s.io/priority-class": "ns-priority-5"}, q.Labels)
	assert.False(t, j.Spec.Suspend)
	assert.Nil(t, j.Labels)
}

// The launches' Role names each queued RayJob and the patch verb alone, bound to their account;
// with no RayJob there is no Role, since a rule naming no RayJob would cover them all.
func TestLauncherMayPatchTheQueuedRayJobsAlone(t *testing.T) {
	b, a := job(1), job(1)
	b.Name, a.Name = "b-1", "a-1"
	objs := queue.Launcher(queue.Args{Name: "ns", Namespace: "ns", Jobs: []*rayv1.RayJob{b, a}})
	require.Len(t, objs, 2)
	assert.Equal(t, []any{map[string]any{
		"apiGroups": []any{"ray.io"}, "resources": []any{"rayjobs"},
		"resourceNames": []any{"a-1", "b-1"}, "verbs": []any{"patch"},
	}}, objs[0].Object["rules"])
	assert.Equal(t, "Role", objs[0].GetKind())
	assert.Equal(t, "ns", objs[0].GetNamespace())
	assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": "rl-launcher", "namespace": "ns"}}, objs[1].Object["subjects"])
	assert.Equal(t, map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": objs[0].GetName()}, objs[1].Object["roleRef"])

	assert.Empty(t, queue.Launcher(queue.Args{Name: "ns", Namespace: "ns"}), "every experiment stopped")
}
