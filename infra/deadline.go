package infra

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// The run's default deadline (`job.activeDeadlineSeconds` when unset): a bound that turns a run
// that hangs (a placement group that never fits, a collective that never returns) into a named
// failure instead of GPUs held for days. It must never end a healthy run, so every term is
// generous: the GPU-idle alert is what catches a hang early.
const (
	// DeadlineStartup is what an attempt may spend before its first step: image pulls, Ray's
	// start, NeMo RL's conversion of the weights to Megatron's format, the model load.
	DeadlineStartup = 2 * time.Hour
	// DeadlineRetries is how many retries a run's deadline leaves room for, each a startup plus
	// the steps since the last checkpoint, whatever job.backoffLimit allows.
	DeadlineRetries = 3
)

// gsm8kTrainRows is GSM8K's training set (verl v0.6.0 docs/examples/gsm8k_example.rst: "The
// training set contains 7473 samples"). The other datasets' sizes are not checked, so a run on
// them bounded by epochs alone gets no default deadline.
var trainRows = map[string]int{"gsm8k": 7473}

// stepAllowance is the time a GRPO step may take, by model size: about four times what steps of
// these sizes take on the supported machines. For scale, verl's largest published run,
// DeepSeek 671B on 96 GPUs, takes 1,700 s a step (verl v0.6.0 docs/perf/dpsk.md).
func stepAllowance(billions float64) time.Duration {
	switch {
	case billions > 0 && billions <= 8:
		return 15 * time.Minute
	case billions > 0 && billions <= 35:
		return 30 * time.Minute
	default:
		return time.Hour
	}
}

// sizeAllowanceBasis names the model size's class of stepAllowance.
func sizeAllowanceBasis(billions float64) string {
	switch {
	case billions > 0 && billions <= 8:
		return "the allowance of models up to 8B"
	case billions > 0 && billions <= 35:
		return "the allowance of models up to 35B"
	case billions > 0:
		return "the allowance of models above 35B"
	}
	return "the largest allowance: the model's size is unknown"
}

// A step's work, for runs whose steps the size's allowance does not bound: a GRPO step runs about
// 12 operations a parameter for each token of each rollout (2 to generate it, 2 for the old
// log-probabilities, 2 for the reference's, 6 for the update's forward and backward passes), and
// the allowance is 4 times that at 10 % of the GPUs' dense bf16 peak: generous, since it must
// never end a healthy run.
const (
	stepOperationsPerParameterToken = 12
	stepEfficiency                  = 0.10
	stepWorkMargin                  = 4
)

// stepWork is the time a step's work may take and how it was counted; false when the model's
// size, the GPU's peak or the sequence length is unknown.
func stepWork(c *Config, params float64) (time.Duration, string, bool) {
	spec, ok := gpuCatalog[c.GPU.Type]
	if !ok || spec.BF16TFLOPS <= 0 || params <= 0 || c.GPU.Nodes <= 0 {
		return 0, "", false
	}
	run := workloads.Run{Release: c.Job.FrameworkRelease, Model: c.Job.Model, ModelBillions: params / 1e9, Shape: c.Job.Shape(), Dataset: c.Job.Dataset, Recipe: c.Job.Recipe,
		Nodes: c.GPU.Nodes, GPUsPerNode: spec.GPUsPerNode, PromptsPerStep: c.Job.PromptsPerStep, GenerationsPerPrompt: c.Job.GenerationsPerPrompt,
		CheckpointPeriod: c.Job.CheckpointPeriod, KeepCheckpoints: c.Job.KeepCheckpoints, Tuning: c.Job.Tuning, Extra: c.Job.Args,
		Layout: workloads.Layout{Root: c.Storage.MountPath, Run: "deadline"}}
	seq, ok := workloads.StepSequenceTokens(c.Framework, run)
	if !ok {
		return 0, "", false
	}
	rollouts := c.Job.PromptsPerStep * c.Job.GenerationsPerPrompt
	gpus := c.GPU.Nodes * spec.GPUsPerNode
	operations := stepOperationsPerParameterToken * params * float64(rollouts) * float64(seq)
	seconds := stepWorkMargin * operations / (float64(gpus) * spec.BF16TFLOPS * 1e12 * stepEfficiency)
	basis := fmt.Sprintf("%d × the step's work: %d rollouts × %d tokens × %gB parameters × %d operations at %.0f%% of %d %s GPUs' dense bf16 peak",
		stepWorkMargin, rollouts, seq, math.Round(params/1e8)/10, stepOperationsPerParameterToken, stepEfficiency*100, gpus, strings.ToUpper(c.GPU.Type))
	return time.Duration(math.Ceil(seconds/60)) * time.Minute, basis, true
}

// RunDeadline is the derived deadline and its arithmetic.
type RunDeadline struct {
	Seconds int
	// Steps is the run's length in GRPO steps; StepsBasis says where it comes from.
	Steps      int
	StepsBasis string
	Step       time.Duration
	// StepBasis says where Step comes from: the model size's allowance, or the step's work.
	StepBasis string
	// SizeUnknown is set when neither the model's size nor its work bounds a step: Step is the
	// largest allowance, a guess.
	SizeUnknown bool
	// Scope says what the deadline bounds, as it really applies in the run's mode.
	Scope DeadlineScope
	// Retries is the room the deadline leaves for retries (a run's deadline); Attempts is how
	// many attempts KubeRay may make, each with the deadline (an attempt's deadline).
	Retries, Attempts int
}

