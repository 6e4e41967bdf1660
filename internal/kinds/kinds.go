// Package kinds holds the program's enumerations: the allowed values of the selector config keys
// (`cluster.mode`, `gpu.provisioning`, `storage.type`, `framework`) and the run mode derived from
// them. They are defined here once and used by the config, its validation, the Blueprint and the
// component packages alike, so a value never travels as an untyped string.
package kinds

import "strings"

// Mode is GKE's mode of operation (`cluster.mode`).
type Mode string

// The cluster modes.
const (
	Standard  Mode = "standard"
	Autopilot Mode = "autopilot"
)

// Modes are the allowed `cluster.mode` values.
var Modes = []Mode{Standard, Autopilot}

// Provisioning is how the GPU capacity is obtained (`gpu.provisioning`).
type Provisioning string

// The provisioning models, with what GCP requires of each (Cluster Toolkit's preconditions,
// modules/compute/gke-node-pool/variables.tf): spot takes no reservation; a reservation is
// consumed by name; flex-start is neither spot nor reserved, has auto-repair off and no static
// node count.
const (
	Spot        Provisioning = "spot"
	Reservation Provisioning = "reservation"
	FlexStart   Provisioning = "flex-start"
	OnDemand    Provisioning = "on-demand"
)

// Provisionings are the allowed `gpu.provisioning` values.
var Provisionings = []Provisioning{Spot, Reservation, FlexStart, OnDemand}

// Preemptible reports whether capacity of this model can be taken away mid-run, so that a run on
// it must be able to retry on a fresh Ray cluster.
func (p Provisioning) Preemptible() bool { return p == Spot || p == FlexStart }

// StorageType is the shared storage (`storage.type`).
type StorageType string

// The storage types.
const (
	Lustre  StorageType = "lustre"
	GCSFuse StorageType = "gcsfuse"
)

// StorageTypes are the allowed `storage.type` values.
var StorageTypes = []StorageType{Lustre, GCSFuse}

// Framework is the GRPO training framework (`framework`).
type Framework string

// The frameworks.
const (
	NeMoRL Framework = "nemo-rl"
	Verl   Framework = "verl"
)

// Frameworks are the allowed `framework` values.
var Frameworks = []Framework{NeMoRL, Verl}

// RunMode is how the training run meets its Ray cluster, derived from `job.enabled` and
// `gpu.provisioning`.
type RunMode string

// The run modes.
const (
	// OwnCluster: the RayJob carries its own RayCluster spec. On spot and flex-start capacity a
	// preemption then costs one retry on a fresh cluster that resumes from the newest checkpoint.
	OwnCluster RunMode = "own-cluster"
	// SharedCluster: the RayJob runs on the long-lived RayCluster (reserved, on-demand capacity).
	SharedCluster RunMode = "shared-cluster"
	// ClusterOnly: `job.enabled=false`, a long-lived RayCluster for interactive `ray job submit`.
	ClusterOnly RunMode = "cluster-only"
)

// RunModeOf is the run mode of a stack.
func RunModeOf(jobEnabled bool, p Provisioning) RunMode {
	switch {
	case !jobEnabled:
		return ClusterOnly
	case p.Preemptible():
		return OwnCluster
	default:
		return SharedCluster
	}
}

// HasLongLivedCluster reports whether the stack keeps a RayCluster between runs.
func (m RunMode) HasLongLivedCluster() bool { return m != OwnCluster }

// HasJob reports whether the stack runs a training job.
func (m RunMode) HasJob() bool { return m != ClusterOnly }

// Is reports whether value is one of allowed.
func Is[T ~string](value string, allowed []T) bool {
	for _, a := range allowed {
		if string(a) == value {
			return true
		}
	}
	return false
}

// List renders allowed values for an error message: "standard, autopilot".
func List[T ~string](allowed []T) string {
	parts := make([]string, len(allowed))
	for i, a := range allowed {
		parts[i] = string(a)
	}
	return strings.Join(parts, ", ")
}
