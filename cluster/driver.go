package cluster

import "strings"

// The NVIDIA driver GKE installs on the GPU nodes (`gpu.driverVersion`): the node pool's
// gpuDriverInstallationConfig.gpuDriverVersion on Standard, the pods' node selector
// cloud.google.com/gke-gpu-driver-version on Autopilot, each DEFAULT when not said otherwise.
// LATEST is Container-Optimized OS only (the GKE API's GPUDriverVersion enum), the image the
// program's pools run.
const (
	DriverDefault = "default"
	DriverLatest  = "latest"
)

// DriverVersions are the allowed values of `gpu.driverVersion`.
var DriverVersions = []string{DriverDefault, DriverLatest}

// LatestDriverBranch is the NVIDIA driver branch GKE's LATEST installs on Container-Optimized
// OS from GKE 1.31 on, and DefaultDriverBranch the branch its DEFAULT installs there: R580 and
// R535 (testdata/recorded/gke-gpu-drivers.json holds the records, and a test holds these to
// them). An image built on CUDA 13 needs R580 (CUDA's minor-version compatibility), which only
// LATEST gives.
const (
	LatestDriverBranch  = 580
	DefaultDriverBranch = 535
)

// driverVersionAPI is the value of the node pool's gpuDriverVersion for `gpu.driverVersion`.
func driverVersionAPI(v string) string {
	if v == "" {
		v = DriverDefault
	}
	return strings.ToUpper(v)
}
