package infra

import (
	"maps"
	"slices"

	"gke-rl/internal/kinds"
)

// GPUSpec describes one GPU node type: what GKE and Compute Engine call it, what it carries and
// how NCCL must be tuned for it. Machine types and sizes: GCP's accelerator-optimized machine
// table (https://cloud.google.com/compute/docs/accelerator-optimized-machines); tuner files:
// container-engine-accelerators gpudirect-rdma.
type GPUSpec struct {
	// Type is the `gpu.type` config value.
	Type string
	// MachineType is the Compute Engine machine type of one node.
	MachineType string
	// Accelerator is the GKE accelerator name (node label `cloud.google.com/gke-accelerator`).
	Accelerator string
	// GPUsPerNode is the number of GPUs attached to one node.
	GPUsPerNode int
	// GPUMemoryGB is one GPU's memory in GB (10^9 bytes) as the device reports it to CUDA and
	// PyTorch (total_memory), not as its name says it: it bounds the model a run can train
	// (workloads.CheckFit). H200: 139.8 GiB (150.1e9 bytes), measured on a real H200
	// (testdata/recorded/gpu-memory); B200: 178.35 GiB (191.5e9 bytes), cudaGetDeviceProperties'
	// totalGlobalMem on a B200 as pytorch/ao pull request 4002 prints it (2026-03-05).
	GPUMemoryGB float64
	// BF16TFLOPS is one GPU's dense bf16 peak, in 10^12 operations a second: it scales the time a
	// step's compute may take (stepWork).
	BF16TFLOPS float64
	// Provisionings are the consumption options Compute Engine offers for the machine type; nil
	// when no source the program cites restricts them.
	Provisionings []kinds.Provisioning
	// RDMANICs is the number of RoCE NICs per node: one RDMA subnet is needed for each.
	RDMANICs int
	// NCCLTunerConfig is the gIB tuner file for this machine family.
	NCCLTunerConfig string
	// LocalSSDs is the count of 375 GiB local SSDs the node's ephemeral storage goes on (Cluster
	// Toolkit's modules/compute/gke-node-pool/disk_definitions.tf).
	LocalSSDs int
	// RayWorkerCPUs and RayWorkerMemoryGiB are what one Ray worker requests: the node minus
	// GKE's reservation (about 2% of memory above 128 GiB) and room for the system DaemonSets
	// (RDMA installer, GCS FUSE and Lustre drivers, logging, DCGM).
	RayWorkerCPUs      int
	RayWorkerMemoryGiB int
	// QuotaMetric is the Compute Engine regional quota of the GPU (on-demand; spot and
	// flex-start draw on PREEMPTIBLE_ + it). The names as a real project's regions.get listed
	// them (OpenAgentsInc/hydralisk docs, GCE admission probe of 2026-06-24: NVIDIA_B200_GPUS,
	// PREEMPTIBLE_NVIDIA_B200_GPUS, NVIDIA_H200_GPUS, PREEMPTIBLE_NVIDIA_H200_GPUS).
	QuotaMetric string
	// CatalogSlice is the description, before " running in <place>", of the Cloud Billing
	// Catalog SKU that bills the machine per GPU, its vCPUs and memory included (so the machine
	// costs GPUsPerNode of them); spot machines bill under "Spot Preemptible " + it. Empty when
	// the catalog bills the machine in parts the program cannot name all of: A3 Ultra's GPUs
	// are "H200 141GB GPU", but no public record of its vCPU and memory SKUs exists, and a
	// price without them would understate the machine.
	CatalogSlice string
	// GateMinBusBandwidthGBps is the gate's default minimum NCCL all_gather bus bandwidth (at
	// 8 GB messages) across two GPU nodes or more: three quarters of the lowest published
	// two-node run of the machine, so that a fabric at half speed fails while the spread between
	// healthy runs (260 to 376 GB/s on A4) passes.
	GateMinBusBandwidthGBps int
}

// LocalSSDGiB is the size of one local SSD.
const LocalSSDGiB = 375

// SharedMemoryGiB sizes a GPU worker's /dev/shm (240 to 250 GiB in the seeds' manifests); it
// counts against the worker's memory.
const SharedMemoryGiB = 240

