package workloads_test

import (
	"path"
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// verl runs from the checkout on the shared volume: its launch ships the checked package, has the
// submitter check it first, and prepares the data with the checked scripts. NeMo RL runs the
// image's own code: nothing of the volume is imported, nothing to check.
func TestEachFrameworkLaunchesItsOwnWay(t *testing.T) {
	r := run()
	verl := workloads.LaunchOf(kinds.Verl, r)
	release := workloads.DefaultRelease(kinds.Verl)
	pkg := path.Join(r.Layout.VerlSource(release.Tag), workloads.VerlPackageDir)
	assert.Equal(t, workloads.VerlEntrypoint(r), verl.Entrypoint)
	assert.Equal(t, []string{pkg}, verl.RuntimeEnv.PyModules)
	assert.Equal(t, workloads.PinnedTree{Dir: pkg, Tree: release.Source.PackageTree}, verl.Verify, "the package shipped is the package checked")
	assert.Equal(t, workloads.VerlPrepSteps(r), verl.PrepSteps)
	env := map[string]string{}
	for _, e := range verl.PrepEnv {
		env[e.Name] = e.Value
	}
	assert.Equal(t, map[string]string{workloads.VerifiedPythonPathEnv: r.Layout.VerlSource(release.Tag), "PYTHONDONTWRITEBYTECODE": "1"}, env)

	nemo := workloads.LaunchOf(kinds.NeMoRL, r)
	assert.Equal(t, workloads.NeMoRLEntrypoint(r), nemo.Entrypoint)
	assert.Equal(t, workloads.NeMoRLPrepSteps(r), nemo.PrepSteps)
	assert.Zero(t, nemo.Verify)
	assert.Zero(t, nemo.RuntimeEnv)
	assert.Empty(t, nemo.PrepEnv)
}
