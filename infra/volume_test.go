package infra_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/plantest"
)

// What b200-spot's experiment holds on its Lustre instance, worked out by hand: Qwen2.5-72B's
// checkpoint is 72 B parameters × 16 bytes (bf16 weights 2, fp32 master weights 4, Adam's two
// fp32 moments 8, as estimateCheckpoint counts them) = 1,152 GB, and NeMo RL's Megatron
// conversion 72 B × 2 bytes (bf16) = 144 GB. With job.keepCheckpoints=3 it keeps 3 × 1,152 +
// 144 = 3,600 GB at rest; at its peak a fourth save is being written and the model's download
// and checked copy (2 × 144 GB) are there too: 4 × 1,152 + 144 + 288 = 5,040 GB, against the
// instance's 18,000 GiB = 18,000 × 2^30 / 10^9 = 19,327.35 GB.
func TestTheVolumesUseAddsUpByHand(t *testing.T) {
	bp := plantest.Resolve(t, "b200-spot", "job.keepCheckpoints=3")
	u := bp.Volume
	require.NotNil(t, u)
	assert.InDelta(t, 19327.35, u.CapacityGB, 0.01)
	assert.InDelta(t, 5040, u.PeakGB, 1e-6)
	assert.Equal(t, []string{
		"qwen2-5-72b-instruct-deepscaler-251dec 4 × 1152 GB + its Megatron conversion 144 GB",
		"the models' downloads and checked copies 288 GB",
	}, u.Parts)
	require.Len(t, u.KeptGB, 1)
	assert.InDelta(t, 3600, u.KeptGB["/lustre/checkpoints/qwen2-5-72b-instruct-deepscaler-251dec"], 1e-6)
}

// verl converts nothing: an experiment's part of the peak names no Megatron conversion (smoke on
// Lustre, two experiments).
func TestVerlsVolumeUseHasNoConversion(t *testing.T) {
	bp := plantest.Resolve(t, "smoke", "storage.type=lustre", "storage.capacityGib=18000", "gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.maxSteps=4")
	require.NotNil(t, bp.Volume)
	require.Len(t, bp.Volume.Parts, 3, "a, b and the models' copies: %v", bp.Volume.Parts)
	for _, part := range bp.Volume.Parts {
		assert.NotContains(t, part, "Megatron", part)
	}
}

// The checkpoints at their peak may fill the Lustre instance exactly. b200-spot's 18,000 GiB are
// 18,000 × 2^30 / 10^9 = 19,327.352832 GB; keeping 15 checkpoints, NeMo RL holds 16 at its peak
// (16 bytes a parameter each), the Megatron conversion (2 bytes) and the model's download and
// checked copy (2 × 2 bytes): 262 bytes a parameter. 19,327.352832 / 262 = 73.76852225954198B,
// the size written with all its digits, makes the sum the capacity to the last bit: accepted,
// by the run's check and the volume's. The next size that can be written, a trillionth of a
// billion more, is refused.
func TestCheckpointsMayFillTheLustreInstanceExactly(t *testing.T) {
	bp, err := plantest.TryResolve("b200-spot", "job.keepCheckpoints=15", "job.modelSize=73.76852225954198B")
	require.NoError(t, err)
	require.NotNil(t, bp.Volume)
	require.Equal(t, bp.Volume.CapacityGB, bp.Volume.PeakGB, "the sum is the capacity to the last bit")
	assert.InDelta(t, 19327.352832, bp.Volume.PeakGB, 1e-9)

	_, err = plantest.TryResolve("b200-spot", "job.keepCheckpoints=15", "job.modelSize=73.768522259542B")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "job.keepCheckpoints: 16 checkpoints at the peak")
	assert.Contains(t, err.Error(), "allowed: at most 14")
}
