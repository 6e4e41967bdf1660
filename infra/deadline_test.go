package infra_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
	"gke-rl/test/plantest"
)

// The default deadline adds up the run's steps at the model size's allowance and a startup. On
// a RayJob with its own cluster it is KubeRay's activeDeadlineSeconds, which bounds one attempt;
// on the long-lived cluster it bounds the run, with room for three retries, and the entrypoint
// enforces it (KubeRay's would stop nothing there).
func TestRunDeadlineFollowsTheRunsSize(t *testing.T) {
	cases := []struct {
		sentence  string
		stack     string
		overrides []string
		hours     float64
		scope     infra.DeadlineScope
	}{
		// 2 h + 20 × 60 min = 22 h an attempt.
		{"72B for 20 steps, per attempt", "b200-spot", nil, 22, infra.PerAttempt},
		// 7473 / 256 = 29 full batches × 2 epochs = 58 steps of 2048 rollouts of 1536 tokens: 4 ×
		// 12 × 32e9 × 2048 × 1536 / (16 × 989e12 × 10 %) = 51 min a step, above the 32B class's 30;
		// 2 h + 58 × 51 min + 3 × (2 h + 10 × 51 min) = 82.8 h.
		{"32B for 2 epochs of GSM8K, for the run, by the step's work", "h200-reserved", nil, 82.8, infra.PerRun},
		// Steps bound the run before the epochs do: 2 h + 10 × 51 min + 3 × (2 h + 10 × 51 min) = 42 h.
		{"the smaller of steps and epochs", "h200-reserved", []string{"job.maxSteps=10"}, 42, infra.PerRun},
		// A step of 8,192 rollouts of 33k tokens of a 7B model on 8 B200s: 4 × 12 × 7e9 × 8192 ×
		// 33280 / (8 × 2250e12 × 10 %) = 849 min, not the 15 of the class; 2 h + 4 × 849 min.
		{"long rollouts scale the step", "smoke", []string{"job.model=Qwen/Qwen2.5-7B-Instruct", "job.maxResponseLength=32768", "job.promptsPerStep=1024", "job.generationsPerPrompt=8"}, 2 + 4*849.0/60, infra.PerAttempt},
		// 8B: 15 min a step; 2 h + 20 × 15 min = 7 h.
		{"a small model", "b200-spot", append(plantest.Shape(4096, 36, 151936), "job.model=Qwen/Qwen3-8B", "job.recipe=examples/configs/grpo_math_8B.yaml", "job.args=[]"), 7, infra.PerAttempt},
		// Retries beyond three do not add up: a deadline is for hangs.
		{"one retry", "h200-reserved", []string{"job.backoffLimit=1"}, 2 + 58*51/60.0 + (2 + 10*51/60.0), infra.PerRun},
		{"the long-lived cluster on on-demand capacity", "b200-spot", append(plantest.GPU("h200"), "gpu.provisioning=on-demand"), 2 + 20 + 3*(2+2), infra.PerRun},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			bp := plantest.Resolve(t, tc.stack, tc.overrides...)
			require.NotNil(t, bp.Deadline)
			assert.InDelta(t, tc.hours*3600, bp.Deadline.Seconds, 1)
			assert.Equal(t, tc.scope, bp.Deadline.Scope)
			entrypoint := bp.Run.RayJob.Spec.Entrypoint
			if tc.scope == infra.PerAttempt {
				assert.EqualValues(t, bp.Deadline.Seconds, *bp.Run.RayJob.Spec.ActiveDeadlineSeconds)
				assert.Contains(t, entrypoint, "RUN_DEADLINE_SECONDS=0 ")
			} else {
				assert.Nil(t, bp.Run.RayJob.Spec.ActiveDeadlineSeconds, "KubeRay's deadline stops nothing on the long-lived cluster")
				assert.Contains(t, entrypoint, fmt.Sprintf("RUN_DEADLINE_SECONDS=%d ", bp.Deadline.Seconds))
			}
			assert.NotContains(t, bp.Warnings.Error(), "job.activeDeadlineSeconds")
		})
	}
	// The small model's steps are its size class's, and the deadline says so.
	small := plantest.Resolve(t, "b200-spot", append(plantest.Shape(4096, 36, 151936), "job.model=Qwen/Qwen3-8B", "job.recipe=examples/configs/grpo_math_8B.yaml", "job.args=[]")...)
	assert.Equal(t, "the allowance of models up to 8B", small.Deadline.StepBasis)
}

