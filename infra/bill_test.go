package infra_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/cost"
	"gke-rl/test/plantest"
)

// lineOf returns the bill's line for an item.
func lineOf(t *testing.T, bill cost.Bill, item string) cost.Line {
	t.Helper()
	for _, l := range bill.Lines {
		if l.Item == item {
			return l
		}
	}
	require.Failf(t, "no line", "the bill has no %q line: %+v", item, bill.Lines)
	return cost.Line{}
}

func TestSpotGPUNodesBillWhileTrainingOnlyAtTheirSpotPrice(t *testing.T) {
	bill := plantest.Resolve(t, "b200-spot").Bill
	gpu := lineOf(t, bill, "GPU nodes")
	assert.Equal(t, cost.SKU{Name: "a4-highgpu-8g/spot", Region: "us-east1"}, gpu.SKU)
	assert.Equal(t, cost.PerHour, gpu.Unit)
	assert.Equal(t, 8.0, gpu.Training)
	assert.Equal(t, 0.0, gpu.Idle, "a spot pool scales to zero between runs")
	assert.Contains(t, gpu.Note, "spot prices can change daily")

	lustre := lineOf(t, bill, "Lustre instance")
	assert.Equal(t, cost.SKU{Name: "lustre-500", Region: "us-east1"}, lustre.SKU)
	assert.Equal(t, 18000.0, lustre.Training)
	assert.Equal(t, 18000.0, lustre.Idle, "Lustre bills its capacity, idle or not")

	cpu := lineOf(t, bill, "CPU nodes")
	assert.Equal(t, cost.SKU{Name: "n2-standard-16", Region: "us-east1"}, cpu.SKU)
	assert.Equal(t, 1.0, cpu.Training)
	assert.Equal(t, 1.0, cpu.Idle)
	// The pool's 1 to 3 nodes: 2 more while CPU Jobs run, which the bill cannot count.
	assert.Equal(t, "the autoscaler may add up to 2 while CPU Jobs run", cpu.Note)
	// 1 node × its 300 GiB boot disk, training or idle.
	disks := lineOf(t, bill, "CPU boot disks")
	assert.Equal(t, "1 × 300 GiB pd-balanced", disks.Detail)
	assert.Equal(t, 300.0, disks.Training)
	assert.Equal(t, 300.0, disks.Idle)
}

func TestAReservationBillsItsMachinesWhileIdle(t *testing.T) {
	gpu := lineOf(t, plantest.Resolve(t, "h200-reserved").Bill, "GPU nodes")
	assert.Equal(t, cost.SKU{Name: "a3-ultragpu-8g", Region: "us-south1"}, gpu.SKU, "reservations bill at on-demand rates")
	assert.Equal(t, 2.0, gpu.Training)
	assert.Equal(t, 2.0, gpu.Idle)
	assert.Contains(t, gpu.Note, "whether they run or not")
}

func TestProvisioningModelsNameTheirOwnPrices(t *testing.T) {
	for prov, want := range map[string]string{
		"flex-start": "a4-highgpu-8g/flex-start",
		"on-demand":  "a3-ultragpu-8g", // A4 is not offered on demand
	} {
		o := []string{"gpu.provisioning=" + prov}
		if prov == "on-demand" {
			o = append(o, plantest.GPU("h200")...)
		}
		gpu := lineOf(t, plantest.Resolve(t, "b200-spot", o...).Bill, "GPU nodes")
		assert.Equal(t, want, gpu.SKU.Name, prov)
	}
	auto := plantest.Resolve(t, "b200-spot", "cluster.mode=autopilot", "storage.type=gcsfuse").Bill
	assert.Equal(t, "a4-highgpu-8g/spot/autopilot", lineOf(t, auto, "GPU nodes").SKU.Name)
	pods := lineOf(t, auto, "CPU pods")
	assert.Equal(t, "autopilot-pods", pods.SKU.Name)
	assert.True(t, pods.UnknownQuantity, "Autopilot bills pods by their requests, not a number of machines")
}

