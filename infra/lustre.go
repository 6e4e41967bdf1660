package infra

import (
	"fmt"
	"sort"
)

// LustreTier is one Managed Lustre throughput tier and the capacities it accepts, in GiB.
type LustreTier struct {
	// MBpsPerTiB is the `storage.throughput` value.
	MBpsPerTiB int
	MinGiB     int
	MaxGiB     int
	// Step applies up to StepLimitGiB; LargeStep beyond it (equal to Step when there is none).
	Step         int
	StepLimitGiB int
	LargeStep    int
}

// lustreTiers are Managed Lustre's performance tiers and the capacities each accepts
// (https://cloud.google.com/managed-lustre/docs/performance-tiers).
var lustreTiers = map[int]LustreTier{
	1000: {MBpsPerTiB: 1000, MinGiB: 9000, MaxGiB: 10008000, Step: 9000, StepLimitGiB: 1530000, LargeStep: 72000},
	500:  {MBpsPerTiB: 500, MinGiB: 18000, MaxGiB: 20016000, Step: 18000, StepLimitGiB: 3060000, LargeStep: 144000},
	250:  {MBpsPerTiB: 250, MinGiB: 36000, MaxGiB: 40032000, Step: 36000, StepLimitGiB: 6120000, LargeStep: 288000},
	125:  {MBpsPerTiB: 125, MinGiB: 72000, MaxGiB: 12240000, Step: 72000, StepLimitGiB: 12240000, LargeStep: 72000},
}

// LookupLustreTier returns the tier for a throughput in MB/s per TiB.
func LookupLustreTier(mbpsPerTiB int) (LustreTier, bool) {
	t, ok := lustreTiers[mbpsPerTiB]
	return t, ok
}

// LustreThroughputs lists the valid `storage.throughput` values, ascending.
func LustreThroughputs() []int {
	out := make([]int, 0, len(lustreTiers))
	for k := range lustreTiers {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Fits reports whether capacityGiB is a size the tier accepts: a multiple of the step up to the
// threshold, a multiple of the large step above it. The large steps count from zero, not from
// the threshold: each tier's maximum is a multiple of its large step (20,016,000 = 139 ×
// 144,000), and Google's table says "the capacity must be a multiple of the step size"
// (docs.cloud.google.com/managed-lustre/docs/performance-tiers).
func (t LustreTier) Fits(capacityGiB int) bool {
	if capacityGiB < t.MinGiB || capacityGiB > t.MaxGiB {
		return false
	}
	if capacityGiB <= t.StepLimitGiB {
		return capacityGiB%t.Step == 0
	}
	return capacityGiB%t.LargeStep == 0
}

// Nearest returns the valid sizes just below and just above capacityGiB, a size Fits refuses
// (either may be 0 when capacityGiB lies outside the tier's range).
func (t LustreTier) Nearest(capacityGiB int) (below, above int) {
	if capacityGiB < t.MinGiB {
		return 0, t.MinGiB
	}
	if capacityGiB > t.MaxGiB {
		return t.MaxGiB, 0
	}
	// A size Fits refuses: under the threshold, which is a multiple of the step, the next step up
	// is at most the threshold itself.
	if capacityGiB < t.StepLimitGiB {
		below = capacityGiB / t.Step * t.Step
		above = below + t.Step
	} else {
		// The threshold is a multiple of the step: the largest size below the first large one.
		below = max(capacityGiB/t.LargeStep*t.LargeStep, t.StepLimitGiB)
		above = (capacityGiB/t.LargeStep + 1) * t.LargeStep
	}
	if below < t.MinGiB {
		below = 0
	}
	if above > t.MaxGiB {
		above = 0
	}
	return below, above
}

// AggregateMBps is the instance's aggregate throughput: capacity in TiB times the tier.
func (t LustreTier) AggregateMBps(capacityGiB int) float64 {
	return float64(capacityGiB) / 1024 * float64(t.MBpsPerTiB)
}

func (t LustreTier) rule() string {
	if t.StepLimitGiB >= t.MaxGiB {
		return fmt.Sprintf("%d to %d GiB in steps of %d", t.MinGiB, t.MaxGiB, t.Step)
	}
	return fmt.Sprintf("%d to %d GiB in steps of %d (above %d, multiples of %d)", t.MinGiB, t.MaxGiB, t.Step, t.StepLimitGiB, t.LargeStep)
}
