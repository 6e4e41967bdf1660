package preflight

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/kinds"
	"gke-rl/test/plantest"
)

// variants are the shipped stacks with every option that registers resources of other types:
// the tokens (Secret Manager), Autopilot, the pull-request preview identity (RBAC, admission
// policy), a node account made outside the stack, each storage type, and a queue (jobs: Kueue's
// install step and objects).
var variants = [][]string{
	nil,
	{"tokens.huggingFace=true", "tokens.wandb=true"},
	{"cluster.mode=autopilot", "storage.type=gcsfuse"},
	{"cluster.previewServiceAccount=pr-preview@acme-rl.iam.gserviceaccount.com"},
	{"cluster.nodeServiceAccount=gke-nodes@acme-rl.iam.gserviceaccount.com"},
	{"jobs.first.priority=1", "jobs.second.priority=2"},
}

func plans(t *testing.T) map[string]*offline.Result {
	t.Helper()
	out := map[string]*offline.Result{}
	for _, stack := range plantest.Stacks {
		for _, v := range variants {
			out[stack+" "+strings.Join(v, " ")] = plantest.Plan(t, stack, v...)
		}
	}
	return out
}

func TestEveryRegisteredTypeHasItsNeeds(t *testing.T) {
	for name, r := range plans(t) {
		_, err := NeedsOf(r)
		assert.NoError(t, err, name)
	}
}

func TestAnUnknownTypeIsAnError(t *testing.T) {
	_, ok := resourceNeeds("gcp:filestore/instance:Instance", "shared")
	assert.False(t, ok)
	_, ok = resourceNeeds("command:local:Command", "a-new-step")
	assert.False(t, ok, "a new kubectl or gcloud step must say what it does")
}

// The README's `gcloud services enable` line is every service some stack's up uses, no more.
func TestTheREADMEEnablesEveryServiceUpUses(t *testing.T) {
	used := map[string]bool{}
	for _, r := range plans(t) {
		n, err := NeedsOf(r)
		require.NoError(t, err)
		for _, api := range n.APIs {
			used[api] = true
		}
	}
	readme := plantest.Documents(t)[0]
	require.Equal(t, "README.md", readme.Rel)
	block := regexp.MustCompile(`(?s)gcloud services enable (.*?)--project`).FindStringSubmatch(readme.Text)
	require.NotNil(t, block, "the README's gcloud services enable line")
	listed := strings.Fields(strings.ReplaceAll(block[1], `\`, " "))
	slices.Sort(listed)
	assert.Equal(t, slices.Sorted(maps.Keys(used)), listed)
}

func TestQuotaMetricFollowsTheProvisioningModel(t *testing.T) {
	b200 := plantest.Resolve(t, "smoke").Hardware
	assert.Equal(t, "PREEMPTIBLE_NVIDIA_B200_GPUS", QuotaMetric(b200, kinds.Spot))
	assert.Equal(t, "PREEMPTIBLE_NVIDIA_B200_GPUS", QuotaMetric(b200, kinds.FlexStart))
	assert.Equal(t, "NVIDIA_B200_GPUS", QuotaMetric(b200, kinds.OnDemand))
	h200 := plantest.Resolve(t, "smoke", plantest.GPU("h200")...).Hardware
	assert.Equal(t, "NVIDIA_H200_GPUS", QuotaMetric(h200, kinds.OnDemand))
}

func TestNeedsOfAReservation(t *testing.T) {
	n, err := NeedsOf(plantest.Plan(t, "h200-reserved", "gpu.reservation=h200-res/reservationBlocks/block-1"))
	require.NoError(t, err)
	assert.Equal(t, "h200-res", n.Reservation, "the reservation, without its block")
	assert.Empty(t, n.QuotaMetric, "a reservation carries its own quota")
	assert.Equal(t, 2, n.Nodes)
}

func TestEveryGPUHasAQuotaMetric(t *testing.T) {
	for _, gpu := range infra.GPUTypes() {
		spec := plantest.Resolve(t, "smoke", plantest.GPU(gpu)...).Hardware
		assert.Regexp(t, `^NVIDIA_[A-Z0-9]+_GPUS$`, spec.QuotaMetric, gpu)
	}
}

// The instance the lustre check looks for is the one up imports with storage.adopt: the same
// plan, read by both.
func TestLustreNeedsNameTheAdoptedInstance(t *testing.T) {
	r := plantest.Plan(t, "b200-spot", "storage.adopt=true")
	n, err := NeedsOf(r)
	require.NoError(t, err)
	require.NotNil(t, n.Lustre)
	assert.True(t, n.Lustre.Adopt)
	imported := 0
	for _, res := range r.Resources {
		if res.Type == "gcp:lustre/instance:Instance" {
			assert.Equal(t, res.Options.Import, n.Lustre.Name)
			imported++
		}
	}
	assert.Equal(t, 1, imported)
	n, err = NeedsOf(plantest.Plan(t, "smoke"))
	require.NoError(t, err)
	assert.Nil(t, n.Lustre, "a bucket stack has no instance")
}