// gpuCatalog is the one hardware table of the program: add a row to support a new GPU.
var gpuCatalog = map[string]GPUSpec{
	"b200": {
		Type:        "b200",
		MachineType: "a4-highgpu-8g",
		Accelerator: "nvidia-b200",
		QuotaMetric: "NVIDIA_B200_GPUS",
		// A4 is not offered on demand: Compute Engine's table of consumption options by machine
		// type (compute/docs/accelerator-optimized-machines, "Consumption option availability by
		// machine type"), as Cluster Toolkit's A4 blueprint follows it (PR #6279, merged
		// 2026-09-14: "On Demand is not supported for A4") and dstack found it (PR #3100:
		// only spot B200 instances start).
		Provisionings: []kinds.Provisioning{kinds.Spot, kinds.Reservation, kinds.FlexStart},
		// A4 bills only as slices (SpareCores/sc-crawler tests/test_gcp.py at 55aec325: an
		// a4-highgpu-8g spot machine is 8 × "Spot Preemptible A4 Nvidia B200 (1 gpu slice)
		// running in Americas", nothing else, and that SKU is categorized OnDemand).
		CatalogSlice: "A4 Nvidia B200 (1 gpu slice)",
		GPUsPerNode:  8,
		// "NVIDIA B200-SXM-180GB", as NVIDIA's MLPerf submissions name the device (their
		// systems are "B200-SXM-180GBx8"); 191.5 GB as CUDA reports it (GPUMemoryGB).
		GPUMemoryGB: 191.5,
		// Dense bf16: pytorch/ao torchao/testing/training/roofline_utils.py, "bf16_peak_tops":
		// 2.25e15 for the B200 (pull request 4002, 2026-03-05).
		BF16TFLOPS:      2250,
		RDMANICs:        8,
		NCCLTunerConfig: "/usr/local/gib/configs/tuner_config_a4.txtpb",
		LocalSSDs:       32,
		// 224 vCPUs and 3968 GiB; ~86 GiB reserved leaves ~3880 allocatable, and 3600 keeps 280
		// for the system pods.
		RayWorkerCPUs:      208,
		RayWorkerMemoryGiB: 3600,
		// Published two-node runs at 8 GB: 260.03 GB/s (kubernetes-sigs/dranet at f258477c,
		// site/content/docs/user/gke-rdma.md; testdata/recorded/nccl-all_gather-a4-gib-2node.txt),
		// 375.72 GB/s (docs.cloud.google.com/ai-hypercomputer/docs/nccl/test-vms, updated
		// 2026-04-06; testdata/recorded/nccl-all_gather-a4-gib-2node-vms.txt), 376.4 GB/s
		// (ai-on-gke, dws-flex-training-pytorch). 3/4 of 260: 195.
		GateMinBusBandwidthGBps: 195,
	},
	"h200": {
		Type:        "h200",
		MachineType: "a3-ultragpu-8g",
		Accelerator: "nvidia-h200-141gb",
		QuotaMetric: "NVIDIA_H200_GPUS",
		GPUsPerNode: 8,
		// The accelerator's name says 141 (nvidia-h200-141gb, the SKU "H200 141GB GPU"); CUDA
		// reports 150.1 GB (GPUMemoryGB).
		GPUMemoryGB: 150.1,
		// Dense bf16: the H200 has the H100 SXM's Hopper tensor cores, 989 TFLOPS dense (NVIDIA's
		// H100 and H200 datasheets print 1,979 "with sparsity", twice the dense rate).
		BF16TFLOPS:      989,
		RDMANICs:        8,
		NCCLTunerConfig: "/usr/local/gib/configs/tuner_config_a3u.txtpb",
		LocalSSDs:       32,
		// 224 vCPUs and 2952 GiB; ~66 GiB reserved leaves ~2885 allocatable, and 2700 keeps 185
		// for the system pods.
		RayWorkerCPUs:      208,
		RayWorkerMemoryGiB: 2700,
		// Published two-node run at 8 GB: 325.7 GB/s (skypilot-org/skypilot,
		// examples/gcp_gpu_direct_tcpx/README.md, in the gIB diagnostic image). 3/4 of it: 244.
		GateMinBusBandwidthGBps: 244,
	},
}

// LookupGPU returns the catalog row for a `gpu.type` value.
func LookupGPU(gpuType string) (GPUSpec, bool) {
	spec, ok := gpuCatalog[gpuType]
	return spec, ok
}

// GPUTypes lists the supported `gpu.type` values, sorted.
func GPUTypes() []string { return slices.Sorted(maps.Keys(gpuCatalog)) }
