package infra_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
	"gke-rl/infra/plan/plantest"
)

// The default deadline adds up the run's steps at the model size's allowance, a startup, and
// room for three retries; it is the RayJob's activeDeadlineSeconds.
func TestRunDeadlineFollowsTheRunsSize(t *testing.T) {
	cases := []struct {
		sentence  string
		stack     string
		overrides []string
		hours     float64
	}{
		// 2 h + 20 × 60 min + 3 × (2 h + 2 × 60 min) = 34 h.
		{"72B for 20 steps", "b200-spot", nil, 34},
		// 7473 / 256 = 29 full batches × 2 epochs = 58 steps; 2 h + 58 × 30 min + 3 × (2 h + 10 × 30 min) = 52 h.
		{"32B for 2 epochs of GSM8K", "h200-reserved", nil, 52},
		// Steps bound the run before the epochs do: 2 h + 10 × 30 min + 3 × (2 h + 10 × 30 min) = 28 h.
		{"the smaller of steps and epochs", "h200-reserved", []string{"job.maxSteps=10"}, 28},
		// 8B: 15 min a step; 2 h + 20 × 15 min + 3 × (2 h + 2 × 15 min) = 14.5 h.
		{"a small model", "b200-spot", []string{"job.model=Qwen/Qwen3-8B", "job.recipe=examples/configs/grpo_math_8B.yaml", "job.args=[]"}, 14.5},
		// Retries beyond three do not add up: a deadline is for hangs.
		{"one retry", "b200-spot", []string{"job.backoffLimit=1"}, 2 + 20 + (2 + 2)},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			bp := plantest.Resolve(t, tc.stack, tc.overrides...)
			require.NotNil(t, bp.Deadline)
			assert.InDelta(t, tc.hours*3600, bp.Deadline.Seconds, 1)
			assert.EqualValues(t, bp.Deadline.Seconds, *bp.Run.RayJob.Spec.ActiveDeadlineSeconds)
			assert.NotContains(t, bp.Warnings.Error(), "job.activeDeadlineSeconds")
		})
	}
}

func TestRunDeadlineSetOrUnknown(t *testing.T) {
	set := plantest.Resolve(t, "b200-spot", "job.activeDeadlineSeconds=3600")
	assert.Nil(t, set.Deadline)
	assert.EqualValues(t, 3600, *set.Run.RayJob.Spec.ActiveDeadlineSeconds)

	off := plantest.Resolve(t, "b200-spot", "job.activeDeadlineSeconds=0")
	assert.Nil(t, off.Run.RayJob.Spec.ActiveDeadlineSeconds, "0 is no deadline, as documented")
	assert.NotContains(t, off.Warnings.Error(), "job.activeDeadlineSeconds", "a deliberate choice")

	unknown := plantest.Resolve(t, "h200-reserved", "job.dataset=math")
	assert.Nil(t, unknown.Run.RayJob.Spec.ActiveDeadlineSeconds)
	assert.Contains(t, unknown.Warnings.Error(), `job.activeDeadlineSeconds: the run has no deadline: its length is unknown (job.epochs 2 on "math"`)

	res := plantest.Plan(t, "b200-spot")
	assert.Equal(t, "34h (job.activeDeadlineSeconds 122400): startup 2h + 20 steps (job.maxSteps 20) × 60 min + 3 retries × (startup + job.checkpointPeriod's steps)", res.Outputs["runDeadline"])
	assert.Equal(t, 2*3600, int(infra.DeadlineStartup.Seconds()))
}

// A Lustre size the tier refuses is its own error: the checkpoint-fit rule does not pile a
// second one on it.
func TestCheckpointFitOnlyAgainstAValidCapacity(t *testing.T) {
	_, err := plantest.TryResolve("b200-spot", "storage.capacityGib=100")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "storage.capacityGib: 100 does not fit")
	assert.NotContains(t, err.Error(), "job.keepCheckpoints")
}
