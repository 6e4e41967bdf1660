// Package infra is the composition root of gke-rl: it loads and validates the stack
// configuration, holds the hardware catalog, wires the component packages together and exports
// the stack outputs.
package infra

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/cluster"
	"gke-rl/network"
	"gke-rl/storage"
)

// Program is the Pulumi program: `pulumi.Run(infra.Program)`.
func Program(ctx *pulumi.Context) error {
	cfg, err := LoadConfig(ctx, EnvConfigKeys())
	if err != nil {
		return err
	}
	for _, w := range Warnings(cfg) {
		if err := ctx.Log.Warn(w.Error(), nil); err != nil {
			return err
		}
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
		GPUNetworks:       gpuNetworks,
		WorkloadNamespace: WorkloadNamespace,
	})
	if err != nil {
		return nil, err
	}

	shared, storageOutputs, err := deployStorage(ctx, cfg, networks, gke)
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
	outputs := pulumi.Map{
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
		"namespace":    gke.Namespace,
	}
	maps.Copy(outputs, storageOutputs)

	training, err := deployTraining(ctx, cfg, gke, mapping, shared)
	if err != nil {
		return nil, err
	}
	maps.Copy(outputs, training)
	return outputs, nil
}

// WorkloadNamespace holds the storage claim, the Ray cluster and the training run.
const WorkloadNamespace = "gke-rl"

// deployStorage registers the configured storage type and returns it with its stack outputs.
func deployStorage(ctx *pulumi.Context, cfg *Config, networks *network.Networks, gke *cluster.Cluster) (storage.Shared, pulumi.Map, error) {
	s := cfg.Storage
	outputs := pulumi.Map{
		"storageType":      pulumi.String(s.Type),
		"storageClaim":     pulumi.String(storage.ClaimName),
		"storageMountPath": pulumi.String(s.MountPath),
		"storageWriteMBps": pulumi.Int(int(cfg.StorageWriteMBps())),
	}
	if e, ok := cfg.EstimateCheckpoint(); ok {
		outputs["checkpointEstimate"] = pulumi.String(e.Summary())
		outputs["checkpointSeconds"] = pulumi.Int(int(math.Ceil(e.Seconds)))
	}
	common := storage.Common{
		NamePrefix: cfg.Cluster.Name,
		Namespace:  gke.Namespace,
		MountPath:  s.MountPath,
		Protect:    s.Protect,
		InCluster:  gke.InClusterOptions(),
	}
	if s.Type == StorageGCSFuse {
		bucket, err := storage.NewBucket(ctx, "storage", &storage.BucketArgs{
			Common:    common,
			ProjectID: cfg.Project,
			Region:    cfg.Region,
			Name:      s.Bucket,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("storage: %w", err)
		}
		outputs["bucket"] = bucket.Bucket.Url
		outputs["storageServiceAccount"] = pulumi.String(storage.BucketServiceAccount)
		return bucket, outputs, nil
	}
	lustre, err := storage.NewLustre(ctx, "storage", &storage.LustreArgs{
		Common:               common,
		Project:              pulumi.String(cfg.Project),
		Zone:                 cfg.Zone,
		Network:              networks.MainNetwork.ID(),
		PSAPrefixLength:      cfg.Network.PSAPrefixLength,
		CapacityGiB:          s.CapacityGiB,
		ThroughputMBpsPerTiB: s.Throughput,
		Filesystem:           s.Filesystem,
		GKESupport:           s.GKESupport,
		NodeServiceAccount:   gke.NodeServiceAccount.Email,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("storage: %w", err)
	}
	outputs["lustreInstance"] = lustre.Instance.Name
	outputs["lustreMountPoint"] = lustre.Instance.MountPoint
	return lustre, outputs, nil
}
