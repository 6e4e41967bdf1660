package infra_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/infra"
	"gke-rl/test/plantest"
)

func warningsOf(bp *infra.Blueprint) map[string]string {
	out := map[string]string{}
	for _, w := range bp.Warnings {
		out[w.Key] = w.Message
	}
	return out
}

// The shipped stacks pin every Hub download to a commit; what is not pinned to one, or pins
// what the run does not load, is named.
func TestUnpinnedDownloadsAreWarnedAbout(t *testing.T) {
	for _, stack := range []string{"b200-spot", "h200-reserved"} {
		assert.NotContains(t, warningsOf(plantest.Resolve(t, stack)), "job.revisions", stack)
	}

	w := warningsOf(plantest.Resolve(t, "h200-reserved", "job.model=Qwen/Qwen2.5-7B-Instruct", `job.revisions["openai/gsm8k"]=main`))
	assert.Contains(t, w["job.revisions"], "Qwen/Qwen2.5-7B-Instruct (unpinned: its default branch), openai/gsm8k (\"main\", a tag or branch)")
	assert.Contains(t, w[`job.revisions["Qwen/Qwen2.5-32B-Instruct"]`], "which the run does not load", "the old model's pin stays behind, inert")

	w = warningsOf(plantest.Resolve(t, "b200-spot", "job.enabled=false"))
	assert.NotContains(t, w, "job.revisions", "no run, no download")
}

// A region the newer region list gives the machine type, but the older zone list has no zone of,
// plans with a warning that says what is unchecked and how to check it; the shipped zones plan
// without one.
func TestAZoneTheTablesCannotJudgeIsAWarning(t *testing.T) {
	for _, stack := range plantest.Stacks {
		assert.NotContains(t, warningsOf(plantest.Resolve(t, stack)), "zone", stack)
	}
	w := warningsOf(plantest.Resolve(t, "b200-spot", "gcp:region=europe-west1", "zone=europe-west1-b"))
	assert.Contains(t, w["zone"], `"europe-west1-b" is unchecked`)
	assert.Contains(t, w["zone"], "gcloud compute machine-types describe a4-highgpu-8g --zone europe-west1-b")
}

// With a reservation, the reservation's zone decides: a zone the tables do not list for the
// machine type is a warning, not a refusal.
func TestAReservationsZoneOutsideTheTablesIsAWarning(t *testing.T) {
	w := warningsOf(plantest.Resolve(t, "h200-reserved", "gcp:region=us-east1", "zone=us-east1-b"))
	assert.Contains(t, w["zone"], "a3-ultragpu-8g is not offered in us-east1")
	assert.Contains(t, w["zone"], "only a warning")
}

// An image of the user's pinned by tag only is named; a digest silences it. The framework's
// default, shipped by tag, is not warned about on every plan (docs/configuration.md says how to
// pin its digest).
func TestAnImagePinnedByTagOnlyIsWarnedAbout(t *testing.T) {
	for _, stack := range plantest.Stacks {
		assert.NotContains(t, warningsOf(plantest.Resolve(t, stack)), "ray.image", stack)
	}
	assert.Contains(t, warningsOf(plantest.Resolve(t, "b200-spot", "ray.image=acme/rl:1.0", "ray.version=2.49.2"))["ray.image"], `"acme/rl:1.0" is pinned by tag only`)
	digest := "acme/rl:1.0@sha256:" + strings.Repeat("ab", 32)
	assert.NotContains(t, warningsOf(plantest.Resolve(t, "b200-spot", "ray.image="+digest, "ray.version=2.49.2")), "ray.image")
}
