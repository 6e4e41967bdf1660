package plan

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"gke-rl/infra/offline"
)

// A VolumeShift is what an update leaves on the Lustre instance: the checkpoint directories of
// the earlier plan that this one no longer has (an experiment removed, or renamed by a change of
// what it trains) stay, with what they keep, beside this plan's experiments at their peak.
type VolumeShift struct {
	// Left is what each directory that stays keeps, in GB.
	Left map[string]float64
	// PeakGB and CapacityGB are this plan's (volumeUse output).
	PeakGB, CapacityGB float64
}

// NeedGB is what the volume must hold: this plan's peak and what the earlier one left.
func (v *VolumeShift) NeedGB() float64 {
	total := v.PeakGB
	for _, gb := range v.Left {
		total += gb
	}
	return total
}

// Overflows reports whether the volume cannot hold it.
func (v *VolumeShift) Overflows() bool { return v.NeedGB() > v.CapacityGB }

// CompareVolume reads what the earlier plan's experiments keep and what this plan needs, from
// their volumeUse outputs. Nil when this plan has no Lustre use to check or the earlier plan
// does not say what its experiments keep (plans of earlier versions).
func CompareVolume(before *EarlierPlan, after *offline.Result) *VolumeShift {
	now, ok := volumeUseOf(after.Outputs)
	was, known := volumeUseOf(before.Outputs)
	if !ok || !known {
		return nil
	}
	v := &VolumeShift{Left: map[string]float64{}, PeakGB: number(now["peakGB"]), CapacityGB: number(now["capacityGB"])}
	kept, _ := now["keptGB"].(map[string]any)
	left, _ := was["keptGB"].(map[string]any)
	for dir, gb := range left {
		if _, stays := kept[dir]; !stays {
			v.Left[dir] = number(gb)
		}
	}
	return v
}

// Line says it, for the comparison: nothing when no directory is left behind.
func (v *VolumeShift) Line() string {
	if len(v.Left) == 0 {
		return ""
	}
	var parts []string
	for _, dir := range slices.Sorted(maps.Keys(v.Left)) {
		parts = append(parts, fmt.Sprintf("%s %.0f GB", path.Base(dir), v.Left[dir]))
	}
	line := fmt.Sprintf("Volume: the checkpoints of experiments this plan no longer has stay on the Lustre instance (%s); with this plan's at their peak (%.0f GB) they need %.0f GB of its %.0f GB",
		strings.Join(parts, ", "), v.PeakGB, v.NeedGB(), v.CapacityGB)
	if v.Overflows() {
		return line + ": more than it holds. Delete those you no longer need first (docs/operations.md, Experiments), or raise storage.capacityGib."
	}
	return line + "."
}

func volumeUseOf(outputs map[string]any) (map[string]any, bool) {
	u, ok := outputs["volumeUse"].(map[string]any)
	return u, ok
}

// number is a JSON number (float64) or an int of a plan made in this process.
func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	}
	return 0
}
