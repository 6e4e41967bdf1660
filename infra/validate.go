package infra

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"gke-rl/cluster"
	"gke-rl/gate"
	"gke-rl/internal/kinds"
	"gke-rl/internal/naming"
	"gke-rl/internal/offers"
	"gke-rl/internal/words"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
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

func validateLocation(c *Config, errs *Errors) {
	switch {
	case c.Project == "":
		errs.Add(KeyGCPProject, "is required: `pulumi config set gcp:project <your-project-id>`")
	case !projectIDPattern.MatchString(c.Project):
		errs.Add(KeyGCPProject, "%s is not a project ID: 6 to 30 lowercase letters, digits or hyphens, starting with a letter", quote(c.Project))
	}
	regionOK := false
	switch {
	case c.Region == "":
		errs.Add(KeyGCPRegion, "is required: `pulumi config set gcp:region us-east1`")
	case !regionPattern.MatchString(c.Region):
		errs.Add(KeyGCPRegion, "%s is not a region like us-east1 (a zone such as us-east1-b goes in `zone`)", quote(c.Region))
	default:
		regionOK = true
	}
	switch {
	case c.Zone == "":
		errs.Add(KeyZone, "is required: the zone of the GPU capacity, e.g. `pulumi config set zone us-east1-b`")
	case !zonePattern.MatchString(c.Zone):
		errs.Add(KeyZone, "%s is not a zone like us-east1-b", quote(c.Zone))
	case regionOK && !strings.HasPrefix(c.Zone, c.Region+"-"):
		errs.Add(KeyZone, "%s is not in gcp:region %s; allowed: a zone of %s such as %s-b", quote(c.Zone), c.Region, c.Region, c.Region)
	}
}

// zoneVerdict is what the zone tables say of the stack's zone for its GPU's machine type. A
// reservation's zone is where Google put the capacity, which a public machine type list may not
// show (zones reached through reservations only): there a refusal becomes a warning.
func zoneVerdict(c *Config, spec GPUSpec) offers.Verdict {
	v := offers.Check(spec.MachineType, c.Region, c.Zone)
	if v.Refusal != "" && c.GPU.Provisioning == kinds.Reservation {
		return offers.Verdict{Warning: v.Refusal + "; with gpu.provisioning=reservation this is only a warning: a reservation can hold capacity in a zone that the public lists do not show, and gpu.reservation must be in this zone"}
	}
	return v
}

func validateCluster(c *Config, errs *Errors) {
	name := c.Cluster.Name
	switch {
	case len(name) > naming.MaxClusterNameLength:
		errs.Add("cluster.name", "%s has %d characters; GKE allows at most %d", quote(name), len(name), naming.MaxClusterNameLength)
	case !naming.IsDNSLabel(name):
		errs.Add("cluster.name", "%s is not a DNS label: lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen", quote(name))
	}
	oneOf(errs, "cluster.mode", c.Cluster.Mode, kinds.Modes)
	for _, sa := range []struct{ key, email string }{
		{"cluster.nodeServiceAccount", c.Cluster.NodeServiceAccount},
		{"cluster.previewServiceAccount", c.Cluster.PreviewServiceAccount},
		{"cluster.deployServiceAccount", c.Cluster.DeployServiceAccount},
	} {
		if key, email := sa.key, sa.email; email != "" && !serviceAccountPattern.MatchString(email) {
			errs.Add(key, "%s is not the email of a service account of a project; allowed: <name>@<project>.iam.gserviceaccount.com (the default Compute Engine account is refused: it holds Editor on the project)", quote(email))
		}
	}
	if sa := c.Cluster.DeployServiceAccount; sa != "" && sa == c.Cluster.PreviewServiceAccount {
		errs.Add("cluster.deployServiceAccount", "%s is also cluster.previewServiceAccount, whose admission policy lets it only dry-run in the cluster; allowed: an identity of its own", quote(sa))
	}
	if !machineTypePattern.MatchString(c.Cluster.CPUMachineType) {
		errs.Add("cluster.cpuMachineType", "%s is not a machine type like n2-standard-16", quote(c.Cluster.CPUMachineType))
	}
	oneOf(errs, "cluster.releaseChannel", c.Cluster.ReleaseChannel, releaseChannels)
	if len(c.Cluster.AuthorizedNetworks) == 0 {
		errs.Add("cluster.authorizedNetworks", "is required: the CIDRs allowed to reach the control plane, e.g. your workstation's /32 (`curl -4 -s ifconfig.me`)")
	}
	seen := map[netip.Prefix]int{}
	for i, cidr := range c.Cluster.AuthorizedNetworks {
		key := fmt.Sprintf("cluster.authorizedNetworks[%d]", i)
		p, err := parseCIDR(cidr)
		first, dup := seen[p]
		if err == nil && !dup {
			seen[p] = i
		}
		switch {
		case err != nil:
			errs.Add(key, "%s %v", quote(cidr), err)
		case dup:
			// A block listed twice is an entry edited in the wrong place, not a second network.
			errs.Add(key, "%s is cluster.authorizedNetworks[%d] again; allowed: each block once", quote(cidr), first)
		case p.Bits() < minAuthorizedPrefix:
			// The authorized networks are the only gate in front of the public endpoint
			// (gcpPublicCidrsAccessEnabled is off): a /0 or any prefix shorter than /8 opens
			// the control plane to the internet.
			errs.Add(key, "%s opens the control plane to a large part of the internet; allowed: a prefix of /%d or longer, e.g. your workstation's /32", quote(cidr), minAuthorizedPrefix)
		}
	}
	if !hhmmPattern.MatchString(c.Cluster.MaintenanceStart) {
		errs.Add("cluster.maintenanceStart", "%s is not a time of day; allowed: HH:MM in UTC, e.g. 03:00", quote(c.Cluster.MaintenanceStart))
	}
	from, errFrom := time.Parse(time.RFC3339, c.Cluster.NoUpgradesFrom)
	if errFrom != nil {
		errs.Add("cluster.noUpgradesFrom", "%s is not an RFC 3339 time; allowed: e.g. 2026-11-01T00:00:00Z", quote(c.Cluster.NoUpgradesFrom))
	}
	if c.Cluster.NoUpgradesUntil != NoUpgradesNone {
		until, err := time.Parse(time.RFC3339, c.Cluster.NoUpgradesUntil)
		switch {
		case err != nil:
			errs.Add("cluster.noUpgradesUntil", "%s is not an RFC 3339 time; allowed: e.g. 2027-04-10T00:00:00Z, or none for no exclusion", quote(c.Cluster.NoUpgradesUntil))
		case errFrom == nil && !until.After(from):
			errs.Add("cluster.noUpgradesUntil", "%s is not after cluster.noUpgradesFrom (%s); allowed: a later time, or none", quote(c.Cluster.NoUpgradesUntil), c.Cluster.NoUpgradesFrom)
		case c.Cluster.ReleaseChannel != "EXTENDED" && until.After(cluster.LatestSupportEnd().Ends):
			latest := cluster.LatestSupportEnd()
			errs.Add("cluster.noUpgradesUntil", "%s ends after the end of standard support of every GKE minor version the %s channel creates clusters on (%s: %s), "+
				"which GKE refuses for an exclusion of minor and node upgrades; allowed: up to %s, or none",
				quote(c.Cluster.NoUpgradesUntil), c.Cluster.ReleaseChannel, latest.Minor, latest.Ends.Format(time.DateOnly), latest.Ends.Format(time.RFC3339))
		}
	}
}

