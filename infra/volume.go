package infra

import (
	"fmt"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// VolumeUse is what a plan's experiments hold on the Lustre instance they share: at their peak
// (every running one saving at once, beside what the stopped ones keep and the models' copies),
// and at rest, by checkpoint directory. An experiment's directory stays on the volume when it
// leaves the plan (removed, or renamed by a change of what it trains): nothing deletes
// checkpoints by itself. So `plan --compare` adds what the earlier plan's directories keep,
// when this plan no longer has them, to this plan's peak (cmd/plan, CompareVolume).
type VolumeUse struct {
	CapacityGB float64
	// PeakGB is what the plan's experiments need at once; Parts say of what.
	PeakGB float64
	Parts  []string
	// KeptGB is what each experiment keeps at rest, by its checkpoint directory: its kept
	// checkpoints and its Megatron conversion (the models' copies are shared, counted in PeakGB).
	KeptGB map[string]float64
}

// volumeUse is the plan's VolumeUse, nil off Lustre, without a run, or when a model's size is
// unknown.
func volumeUse(c *Config) *VolumeUse {
	if c.Storage.Type != kinds.Lustre {
		return nil
	}
	u := &VolumeUse{CapacityGB: float64(c.Storage.CapacityGiB) * (1 << 30) / 1e9, KeptGB: map[string]float64{}}
	jobs := c.Jobs
	if !c.Queued() {
		if !c.Job.Enabled {
			return nil
		}
		j := c.Job
		j.Name = ExperimentName(c)
		jobs = []JobConfig{j}
	}
	models := 0.0
	copied := map[string]bool{}
	for _, j := range jobs {
		e := c
		if c.Queued() {
			e = c.ForExperiment(j)
		}
		est := estimateCheckpoint(e)
		if est == nil {
			return nil
		}
		if j.KeepCheckpoints == 0 {
			continue
		}
		// A stopped experiment holds what it kept; one that runs, a save in progress too.
		peak := j.KeepCheckpoints
		if j.Enabled {
			peak, _ = checkpointsAtPeak(e, j.KeepCheckpoints)
		}
		conversion := conversionGB(e.Framework, e.Job)
		u.PeakGB += float64(peak)*est.GB + conversion
		part := fmt.Sprintf("%s %d × %.0f GB", j.Name, peak, est.GB)
		if conversion > 0 {
			part += fmt.Sprintf(" + its Megatron conversion %.0f GB", conversion)
		}
		u.Parts = append(u.Parts, part)
		u.KeptGB[experimentDir(e)] = float64(j.KeepCheckpoints)*est.GB + conversion
		// The experiments of one model and revision share its download and checked copy.
		if key := modelKey(e.Job); !copied[key] {
			copied[key] = true
			models += modelCopiesGB(e.Job)
		}
	}
	if models > 0 {
		u.PeakGB += models
		u.Parts = append(u.Parts, fmt.Sprintf("the models' downloads and checked copies %.0f GB", models))
	}
	return u
}

// experimentDir is an experiment's checkpoint directory: the single run's, or, for an
// experiment's configuration (Config.ForExperiment), its queued run's.
func experimentDir(e *Config) string {
	name := ExperimentName(e)
	if e.Queued() {
		name = QueuedRunName(e)
	}
	return workloads.Layout{Root: e.Storage.MountPath, Run: name}.Checkpoints()
}
