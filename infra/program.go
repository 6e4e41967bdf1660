// Package infra is the composition root of gke-rl: it loads and validates the stack
// configuration, holds the hardware catalog, wires the component packages together and exports
// the stack outputs.
package infra

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

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
	for _, key := range sortedKeys(outputs) {
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

	return pulumi.Map{
		"project":      project,
		"region":       region,
		"zone":         pulumi.String(cfg.Zone),
		"gpuType":      pulumi.String(cfg.GPU.Type),
		"machineType":  pulumi.String(cfg.GPUSpec().MachineType),
		"gpuNodes":     pulumi.Int(cfg.GPU.Nodes),
		"mainNetwork":  networks.MainNetwork.SelfLink,
		"gvnicNetwork": networks.GVNICNetwork.SelfLink,
		"rdmaNetwork":  networks.RDMANetwork.SelfLink,
	}, nil
}
