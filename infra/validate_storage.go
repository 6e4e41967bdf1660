package infra

import (
	"path"
	"strings"

	"gke-rl/internal/kinds"
)

// The checks of the shared storage.

func validateStorage(c *Config, errs *Errors) {
	s := c.Storage
	if !oneOf(errs, "storage.type", s.Type, kinds.StorageTypes) {
		return
	}
	switch s.Type {
	case kinds.Lustre:
		tier, ok := LookupLustreTier(s.Throughput)
		if !ok {
			errs.Add("storage.throughput", "%d is not a Managed Lustre tier; allowed: %s (MB/s per TiB)", s.Throughput, joinInts(LustreThroughputs()))
		} else if !tier.Fits(s.CapacityGiB) {
			below, above := tier.Nearest(s.CapacityGiB)
			errs.Add("storage.capacityGib", "%d does not fit the %d MB/s/TiB tier (%s); nearest valid sizes: %s", s.CapacityGiB, s.Throughput, tier.rule(), nearest(below, above))
		}
		if !filesystemPattern.MatchString(s.Filesystem) {
			errs.Add("storage.filesystem", "%s is not a Lustre filesystem name; allowed: 1 to 8 letters or digits, starting with a letter", quote(s.Filesystem))
		}
	case kinds.GCSFuse:
		validateBucket(s.Bucket, errs)
	}
	// Managed Lustre's client loads on Secure Boot nodes of GPU machine types only, and Autopilot
	// boots every node with Secure Boot ("Connect to an existing Managed Lustre instance from
	// Google Kubernetes Engine", Limitations): the Ray head and the data preparation, which mount
	// the volume on CPU nodes, would never start.
	if s.Type == kinds.Lustre && c.Cluster.Mode == kinds.Autopilot {
		errs.Add("storage.type", "lustre is not allowed with cluster.mode=autopilot: Autopilot boots its nodes with Secure Boot, where Managed Lustre's client loads on GPU machine types only, and the Ray head and the data preparation mount the volume on CPU nodes; allowed: storage.type=gcsfuse with autopilot, or cluster.mode=standard with lustre")
	}
	if s.CheckpointBudgetSeconds < 1 {
		errs.Add("storage.checkpointBudgetSeconds", "%d is not a budget; allowed: seconds, 1 or more", s.CheckpointBudgetSeconds)
	}
	clean := path.Clean(s.MountPath)
	switch {
	case !path.IsAbs(s.MountPath) || clean != s.MountPath:
		errs.Add("storage.mountPath", "%s is not a clean absolute path like /data", quote(s.MountPath))
	case contains(reservedMountPaths, clean):
		errs.Add("storage.mountPath", "%s is a system directory of the container; allowed: a directory of its own such as /data", quote(s.MountPath))
	}
}

// validateBucket applies Cloud Storage's bucket naming rules.
func validateBucket(name string, errs *Errors) {
	switch {
	case !bucketPattern.MatchString(name):
		errs.Add("storage.bucket", "%s is not a bucket name; allowed: 3 to 63 lowercase letters, digits, hyphens, underscores or dots, starting and ending with a letter or digit", quote(name))
	case strings.HasPrefix(name, "goog") || strings.Contains(name, "google"):
		errs.Add("storage.bucket", "%s is not allowed: bucket names cannot start with \"goog\" or contain \"google\"", quote(name))
	case strings.Contains(name, ".."):
		errs.Add("storage.bucket", "%s has consecutive dots, which bucket names cannot have", quote(name))
	}
}