func TestRunDeadlineSetOrUnknown(t *testing.T) {
	set := plantest.Resolve(t, "b200-spot", "job.activeDeadlineSeconds=3600")
	assert.Nil(t, set.Deadline)
	assert.EqualValues(t, 3600, *set.Run.RayJob.Spec.ActiveDeadlineSeconds)
	shared := plantest.Resolve(t, "h200-reserved", "job.activeDeadlineSeconds=3600")
	assert.Nil(t, shared.Run.RayJob.Spec.ActiveDeadlineSeconds)
	assert.Contains(t, shared.Run.RayJob.Spec.Entrypoint, "RUN_DEADLINE_SECONDS=3600 ", "the entrypoint bounds the run")

	off := plantest.Resolve(t, "b200-spot", "job.activeDeadlineSeconds=0")
	assert.Nil(t, off.Run.RayJob.Spec.ActiveDeadlineSeconds, "0 is no deadline, as documented")
	assert.NotContains(t, off.Warnings.Error(), "job.activeDeadlineSeconds", "a deliberate choice")

	unknown := plantest.Resolve(t, "h200-reserved", "job.dataset=math")
	assert.Nil(t, unknown.Run.RayJob.Spec.ActiveDeadlineSeconds)
	assert.Contains(t, unknown.Run.RayJob.Spec.Entrypoint, "RUN_DEADLINE_SECONDS=0 ")
	assert.Contains(t, unknown.Warnings.Error(), `job.activeDeadlineSeconds: the run has no deadline: its length is unknown (job.epochs 2 on "math"`)

	res := plantest.Plan(t, "b200-spot")
	assert.Equal(t, "22h per attempt (job.activeDeadlineSeconds 79200; KubeRay restarts the clock on each of up to 11 attempts, so a run can take up to 242h): startup 2h + 20 steps (job.maxSteps 20) × 60 min (the allowance of models above 35B)", res.Outputs["runDeadline"])
	res = plantest.Plan(t, "h200-reserved")
	assert.Equal(t, "82.8h for the run, retries included (job.activeDeadlineSeconds 298080; no attempt starts after it and the one running is stopped): startup 2h + 58 steps (job.epochs 2 × 29 steps (7473 gsm8k rows / job.promptsPerStep 256)) × 51 min (4 × the step's work: 2048 rollouts × 1536 tokens × 32B parameters × 12 operations at 10% of 16 H200 GPUs' dense bf16 peak) + 3 retries × (startup + job.checkpointPeriod's steps)", res.Outputs["runDeadline"])
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

// A step's work that comes to exactly its size class's allowance leaves the allowance as the
// basis; a minute more and the work is the step. Qwen2.5-7B on smoke's 8 B200s, 128 prompts × 8
// generations = 1024 rollouts of 512 + 4096 = 4608 tokens: 4 × 12 × 7e9 × 1024 × 4608 /
// (8 × 2250e12 × 10 %) = 880.8 s, 15 min rounded up, the 8B class's 15. With 4352 response
// tokens, 4864 a rollout: 929.7 s, 16 min.
func TestAStepsWorkEqualToItsAllowanceKeepsTheAllowance(t *testing.T) {
	step := func(response string) *infra.RunDeadline {
		bp := plantest.Resolve(t, "smoke", "job.model=Qwen/Qwen2.5-7B-Instruct", "job.maxResponseLength="+response, "job.promptsPerStep=128", "job.generationsPerPrompt=8")
		require.NotNil(t, bp.Deadline)
		return bp.Deadline
	}
	equal := step("4096")
	assert.Equal(t, 15*time.Minute, equal.Step)
	assert.Equal(t, "the allowance of models up to 8B", equal.StepBasis)
	over := step("4352")
	assert.Equal(t, 16*time.Minute, over.Step)
	assert.Equal(t, "4 × the step's work: 1024 rollouts × 4864 tokens × 7B parameters × 12 operations at 10% of 8 B200 GPUs' dense bf16 peak", over.StepBasis)
}

// The longest a run can take: a deadline per attempt times its attempts (b200-spot: 11 of 22 h,
// 242 h), a deadline for the run itself (h200-reserved: 82.8 h, 298,080 s).
func TestTheLongestARunCanTake(t *testing.T) {
	assert.Equal(t, 242*time.Hour, plantest.Resolve(t, "b200-spot").Deadline.Longest())
	assert.Equal(t, 298080*time.Second, plantest.Resolve(t, "h200-reserved").Deadline.Longest())
	// No attempt counted is still one.
	assert.Equal(t, time.Hour, infra.RunDeadline{Seconds: 3600, Scope: infra.PerAttempt}.Longest())
}
