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
	type stack struct{ name, file, cluster string }
	stacks := []stack{
		{"smoke", "smoke", ""}, {"h200-reserved", "h200-reserved", ""}, {"b200-spot", "b200-spot", ""},
		// A copy of a shipped stack, as the README has a user make one: its own cluster name.
		{"my-smoke", "smoke", "my-smoke"},
		// The name that shared smoke's namespace (gke-rl-smoke) before this version.
		{"short-smoke", "smoke", "smoke"},
	}
	granted := map[string]map[string][]string{}
	for _, s := range stacks {
		overrides := []string{"tokens.huggingFace=true", "tokens.wandb=true", "gcp:project=one-project"}
		if s.cluster != "" {
			overrides = append(overrides, "cluster.name="+s.cluster)
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
		"gke-rlx":         "gke-rlx",
		"smoke":           "rl-smoke",
		"rl-smoke":        "rl-rl-smoke",
		"ray-a4-gpu-spot": "rl-ray-a4-gpu-spot",
		"kube-system":     "rl-kube-system",
		"default":         "rl-default",
		"gke-managed":     "rl-gke-managed",
	} {
		assert.Equal(t, want, infra.WorkloadNamespace(cluster), cluster)
	}
	longest := strings.Repeat("a", 40)
	assert.LessOrEqual(t, len(infra.WorkloadNamespace(longest)), 63, "a namespace is a DNS label")
}

// No two cluster names give one namespace: every DNS label of up to five characters over the
// letters the prefixes use (and one other) and the hyphen, and each of them behind each prefix
// a mapping could add or keep ("gke-rl", "gke-rl-", "rl-", "gke-", "rl"), all mapped once.
// Before this version `a` and `gke-rl-a` (`smoke` and `gke-rl-smoke`) both gave gke-rl-a; a
// mapping that drops, shares or shortens a prefix fails here on names like them.
func TestNoTwoClusterNamesShareANamespace(t *testing.T) {
	const letters = "gkerla-"
	var short []string
	var walk func(name string)
	walk = func(name string) {
		if name != "" && name[0] != '-' && name[len(name)-1] != '-' {
			short = append(short, name)
		}
		if len(name) == 5 {
			return
		}
		for _, c := range letters {
			walk(name + string(c))
		}
	}
	walk("")
	names := map[string]bool{}
	for _, name := range short {
		names[name] = true
		for _, prefix := range []string{"gke-rl", "gke-rl-", "rl-", "gke-", "rl"} {
			names[prefix+name] = true
		}
	}
	seen := map[string]string{}
	for name := range names {
		ns := infra.WorkloadNamespace(name)
		if other, ok := seen[ns]; ok {
			t.Fatalf("cluster names %q and %q both give namespace %s", other, name, ns)
		}
		seen[ns] = name
	}
	t.Logf("%d cluster names, as many namespaces", len(seen))
}
