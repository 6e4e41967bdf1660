package kubetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/internal/machine"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

// The simulated pools are shaped as GKE makes the planned ones: the pool's name and labels,
// GKE's accelerator and spot labels, the GPU taint, the initial and maximum node counts.
func TestPoolsAreShapedAsPlanned(t *testing.T) {
	res := plantest.Plan(t, "h200-reserved")
	gpu, err := kubetest.PoolOf(res.Find("gcp:container/nodePool:NodePool", "cluster-gpu"), "us-south1-b")
	require.NoError(t, err)
	assert.Equal(t, "verl-h200-gpu", gpu.Name)
	assert.Equal(t, 2, gpu.Initial)
	assert.Equal(t, 2, gpu.Max)
	assert.Equal(t, "nvidia-h200-141gb", gpu.Labels["cloud.google.com/gke-accelerator"])
	assert.Equal(t, "verl-h200-gpu", gpu.Labels["cloud.google.com/gke-nodepool"])
	assert.Equal(t, []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}, gpu.Taints)
	assert.NotContains(t, gpu.Labels, "cloud.google.com/gke-spot")

	spot, err := kubetest.PoolOf(plantest.Plan(t, "b200-spot").Find("gcp:container/nodePool:NodePool", "cluster-gpu"), "us-east1-b")
	require.NoError(t, err)
	assert.Equal(t, 0, spot.Initial, "scales from zero")
	assert.Equal(t, 8, spot.Max)
	assert.Equal(t, "true", spot.Labels["cloud.google.com/gke-spot"])
}

// A simulated node holds what GKE leaves pods of its machine (internal/machine).
func TestNodesHoldWhatGKELeavesPods(t *testing.T) {
	cpu, mem := kubetest.Machines["n2-standard-16"].Allocatable()
	wantCPU, wantMem := machine.Shape{CPUs: 16, MemoryGiB: 64}.Allocatable()
	assert.Equal(t, wantCPU, cpu)
	assert.Equal(t, wantMem, mem)
}
