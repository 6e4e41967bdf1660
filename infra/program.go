// Package infra is the composition root of gke-rl: it loads and validates the stack
// configuration, holds the hardware catalog, wires the component packages together and exports
// the stack outputs.
package infra

import (
	"maps"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/cluster"
	"gke-rl/network"
)

// Program is the Pulumi program: `pulumi.Run(infra.Program)`.
func Program(ctx *pulumi.Context) error {
	cfg, err := LoadConfig(ctx, EnvConfigKeys())
	if err != nil {
		return err
	}
	outputs, err := Deploy(ctx, cfg)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(outputs)) {
		ctx.Export(key, outputs[key])
	}
	return nil
}

// Deploy registers every component for a validated configuration and returns the stack outputs.
// The offline planner calls it directly so that it can record the outputs.
func Deploy(ctx *pulumi.Context, cfg *Config) (pulumi.Map, error) {
	project := pulumi.String(cfg.Project)
	region := pulumi.String(cfg.Region)

	networks, err := network.NewNetworks(ctx, "networks", &network.NetworksArgs{
		Project:         project,
		Region:          region,
		Zone:            cfg.Zone,
		NamePrefix:      cfg.Cluster.Name,
		NodeCIDR:        cfg.Network.NodeCIDR,
		PodCIDR:         cfg.Network.PodCIDR,
		ServiceCIDR:     cfg.Network.ServiceCIDR,
		GVNICCIDR:       cfg.Network.GVNICCIDR,
		RDMASubnetCIDRs: cfg.RDMASubnetCIDRs(),
		MTU:             cfg.Network.MTU,
	})
	if err != nil {
		return nil, err
	}

	spec := cfg.GPUSpec()
	gpuNetworks := []cluster.AdditionalNetwork{{Network: networks.GVNICNetwork.Name, Subnetwork: networks.GVNICSubnet.Name}}
	for _, s := range networks.RDMASubnets {
		gpuNetworks = append(gpuNetworks, cluster.AdditionalNetwork{Network: networks.RDMANetwork.Name, Subnetwork: s.Name})
	}
	gke, err := cluster.NewCluster(ctx, "cluster", &cluster.ClusterArgs{
		Project:            project,
		ProjectID:          cfg.Project,
		Region:             cfg.Region,
		Zone:               cfg.Zone,
		Name:               cfg.Cluster.Name,
		Mode:               cluster.Mode(cfg.Cluster.Mode),
		ReleaseChannel:     cfg.Cluster.ReleaseChannel,
		AuthorizedNetworks: cfg.Cluster.AuthorizedNetworks,
		Network:            networks.MainNetwork.ID(),
		Subnetwork:         networks.MainSubnet.ID(),
		PodRangeName:       networks.PodRangeName,
		ServiceRangeName:   networks.ServiceRangeName,
		LustreLegacyPort:   cfg.LustreUsesGKESupport(),
		CPUMachineType:     cfg.Cluster.CPUMachineType,
		GPU: cluster.GPUPoolSpec{
			MachineType:  spec.MachineType,
			Accelerator:  spec.Accelerator,
			GPUsPerNode:  spec.GPUsPerNode,
			Nodes:        cfg.GPU.Nodes,
			MinNodes:     cfg.GPU.MinNodes,
			MaxNodes:     cfg.GPU.MaxNodes,
			Provisioning: cluster.Provisioning(cfg.GPU.Provisioning),
			Reservation:  cfg.GPU.Reservation,
		},
		GPUNetworks: gpuNetworks,
	})
	if err != nil {
		return nil, err
	}

	mapping, err := network.NewMapping(ctx, "network-mapping", &network.MappingArgs{
		Networks: network.ExtraNetworks(networks),
	}, gke.InClusterOptions()...)
	if err != nil {
		return nil, err
	}

	networkNames := pulumi.StringArray{}
	for _, n := range mapping.Names {
		networkNames = append(networkNames, pulumi.String(n))
	}
	return pulumi.Map{
		"clusterName":     gke.Cluster.Name,
		"clusterEndpoint": gke.Cluster.Endpoint,
		"kubeconfigCommand": pulumi.Sprintf("gcloud container clusters get-credentials %s --location %s --project %s",
			gke.Cluster.Name, cfg.Region, cfg.Project),
		"podNetworks":  networkNames,
		"project":      project,
		"region":       region,
		"zone":         pulumi.String(cfg.Zone),
		"gpuType":      pulumi.String(cfg.GPU.Type),
		"machineType":  pulumi.String(spec.MachineType),
		"gpuNodes":     pulumi.Int(cfg.GPU.Nodes),
		"mainNetwork":  networks.MainNetwork.SelfLink,
		"gvnicNetwork": networks.GVNICNetwork.SelfLink,
		"rdmaNetwork":  networks.RDMANetwork.SelfLink,
	}, nil
}
