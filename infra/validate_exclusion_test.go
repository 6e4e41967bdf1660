package infra_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/test/plantest"
)

// GKE refuses an exclusion of minor and node upgrades that ends after the end of standard
// support of the cluster's minor version: the plan refuses it first, naming the bound (1.35,
// 2027-04-11). The Extended channel, with its longer support, is not bounded here.
func TestExclusionEndsWithinSupport(t *testing.T) {
	_, err := plantest.TryPlan("b200-spot", "cluster.noUpgradesUntil=2027-04-30T00:00:00Z")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cluster.noUpgradesUntil: "2027-04-30T00:00:00Z" ends after the end of standard support of every GKE minor version the REGULAR channel creates clusters on (1.35: 2027-04-11)`)
	assert.Contains(t, err.Error(), "allowed: up to 2027-04-11T00:00:00Z, or none")
	plantest.Plan(t, "b200-spot", "cluster.noUpgradesUntil=2027-04-11T00:00:00Z")
	plantest.Plan(t, "b200-spot", "cluster.releaseChannel=EXTENDED", "cluster.noUpgradesUntil=2027-09-30T00:00:00Z")
	plantest.Plan(t, "b200-spot", "cluster.noUpgradesUntil=none")
}

// An exclusion that has ended, or ends within 30 days, is a warning of the plan: node upgrades
// would resume in the middle of a run.
func TestExclusionWarnsBeforeItLapses(t *testing.T) {
	warnings := func(at time.Time, overrides ...string) string {
		t.Helper()
		return infra.Errors(plantest.PlanAt(t, at, "h200-reserved", overrides...).Warnings).Error()
	}
	assert.NotContains(t, warnings(plantest.PlanTime), "cluster.noUpgradesUntil", "the defaults hold on the shipped date")
	assert.Contains(t, warnings(time.Date(2027, 3, 20, 0, 0, 0, 0, time.UTC)), "cluster.noUpgradesUntil: the exclusion of minor and node upgrades ends in 21 days (2027-04-10)")
	assert.Contains(t, warnings(plantest.PlanTime, "cluster.noUpgradesFrom=2020-01-01T00:00:00Z", "cluster.noUpgradesUntil=2020-06-01T00:00:00Z"),
		"cluster.noUpgradesUntil: the exclusion of minor and node upgrades ended on 2020-06-01")
	assert.NotContains(t, warnings(plantest.PlanTime, "cluster.noUpgradesUntil=none"), "cluster.noUpgradesUntil")

	// At its limits: h200-reserved's exclusion ends at 2027-04-10T00:00:00Z. 30 days before is
	// 2027-03-11T00:00:00Z: exactly 30 days left is no warning, a second less is "30 days"
	// (rounded up); the end itself has ended, a second before it is "1 day".
	end := time.Date(2027, 4, 10, 0, 0, 0, 0, time.UTC)
	assert.NotContains(t, warnings(end.Add(-30*24*time.Hour)), "cluster.noUpgradesUntil", "30 days left: not yet within 30 days")
	assert.Contains(t, warnings(end.Add(-30*24*time.Hour+time.Second)), "cluster.noUpgradesUntil: the exclusion of minor and node upgrades ends in 30 days (2027-04-10)")
	assert.Contains(t, warnings(end.Add(-time.Second)), "cluster.noUpgradesUntil: the exclusion of minor and node upgrades ends in 1 day (2027-04-10)")
	assert.Contains(t, warnings(end), "cluster.noUpgradesUntil: the exclusion of minor and node upgrades ended on 2027-04-10")
}

// A key set where it does nothing (another cluster mode, another storage type) is a warning of
// the plan that names where the key applies.
func TestKeysThatDoNothingAreWarnedAbout(t *testing.T) {
	warns := func(stack string, overrides ...string) string {
		return infra.Errors(plantest.Plan(t, stack, overrides...).Warnings).Error()
	}
	gcs := warns("b200-spot", "storage.type=gcsfuse")
	for _, key := range []string{"storage.capacityGib", "storage.throughput", "storage.filesystem", "storage.gkeSupport"} {
		assert.Contains(t, gcs, key+": is set but does nothing here; it applies with storage.type=lustre")
	}
	assert.Contains(t, warns("h200-reserved", "cluster.mode=autopilot", "gpu.provisioning=spot", "gpu.reservation=", "cluster.cpuMachineType=n2-standard-32"),
		"cluster.cpuMachineType: is set but does nothing here; it applies with cluster.mode=standard")
	assert.Contains(t, warns("b200-spot", "storage.bucket=my-bucket"), "storage.bucket: is set but does nothing here; it applies with storage.type=gcsfuse")
	assert.Contains(t, warns("h200-reserved", "gate.enabled=false", "gate.storageGib=8"), "gate.storageGib: is set but does nothing here; it applies with gate.enabled=true")
	assert.Contains(t, warns("h200-reserved", "gate.enabled=false", "gate.runId=2"), "gate.runId: is set but does nothing here")
	assert.Contains(t, warns("h200-reserved", "gate.enabled=false", "gate.capacityWaitMinutes=30"), "gate.capacityWaitMinutes: is set but does nothing here; it applies with gate.enabled=true")
	assert.NotContains(t, warns("h200-reserved", "gate.capacityWaitMinutes=30"), "gate.capacityWaitMinutes", "the gate is on there")
	autopilot := []string{"cluster.mode=autopilot", "storage.type=gcsfuse"}
	assert.Contains(t, warns("b200-spot", append(autopilot, "gpu.minNodes=0")...), "gpu.minNodes: is set but does nothing here; it applies with cluster.mode=standard")
	assert.NotContains(t, warns("b200-spot", autopilot...), "gpu.minNodes", "a key the stack does not set")
	assert.Contains(t, warns("b200-spot", "cluster.mode=autopilot", "storage.type=gcsfuse", "gpu.maxNodes=10"), "gpu.maxNodes: is set but does nothing here; it applies with cluster.mode=standard")
	assert.Contains(t, warns("b200-spot", "ray.mirror=true", "ray.image=us-docker.pkg.dev/acme/rl/nemo-rl:1"), "ray.mirror: is set but does nothing here")
	// Exactly the run's keys the stack sets: b200-spot's seven, then two more.
	assert.Contains(t, warns("b200-spot", "job.enabled=false"), "job.enabled: is false, so job.model, job.dataset, job.maxSteps, job.promptsPerStep, job.generationsPerPrompt, job.checkpointPeriod, job.keepCheckpoints do nothing:")
	assert.Contains(t, warns("b200-spot", "job.enabled=false", "job.backoffLimit=3", `job.args=["grpo.normalize_rewards=false"]`),
		"job.enabled: is false, so job.model, job.dataset, job.maxSteps, job.promptsPerStep, job.generationsPerPrompt, job.checkpointPeriod, job.keepCheckpoints, job.backoffLimit, job.args do nothing:")
	// Epochs that job.maxSteps cuts short: smoke's GSM8K has 7473 rows, 64 prompts a step, so
	// 116 steps an epoch and 2 epochs are 232 steps; 231 stops within epoch 2, 232 does not.
	assert.Contains(t, warns("smoke", "job.epochs=2", "job.maxSteps=231"), "job.epochs: 2 epochs are 232 steps (7473 gsm8k rows / job.promptsPerStep 64 = 116 per epoch), but job.maxSteps 231 stops the run first, in epoch 2;")
	assert.NotContains(t, warns("smoke", "job.epochs=2", "job.maxSteps=232", "job.checkpointPeriod=2"), "job.epochs:")
	// A stopped experiment of a queue keeps its keys for when it runs again, while the others run.
	assert.NotContains(t, warns("smoke", "gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.maxSteps=4", "jobs.b.enabled=false"), "the stack runs no job")
	for _, stack := range plantest.Stacks {
		assert.NotContains(t, warns(stack), "does nothing", "the shipped stacks set only what they use")
		assert.NotContains(t, warns(stack), "storage.adopt")
	}
	assert.Contains(t, warns("b200-spot", "ray.image=us-docker.pkg.dev/acme/rl/nemo-rl:v0.5.0"), `ray.image: "us-docker.pkg.dev/acme/rl/nemo-rl:v0.5.0" is pinned by tag only`)
	assert.NotContains(t, warns("b200-spot", "ray.image=us-docker.pkg.dev/acme/rl/nemo-rl:v0.5.0@sha256:"+strings.Repeat("a", 64)), "ray.image")
	assert.Contains(t, warns("b200-spot", "storage.adopt=true"), "storage.adopt: is on: the next `pulumi up` imports the kept storage; once it has, turn it off")
}

// A stopped run whose stack sets none of the run's keys has nothing to warn about: b200-spot's
// file with `gke-rl:job` reduced to `enabled: false`.
func TestAStoppedRunWithNoRunKeysIsNotWarnedAbout(t *testing.T) {
	dir := plantest.ProjectDir(t)
	stack, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "Pulumi.b200-spot.yaml"))
	require.NoError(t, err)
	var doc map[string]map[string]any
	require.NoError(t, yaml.Unmarshal(stack, &doc))
	doc["config"]["gke-rl:job"] = map[string]any{"enabled": false}
	stack, err = yaml.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.b200-spot.yaml"), stack, 0o600))

	sc, err := offline.LoadStackConfig(dir, "b200-spot", nil)
	require.NoError(t, err)
	res, err := offline.Run(sc, "b200-spot", plantest.PlanTime)
	require.NoError(t, err)
	assert.NotContains(t, infra.Errors(res.Warnings).Error(), "job.enabled")
}
