package infra_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/cluster"
	"gke-rl/internal/kinds"
	"gke-rl/test/plantest"
	"gke-rl/workloads"
)

// driverOf is what the GPU pool asks GKE to install, as the node pool's input says it.
func driverOf(t *testing.T, overrides ...string) any {
	t.Helper()
	pool := plantest.Plan(t, "b200-spot", overrides...).Find("gcp:container/nodePool:NodePool", "cluster-gpu")
	return plantest.Input(t, pool, "nodeConfig.guestAccelerators.0.gpuDriverInstallationConfig.gpuDriverVersion")
}

// The GPU pool asks for GKE's LATEST driver exactly when an image a run of the stack takes from
// its release needs a newer branch than DEFAULT installs (NeMo RL v0.7.0's CUDA 13.2), whichever
// run it is, stopped ones too; a stack of CUDA 12 images, and an image of the user's, keep
// DEFAULT, and the key says otherwise either way.
func TestTheGPUPoolAsksForTheDriverItsImagesNeed(t *testing.T) {
	assert.Equal(t, "LATEST", driverOf(t), "b200-spot runs NeMo RL v0.7.0")
	assert.Equal(t, "DEFAULT", driverOf(t, "job.frameworkRelease=v0.5.0"))
	assert.Equal(t, "LATEST", driverOf(t, "job.frameworkRelease=v0.5.0", "gpu.driverVersion=latest"), "asked for")
	assert.Equal(t, "DEFAULT", driverOf(t, "ray.image=acme/rl:1.0@sha256:"+strings.Repeat("ab", 32), "ray.version=2.55.1"), "an image of the user's: its driver is theirs to ask for")
	assert.Equal(t, cluster.DriverDefault, plantest.Resolve(t, "h200-reserved").Cluster.GPUPool.DriverVersion, "verl v0.6.0 is a CUDA 12 image")
	assert.Equal(t, cluster.DriverDefault, plantest.Resolve(t, "smoke").Cluster.GPUPool.DriverVersion)

	queue := func(overrides ...string) string {
		return plantest.Queued(t, append([]string{"framework=nemo-rl", "job.dataset=DeepScaler", "jobs.a.frameworkRelease=v0.5.0"}, overrides...)...).Blueprint.Cluster.GPUPool.DriverVersion
	}
	assert.Equal(t, cluster.DriverLatest, queue("jobs.b.maxSteps=4"), "b takes the default, v0.7.0")
	assert.Equal(t, cluster.DriverDefault, queue("jobs.b.frameworkRelease=v0.5.0"))
	assert.Equal(t, cluster.DriverLatest, queue("jobs.b.enabled=false"), "stopping b leaves the pool's nodes as they are")
}

// On Autopilot the workers ask for the driver with a node selector; absent, Autopilot installs
// DEFAULT.
func TestAutopilotGPUPodsAskForTheLatestDriverByLabel(t *testing.T) {
	selector := func(overrides ...string) map[string]string {
		return plantest.Resolve(t, "b200-spot", append([]string{"cluster.mode=autopilot", "storage.type=gcsfuse"}, overrides...)...).WorkerSelector
	}
	assert.Equal(t, "latest", selector()["cloud.google.com/gke-gpu-driver-version"])
	assert.NotContains(t, selector("job.frameworkRelease=v0.5.0"), "cloud.google.com/gke-gpu-driver-version")
}

// Every release's image runs on GKE's LATEST driver: a release needing more could run nowhere.
func TestEveryReleaseRunsOnGKEsLatestDriver(t *testing.T) {
	for _, f := range kinds.Frameworks {
		for _, tag := range workloads.ReleaseTags(f) {
			assert.LessOrEqual(t, workloads.ReleaseOf(f, tag).DriverBranch, cluster.LatestDriverBranch, "%s %s", f, tag)
		}
	}
}
