package infra_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
	"gke-rl/test/plantest"
)

func TestParseModelSize(t *testing.T) {
	for in, want := range map[string]float64{"72B": 72e9, "1.5b": 1.5e9, "500M": 500e6, " 8B ": 8e9} {
		got, ok := infra.ParseModelSize(in)
		assert.True(t, ok, in)
		assert.InDelta(t, want, got, 1, in)
	}
	for _, bad := range []string{"", "72", "B", "0B", "-1B", "72 GB", "7.B"} {
		_, ok := infra.ParseModelSize(bad)
		assert.False(t, ok, "%q", bad)
	}
}

func TestCheckpointEstimates(t *testing.T) {
	cases := []struct {
		sentence  string
		stack     string
		overrides []string
		seconds   int
		writeMBps int
		warns     bool
	}{
		// 72e9 × 16 B = 1152 GB; 18000 GiB = 17.58 TiB × 500 MB/s = 8789 MB/s; 131.1 s.
		{"72B on 18000 GiB of Lustre at 500 fits the budget", "b200-spot", nil, 132, 8789, false},
		// 32e9 × 16 B = 512 GB; 2 nodes × 500 MB/s = 1000 MB/s; 512 s.
		{"32B through GCS FUSE on 2 nodes is over the default budget", "h200-reserved", []string{"storage.checkpointBudgetSeconds=300"}, 512, 1000, true},
		{"within the stack's budget of 600, no warning", "h200-reserved", nil, 512, 1000, false},
		// At the budget's limit: 512 GB at 1000 MB/s is exactly 512 s; a budget of 512 holds it,
		// 511 does not.
		{"a checkpoint of exactly the budget fits it", "h200-reserved", []string{"storage.checkpointBudgetSeconds=512"}, 512, 1000, false},
		{"a budget a second short warns", "h200-reserved", []string{"storage.checkpointBudgetSeconds=511"}, 512, 1000, true},
		// 36000 GiB at 1000 MB/s per TiB = 35156 MB/s; 1152 GB / 35156 MB/s = 32.8 s.
		{"a faster tier shortens the write", "b200-spot", []string{"storage.throughput=1000", "storage.capacityGib=36000"}, 33, 35156, false},
		{"a tight budget warns on Lustre too", "b200-spot", []string{"storage.checkpointBudgetSeconds=60"}, 132, 8789, true},
		{"the least budget allowed, 1 s, is taken (0 is refused)", "b200-spot", []string{"storage.checkpointBudgetSeconds=1"}, 132, 8789, true},
		{"the model size can be given when the name lacks it", "b200-spot", append(plantest.Shape(4096, 32, 152064), "job.model=acme/custom-model", "job.modelSize=8B"), 15, 8789, false},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			bp := plantest.Resolve(t, tc.stack, tc.overrides...)
			require.NotNil(t, bp.Checkpoint)
			assert.Equal(t, tc.seconds, int(math.Ceil(bp.Checkpoint.Seconds)))
			assert.Equal(t, tc.writeMBps, int(bp.Storage.WriteMBps))
			keys := warningKeysButPins(bp)
			if tc.warns {
				assert.Equal(t, []string{"storage.checkpointBudgetSeconds"}, keys)
			} else {
				assert.Empty(t, keys)
			}
		})
	}
}

func TestFUSEWarningSaysWritesGoAtFUSESpeed(t *testing.T) {
	// h200-reserved accepts 600 s a checkpoint; the default budget of 300 is exceeded.
	bp := plantest.Resolve(t, "h200-reserved", "storage.checkpointBudgetSeconds=300")
	require.Equal(t, []string{"storage.checkpointBudgetSeconds"}, warningKeysButPins(bp))
	var budget infra.FieldError
	for _, w := range bp.Warnings {
		if w.Key == "storage.checkpointBudgetSeconds" {
			budget = w
		}
	}
	assert.Contains(t, budget.Message, "GCS FUSE speed")
	assert.Contains(t, budget.Message, "512 s")
	assert.Contains(t, bp.Checkpoint.Summary(), "FUSE speed")
}

// The estimate's line, written out: b200-spot's 72B model is 72e9 × 16 B = 1152 GB; its 18000 GiB
// of Lustre are 18000 / 1024 = 17.58 TiB, × 500 MB/s per TiB = 8789 MB/s; 1152 GB / 8789 MB/s =
// 131.1 s, said rounded up. h200-reserved's 32B through GCS FUSE on 2 nodes: 512 GB at 1000 MB/s.
func TestTheCheckpointEstimateSaysItsArithmetic(t *testing.T) {
	assert.Equal(t, "one checkpoint ≈ 1152 GB (72B parameters × 16 bytes) at 8789 MB/s (Managed Lustre: 17.6 TiB × 500 MB/s per TiB) ≈ 132 s",
		plantest.Resolve(t, "b200-spot").Checkpoint.Summary())
	assert.Equal(t, "one checkpoint ≈ 512 GB (32B parameters × 16 bytes) at 1000 MB/s (GCS FUSE: writes go at FUSE speed, about 500 MB/s per node × 2 nodes) ≈ 512 s",
		plantest.Resolve(t, "h200-reserved").Checkpoint.Summary())
}

func TestUnknownModelSizeWarnsInsteadOfGuessing(t *testing.T) {
	bp := plantest.Resolve(t, "b200-spot", append(plantest.Shape(4096, 32, 152064), "job.model=acme/custom-model")...)
	assert.Equal(t, []string{"job.modelSize"}, warningKeysButPins(bp))
	assert.Contains(t, bp.Warnings.Error(), "and the derived deadline (22h) guesses 60 min a step, which neither the size's allowance nor the step's work bounds: set job.modelSize, or job.activeDeadlineSeconds to what the run may take")
	assert.Nil(t, bp.Checkpoint, "no estimate from a guess")
}

// warningKeysButPins are the keys of the plan's warnings but those about pins: job.revisions,
// which a test that switches job.model also gets (the new model unpinned, the old pin inert),
// and ray.image, whose default is pinned by tag.
func warningKeysButPins(bp *infra.Blueprint) []string {
	var keys []string
	for _, w := range bp.Warnings {
		if !strings.HasPrefix(w.Key, "job.revisions") && w.Key != "ray.image" {
			keys = append(keys, w.Key)
		}
	}
	return keys
}
