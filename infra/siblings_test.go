package infra_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
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
