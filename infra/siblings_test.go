package infra_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/test/plantest"
)

// The other stack files of the directory, as written: a stack without cluster.name has the
// default's namespace, the stack itself and a file that is not YAML are left out.
func TestReadSiblings(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"Pulumi.self.yaml":   "config:\n  gcp:project: acme-rl\n",
		"Pulumi.named.yaml":  "config:\n  gcp:project: acme-rl\n  gke-rl:cluster:\n    name: ray-b\n",
		"Pulumi.plain.yaml":  "config:\n  gcp:project: acme-rl\n",
		"Pulumi.broken.yaml": "config: [\n",
		"Pulumi.yaml":        "name: gke-rl\n",
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	assert.Equal(t, []infra.Sibling{
		{Stack: "named", Project: "acme-rl", ClusterName: "ray-b"},
		{Stack: "plain", Project: "acme-rl", ClusterName: infra.DefaultClusterName},
	}, infra.ReadSiblings(dir, "self"))
}

// Another stack of the directory with the same cluster.name in the same project is refused,
// naming it; the same name in another project, another name in the same project, and any sibling
// of a stack still on the placeholder project are not.
func TestASiblingsClusterNameIsRefusedOnlyInTheSameProject(t *testing.T) {
	resolve := func(project string, sibling infra.Sibling) error {
		t.Helper()
		sc, err := offline.LoadStackConfig(plantest.RepoRoot(), "smoke", []string{"gcp:project=" + project})
		require.NoError(t, err)
		sc.Siblings = []infra.Sibling{sibling}
		_, err = offline.Resolve(sc, "smoke", plantest.PlanTime)
		return err
	}
	err := resolve("acme-rl", infra.Sibling{Stack: "dev", Project: "acme-rl", ClusterName: "gke-rl-smoke"})
	var cfgErr *offline.ConfigError
	require.ErrorAs(t, err, &cfgErr)
	require.Len(t, cfgErr.Problems, 1)
	assert.Equal(t, "cluster.name", cfgErr.Problems[0].Key)
	assert.Equal(t, `"gke-rl-smoke" is stack dev's cluster.name too (Pulumi.dev.yaml), in project acme-rl: the two stacks would share the cluster, its networks, bucket, secrets and every Workload Identity principal; allowed: a name no other stack of the project uses`,
		cfgErr.Problems[0].Message)

	assert.NoError(t, resolve("acme-rl", infra.Sibling{Stack: "dev", Project: "acme-other", ClusterName: "gke-rl-smoke"}), "another project")
	assert.NoError(t, resolve("acme-rl", infra.Sibling{Stack: "dev", Project: "acme-rl", ClusterName: "gke-rl-dev"}), "another name")
	assert.NoError(t, resolve("your-project-id", infra.Sibling{Stack: "dev", Project: "your-project-id", ClusterName: "gke-rl-smoke"}), "in no project yet")
}