// NoUpgradesNone as `cluster.noUpgradesUntil` leaves GKE free to upgrade the cluster.
const NoUpgradesNone = "none"

// minAuthorizedPrefix is the shortest authorized network accepted.
const minAuthorizedPrefix = 8

var hhmmPattern = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

func validateGPU(c *Config, errs *Errors) (GPUSpec, bool) {
	spec, ok := LookupGPU(c.GPU.Type)
	if !ok {
		errs.Add("gpu.type", "%s is not a supported GPU; allowed: %s", quote(c.GPU.Type), strings.Join(GPUTypes(), ", "))
	}
	nodesValid := c.GPU.Nodes >= 1 && c.GPU.Nodes <= MaxGPUNodes
	if !nodesValid {
		errs.Add("gpu.nodes", "%d is out of range; allowed: 1 to %d nodes", c.GPU.Nodes, MaxGPUNodes)
	}
	if c.GPU.MinNodes < 0 || c.GPU.MinNodes > c.GPU.Nodes {
		errs.Add("gpu.minNodes", "%d is out of range; allowed: 0 to gpu.nodes (%d)", c.GPU.MinNodes, c.GPU.Nodes)
	}
	// Unset, gpu.maxNodes is gpu.nodes: an out-of-range gpu.nodes is the one problem to name.
	if (nodesValid || c.explicit["gpu.maxNodes"]) && (c.GPU.MaxNodes < c.GPU.Nodes || c.GPU.MaxNodes > MaxGPUNodes) {
		errs.Add("gpu.maxNodes", "%d is out of range; allowed: gpu.nodes (%d) to %d", c.GPU.MaxNodes, c.GPU.Nodes, MaxGPUNodes)
	}
	if oneOf(errs, "gpu.provisioning", c.GPU.Provisioning, kinds.Provisionings) {
		if ok && spec.Provisionings != nil && !slices.Contains(spec.Provisionings, c.GPU.Provisioning) {
			allowed := make([]string, len(spec.Provisionings))
			for i, p := range spec.Provisionings {
				allowed[i] = string(p)
			}
			errs.Add("gpu.provisioning", "%s is not offered for %s (gpu.type %s): Compute Engine's consumption options for it are %s; allowed: %s",
				c.GPU.Provisioning, spec.MachineType, spec.Type, strings.Join(allowed, ", "), strings.Join(allowed, ", "))
		}
		validateProvisioning(c, errs)
		validatePlacement(c, errs)
	}
	return spec, ok
}