// DeadlineScope is what a deadline bounds.
type DeadlineScope string

const (
	// PerAttempt: a RayJob with its own cluster carries the deadline as activeDeadlineSeconds,
	// which KubeRay v1.5.0 counts from Status.StartTime, and a retry resets StartTime
	// (ray-operator/controllers/ray/rayjob_controller.go: Retrying → New →
	// initRayJobStatusIfNeed). It bounds one attempt, on one cluster; the attempt that passes it
	// fails with DeadlineExceeded, which KubeRay does not retry, and its cluster is deleted.
	PerAttempt DeadlineScope = "per attempt"
	// PerRun: on the long-lived cluster the entrypoint (run.sh, RUN_DEADLINE_SECONDS) bounds
	// the run, its retries included: no attempt starts after the deadline and the one running
	// then is stopped, which ends the Ray job. KubeRay's activeDeadlineSeconds would only mark
	// the RayJob Failed there, stopping nothing (the Failed state deletes nothing for a RayJob
	// with clusterSelector, and only deleting the RayJob stops its Ray job).
	PerRun DeadlineScope = "for the run"
)

// DeadlineScopeOf is what a deadline bounds in run mode m.
func DeadlineScopeOf(m kinds.RunMode) DeadlineScope {
	if m == kinds.OwnCluster {
		return PerAttempt
	}
	return PerRun
}

// runSteps is how many GRPO steps a run takes: job.maxSteps, or epochs × full batches of a
// dataset of known size (both frameworks drop the last partial batch), whichever is smaller.
func runSteps(c *Config) (int, string, bool) {
	j := c.Job
	perEpoch, known := 0, false
	if rows, ok := trainRows[j.Dataset]; ok && j.PromptsPerStep > 0 {
		perEpoch, known = rows/j.PromptsPerStep, true
	}
	byEpochs := j.Epochs * perEpoch
	switch {
	case j.MaxSteps > 0 && (j.Epochs == 0 || !known || j.MaxSteps <= byEpochs):
		return j.MaxSteps, fmt.Sprintf("job.maxSteps %d", j.MaxSteps), true
	case j.Epochs > 0 && known:
		return byEpochs, fmt.Sprintf("job.epochs %d × %d steps (%d %s rows / job.promptsPerStep %d)", j.Epochs, perEpoch, trainRows[j.Dataset], j.Dataset, j.PromptsPerStep), true
	}
	return 0, "", false
}

// deriveDeadline is the default deadline, nil when the run's length is unknown. A deadline
// per attempt is one attempt from the first step to the last (a retry resumes, so it needs
// less); a deadline for the run adds room for retries, each a startup and the steps since the
// last checkpoint.
func deriveDeadline(c *Config) *RunDeadline {
	steps, basis, ok := runSteps(c)
	if !ok {
		return nil
	}
	billions, known := modelParameters(c)
	d := &RunDeadline{Steps: steps, StepsBasis: basis, Step: stepAllowance(billions / 1e9),
		StepBasis: sizeAllowanceBasis(billions / 1e9), SizeUnknown: !known, Scope: DeadlineScopeOf(queueMode(c))}
	if work, workBasis, ok := stepWork(c, billions); ok && work > d.Step {
		d.Step, d.StepBasis = work, workBasis
	}
	total := DeadlineStartup + time.Duration(steps)*d.Step
	if d.Scope == PerAttempt {
		d.Attempts = c.Job.BackoffLimit + 1
	} else {
		d.Retries = min(c.Job.BackoffLimit, DeadlineRetries)
		lost := time.Duration(min(c.Job.CheckpointPeriod, steps)) * d.Step
		total += time.Duration(d.Retries) * (DeadlineStartup + lost)
	}
	d.Seconds = int(math.Ceil(total.Seconds()))
	return d
}

// Summary is the deadline in one line, for the `runDeadline` stack output.
func (d RunDeadline) Summary() string {
	limit := time.Duration(d.Seconds) * time.Second
	if d.Scope == PerAttempt {
		return fmt.Sprintf("%s per attempt (job.activeDeadlineSeconds %d; KubeRay restarts the clock on each of up to %d attempts, so a run can take up to %s): startup %s + %d steps (%s) × %s (%s)",
			hours(limit), d.Seconds, d.Attempts, hours(time.Duration(d.Attempts)*limit), hours(DeadlineStartup), d.Steps, d.StepsBasis, minutes(d.Step), d.StepBasis)
	}
	return fmt.Sprintf("%s for the run, retries included (job.activeDeadlineSeconds %d; no attempt starts after it and the one running is stopped): startup %s + %d steps (%s) × %s (%s) + %d retries × (startup + job.checkpointPeriod's steps)",
		hours(limit), d.Seconds, hours(DeadlineStartup), d.Steps, d.StepsBasis, minutes(d.Step), d.StepBasis, d.Retries)
}

// Longest is the most the run can take: the deadline, or with a deadline per attempt, each of
// its attempts taking all of it.
func (d RunDeadline) Longest() time.Duration {
	limit := time.Duration(d.Seconds) * time.Second
	if d.Scope == PerAttempt {
		return time.Duration(max(1, d.Attempts)) * limit
	}
	return limit
}

// Hours is a duration as the plan says it: hours to a tenth.
func Hours(d time.Duration) string { return hours(d) }

func hours(d time.Duration) string   { return fmt.Sprintf("%gh", math.Round(d.Hours()*10)/10) }
func minutes(d time.Duration) string { return fmt.Sprintf("%g min", d.Minutes()) }
