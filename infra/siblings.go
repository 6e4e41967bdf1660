package infra

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Sibling is another stack of the project directory (a Pulumi.<stack>.yaml beside this stack's),
// as far as the namespace check needs it.
type Sibling struct {
	Stack string
	// Project is its gcp:project; ClusterName its cluster.name (DefaultClusterName when unset).
	Project     string
	ClusterName string
}

// ReadSiblings reads the stack files in dir other than self's: each one's gcp:project and
// cluster.name, from the file as written (no secret is read). A file that is not YAML is skipped:
// planning that stack says what is wrong with it.
func ReadSiblings(dir, self string) []Sibling {
	files, _ := filepath.Glob(filepath.Join(dir, "Pulumi.*.yaml"))
	sort.Strings(files)
	var out []Sibling
	for _, f := range files {
		stack := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "Pulumi."), ".yaml")
		if stack == self {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var file struct {
			Config map[string]any `json:"config"`
		}
		if yaml.Unmarshal(data, &file) != nil {
			continue
		}
		s := Sibling{Stack: stack, ClusterName: DefaultClusterName}
		s.Project, _ = file.Config["gcp:project"].(string)
		if cluster, ok := file.Config[ProjectName+":"+KeyCluster].(map[string]any); ok {
			if name, ok := cluster["name"].(string); ok && name != "" {
				s.ClusterName = name
			}
		}
		out = append(out, s)
	}
	return out
}

// validateSiblings refuses a cluster.name whose workload namespace another stack of the project
// has. Every Workload Identity principal of a project names only the namespace and the service
// account (<project>.svc.id.goog), so two stacks with one namespace share every principal: each
// reads the other's tokens and writes the other's bucket, checkpoints included. The mapping from
// cluster.name is not one-to-one (`smoke` and `gke-rl-smoke` both give gke-rl-smoke:
// WorkloadNamespace), and it is kept so that no existing stack's namespace moves; the collision is
// refused instead. Stacks still on the placeholder project are in no project yet.
func validateSiblings(c *Config, errs *Errors) {
	if c.Project == "" || strings.HasPrefix(c.Project, placeholderPrefix) {
		return
	}
	ns := WorkloadNamespace(c.Cluster.Name)
	for _, s := range c.Siblings {
		if s.Project != c.Project || WorkloadNamespace(s.ClusterName) != ns {
			continue
		}
		if s.ClusterName == c.Cluster.Name {
			errs.Add("cluster.name", "%s is stack %s's cluster.name too (Pulumi.%s.yaml), in project %s: the two stacks would share the cluster, its networks, bucket, secrets and every Workload Identity principal; allowed: a name no other stack of the project uses",
				quote(c.Cluster.Name), s.Stack, s.Stack, c.Project)
			continue
		}
		errs.Add("cluster.name", "%s gives the workload namespace %s, which stack %s (Pulumi.%s.yaml, cluster.name %s) has in project %s too: the two stacks would share every Workload Identity principal, so each would read the other's tokens and write the other's bucket; allowed: a cluster.name whose namespace (the name, with \"gke-rl-\" before it unless it starts with \"gke-rl\") no other stack of the project has",
			quote(c.Cluster.Name), ns, s.Stack, s.Stack, quote(s.ClusterName), c.Project)
	}
}
