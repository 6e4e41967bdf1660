package infra

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"gke-rl/cluster"
	"gke-rl/gate"
	"gke-rl/internal/kinds"
	"gke-rl/internal/naming"
	"gke-rl/internal/offers"
)

// The checks of the stack's place and cluster: location, cluster, GPUs, network, gate, monitoring.

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
	validateDriverVersion(c, errs)
	return spec, ok
}

// validateDriverVersion refuses GKE's DEFAULT driver under an image that needs a newer branch
// than it installs (cluster.DefaultDriverBranch): the runs would fail on their first CUDA call.
func validateDriverVersion(c *Config, errs *Errors) {
	if !oneOf(errs, "gpu.driverVersion", c.GPU.DriverVersion, cluster.DriverVersions) || c.GPU.DriverVersion != cluster.DriverDefault {
		return
	}
	if r, ok := releaseNeedingLatestDriver(c); ok {
		errs.Add("gpu.driverVersion", "default installs GKE's DEFAULT NVIDIA driver (R%d on Container-Optimized OS), and %s's image is built on CUDA %s (%s at %s), which needs R%d or newer; allowed: latest (GKE's LATEST, R%d), or leave gpu.driverVersion unset, or a release of %s that runs on the DEFAULT driver",
			cluster.DefaultDriverBranch, r.Name(), r.CUDA, r.ImageRecipe, r.Tag, r.DriverBranch, cluster.LatestDriverBranch, r.Framework)
	}
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