func TestABucketBillsTheCheckpointsItKeeps(t *testing.T) {
	// Qwen2.5-32B: 32e9 parameters × 16 bytes = 512 GB a checkpoint; 2 kept = 1024e9 bytes
	// = 953.7 GiB, rounded up.
	bucket := lineOf(t, plantest.Resolve(t, "h200-reserved").Bill, "Bucket")
	assert.Equal(t, cost.SKU{Name: "gcs-standard", Region: "us-south1"}, bucket.SKU)
	assert.Equal(t, 954.0, bucket.Idle)
	assert.False(t, bucket.UnknownQuantity)

	unknown := lineOf(t, plantest.Resolve(t, "h200-reserved", append(plantest.Shape(4096, 32, 128256), "job.model=my-org/my-model")...).Bill, "Bucket")
	assert.True(t, unknown.UnknownQuantity, "a model of unknown size stores an unknown amount")
}

func TestTheShippedStacksArePricedExceptWhereTheCatalogHasNoPrice(t *testing.T) {
	// The shipped table lacks A3 Ultra in us-south1 (h200-reserved's region: its catalog rows
	// contradict themselves there, cost.GPUSource says so) and us-central1's price stands in;
	// Managed Lustre is priced at Iowa's recorded price where its region's is not recorded
	// (cost.LustreSource); every line of every shipped stack has its price.
	lacks := map[string]bool{}
	for _, stack := range plantest.Stacks {
		for _, l := range plantest.Resolve(t, stack).Bill.Price(cost.Catalog).Lines {
			assert.Equal(t, !lacks[l.SKU.Name], l.Price != nil, "%s: %s (%s)", stack, l.Item, l.SKU)
		}
	}
}

// A queue's bucket keeps every experiment's checkpoints, a stopped one's too.
func TestAQueuesBucketBillsEveryExperimentsCheckpoints(t *testing.T) {
	one := lineOf(t, plantest.Resolve(t, "smoke", "job.keepCheckpoints=2").Bill, "Bucket")
	two := lineOf(t, plantest.Resolve(t, "smoke", "job.keepCheckpoints=2", "gpu.maxNodes=2", "jobs.a.maxSteps=4", "jobs.b.keepCheckpoints=4", "jobs.b.enabled=false").Bill, "Bucket")
	assert.Contains(t, two.Detail, "6 checkpoints of 2 experiments")
	assert.InDelta(t, 3*one.Idle, two.Idle, 4, "the single run keeps two checkpoints; the queue 2 + 4 of the same model (each total rounded up to a GiB)")
}

// What a user pays for the GPU nodes, by provisioning model: spot and flex-start scale to zero
// and bill nothing idle; on demand, the single run's long-lived cluster holds its nodes; a
// reservation bills them whether they run or not. A3 Ultra in us-central1 is 86.75992 an hour
// on demand (12.266 + 74.49392), so 2 nodes idle a month are 2 × 86.75992 × 730 = 126,669.48.
func TestWhatTheGPUNodesBillByProvisioning(t *testing.T) {
	central := []string{"gcp:region=us-central1", "zone=us-central1-b"}
	priced := func(overrides ...string) cost.Costed {
		for _, l := range plantest.Resolve(t, "h200-reserved", append(slices.Clone(central), overrides...)...).Bill.Price(cost.Catalog).Lines {
			if l.Item == "GPU nodes" {
				return l
			}
		}
		t.Fatal("no GPU nodes line")
		return cost.Costed{}
	}
	onDemand := priced("gpu.provisioning=on-demand", "gpu.reservation=")
	assert.InDelta(t, 126669.48, onDemand.IdlePerMonth.USD, 0.01, "held by the long-lived cluster")
	reserved := priced()
	assert.InDelta(t, 126669.48, reserved.IdlePerMonth.USD, 0.01, "billed whether used or not")
	assert.Contains(t, reserved.Note, "whether they run or not")
	spot := priced("gpu.provisioning=spot", "gpu.reservation=")
	assert.True(t, spot.IdlePerMonth.Known)
	assert.Zero(t, spot.IdlePerMonth.USD, "a spot pool scales to zero")
	// A4 flex-start has no price in any record: unknown training, nothing idle.
	flex := plantest.Resolve(t, "b200-spot", "gpu.provisioning=flex-start").Bill.Price(cost.Catalog)
	assert.Contains(t, flex.TrainingPerHour.Unknown, "GPU nodes")
	assert.Zero(t, lineOf(t, plantest.Resolve(t, "b200-spot", "gpu.provisioning=flex-start").Bill, "GPU nodes").Idle)
}
