package infra

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The size classes of a step's allowance at their limits: up to 8B (inclusive) 15 minutes, up
// to 35B 30 minutes, above 35B or of an unknown size an hour.
func TestStepAllowanceAtItsLimits(t *testing.T) {
	for _, tc := range []struct {
		billions float64
		step     time.Duration
		basis    string
	}{
		{8, 15 * time.Minute, "the allowance of models up to 8B"},
		{8.01, 30 * time.Minute, "the allowance of models up to 35B"},
		{35, 30 * time.Minute, "the allowance of models up to 35B"},
		{35.01, time.Hour, "the allowance of models above 35B"},
		{0.49, 15 * time.Minute, "the allowance of models up to 8B"},
		{0, time.Hour, "the largest allowance: the model's size is unknown"},
	} {
		assert.Equal(t, tc.step, stepAllowance(tc.billions), "%gB", tc.billions)
		assert.Equal(t, tc.basis, sizeAllowanceBasis(tc.billions), "%gB", tc.billions)
	}
}

// The run's length at the edge between job.maxSteps and the epochs: GSM8K's 7,473 rows in
// batches of 256 are 29 steps an epoch, 58 for 2 epochs; job.maxSteps 58 is named as what bounds
// the run (the same 58 steps), 59 leaves the epochs to bound it.
func TestRunStepsAtTheEdgeOfMaxStepsAndEpochs(t *testing.T) {
	c := &Config{Job: JobConfig{Epochs: 2, Dataset: "gsm8k", PromptsPerStep: 256}}
	for _, tc := range []struct {
		maxSteps, steps int
		basis           string
	}{
		{57, 57, "job.maxSteps 57"},
		{58, 58, "job.maxSteps 58"},
		{59, 58, "job.epochs 2 × 29 steps (7473 gsm8k rows / job.promptsPerStep 256)"},
	} {
		c.Job.MaxSteps = tc.maxSteps
		steps, basis, ok := runSteps(c)
		assert.True(t, ok)
		assert.Equal(t, tc.steps, steps, "job.maxSteps %d", tc.maxSteps)
		assert.Equal(t, tc.basis, basis, "job.maxSteps %d", tc.maxSteps)
	}
}
