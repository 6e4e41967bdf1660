package kubetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

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

// GKE's allocatable arithmetic on the machines the stacks use.
func TestAllocatableFollowsGKEsReservations(t *testing.T) {
	cpu, mem := kubetest.Machines["n2-standard-16"].Allocatable()
	// 16 cores: 60 + 10 + 10 + 12 * 2.5 = 110 m reserved.
	assert.EqualValues(t, 15890, cpu)
	// 64 GiB: 1 + 0.8 + 0.8 + 6% of 48 GiB = 5.48 GiB reserved, and 100 MiB for eviction.
	assert.InDelta(t, (64-5.48)*1024-100, mem, 1)
	// 2952 GiB: 1 + 0.8 + 0.8 + 6.72 + 2% of 2824 GiB = 65.8 GiB reserved (the hardware
	// catalog's "~2885 allocatable" for an H200 node).
	_, mem = kubetest.Machines["a3-ultragpu-8g"].Allocatable()
	assert.InDelta(t, (2952-65.8)*1024-100, mem, 1)
}
