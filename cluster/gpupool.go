package cluster

import (
	"strconv"
	"strings"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/container"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Provisioning is how the GPU capacity is obtained.
type Provisioning string

// The provisioning models, with the settings GCP requires of each (Cluster Toolkit's
// preconditions): spot takes no reservation; a reservation is consumed by name; flex-start is
// neither spot nor reserved, has auto-repair off and no static node count.
const (
	Spot        Provisioning = "spot"
	Reservation Provisioning = "reservation"
	FlexStart   Provisioning = "flex-start"
	OnDemand    Provisioning = "on-demand"
)

// Node labels and taints that GPU workloads rely on.
const (
	GPUTaintKey         = "nvidia.com/gpu"
	GPUTaintValue       = "present"
	AcceleratorLabel    = "cloud.google.com/gke-accelerator"
	AcceleratorCount    = "cloud.google.com/gke-accelerator-count"
	NodePoolLabel       = "cloud.google.com/gke-nodepool"
	SpotLabel           = "cloud.google.com/gke-spot"
	FlexStartLabel      = "cloud.google.com/gke-flex-start"
	ComputeClassLabel   = "cloud.google.com/compute-class"
	ReservationLabel    = "cloud.google.com/reservation-name"
	ReservationAffinity = "cloud.google.com/reservation-affinity"
	// RoleLabel marks the pools of this program so that pods can select them.
	RoleLabel = "gke-rl/role"
)

// GPUPoolSpec describes the GPU node pool.
type GPUPoolSpec struct {
	MachineType string
	Accelerator string
	GPUsPerNode int
	// Nodes is the initial size; MinNodes and MaxNodes bound the autoscaler.
	Nodes, MinNodes, MaxNodes int
	Provisioning              Provisioning
	// Reservation is `<name>` or `<name>/reservationBlocks/<block>` when Provisioning is
	// Reservation.
	Reservation string
}

// AdditionalNetwork is one extra node NIC: a VPC and subnet.
type AdditionalNetwork struct {
	Network, Subnetwork pulumi.StringInput
}

// gpuNodeConfig is the node configuration GCP reads for the GPU pool.
func gpuNodeConfig(spec GPUPoolSpec, serviceAccount pulumi.StringInput) *container.NodePoolNodeConfigArgs {
	cfg := &container.NodePoolNodeConfigArgs{
		MachineType: pulumi.String(spec.MachineType),
		GuestAccelerators: container.NodePoolNodeConfigGuestAcceleratorArray{
			container.NodePoolNodeConfigGuestAcceleratorArgs{
				Type:  pulumi.String(spec.Accelerator),
				Count: pulumi.Int(spec.GPUsPerNode),
				// GKE installs and upgrades the driver that matches the node image.
				GpuDriverInstallationConfig: &container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs{
					GpuDriverVersion: pulumi.String("DEFAULT"),
				},
			},
		},
		Gvnic:                  &container.NodePoolNodeConfigGvnicArgs{Enabled: pulumi.Bool(true)},
		WorkloadMetadataConfig: &container.NodePoolNodeConfigWorkloadMetadataConfigArgs{Mode: pulumi.String("GKE_METADATA")},
		ShieldedInstanceConfig: &container.NodePoolNodeConfigShieldedInstanceConfigArgs{
			EnableSecureBoot:          pulumi.Bool(true),
			EnableIntegrityMonitoring: pulumi.Bool(true),
		},
		ServiceAccount: serviceAccount,
		OauthScopes:    pulumi.StringArray{pulumi.String("https://www.googleapis.com/auth/cloud-platform")},
		Labels: pulumi.StringMap{
			RoleLabel: pulumi.String("gpu"),
		},
		Taints: container.NodePoolNodeConfigTaintArray{
			container.NodePoolNodeConfigTaintArgs{Key: pulumi.String(GPUTaintKey), Value: pulumi.String(GPUTaintValue), Effect: pulumi.String("NO_SCHEDULE")},
		},
	}
	switch spec.Provisioning {
	case Spot:
		// No automatic restart or maintenance policy: GCP rejects spot GPU pools that ask for one.
		cfg.Spot = pulumi.Bool(true)
	case FlexStart:
		cfg.FlexStart = pulumi.Bool(true)
		cfg.ReservationAffinity = &container.NodePoolNodeConfigReservationAffinityArgs{ConsumeReservationType: pulumi.String("NO_RESERVATION")}
	case Reservation:
		cfg.ReservationAffinity = &container.NodePoolNodeConfigReservationAffinityArgs{
			ConsumeReservationType: pulumi.String("SPECIFIC_RESERVATION"),
			Key:                    pulumi.String("compute.googleapis.com/reservation-name"),
			Values:                 pulumi.StringArray{pulumi.String(spec.Reservation)},
		}
	}
	return cfg
}

// gpuAutoscaling bounds the pool. Flex-start capacity is requested on demand, so it starts empty.
func gpuAutoscaling(spec GPUPoolSpec) *container.NodePoolAutoscalingArgs {
	return &container.NodePoolAutoscalingArgs{
		TotalMinNodeCount: pulumi.Int(spec.MinNodes),
		TotalMaxNodeCount: pulumi.Int(spec.MaxNodes),
		// ANY uses reservations and available capacity first; the pool has one zone anyway.
		LocationPolicy: pulumi.String("ANY"),
	}
}

// initialNodes is the pool's size at creation: none for flex-start.
func initialNodes(spec GPUPoolSpec) int {
	if spec.Provisioning == FlexStart {
		return 0
	}
	return spec.Nodes
}

// AutopilotSelectors are the node selectors that make Autopilot provision the GPU nodes.
// The accelerator count is a string: a number is not a valid label value.
func AutopilotSelectors(spec GPUPoolSpec) map[string]string {
	sel := map[string]string{
		AcceleratorLabel:  spec.Accelerator,
		AcceleratorCount:  strconv.Itoa(spec.GPUsPerNode),
		ComputeClassLabel: "Performance",
	}
	switch spec.Provisioning {
	case Spot:
		sel[SpotLabel] = "true"
	case FlexStart:
		sel[FlexStartLabel] = "true"
	case Reservation:
		name, _, _ := strings.Cut(spec.Reservation, "/")
		sel[ReservationLabel] = name
		sel[ReservationAffinity] = "specific"
	}
	return sel
}
