package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"gke-rl/cmd"
	"gke-rl/internal/kinds"
	"gke-rl/internal/words"
)

// quotaChecks are the quota checks in the order they run.
var quotaChecks = []string{CheckQuota, CheckGlobalGPUs, CheckCPUQuota, CheckSSDQuota, CheckLocalSSD}

// checkQuotas asks Compute Engine for every allocation quota `up` draws on: the region's quotas
// once (regions.get) and the project's all-regions quotas once (projects.get), each against what
// the run's nodes take. The run's nodes decide pass or fail; what the autoscaler may add beyond
// them is said, not failed.
func checkQuotas(ctx context.Context, c *Clients, n Needs) []cmd.Finding {
	findings := make([]cmd.Finding, 0, len(quotaChecks))
	region, regionErr := c.Compute.Regions.Get(n.Project, n.Region).Context(ctx).Do()
	unreadable := func(check string) cmd.Finding {
		return cmd.Finding{Name: check, Status: cmd.Failed,
			Detail: fmt.Sprintf("the quotas of %s cannot be read: %s", n.Region, apiMessage(regionErr)),
			Fix:    grantFix(n.Project, "compute.regions.get", "roles/compute.viewer")}
	}
	var quotas quotaList
	if regionErr == nil {
		quotas = region.Quotas
	}
	reserved := n.Provisioning == kinds.Reservation
	gpus := n.Nodes * n.GPUsPerNode

	// The GPUs: the region's quota of the GPU and provisioning model, and the project's quota
	// of GPUs of every kind in every region. A reservation's capacity carries its own quota,
	// drawn when the reservation was made.
	switch {
	case reserved:
		findings = append(findings, reservedSkip(CheckQuota))
	case regionErr != nil:
		findings = append(findings, unreadable(CheckQuota))
	default:
		findings = append(findings, quotas.against(n, CheckQuota, n.QuotaMetric, n.Region,
			demand{need: gpus, most: n.MaxNodes * n.GPUsPerNode, what: fmt.Sprintf("%s × %d GPUs", words.Count(n.Nodes, "node"), n.GPUsPerNode), bound: gpuBound(n)}))
	}
	findings = append(findings, checkGlobalGPUs(ctx, c, n, reserved, gpus))

	// The vCPUs of the CPU pool, on its machine family's quota.
	switch {
	case n.CPUMachineType == "":
		findings = append(findings, cmd.Finding{Name: CheckCPUQuota, Status: cmd.Skipped, Detail: "Autopilot has no CPU pool: its nodes are GKE's"})
	case regionErr != nil:
		findings = append(findings, unreadable(CheckCPUQuota))
	default:
		findings = append(findings, checkCPUQuota(ctx, c, n, quotas))
	}

	// The CPU pool's boot disks, pd-balanced (GKE's default disk type), on the SSD quota.
	switch {
	case n.CPUMachineType == "":
		findings = append(findings, cmd.Finding{Name: CheckSSDQuota, Status: cmd.Skipped, Detail: "Autopilot has no CPU pool: its nodes are GKE's"})
	case regionErr != nil:
		findings = append(findings, unreadable(CheckSSDQuota))
	default:
		findings = append(findings, quotas.against(n, CheckSSDQuota, ssdMetric, n.Region,
			demand{need: n.CPUNodes * n.CPUBootDiskGB, most: n.CPUMaxNodes * n.CPUBootDiskGB, what: fmt.Sprintf("%d CPU node × %d GB pd-balanced boot disk", n.CPUNodes, n.CPUBootDiskGB), bound: cpuBound(n)}))
	}

	// The GPU nodes' local SSDs, which hold their ephemeral storage.
	switch {
	case n.LocalSSDGB == 0:
		findings = append(findings, cmd.Finding{Name: CheckLocalSSD, Status: cmd.Skipped, Detail: "the GPU nodes have no local SSD"})
	case reserved:
		findings = append(findings, reservedSkip(CheckLocalSSD))
	case regionErr != nil:
		findings = append(findings, unreadable(CheckLocalSSD))
	default:
		findings = append(findings, quotas.against(n, CheckLocalSSD, localSSDMetric(quotas, n.Provisioning), n.Region,
			demand{need: n.Nodes * n.LocalSSDGB, most: n.MaxNodes * n.LocalSSDGB, what: fmt.Sprintf("%s × %d GB", words.Count(n.Nodes, "node"), n.LocalSSDGB), bound: gpuBound(n)}))
	}
	return findings
}

// The metrics of the quotas (Compute Engine's Quota.metric enum, REST v1): SSD_TOTAL_GB holds
// pd-ssd and pd-balanced disks; the local SSD quotas are in GB of 375 GB disks; the all-regions
// GPU quota is a project's, read with projects.get.
const (
	ssdMetric           = "SSD_TOTAL_GB"
	standardLocalSSD    = "LOCAL_SSD_TOTAL_GB"
	preemptibleLocalSSD = "PREEMPTIBLE_LOCAL_SSD_GB"
	globalGPUsMetric    = "GPUS_ALL_REGIONS"
	generalCPUsMetric   = "CPUS"
)

// reservedSkip is a quota check that a reservation makes moot: its machines (GPUs, local SSDs)
// were counted against the quota when it was made.
func reservedSkip(check string) cmd.Finding {
	return cmd.Finding{Name: check, Status: cmd.Skipped, Detail: "a reservation's capacity comes with its own quota"}
}

