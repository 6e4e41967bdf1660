package infra

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Sibling is another stack of the project directory (a Pulumi.<stack>.yaml beside this stack's),
// as far as the cluster name check needs it.
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

// validateSiblings refuses a cluster.name another stack of the project directory has in the same
// project: the two stacks would fight over one cluster, its networks, bucket, secrets and
// workload namespace (WorkloadNamespace is one-to-one, so only an equal name shares one). GCP
// refuses the second stack's networks too, but only halfway through its `pulumi up`; this says
// it before anything is created. A stack in another clone is not seen here, and needs not be:
// its cluster.name is the one that collides, and GCP refuses it. Stacks still on the placeholder
// project are in no project yet.
func validateSiblings(c *Config, errs *Errors) {
	if c.Project == "" || strings.HasPrefix(c.Project, placeholderPrefix) {
		return
	}
	for _, s := range c.Siblings {
		if s.Project != c.Project || s.ClusterName != c.Cluster.Name {
			continue
		}
		errs.Add("cluster.name", "%s is stack %s's cluster.name too (Pulumi.%s.yaml), in project %s: the two stacks would share the cluster, its networks, bucket, secrets and every Workload Identity principal; allowed: a name no other stack of the project uses",
			quote(c.Cluster.Name), s.Stack, s.Stack, c.Project)
	}
}