// validateProvisioning applies Cluster Toolkit's preconditions on GPU capacity.
func validateProvisioning(c *Config, errs *Errors) {
	res := c.GPU.Reservation
	switch c.GPU.Provisioning {
	case kinds.Reservation:
		switch {
		case res == "":
			errs.Add("gpu.reservation", "is required with gpu.provisioning=reservation: the name of a reservation in %s (or <name>/reservationBlocks/<block>, or projects/<owner>/reservations/<name> for one shared with this project)", orUnset(c.Zone))
		case !reservationPattern.MatchString(res):
			errs.Add("gpu.reservation", "%s is not a reservation name; allowed: <name> or <name>/reservationBlocks/<block> (lowercase DNS labels), either after projects/<owner project ID>/reservations/ for a reservation shared by another project", quote(res))
		}
	default:
		if res != "" {
			errs.Add("gpu.reservation", "%s is set but gpu.provisioning is %s; a reservation is used only with gpu.provisioning=reservation", quote(res), c.GPU.Provisioning)
		}
	}
}

// Compact placement's rules (Cluster Toolkit's modules/compute/gke-node-pool preconditions and
// GKE's compact placement guide): a single zone, which the program's pools always are; a node
// pool, so not Autopilot; not with a specific reservation, whose blocks decide placement; with
// flex-start only on A3 Ultra, A4 and H4D machines, which both GPU types are.
func validatePlacement(c *Config, errs *Errors) {
	switch {
	case c.GPU.Placement == "":
	case c.GPU.Placement != PlacementCompact:
		errs.Add("gpu.placement", "%s is not a placement; allowed: compact, or empty for none", quote(c.GPU.Placement))
	case c.GPU.Provisioning == kinds.Reservation:
		errs.Add("gpu.placement", "compact is not allowed with gpu.provisioning=reservation: the reservation's blocks decide placement; allowed with spot, flex-start, on-demand")
	case c.Cluster.Mode == kinds.Autopilot:
		errs.Add("gpu.placement", "compact applies to a node pool, which Autopilot does not have; allowed with cluster.mode=standard")
	}
}

// PlacementCompact is the `gpu.placement` value of a compact placement policy.
const PlacementCompact = "compact"

