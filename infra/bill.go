package infra

import (
	"fmt"
	"math"

	"gke-rl/cluster"
	"gke-rl/internal/cost"
	"gke-rl/internal/kinds"
	"gke-rl/internal/words"
)

// billOf is the stack's bill of materials: what bills while the GPU nodes train and while the
// stack is idle (GPU pool at its minimum, CPU pool at its minimum, storage kept).
func billOf(c *Config, bp *Blueprint) cost.Bill {
	var lines []cost.Line
	gpu := bp.Cluster.GPUPool
	gpuLine := cost.Line{
		Item:     "GPU nodes",
		Detail:   fmt.Sprintf("%d × %s, %s, %s", gpu.Nodes, gpu.MachineType, gpu.Provisioning, c.Zone),
		SKU:      cost.SKU{Name: GPUSKU(gpu.MachineType, gpu.Provisioning, bp.Cluster.Mode), Region: c.Region},
		Unit:     cost.PerHour,
		Training: float64(gpu.Nodes),
		Idle:     float64(gpu.MinNodes),
	}
	if nodes, names := bp.Run.RunningAtOnce(); bp.Run.Queue != nil {
		// What trains is what the queue runs at once.
		gpuLine.Training = float64(nodes)
		gpuLine.Detail = fmt.Sprintf("%d × %s, %s, %s (queue: %s)", nodes, gpu.MachineType, gpu.Provisioning, c.Zone, names)
	}
	if region, ok := cost.GPUStandInRegions[gpuLine.SKU.Name]; ok && region != c.Region {
		gpuLine.StandIn = &cost.SKU{Name: gpuLine.SKU.Name, Region: region}
	}
	switch gpu.Provisioning {
	case kinds.Reservation:
		// Compute Engine bills reserved machines at on-demand rates whether or not they run.
		gpuLine.Idle = float64(gpu.Nodes)
		gpuLine.Note = "a reservation bills its machines whether they run or not, at the on-demand rate less any commitment (which only your billing account knows)"
	case kinds.Spot:
		// Google's Spot VMs pricing page: spot prices "can change up to once every day".
		gpuLine.Note = "spot prices can change daily"
	}
	lines = append(lines, gpuLine)

	if bp.Cluster.Mode == kinds.Autopilot {
		lines = append(lines, cost.Line{
			Item: "CPU pods", Detail: "Autopilot pods: the Ray head, the data preparation, system pods",
			SKU: cost.SKU{Name: "autopilot-pods", Region: c.Region}, Unit: cost.PerHour,
			UnknownQuantity: true, Note: "Autopilot bills pods by their requests",
		})
	} else {
		cpu := bp.Cluster.CPUPool
		lines = append(lines,
			cost.Line{
				Item:   "CPU nodes",
				Detail: fmt.Sprintf("%d × %s, on-demand, %s", cluster.CPUPoolMinNodes, cpu.MachineType, c.Zone),
				SKU:    cost.SKU{Name: cpu.MachineType, Region: c.Region}, Unit: cost.PerHour,
				Training: cluster.CPUPoolMinNodes, Idle: cluster.CPUPoolMinNodes,
				Note: fmt.Sprintf("the autoscaler may add up to %d while CPU Jobs run", cluster.CPUPoolMaxNodes-cluster.CPUPoolMinNodes),
			},
			cost.Line{
				Item:   "CPU boot disks",
				Detail: fmt.Sprintf("%d × %d GiB pd-balanced", cluster.CPUPoolMinNodes, cluster.CPUBootDiskGB),
				SKU:    cost.SKU{Name: "pd-balanced", Region: c.Region}, Unit: cost.PerGiBMonth,
				Training: cluster.CPUPoolMinNodes * cluster.CPUBootDiskGB, Idle: cluster.CPUPoolMinNodes * cluster.CPUBootDiskGB,
			})
	}

	if l := bp.Storage.Lustre; l != nil {
		lines = append(lines, cost.Line{
			Item:   "Lustre instance",
			Detail: fmt.Sprintf("%d GiB at %d MB/s per TiB", l.CapacityGiB, l.ThroughputMBpsPerTiB),
			SKU:    cost.SKU{Name: cost.LustreSKU(l.ThroughputMBpsPerTiB), Region: c.Region}, Unit: cost.PerGiBMonth,
			Training: float64(l.CapacityGiB), Idle: float64(l.CapacityGiB),
			Note:    "billed by provisioned capacity, full or empty",
			StandIn: &cost.SKU{Name: cost.LustreSKU(l.ThroughputMBpsPerTiB), Region: cost.LustreRecordedRegion},
		})
	} else {
		bucket := cost.Line{
			Item: "Bucket", SKU: cost.SKU{Name: "gcs-standard", Region: c.Region}, Unit: cost.PerGiBMonth,
			Note: "billed by what it stores; the model and the datasets add to it",
		}
		if kept, gb, ok := keptCheckpoints(c, bp); ok {
			gib := math.Ceil(gb * 1e9 / (1 << 30))
			bucket.Detail = fmt.Sprintf("Standard storage: %s ≈ %.0f GiB", kept, gib)
			bucket.Training, bucket.Idle = gib, gib
		} else {
			bucket.Detail = "Standard storage: the checkpoints' size is unknown for this model"
			bucket.UnknownQuantity = true
		}
		lines = append(lines, bucket)
	}

	lines = append(lines, cost.Line{
		Item: "GKE cluster fee", Detail: "1 cluster",
		SKU: cost.SKU{Name: "gke-cluster", Region: c.Region}, Unit: cost.PerHour,
		Training: 1, Idle: 1,
	})
	return cost.Bill{
		Lines: lines,
		Excluded: []string{
			"network egress and Cloud NAT", "Cloud Logging and Monitoring", "the image mirror's storage",
			"the GPU nodes' boot disks", "Secret Manager",
			"sustained-use, committed-use and negotiated discounts", "taxes",
		},
	}
}

// GPUSKU names the GPU nodes' price: the machine type, and the provisioning model when it has
// prices of its own (spot, flex-start; reservations bill at on-demand rates). Autopilot bills
// GPU pods its own way.
func GPUSKU(machine string, p kinds.Provisioning, mode kinds.Mode) string {
	name := machine
	switch p {
	case kinds.Spot, kinds.FlexStart:
		name += "/" + string(p)
	}
	if mode == kinds.Autopilot {
		name += "/autopilot"
	}
	return name
}

// keptCheckpoints are the checkpoints the stack keeps on its storage, said and in GB: the run's,
// or every experiment's of a queue (a stopped one's too: its checkpoints stay). ok is false when
// a model's size is unknown.
func keptCheckpoints(c *Config, bp *Blueprint) (string, float64, bool) {
	if !c.Queued() {
		ck := bp.Checkpoint
		if ck == nil {
			return "", 0, false
		}
		return fmt.Sprintf("%s of %.0f GB", words.Count(c.Job.KeepCheckpoints, "checkpoint"), ck.GB), float64(c.Job.KeepCheckpoints) * ck.GB, true
	}
	total, count := 0.0, 0
	for _, j := range c.Jobs {
		ck := estimateCheckpoint(c.ForExperiment(j))
		if ck == nil {
			return "", 0, false
		}
		total += float64(j.KeepCheckpoints) * ck.GB
		count += j.KeepCheckpoints
	}
	return fmt.Sprintf("%s of %s", words.Count(count, "checkpoint"), words.Count(len(c.Jobs), "experiment")), total, true
}
