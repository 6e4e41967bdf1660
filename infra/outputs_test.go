package infra_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/plantest"
)

// The stack outputs carry the plan's estimates, for a user who reads `pulumi stack output`
// rather than the plan: the checkpoint's write (its seconds are what job.checkpointBudgetSeconds
// is held to) and the memory check's verdict, the run's or each experiment's.
func TestTheStackOutputsCarryThePlansEstimates(t *testing.T) {
	spot := plantest.Plan(t, "b200-spot")
	// 72B × 16 bytes = 1152 GB; 17.6 TiB × 500 MB/s per TiB = 8789 MB/s; 1152 GB / 8789 MB/s = 131.1 s, up to 132.
	assert.Equal(t, "one checkpoint ≈ 1152 GB (72B parameters × 16 bytes) at 8789 MB/s (Managed Lustre: 17.6 TiB × 500 MB/s per TiB) ≈ 132 s", spot.Outputs["checkpointEstimate"])
	assert.EqualValues(t, 132, spot.Outputs["checkpointSeconds"])
	assert.Equal(t, "Megatron (tensor parallel 4 × pipeline parallel 4): training state ≈ 32 GB per GPU (up to 153 GB); vLLM with tensor parallel 8: weights ≈ 18 GB per GPU (up to 103 GB); peaks per GPU: rollout ≈ 115 GB, log-prob ≈ 33 GB, update ≈ 93 GB (up to 188 GB); recipe examples/configs/grpo_math_70B_megatron.yaml",
		spot.Outputs["memoryEstimate"])

	// No run, no memory verdict; the checkpoint's estimate stays (it is the model's, for the next run).
	stopped := plantest.Plan(t, "b200-spot", "job.enabled=false")
	assert.NotContains(t, stopped.Outputs, "memoryEstimate")
	assert.EqualValues(t, 132, stopped.Outputs["checkpointSeconds"])

	// A model whose size the plan does not know gets no estimate rather than a guess.
	unknown := plantest.Plan(t, "b200-spot", append(plantest.Shape(4096, 32, 152064), "job.model=acme/custom-model")...)
	assert.NotContains(t, unknown.Outputs, "checkpointEstimate")
	assert.NotContains(t, unknown.Outputs, "checkpointSeconds")

	// With a queue, each experiment says its own verdict, and its derived deadline: a's from
	// 3 steps (2h of startup + 3 × 15 min = 2.75h), b's own job.activeDeadlineSeconds none.
	queued := plantest.Plan(t, "smoke", "jobs.a.maxSteps=3", "jobs.b.maxSteps=4", "jobs.b.activeDeadlineSeconds=7200")
	experiments, ok := queued.Outputs["experiments"].(map[string]any)
	require.True(t, ok, "experiments: %v", queued.Outputs["experiments"])
	for _, name := range []string{"a", "b"} {
		x, ok := experiments[name].(map[string]any)
		require.True(t, ok, name)
		assert.Equal(t, "FSDP: training state ≈ 1.0 GB per GPU (up to 153 GB); vLLM with tensor parallel 2: weights ≈ 0.5 GB per GPU (up to 103 GB); peaks per GPU: rollout ≈ 116 GB, log-prob ≈ 12 GB, update ≈ 18 GB (up to 188 GB)",
			x["memoryEstimate"], name)
	}
	assert.NotContains(t, queued.Outputs, "memoryEstimate", "no run of the stack's own")
	assert.Equal(t, "2.8h per attempt (job.activeDeadlineSeconds 9900; KubeRay restarts the clock on each of up to 2 attempts, so a run can take up to 5.5h): startup 2h + 3 steps (job.maxSteps 3) × 15 min (the allowance of models up to 8B)",
		experiments["a"].(map[string]any)["runDeadline"])
	assert.NotContains(t, experiments["b"], "runDeadline", "set, not derived")
}