// localSSDMetric is the local SSD quota the GPU nodes draw on. Spot and flex-start VMs draw on
// preemptible quota where the project holds some, and on the standard quota where it holds
// none (Compute Engine's allocation quotas, "Preemptible quotas").
func localSSDMetric(quotas quotaList, p kinds.Provisioning) string {
	if q := quotas.find(preemptibleLocalSSD); p.Preemptible() && q != nil && q.Limit > 0 {
		return preemptibleLocalSSD
	}
	return standardLocalSSD
}

// CPUFamilyMetric is the regional vCPU quota a machine type draws on: its machine family's
// (N2_CPUS for n2-standard-16) where Compute Engine keeps one, and the general CPUS quota for
// the families it does not measure apart (n1, and families without a public metric), as
// Google's own image tests wait on quota (GoogleCloudPlatform/guest-test-infra,
// imagetest/test_suites/storageperf: n2 on N2_CPUS, n2d on N2D_CPUS, c3 on C3_CPUS, n1 and h3
// on CPUS).
func CPUFamilyMetric(quotas []*compute.Quota, machineType string) string {
	family, _, _ := strings.Cut(machineType, "-")
	metric := strings.ToUpper(family) + "_CPUS"
	if quotaList(quotas).find(metric) != nil {
		return metric
	}
	return generalCPUsMetric
}

func checkCPUQuota(ctx context.Context, c *Clients, n Needs, quotas quotaList) cmd.Finding {
	mt, err := c.machineType(ctx, n.Project, n.Zone, n.CPUMachineType)
	if err != nil {
		// The machine type check has said why; this one cannot count without it.
		return cmd.Finding{Name: CheckCPUQuota, Status: cmd.Skipped, Detail: fmt.Sprintf("%s's vCPUs are unknown: it could not be read", n.CPUMachineType)}
	}
	cpus := int(mt.GuestCpus)
	return quotas.against(n, CheckCPUQuota, CPUFamilyMetric(quotas, n.CPUMachineType), n.Region,
		demand{need: n.CPUNodes * cpus, most: n.CPUMaxNodes * cpus, what: fmt.Sprintf("%d CPU node × %d vCPUs of %s", n.CPUNodes, cpus, n.CPUMachineType), bound: cpuBound(n)})
}

func checkGlobalGPUs(ctx context.Context, c *Clients, n Needs, reserved bool, gpus int) cmd.Finding {
	if reserved {
		return reservedSkip(CheckGlobalGPUs)
	}
	p, err := c.Compute.Projects.Get(n.Project).Context(ctx).Do()
	if err != nil {
		return cmd.Finding{Name: CheckGlobalGPUs, Status: cmd.Failed,
			Detail: fmt.Sprintf("the project's quotas cannot be read: %s", apiMessage(err)),
			Fix:    grantFix(n.Project, "compute.projects.get", "roles/compute.viewer")}
	}
	return quotaList(p.Quotas).against(n, CheckGlobalGPUs, globalGPUsMetric, "all regions",
		demand{need: gpus, most: n.MaxNodes * n.GPUsPerNode, what: fmt.Sprintf("%s × %d GPUs", words.Count(n.Nodes, "node"), n.GPUsPerNode), bound: gpuBound(n)})
}

// demand is what the run takes of one quota: need at its start, most with the autoscaler at
// bound; what says how need is made.
type demand struct {
	need, most  int
	what, bound string
}

func gpuBound(n Needs) string {
	return fmt.Sprintf("the autoscaler's gpu.maxNodes=%d", n.MaxNodes)
}

func cpuBound(n Needs) string {
	return fmt.Sprintf("the CPU pool's autoscaler at its %d nodes", n.CPUMaxNodes)
}

type quotaList []*compute.Quota

func (l quotaList) find(metric string) *compute.Quota {
	i := slices.IndexFunc(l, func(q *compute.Quota) bool { return q.Metric == metric })
	if i < 0 {
		return nil
	}
	return l[i]
}

// against compares one quota with the demand: exactly enough free passes, one short fails. A
// metric the answer does not list is a quota the project holds none of.
func (l quotaList) against(n Needs, check, metric, where string, d demand) cmd.Finding {
	f := cmd.Finding{Name: check}
	fix := fmt.Sprintf("request %s in %s at https://console.cloud.google.com/iam-admin/quotas?project=%s (filter on the metric); then run preflight again", metric, where, n.Project)
	q := l.find(metric)
	if q == nil {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%s has no %s quota: the project holds none of it, and the run needs %d (%s)", where, metric, d.need, d.what)
		f.Fix = fix
		return f
	}
	free := int(q.Limit - q.Usage)
	have := fmt.Sprintf("%s in %s: limit %g, in use %g, %d free", metric, where, q.Limit, q.Usage, free)
	if free < d.need {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%s; the run needs %d (%s)", have, d.need, d.what)
		f.Fix = fix
		return f
	}
	f.Status, f.Detail = cmd.OK, fmt.Sprintf("%s; the run needs %d", have, d.need)
	if d.most > free {
		f.Detail += fmt.Sprintf(" (%s would need %d)", d.bound, d.most)
	}
	return f
}
