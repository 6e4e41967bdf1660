package infra

import (
	"fmt"
	"regexp"
	"strings"

	"gke-rl/internal/kinds"
)

// Limits that validation enforces.
const (
	// MaxGPUNodes bounds gpu.nodes: beyond this a typo is likelier than a real request.
	MaxGPUNodes = 256
	minMTU      = 1300
	maxMTU      = 8896
	minPSA      = 8
	maxPSA      = 24
)

var (
	projectIDPattern = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	zonePattern      = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+-[a-z]$`)
	regionPattern    = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)
	// A reservation of the project, `<name>[/reservationBlocks/<block>]`, or one shared with it by
	// another project, by its full name `projects/<owner>/reservations/<name>[/...]`: the form a
	// GKE node pool's reservation affinity takes for a shared reservation (Cluster Toolkit
	// modules/compute/gke-node-pool/reservation_definitions.tf at v1.95.0 builds it so).
	reservationPattern = regexp.MustCompile(`^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?(/reservationBlocks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?)?$`)
	filesystemPattern  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]{0,7}$`)
	bucketPattern      = regexp.MustCompile(`^[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]$`)
	semverPattern      = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	imagePattern       = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$`)
	machineTypePattern = regexp.MustCompile(`^[a-z][a-z0-9]*-[a-z]+-[0-9]+[a-z0-9-]*$`)
	// A user-managed service account: an account ID (6 to 30 characters) at a project's
	// iam.gserviceaccount.com domain (IAM's service account email format).
	serviceAccountPattern = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]@[a-z][-a-z0-9.:]{4,61}[a-z0-9]\.iam\.gserviceaccount\.com$`)
	modelPattern          = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	overridePattern       = regexp.MustCompile(`^\+{0,2}[A-Za-z_][A-Za-z0-9_.\[\]-]*=.*$`)
	releaseChannels       = []string{"RAPID", "REGULAR", "STABLE", "EXTENDED"}
	// reservedMountPaths are directories a container image needs for itself.
	reservedMountPaths = []string{"/", "/bin", "/dev", "/dev/shm", "/etc", "/lib", "/lib64", "/proc", "/sbin", "/sys", "/tmp", "/usr", "/usr/local/nvidia", "/usr/local/gib", "/var"}
)

// validate checks c and records every problem in errs.
func validate(c *Config, errs *Errors) {
	validateLocation(c, errs)
	validateCluster(c, errs)
	if !errs.Has("cluster.name") {
		validateSiblings(c, errs)
	}
	spec, gpuOK := validateGPU(c, errs)
	if gpuOK && !errs.Has(KeyZone) && !errs.Has(KeyGCPRegion) {
		if refusal := zoneVerdict(c, spec).Refusal; refusal != "" {
			errs.Add(KeyZone, "%s (gpu.type %s)", refusal, c.GPU.Type)
		}
	}
	validateNetwork(c, spec, gpuOK, errs)
	validateStorage(c, errs)
	validateFramework(c, errs)
	validateJob(c, errs)
	validateGate(c.Gate, errs)
	if gpuOK && c.GPU.Nodes >= 1 && c.GPU.Nodes <= MaxGPUNodes {
		validateGateBound(c, spec, errs)
	}
	validateMonitoring(c, errs)
}

// oneOf records an error unless value is one of allowed, and reports whether it is.
func oneOf[T ~string](errs *Errors, key string, value T, allowed []T) bool {
	if kinds.Is(string(value), allowed) {
		return true
	}
	errs.Add(key, "%s is not allowed; allowed: %s", quote(string(value)), kinds.List(allowed))
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}

func nearest(below, above int) string {
	switch {
	case below == 0:
		return fmt.Sprint(above)
	case above == 0:
		return fmt.Sprint(below)
	default:
		return fmt.Sprintf("%d or %d", below, above)
	}
}

func orUnset(s string) string {
	if s == "" {
		return "the GPU zone"
	}
	return s
}
