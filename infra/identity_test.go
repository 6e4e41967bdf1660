package infra_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/test/plantest"
)

// principals are the Workload Identity principals a planned stack grants anything to: the members
// of its IAM bindings (bucket, secrets, project) that name a Kubernetes service account.
func principals(t *testing.T, res *offline.Result) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range res.Resources {
		if !strings.Contains(strings.ToLower(r.Type), "iammember") {
			continue
		}
		member, _ := r.Input("member")
		m, ok := member.(string)
		require.True(t, ok, "%s %s: its member is known when planned", r.Type, r.Name)
		if strings.Contains(m, ".svc.id.goog/subject/") {
			out[m] = append(out[m], r.Type+" "+r.Name)
		}
	}
	return out
}

// Two stacks of one project share the Workload Identity pool (<project>.svc.id.goog), whose
// principals name only a namespace and a service account: with a namespace of its own, no
// principal that one stack grants its bucket, its tokens or anything else is one of the other's.
func TestTwoStacksOfOneProjectShareNoPrincipal(t *testing.T) {
	type stack struct{ name, file string }
	stacks := []stack{
		{"smoke", "smoke"}, {"h200-reserved", "h200-reserved"}, {"b200-spot", "b200-spot"},
		// A copy of a shipped stack (`my-smoke`), as the README has a user make one: its own
		// cluster name.
		{"my-smoke", "smoke"},
	}
	granted := map[string]map[string][]string{}
	for _, s := range stacks {
		overrides := []string{"tokens.huggingFace=true", "tokens.wandb=true", "gcp:project=one-project"}
		if s.name != s.file {
			overrides = append(overrides, "cluster.name="+s.name)
		}
		res := plantest.Plan(t, s.file, overrides...)
		granted[s.name] = principals(t, res)
		require.NotEmpty(t, granted[s.name], "%s grants its pods access through Workload Identity", s.name)
		for p := range granted[s.name] {
			assert.Contains(t, p, "/subject/ns/"+res.Blueprint.Namespace+"/sa/", "%s: principals of its own namespace", s.name)
		}
	}
	shared := 0
	for i, a := range stacks {
		for _, b := range stacks[i+1:] {
			for p, where := range granted[a.name] {
				if other, ok := granted[b.name][p]; ok {
					shared++
					t.Errorf("%s and %s both grant %s (%v; %v)", a.name, b.name, p, where, other)
				}
			}
		}
	}
	t.Logf("principals shared by two stacks of one project: %d", shared)
}

func TestWorkloadNamespace(t *testing.T) {
	for cluster, want := range map[string]string{
		"gke-rl":          "gke-rl",
		"gke-rl-smoke":    "gke-rl-smoke",
		"ray-a4-gpu-spot": "gke-rl-ray-a4-gpu-spot",
		"kube-system":     "gke-rl-kube-system",
		"default":         "gke-rl-default",
	} {
		assert.Equal(t, want, infra.WorkloadNamespace(cluster), cluster)
	}
	longest := strings.Repeat("a", 40)
	assert.LessOrEqual(t, len(infra.WorkloadNamespace(longest)), 63, "a namespace is a DNS label")
}
