package plan_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/test/plantest"
)

// Two stacks of one project with one cluster name would share the cluster, its networks and
// every Workload Identity principal: the plan of either, made in the directory that holds both
// stack files, refuses it on cluster.name, naming the other stack. Names that only look alike
// (`smoke` and the shipped `gke-rl-smoke`, which shared the namespace gke-rl-smoke before this
// version) plan clean, each in a namespace of its own. Stacks of other projects, and the shipped
// placeholder project, are not compared.
func TestPlanRefusesAClusterNameAnotherStackOfTheProjectHas(t *testing.T) {
	dir := plantest.ProjectDir(t)
	smoke, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "Pulumi.smoke.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(smoke), "name: gke-rl-smoke")
	stack := func(name, project, cluster string) {
		data := strings.Replace(string(smoke), "name: gke-rl-smoke", "name: "+cluster, 1)
		data = strings.Replace(data, "gcp:project: your-project-id", "gcp:project: "+project, 1)
		require.Contains(t, data, "gcp:project: "+project)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi."+name+".yaml"), []byte(data), 0o644))
	}
	planIn := func(name string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := plan.Main([]string{"--stack", name}, plantest.Env(dir, &stdout, &stderr))
		return code, stderr.String()
	}
	namespaceOf := func(name string) string {
		var stdout, stderr bytes.Buffer
		code := plan.Main([]string{"--stack", name, "--json"}, plantest.Env(dir, &stdout, &stderr))
		require.Equal(t, cmd.ExitOK, code, stderr.String())
		var doc struct {
			Outputs map[string]any `json:"outputs"`
		}
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &doc))
		return fmt.Sprint(doc.Outputs["namespace"])
	}
	stack("smoke", "acme-rl", "gke-rl-smoke")
	stack("mine", "acme-rl", "smoke")
	assert.Equal(t, "rl-smoke", namespaceOf("mine"))
	assert.Equal(t, "gke-rl-smoke", namespaceOf("smoke"))

	stack("mine", "acme-rl", "gke-rl-smoke")
	code, errOut := planIn("mine")
	assert.Equal(t, cmd.ExitInvalidConfig, code, errOut)
	assert.Contains(t, errOut, `cluster.name: "gke-rl-smoke" is stack smoke's cluster.name too (Pulumi.smoke.yaml), in project acme-rl`)

	stack("mine", "acme-rl-2", "smoke") // another project: its own principals
	code, errOut = planIn("mine")
	assert.Equal(t, cmd.ExitOK, code, errOut)
	stack("mine", "acme-rl", "smoke-2")
	code, errOut = planIn("mine")
	assert.Equal(t, cmd.ExitOK, code, errOut)
	stack("smoke", "your-project-id", "gke-rl-smoke") // the shipped file, still a placeholder
	stack("mine", "your-project-id", "smoke")
	code, errOut = planIn("mine")
	assert.Equal(t, cmd.ExitOK, code, errOut)
}
