package cluster

import (
	"strconv"
	"strings"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/container"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/gpunode"
	"gke-rl/internal/kinds"
)

// GPUPoolSpec describes the GPU node pool (Standard) or the GPU nodes Autopilot provisions.
type GPUPoolSpec struct {
	// Name is the node pool's GKE name.
	Name        string
	MachineType string
	Accelerator string
	GPUsPerNode int
	// Nodes is the initial size; MinNodes and MaxNodes bound the autoscaler.
	Nodes, MinNodes, MaxNodes int
	Provisioning              kinds.Provisioning
	// Reservation is `<name>` or `<name>/reservationBlocks/<block>` when Provisioning is
	// Reservation.
	Reservation string
	// LocalSSDs is the count of local SSDs that back the node's ephemeral storage (images,
	// container layers, Ray's spilling and logs, caches), instead of the boot disk.
	LocalSSDs int
	// CompactPlacement places the nodes close together (a compact placement policy).
	CompactPlacement bool
	// Queued is set when the stack's experiments queue (jobs): each runs in a Ray cluster of
	// its own, so no long-lived cluster holds the pool's nodes and it starts empty, whatever the
	// provisioning.
	Queued bool
	// DriverVersion is the NVIDIA driver GKE installs: DriverDefault or DriverLatest.
	DriverVersion string
}

// cpuNodeConfig is the node configuration of the CPU pool: on-demand, never spot, because a
// preempted head takes the whole Ray cluster with it.
func cpuNodeConfig(spec CPUPoolSpec, serviceAccount pulumi.StringInput) *container.NodePoolNodeConfigArgs {
	return &container.NodePoolNodeConfigArgs{
		MachineType:            pulumi.String(spec.MachineType),
		DiskSizeGb:             pulumi.Int(CPUBootDiskGB),
		GcfsConfig:             imageStreaming(),
		ServiceAccount:         serviceAccount,
		OauthScopes:            pulumi.StringArray{pulumi.String(cloudPlatformScope)},
		WorkloadMetadataConfig: &container.NodePoolNodeConfigWorkloadMetadataConfigArgs{Mode: pulumi.String("GKE_METADATA")},
		Labels:                 pulumi.StringMap{gpunode.RoleLabel: pulumi.String("cpu")},
		ShieldedInstanceConfig: &container.NodePoolNodeConfigShieldedInstanceConfigArgs{
			EnableSecureBoot: pulumi.Bool(spec.SecureBoot), EnableIntegrityMonitoring: pulumi.Bool(true),
		},
	}
}

// imageStreaming turns GKE's image streaming on: a pod of an Artifact Registry image (the
// mirrored framework image, the diagnostic image) starts before the whole image has arrived,
// and the rest follows in the background. Images from elsewhere are pulled as before. It needs
// the Container File System API. Changing it on an existing pool is an update in place that
// re-creates the nodes one at a time (terraform-provider-google-beta v6.49.2 node_config.go,
// the gcfs_config update).
func imageStreaming() *container.NodePoolNodeConfigGcfsConfigArgs {
	return &container.NodePoolNodeConfigGcfsConfigArgs{Enabled: pulumi.Bool(true)}
}

// CPUBootDiskGB is the CPU nodes' boot disk. They run the framework image (tens of GB) for the
// Ray head, the data preparation and the RayJob submitter, and keep a second one after a change
// of framework or release until the kubelet's image garbage collection (at 85 % of the disk)
// removes the old one; GKE's default of 100 GB holds neither comfortably. Cluster Toolkit gives
// its system pool, which runs no framework image, 200 GB (examples/gke-a4/gke-a4.yaml,
// system_node_pool_disk_size_gb). The size is updated in place (terraform-provider-google-beta
// v6.49.2 node_config.go: disk_size_gb is not ForceNew; UpdateNodePool re-creates the nodes
// one by one).
const CPUBootDiskGB = 300

