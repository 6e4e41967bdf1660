package infra

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Kueue admits a workload of at most 8 pod sets (apis/kueue/v1beta2/workload_types.go at
// v0.17.0, MaxItems=8 on podSets). A RayJob in K8sJobMode counts its head, each worker group
// and its submitter: 1 + 6 + 1 = 8 is the most, 1 + 7 + 1 = 9 is refused.
func TestARayJobOfNinePodSetsIsRefused(t *testing.T) {
	withGroups := func(n int) *rayv1.RayJob {
		return &rayv1.RayJob{Spec: rayv1.RayJobSpec{
			SubmissionMode: rayv1.K8sJobMode,
			RayClusterSpec: &rayv1.RayClusterSpec{WorkerGroupSpecs: make([]rayv1.WorkerGroupSpec, n)},
		}}
	}
	var errs Errors
	checkPodSets("eight", withGroups(6), &errs)
	assert.NoError(t, errs.Err(), "8 pod sets: Kueue's limit itself")

	checkPodSets("nine", withGroups(7), &errs)
	require.Len(t, errs, 1)
	assert.Equal(t, "jobs.nine", errs[0].Key)
	assert.Equal(t, "the RayJob has 9 pod sets, more than Kueue's 8 (its head, worker groups and submitter each count); allowed: at most 6 worker groups", errs[0].Message)
}