func validateNetwork(c *Config, spec GPUSpec, gpuOK bool, errs *Errors) {
	n := c.Network
	ranges := []struct {
		key, value string
	}{
		{"network.nodeCidr", n.NodeCIDR},
		{"network.podCidr", n.PodCIDR},
		{"network.serviceCidr", n.ServiceCIDR},
		{"network.gvnicCidr", n.GVNICCIDR},
		{"network.rdmaCidr", n.RDMACIDR},
	}
	parsed := make([]netip.Prefix, len(ranges))
	valid := make([]bool, len(ranges))
	for i, r := range ranges {
		p, err := parseCIDR(r.value)
		if err != nil {
			errs.Add(r.key, "%s %v", quote(r.value), err)
			continue
		}
		if !p.Addr().IsPrivate() && !cgnat.Overlaps(p) {
			errs.Add(r.key, "%s is not a private range; allowed: inside 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10", quote(r.value))
			continue
		}
		parsed[i], valid[i] = p, true
	}
	// Every node has an interface in each range, so no two may overlap.
	for i := range ranges {
		for j := i + 1; j < len(ranges); j++ {
			if valid[i] && valid[j] && parsed[i].Overlaps(parsed[j]) {
				errs.Add(ranges[j].key, "%s overlaps %s %s; the ranges must be disjoint", quote(ranges[j].value), ranges[i].key, ranges[i].value)
			}
		}
	}
	if gpuOK && n.RDMASubnets != spec.RDMANICs {
		errs.Add("network.rdmaSubnets", "%d does not match the %d RDMA NICs of a %s node; allowed: %d (one subnet per NIC)", n.RDMASubnets, spec.RDMANICs, spec.MachineType, spec.RDMANICs)
	} else if valid[4] && n.RDMASubnets >= 1 {
		subnets, err := SplitCIDR(parsed[4], n.RDMASubnets)
		switch {
		case err != nil:
			errs.Add("network.rdmaCidr", "%s %v", quote(n.RDMACIDR), err)
		case UsableAddresses(subnets[0]) < c.GPU.Nodes:
			errs.Add("network.rdmaCidr", "%s gives %d subnets of /%d with %d usable addresses each, fewer than gpu.nodes=%d; use a larger range", quote(n.RDMACIDR), n.RDMASubnets, subnets[0].Bits(), UsableAddresses(subnets[0]), c.GPU.Nodes)
		}
	}
	if valid[3] && UsableAddresses(parsed[3]) < c.GPU.Nodes {
		errs.Add("network.gvnicCidr", "%s holds %d node addresses, fewer than gpu.nodes=%d", quote(n.GVNICCIDR), UsableAddresses(parsed[3]), c.GPU.Nodes)
	}
	if n.MTU < minMTU || n.MTU > maxMTU {
		errs.Add("network.mtu", "%d is out of range; allowed: %d to %d (8896 for RDMA)", n.MTU, minMTU, maxMTU)
	}
	if n.PSAPrefixLength < minPSA || n.PSAPrefixLength > maxPSA {
		errs.Add("network.psaPrefixLength", "%d is out of range; allowed: %d to %d (20 recommended for Managed Lustre)", n.PSAPrefixLength, minPSA, maxPSA)
	}
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

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

func validateFramework(c *Config, errs *Errors) {
	oneOf(errs, KeyFramework, c.Framework, kinds.Frameworks)
	if c.Ray.Version != "" && !semverPattern.MatchString(c.Ray.Version) {
		errs.Add("ray.version", "%s is not a Ray version like 2.49.2", quote(c.Ray.Version))
	}
	// KubeRay reads rayVersion to choose what it asks of the image's Ray: it must be the
	// version inside the image.
	if release, ok := workloads.Releases[c.Framework]; ok && c.Ray.Version != "" && c.Ray.Image == "" && c.Ray.Version != release.RayVersion {
		errs.Add("ray.version", "%s is not the Ray of the framework's pinned image %s (%s); allowed: %s, or set ray.image to an image that carries Ray %s",
			quote(c.Ray.Version), release.Image, release.RayVersion, release.RayVersion, c.Ray.Version)
	}
	if img := c.Ray.Image; img != "" {
		switch {
		case !imagePattern.MatchString(img):
			errs.Add("ray.image", "%s is not an image reference like registry/repository:tag", quote(img))
		case !strings.Contains(img[strings.LastIndex(img, "/")+1:], ":") && !strings.Contains(img, "@"):
			errs.Add("ray.image", "%s has no tag; pin a tag or a digest so that every node runs the same code", quote(img))
		case strings.HasSuffix(img, ":latest"):
			errs.Add("ray.image", "%s uses the moving tag latest; pin a version tag or a digest", quote(img))
		}
	}
}

func validateJob(c *Config, errs *Errors) {
	j := c.Job
	if !modelPattern.MatchString(j.Model) {
		errs.Add("job.model", "%s is not a Hugging Face model ID like Qwen/Qwen2.5-32B-Instruct", quote(j.Model))
	}
	if size, ok := ParseModelSize(j.ModelSize); j.ModelSize != "" && !ok {
		errs.Add("job.modelSize", "%s is not a parameter count; allowed: a number with B or M, e.g. 72B, 1.5B, 500M", quote(j.ModelSize))
	} else if m := modelSizePattern.FindStringSubmatch(j.Model); ok && m != nil {
		// The size sizes verl's batches and the checkpoint estimate: two sizes cannot both hold.
		if named, _ := sizeValue(m[1], m[2]); named != size {
			errs.Add("job.modelSize", "%s contradicts job.model %s, whose name says %s%s; allowed: remove job.modelSize (it is read from the name), or the size the name says",
				quote(j.ModelSize), quote(j.Model), m[1], strings.ToUpper(m[2]))
		}
	}
	if why, gated := workloads.GatedModels[j.Model]; gated && j.Enabled && !c.Tokens.HuggingFace {
		errs.Add("job.model", "%s is gated on the Hugging Face Hub (%s): its download needs the token of an account granted access, and the data preparation would fail in the cluster; allowed: `pulumi config set --path tokens.huggingFace true` and its value (README, Tokens), or a model that is not gated",
			quote(j.Model), why)
	}
	if strings.TrimSpace(j.Dataset) == "" {
		errs.Add("job.dataset", "is empty; allowed: a dataset name such as DeepScaler (nemo-rl) or gsm8k (verl)")
	}
	validateRevisions(c, errs)
	validateExperiment(c, errs)
	tuning := workloads.CheckTuning(c.Framework, c.Job.Tuning)
	for _, k := range slices.Sorted(maps.Keys(tuning)) {
		errs.Add(k, "%s", tuning[k])
	}
	positive := []struct {
		key   string
		value int
		set   bool
	}{
		{"job.maxSteps", j.MaxSteps, c.explicit["job.maxSteps"]},
		{"job.epochs", j.Epochs, c.explicit["job.epochs"]},
		{"job.promptsPerStep", j.PromptsPerStep, true},
		{"job.generationsPerPrompt", j.GenerationsPerPrompt, true},
		{"job.checkpointPeriod", j.CheckpointPeriod, true},
		{"job.keepCheckpoints", j.KeepCheckpoints, true},
	}
	for _, p := range positive {
		if p.set && p.value <= 0 {
			errs.Add(p.key, "%d is not allowed; allowed: a whole number greater than 0", p.value)
		}
	}
	if c.Framework == kinds.Verl && j.KeepCheckpoints == 1 {
		// verl removes the oldest save before it writes the next (v0.6.0,
		// verl/utils/checkpoint/fsdp_checkpoint_manager.py save_checkpoint: the
		// max_ckpt_to_keep rotation comes first): with one kept, a preemption during a save
		// leaves no complete checkpoint, and the run starts again from step 0.
		errs.Add("job.keepCheckpoints", "1 with verl can lose the run: verl removes its only checkpoint before it writes the next, so a preemption during that save leaves none and the run starts from step 0; allowed: 2 or more")
	}
	if j.GenerationsPerPrompt == 1 {
		// verl v0.6.0 verl/trainer/ppo/core_algos.py compute_grpo_outcome_advantage: a group of
		// one gets mean 0 and std 1, so its advantage is its raw reward.
		errs.Add("job.generationsPerPrompt", "1 leaves GRPO no group to compare a generation with (its advantage becomes the raw reward); allowed: 2 or more")
	}
	validateJobBounds(c, errs)
	managed := workloads.ManagedKeys(c.Framework)
	seen := map[string]int{}
	for i, arg := range j.Args {
		key := fmt.Sprintf("job.args[%d]", i)
		switch {
		case !overridePattern.MatchString(arg):
			errs.Add(key, "%s is not a framework override; allowed: key=value, e.g. policy.max_total_sequence_length=4096", quote(arg))
		case managed[workloads.OverrideKey(arg)].Key != "":
			errs.Add(key, "%s sets %s, which the program sets; %s", quote(arg), workloads.OverrideKey(arg), workloads.SetterOf(managed[workloads.OverrideKey(arg)]))
		default:
			k := workloads.OverrideKey(arg)
			if first, dup := seen[k]; dup {
				// Both frameworks apply overrides in order: the first value would be dropped silently.
				errs.Add(key, "%s sets %s again (job.args[%d] sets it first), and only the last value would count; allowed: each key once", quote(arg), k, first)
			} else {
				seen[k] = i
			}
		}
	}
	for _, p := range workloads.CheckArgs(c.Framework, j.Recipe, j.Args) {
		if !errs.Has(p.Origin) {
			errs.Add(p.Origin, "%s", p.Message)
		}
	}
	if c.Framework == kinds.NeMoRL && !slices.Contains(workloads.NeMoRLDatasets, j.Dataset) {
		errs.Add("job.dataset", "%s is not a dataset that NeMo RL %s's math GRPO example loads (load_response_dataset); allowed with framework nemo-rl: %s", quote(j.Dataset), workloads.NeMoRLConfigTag, strings.Join(workloads.NeMoRLDatasets, ", "))
	}
	if c.Framework == kinds.Verl {
		if _, ok := workloads.VerlDatasets[j.Dataset]; !ok {
			errs.Add("job.dataset", "%s has no verl preparation script; allowed with framework verl: %s", quote(j.Dataset), strings.Join(slices.Sorted(maps.Keys(workloads.VerlDatasets)), ", "))
		}
	}
	switch {
	case c.Framework == kinds.Verl && c.explicit["job.recipe"]:
		errs.Add("job.recipe", "%s is a NeMo RL recipe, which framework verl does not read; remove it (`pulumi config rm --path job.recipe`) or set framework nemo-rl", quote(j.Recipe))
	case c.Framework == kinds.NeMoRL && !slices.Contains(workloads.NeMoRLRecipes(), j.Recipe):
		errs.Add("job.recipe", "%s is not a GRPO math recipe of NeMo RL %s; allowed: %s", quote(j.Recipe), workloads.NeMoRLConfigTag, strings.Join(workloads.NeMoRLRecipes(), ", "))
	}
}

// validateRevisions checks that every pinned revision can name a Hub revision. A pin of a
// repository the run does not load is inert, and only warned about (warnUnpinned): switching
// job.model or job.dataset with one --config must not also require removing the old pins.
func validateRevisions(c *Config, errs *Errors) {
	for _, id := range slices.Sorted(maps.Keys(c.Job.Revisions)) {
		if why := workloads.CheckRevision(c.Job.Revisions[id]); why != "" {
			errs.Add(revisionKey(id), "%s", why)
		}
	}
}

// revisionKey is the config path of one pin, as `pulumi config set --path` takes it.
func revisionKey(id string) string { return fmt.Sprintf("job.revisions[%q]", id) }

// Bounds of the run's retry and time keys.
const (
	MaxBackoffLimit = 100
	// MinActiveDeadlineSeconds is the shortest deadline a run could meet: pulling the framework
	// image and starting Ray alone take minutes.
	MinActiveDeadlineSeconds = 600
)

// validateJobBounds checks the run's retries, deadline and checkpoints against each other and
// against the storage.
func validateJobBounds(c *Config, errs *Errors) {
	j := c.Job
	if j.BackoffLimit < 0 || j.BackoffLimit > MaxBackoffLimit {
		errs.Add("job.backoffLimit", "%d is out of range; allowed: 0 to %d retries", j.BackoffLimit, MaxBackoffLimit)
	}
	switch d := j.ActiveDeadlineSeconds; {
	case d < 0:
		errs.Add("job.activeDeadlineSeconds", "%d is not allowed; allowed: 0 (no deadline) or more seconds", d)
	case d > 0 && d < MinActiveDeadlineSeconds:
		errs.Add("job.activeDeadlineSeconds", "%d s is shorter than a run's start (image pull, Ray, model load); allowed: 0 (no deadline) or %d seconds or more", d, MinActiveDeadlineSeconds)
	}
	if steps, basis, ok := runSteps(c); ok && j.CheckpointPeriod > steps && j.CheckpointPeriod > 0 {
		errs.Add("job.checkpointPeriod", "%d steps is longer than the run (%d steps: %s): no checkpoint would be saved, and a preempted run would start over; allowed: 1 to %d", j.CheckpointPeriod, steps, basis, steps)
	}
	// The checkpoints the volume holds at their peak must fit. Only against a valid capacity
	// (validateStorage runs first): a wrong size is its own error.
	if e := estimateCheckpoint(c); e != nil && c.Storage.Type == kinds.Lustre && j.KeepCheckpoints > 0 && !errs.Has("storage.capacityGib") {
		capacityGB := float64(c.Storage.CapacityGiB) * (1 << 30) / 1e9
		// Beside the checkpoints the volume holds the model twice, and with NeMo RL on
		// Megatron its conversion, in the run's checkpoint directory.
		copies := modelCopiesGB(j)
		conversion := conversionGB(c.Framework, j)
		resident := copies + conversion
		fits := func(keep int) bool {
			peak, _ := checkpointsAtPeak(c, keep)
			return float64(peak)*e.GB+resident <= capacityGB
		}
		if !fits(j.KeepCheckpoints) {
			allowed := j.KeepCheckpoints
			for allowed > 0 && !fits(allowed) {
				allowed--
			}
			peak, why := checkpointsAtPeak(c, j.KeepCheckpoints)
			errs.Add("job.keepCheckpoints", "%d checkpoints at the peak (%s) need %.0f GB (%.0f GB each)%s, more than the Lustre instance's %.0f GB (storage.capacityGib %d); allowed: at most %d, or a larger storage.capacityGib",
				peak, why, float64(peak)*e.GB, e.GB, besideModel(float64(peak)*e.GB, copies, conversion), capacityGB, c.Storage.CapacityGiB, allowed)
		}
	}
}

// besideModel says what of the model the volume holds beside the checkpoints (its download and
// checked copy, and a Megatron conversion), and the sum.
func besideModel(checkpointsGB, copies, conversion float64) string {
	switch {
	case copies == 0:
		return ""
	case conversion == 0:
		return fmt.Sprintf(", and the model's download and checked copy %.0f GB more: %.0f GB in all", copies, checkpointsGB+copies)
	}
	return fmt.Sprintf(", and the model's download, checked copy and Megatron conversion %.0f GB more: %.0f GB in all", copies+conversion, checkpointsGB+copies+conversion)
}

// checkpointsAtPeak is how many checkpoints the shared volume holds at most during a run that
// keeps keep, and why. NeMo RL writes the new checkpoint before it removes the oldest
// (nemo_rl/utils/checkpoint.py): keepCheckpoints + 1. verl v0.6.0 removes the oldest first
// (verl/utils/checkpoint/fsdp_checkpoint_manager.py, save_checkpoint): keepCheckpoints. verl
// rotates only the checkpoints its own process saved (checkpoint_manager.py:
// previous_saved_paths starts empty), so in a retried run those of the earlier attempt (run.sh
// leaves keepCheckpoints of them) stay beside the new attempt's keepCheckpoints until the next
// attempt starts: twice keepCheckpoints.
func checkpointsAtPeak(c *Config, keep int) (int, string) {
	switch {
	case c.Framework == kinds.Verl && c.Job.BackoffLimit > 0:
		return 2 * keep, "verl keeps an earlier attempt's checkpoints beside a retry's until the next attempt"
	case c.Framework == kinds.Verl:
		return keep, "verl removes the oldest before it saves the next"
	}
	return keep + 1, "the one being saved beside those kept"
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

// validateGateBound refuses a minimum bus bandwidth that no all_gather on the GPU nodes can
// reach (whether or not the gate is on): it could never pass.
func validateGateBound(c *Config, spec GPUSpec, errs *Errors) {
	bound := gate.MaxAllGatherBusGBps(c.GPU.Nodes, spec.RDMANICs)
	if c.Gate.MinBusBandwidthGBps <= bound {
		return
	}
	if c.GPU.Nodes < 2 {
		errs.Add("gate.minBusBandwidthGBps", "%d GB/s is above what all_gather can reach on one GPU node over its RDMA NICs (every hop of the ring crosses one %d Gb/s NIC: %d GB/s); allowed: 1 to %d",
			c.Gate.MinBusBandwidthGBps, gate.RDMANICGbps, bound, bound)
		return
	}
	errs.Add("gate.minBusBandwidthGBps", "%d GB/s is above what all_gather can reach across %d nodes (%d NICs × %d Gb/s into each node × %d/%d = %d GB/s); allowed: 1 to %d",
		c.Gate.MinBusBandwidthGBps, c.GPU.Nodes, spec.RDMANICs, gate.RDMANICGbps, c.GPU.Nodes, c.GPU.Nodes-1, bound, bound)
}

// validateGate checks `gate.*` whether or not the gate is on, so that turning it on later cannot
// meet a value refused only then.
func validateGate(g GateConfig, errs *Errors) {
	// 2000 GB/s is above any GPU's NVLink bus bandwidth: a higher minimum could never pass.
	if g.MinBusBandwidthGBps < 1 || g.MinBusBandwidthGBps > 2000 {
		errs.Add("gate.minBusBandwidthGBps", "%d is out of range; allowed: 1 to 2000 GB/s", g.MinBusBandwidthGBps)
	}
	// The file is written to the shared volume: 1 TiB is more than a check needs.
	if g.StorageGiB < 1 || g.StorageGiB > 1024 {
		errs.Add("gate.storageGib", "%d is out of range; allowed: 1 to 1024 GiB", g.StorageGiB)
	}
	if g.CapacityWaitMinutes < 1 || g.CapacityWaitMinutes > MaxCapacityWaitMinutes {
		errs.Add("gate.capacityWaitMinutes", "%d is out of range; allowed: 1 to %d minutes", g.CapacityWaitMinutes, MaxCapacityWaitMinutes)
	}
	// It ends the gate's Job names, whose Indexed pods' host names (<job>-<index>) are DNS
	// labels of at most 63 characters.
	if g.RunID != "" && !gateRunIDPattern.MatchString(g.RunID) {
		errs.Add("gate.runId", "%s is not a run ID; allowed: 1 to 8 lowercase letters and digits (change it to run the gate again), or empty", quote(g.RunID))
	}
}

var gateRunIDPattern = regexp.MustCompile(`^[a-z0-9]{1,8}$`)

// notificationChannelName is a Cloud Monitoring notification channel's resource name.
var notificationChannelName = regexp.MustCompile(`^projects/[a-z0-9:.-]+/notificationChannels/[0-9]+$`)

func validateMonitoring(c *Config, errs *Errors) {
	seen := map[string]int{}
	for i, ch := range c.Monitoring.NotificationChannels {
		key := fmt.Sprintf("monitoring.notificationChannels[%d]", i)
		first, dup := seen[ch]
		if !dup {
			seen[ch] = i
		}
		switch {
		case dup:
			errs.Add(key, "%s is monitoring.notificationChannels[%d] again, and would be notified twice; allowed: each channel once", quote(ch), first)
		case !notificationChannelName.MatchString(ch):
			errs.Add(key, "%s is not a notification channel; allowed: projects/<project>/notificationChannels/<number> (gcloud beta monitoring channels list --format='value(name)')", quote(ch))
		case !c.Monitoring.Enabled:
			errs.Add(key, "is set while monitoring.enabled is false; allowed: channels only with the alerts on")
		}
	}
}

// validateJobs checks `jobs` besides what each experiment's own configuration must pass
// (Resolve checks those under jobs.<name>): the names, the priorities, and that each fits the
// queue.
func validateJobs(c *Config, spec GPUSpec, errs *Errors) {
	if !c.Queued() {
		return
	}
	if c.Job.Name != "" {
		errs.Add("job.name", "%s names the one experiment of a stack without jobs; with jobs, each entry's key names its experiment: remove job.name (`pulumi config rm --path job.name`); %s", quote(c.Job.Name), continueRun(c, c.Job.Name))
	}
	for _, j := range c.Jobs {
		key := KeyJobs + "." + j.Name
		if len(j.Name) > MaxQueuedNameLength && experimentNameProblem(j.Name) == "" {
			errs.Add(key, "the experiment's name %s is %d characters long; allowed: at most %d, since its RayJob and checkpoint directory add the hash of what it trains (-<%d hex digits>)",
				quote(j.Name), len(j.Name), MaxQueuedNameLength, identityHashLength)
		}
		if j.Priority < 0 || j.Priority > queue.MaxPriority {
			errs.Add(key+".priority", "%d is out of range; allowed: 0 to %d (higher runs first)", j.Priority, queue.MaxPriority)
		}
		nodesKey := "gpu.nodes"
		if j.own["jobs.nodes"] {
			nodesKey = key + ".nodes"
		}
		// Fewer than one node is the experiment's own gpu.nodes problem (perExperiment).
		if j.Nodes > c.GPU.MaxNodes {
			errs.Add(nodesKey, "experiment %s takes %d nodes (%d GPUs), more than the queue's quota of %d (gpu.maxNodes %d × %d GPUs), so it would wait forever; allowed: 1 to %d, or a larger gpu.maxNodes",
				j.Name, j.Nodes, j.Nodes*spec.GPUsPerNode, c.GPU.MaxNodes*spec.GPUsPerNode, c.GPU.MaxNodes, spec.GPUsPerNode, c.GPU.MaxNodes)
		}
	}
	validateQueueCheckpoints(c, errs)
	validateQueueResumes(c, errs)
	validateQueueDatasets(c, errs)
}

// validateQueueResumes checks an experiment that starts from another of the same stack
// (jobs.<name>.resumeFrom): the other must not be able to run at the same time, or the new one
// would load a checkpoint still being written and rotated away; and it must have the same GPU
// count, since verl v0.6.0 saves one shard per rank, named by the world size
// (verl/utils/checkpoint/fsdp_checkpoint_manager.py, model_world_size_{W}_rank_{r}.pt).
func validateQueueResumes(c *Config, errs *Errors) {
	byName := map[string]JobConfig{}
	for _, j := range c.Jobs {
		byName[j.Name] = j
	}
	for _, j := range c.Jobs {
		from, ok := byName[j.ResumeFrom]
		if !ok || !j.Enabled || errs.Has(KeyJobs+"."+j.Name+".resumeFrom") || errs.Has("job.resumeFrom") {
			continue
		}
		if from.Enabled && j.Nodes+from.Nodes <= c.GPU.MaxNodes {
			*errs = append(*errs, experimentError(j, FieldError{Key: "job.resumeFrom", Message: fmt.Sprintf(
				"%s is an experiment of this stack that can run at the same time as %s (%d + %d GPU nodes fit gpu.maxNodes %d): %s would load a checkpoint %s is still writing; "+
					"allowed: stop %s first (jobs.%s.enabled=false), then start %s",
				quote(from.Name), j.Name, from.Nodes, j.Nodes, c.GPU.MaxNodes, j.Name, from.Name, from.Name, from.Name, j.Name)}))
			continue
		}
		if c.Framework == kinds.Verl && from.Nodes != j.Nodes {
			*errs = append(*errs, experimentError(j, FieldError{Key: "job.resumeFrom", Message: fmt.Sprintf(
				"%s trains on %s and %s on %d: verl saves one checkpoint shard per GPU, which another GPU count cannot load; allowed: the same node count as %s (jobs.%s.nodes %d)",
				quote(from.Name), words.Count(from.Nodes, "GPU node"), j.Name, j.Nodes, from.Name, j.Name, from.Nodes)}))
		}
	}
}

// validateQueueDatasets refuses two pins of one NeMo RL dataset in one queue: NeMo RL v0.5.0
// loads its datasets by name (load_dataset) from the one Hugging Face cache of the shared
// volume, offline, so experiments that pin one dataset differently would all train on whichever
// pin a preparation downloaded last.
func validateQueueDatasets(c *Config, errs *Errors) {
	if c.Framework != kinds.NeMoRL {
		return
	}
	first := map[string]JobConfig{}
	for _, j := range c.Jobs {
		if !j.Enabled {
			continue
		}
		for _, repo := range workloads.NeMoRLDatasetSources[j.Dataset] {
			other, seen := first[repo]
			if !seen {
				first[repo] = j
				continue
			}
			if other.Revisions[repo] != j.Revisions[repo] {
				key := KeyJobs + "." + j.Name + ".revisions"
				if !j.own["job.revisions"] {
					key = "job.revisions"
				}
				errs.Add(key, "experiments %s and %s pin the dataset %s differently (%s, %s), but NeMo RL loads a dataset by name from the one Hugging Face cache they share, so both would train on whichever was prepared last; allowed: one pin of %s for every experiment (job.revisions)",
					other.Name, j.Name, repo, pinText(other.Revisions[repo]), pinText(j.Revisions[repo]), repo)
			}
		}
	}
}

// pinText is a revision as a message says it: the default branch when none is pinned.
func pinText(rev string) string {
	if rev == "" {
		return "main (unpinned)"
	}
	return rev
}

// validateQueueCheckpoints checks the experiments' checkpoints together against the one Lustre
// instance they share: each experiment's own fit is checked with it (job.keepCheckpoints), but
// the checkpoints of all of them stay on the volume, a stopped experiment's included, and those
// that run can all be saving at once. Only when each fits alone: that is its own error.
func validateQueueCheckpoints(c *Config, errs *Errors) {
	if c.Storage.Type != kinds.Lustre || errs.Has("storage.capacityGib") ||
		slices.ContainsFunc(*errs, func(e FieldError) bool { return strings.HasSuffix(e.Key, ".keepCheckpoints") }) {
		return
	}
	if u := volumeUse(c); u != nil && u.PeakGB > u.CapacityGB {
		errs.Add(KeyJobs, "the experiments' checkpoints at their peak need %.0f GB together (%s), more than the Lustre instance's %.0f GB (storage.capacityGib %d), which they share; "+
			"allowed: fewer checkpoints kept (job.keepCheckpoints, jobs.<name>.keepCheckpoints), fewer experiments, or a larger storage.capacityGib",
			u.PeakGB, strings.Join(u.Parts, ", "), u.CapacityGB, c.Storage.CapacityGiB)
	}
}

// experimentError is an experiment's problem under the key that sets it: `job.x` is
// jobs.<name>.x when the entry sets it, and job.x when it inherits it from `job`; its message
// names the experiment.
func experimentError(j JobConfig, e FieldError) FieldError {
	key := e.Key
	if field, ok := strings.CutPrefix(key, "job."); ok && j.own["job."+topField(field)] {
		key = KeyJobs + "." + j.Name + "." + field
	}
	if key == "job.name" {
		// The entry's key is the experiment's name.
		key = KeyJobs + "." + j.Name
	}
	if key == "gpu.nodes" && j.own["jobs.nodes"] {
		key = KeyJobs + "." + j.Name + ".nodes"
	}
	return FieldError{Key: key, Message: "experiment " + j.Name + ": " + e.Message}
}

// topField is a key path's first field: `args` of `args[2]`, `revisions` of `revisions["x"]`.
func topField(field string) string {
	if i := strings.IndexAny(field, ".["); i >= 0 {
		return field[:i]
	}
	return field
}

// perExperiment runs check on the stack's configuration and on each experiment's, and returns
// the stack's problems (any key but job's) once, and each experiment's own (job's keys, and
// gpu.nodes, which is its node count) under the keys that set them (experimentError).
func perExperiment(c *Config, check func(*Config, *Errors)) Errors {
	var out Errors
	var stack Errors
	check(c, &stack)
	for _, fe := range stack {
		if !experimentKey(fe.Key) {
			out = append(out, fe)
		}
	}
	seen := map[FieldError]bool{}
	for _, j := range c.Jobs {
		var errs Errors
		check(c.ForExperiment(j), &errs)
		for _, fe := range errs {
			if !experimentKey(fe.Key) {
				continue
			}
			fe = experimentError(j, fe)
			if !seen[fe] {
				seen[fe] = true
				out = append(out, fe)
			}
		}
	}
	return out
}

// experimentKey reports whether a problem's key is an experiment's own.
func experimentKey(key string) bool {
	return strings.HasPrefix(key, "job.") || key == "job" || key == "gpu.nodes"
}