// gpuNodeConfig is the node configuration GCP reads for the GPU pool.
func gpuNodeConfig(spec GPUPoolSpec, serviceAccount pulumi.StringInput) *container.NodePoolNodeConfigArgs {
	cfg := &container.NodePoolNodeConfigArgs{
		MachineType: pulumi.String(spec.MachineType),
		GuestAccelerators: container.NodePoolNodeConfigGuestAcceleratorArray{
			container.NodePoolNodeConfigGuestAcceleratorArgs{
				Type:  pulumi.String(spec.Accelerator),
				Count: pulumi.Int(spec.GPUsPerNode),
				// GKE installs and upgrades the driver of the node image's DEFAULT or LATEST
				// line (driver.go).
				GpuDriverInstallationConfig: &container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs{
					GpuDriverVersion: pulumi.String(driverVersionAPI(spec.DriverVersion)),
				},
			},
		},
		Gvnic:      &container.NodePoolNodeConfigGvnicArgs{Enabled: pulumi.Bool(true)},
		GcfsConfig: imageStreaming(),
		// Cluster Toolkit's modules/compute/gke-node-pool/disk_definitions.tf gives A4 and A3 Ultra
		// nodes 32 local SSDs as ephemeral storage.
		EphemeralStorageLocalSsdConfig: &container.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs{
			LocalSsdCount: pulumi.Int(spec.LocalSSDs),
		},
		WorkloadMetadataConfig: &container.NodePoolNodeConfigWorkloadMetadataConfigArgs{Mode: pulumi.String("GKE_METADATA")},
		ShieldedInstanceConfig: &container.NodePoolNodeConfigShieldedInstanceConfigArgs{
			EnableSecureBoot:          pulumi.Bool(true),
			EnableIntegrityMonitoring: pulumi.Bool(true),
		},
		ServiceAccount: serviceAccount,
		OauthScopes:    pulumi.StringArray{pulumi.String(cloudPlatformScope)},
		Labels: pulumi.StringMap{
			gpunode.RoleLabel: pulumi.String("gpu"),
			// The Lustre CSI driver's multi-NIC mode (on by default from GKE 1.35.2-gke.1842000)
			// spreads Lustre traffic over every standard NIC and needs them all in the primary
			// NIC's VPC; a GPU node's second standard NIC is in the gVNIC VPC, which has no
			// route to the instance. Managed Lustre's "Disable multi-NIC on Lustre" (per node
			// pool) keeps Lustre on eth0.
			gpunode.LustreMultiNICLabel: pulumi.String("false"),
		},
		Taints: container.NodePoolNodeConfigTaintArray{
			container.NodePoolNodeConfigTaintArgs{Key: pulumi.String(gpunode.TaintKey), Value: pulumi.String(gpunode.TaintValue), Effect: pulumi.String(gpunode.TaintEffectGKE)},
		},
	}
	switch spec.Provisioning {
	case kinds.Spot:
		// No automatic restart or maintenance policy: GCP rejects spot GPU pools that ask for one.
		cfg.Spot = pulumi.Bool(true)
	case kinds.FlexStart:
		cfg.FlexStart = pulumi.Bool(true)
		cfg.ReservationAffinity = &container.NodePoolNodeConfigReservationAffinityArgs{ConsumeReservationType: pulumi.String("NO_RESERVATION")}
	case kinds.Reservation:
		cfg.ReservationAffinity = &container.NodePoolNodeConfigReservationAffinityArgs{
			ConsumeReservationType: pulumi.String("SPECIFIC_RESERVATION"),
			Key:                    pulumi.String("compute.googleapis.com/reservation-name"),
			Values:                 pulumi.StringArray{pulumi.String(spec.Reservation)},
		}
	}
	return cfg
}

// gpuAutoscaling bounds the pool.
func gpuAutoscaling(spec GPUPoolSpec) *container.NodePoolAutoscalingArgs {
	return &container.NodePoolAutoscalingArgs{
		TotalMinNodeCount: pulumi.Int(spec.MinNodes),
		TotalMaxNodeCount: pulumi.Int(spec.MaxNodes),
		// ANY uses reservations and available capacity first; the pool has one zone anyway.
		LocationPolicy: pulumi.String("ANY"),
	}
}

// initialNodes is the pool's size at creation: MinNodes for spot and flex-start, whose capacity
// the autoscaler requests when the Ray workers are pending (so that `pulumi up` never waits on,
// or fails for, capacity that is not there), and for a queue, whose experiments bring their own
// Ray clusters; the full size for reserved and on-demand capacity, which the long-lived Ray
// cluster holds.
func initialNodes(spec GPUPoolSpec) int {
	if spec.Provisioning.Preemptible() || spec.Queued {
		return spec.MinNodes
	}
	return spec.Nodes
}

// NodeSelectors place the Ray workers on GPU nodes and the Ray head (and data preparation) on
// CPU nodes that are neither spot nor GPU. On Standard they select the program's pools; on
// Autopilot they make Autopilot provision the GPU nodes, and a pod without GPU requests lands on
// general-purpose, on-demand nodes.
func NodeSelectors(mode kinds.Mode, cpu CPUPoolSpec, gpu GPUPoolSpec) (gpuSelector, headSelector map[string]string) {
	if mode == kinds.Standard {
		return map[string]string{gpunode.NodePoolLabel: gpu.Name}, map[string]string{gpunode.NodePoolLabel: cpu.Name}
	}
	return autopilotSelectors(gpu), map[string]string{}
}

// autopilotSelectors are the node selectors that make Autopilot provision the GPU nodes.
// The accelerator count is a string: a number is not a valid label value.
func autopilotSelectors(spec GPUPoolSpec) map[string]string {
	sel := map[string]string{
		gpunode.AcceleratorLabel:      spec.Accelerator,
		gpunode.AcceleratorCountLabel: strconv.Itoa(spec.GPUsPerNode),
		gpunode.ComputeClassLabel:     "Performance",
	}
	if spec.LocalSSDs > 0 {
		// Autopilot's equivalent of local SSD ephemeral storage.
		sel[gpunode.LocalSSDEphemeralLabel] = "true"
	}
	if spec.DriverVersion == DriverLatest {
		// Absent, Autopilot installs the DEFAULT driver.
		sel[gpunode.DriverVersionLabel] = DriverLatest
	}
	switch spec.Provisioning {
	case kinds.Spot:
		sel[gpunode.SpotLabel] = "true"
	case kinds.FlexStart:
		sel[gpunode.FlexStartLabel] = "true"
	case kinds.Reservation:
		name, _, _ := strings.Cut(spec.Reservation, "/")
		sel[gpunode.ReservationLabel] = name
		sel[gpunode.ReservationAffinityLabel] = "specific"
	}
	return sel
}
