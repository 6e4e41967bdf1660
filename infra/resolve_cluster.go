package infra

import (
	"net/netip"

	"gke-rl/cluster"
	"gke-rl/internal/kinds"
	"gke-rl/storage"
	"gke-rl/workloads/queue"
)

// What Resolve derives for the cluster and the storage.

func resolveCluster(c *Config, bp *Blueprint) cluster.Spec {
	authorized := make([]netip.Prefix, 0, len(c.Cluster.AuthorizedNetworks))
	for _, cidr := range c.Cluster.AuthorizedNetworks {
		p, _ := parseCIDR(cidr) // validate checked every CIDR
		authorized = append(authorized, p)
	}
	cpuPool, gpuPool := cluster.PoolNames(c.Cluster.Name)
	return cluster.Spec{
		Project: c.Project, Region: c.Region, Zone: c.Zone,
		Name:               c.Cluster.Name,
		Mode:               c.Cluster.Mode,
		NodeServiceAccount: c.Cluster.NodeServiceAccount,
		// In-cluster access for pull-request previews.
		PreviewServiceAccount: c.Cluster.PreviewServiceAccount,
		// In-cluster access for the deploy workflow.
		DeployServiceAccount: c.Cluster.DeployServiceAccount,
		ReleaseChannel:       c.Cluster.ReleaseChannel,
		AuthorizedNetworks:   authorized,
		PodRangeName:         bp.Networks.PodRangeName(),
		ServiceRangeName:     bp.Networks.ServiceRangeName(),
		// The instance listens on GKE's port (6988) exactly when it has GKE support, and the
		// cluster's Lustre CSI driver must then use the legacy port.
		LustreLegacyPort: c.Storage.Type == kinds.Lustre && c.Storage.GKESupport,
		CPUPool: cluster.CPUPoolSpec{Name: cpuPool, MachineType: c.Cluster.CPUMachineType,
			// The Ray head and the data preparation mount Lustre from this pool.
			SecureBoot: c.Storage.Type != kinds.Lustre},
		GPUPool: cluster.GPUPoolSpec{
			Name:             gpuPool,
			MachineType:      bp.Hardware.MachineType,
			Accelerator:      bp.Hardware.Accelerator,
			GPUsPerNode:      bp.Hardware.GPUsPerNode,
			Nodes:            c.GPU.Nodes,
			MinNodes:         c.GPU.MinNodes,
			MaxNodes:         c.GPU.MaxNodes,
			Provisioning:     c.GPU.Provisioning,
			Reservation:      c.GPU.Reservation,
			LocalSSDs:        bp.Hardware.LocalSSDs,
			CompactPlacement: c.GPU.Placement == PlacementCompact,
			Queued:           len(c.Jobs) > 0,
			DriverVersion:    c.GPU.DriverVersion,
		},
		Namespace:       bp.Namespace,
		NamespaceLabels: workloadNamespaceLabels(c),
		ImageMirror:     imageMirror(c),
		// The tokens' CSI driver.
		SecretManager: c.Tokens.HuggingFace || c.Tokens.WandB,
		Maintenance: cluster.Maintenance{
			DailyStart:      c.Cluster.MaintenanceStart,
			NoUpgradesFrom:  c.Cluster.NoUpgradesFrom,
			NoUpgradesUntil: noUpgradesUntil(c.Cluster.NoUpgradesUntil),
		},
	}
}

// workloadNamespaceLabels mark a namespace whose experiments wait in the queue: the program's
// Kueue calls its webhooks for pods and jobs only there (queue.NamespaceLabel).
func workloadNamespaceLabels(c *Config) map[string]string {
	if len(c.Jobs) == 0 {
		return nil
	}
	return map[string]string{queue.NamespaceLabel: queue.NamespaceLabelValue}
}

func noUpgradesUntil(v string) string {
	if v == NoUpgradesNone {
		return ""
	}
	return v
}

func resolveStorage(c *Config, hw GPUSpec) StoragePlan {
	s := c.Storage
	plan := StoragePlan{Type: s.Type, WriteMBps: storageWriteMBps(c)}
	if s.Type == kinds.GCSFuse {
		plan.Bucket = &storage.BucketSpec{Project: c.Project, Region: c.Region, Name: s.Bucket, NamePrefix: c.Cluster.Name, Protect: s.Protect, Adopt: s.Adopt,
			// Half of a GPU node's local SSDs: the file cache lives in the FUSE sidecar's
			// ephemeral storage, and an unbounded one would fill the node.
			FileCacheMiB: hw.LocalSSDs * LocalSSDGiB * 1024 / 2}
		plan.Volume = storage.BucketVolume(s.MountPath)
		return plan
	}
	plan.Lustre = &storage.LustreSpec{
		Project: c.Project, Zone: c.Zone, NamePrefix: c.Cluster.Name,
		PSAPrefixLength:      c.Network.PSAPrefixLength,
		CapacityGiB:          s.CapacityGiB,
		ThroughputMBpsPerTiB: s.Throughput,
		Filesystem:           s.Filesystem,
		GKESupport:           s.GKESupport,
		Protect:              s.Protect,
		Adopt:                s.Adopt,
	}
	plan.Volume = storage.LustreVolume(s.MountPath)
	return plan
}

// imageMirror is the framework image's Artifact Registry mirror (`ray.mirror`), nil when it is
// off or the image is in a registry the program does not mirror.
func imageMirror(c *Config) *cluster.ImageMirror {
	if !c.Ray.Mirror {
		return nil
	}
	m, ok := cluster.MirrorOf(frameworkRelease(c).Image, c.Project, c.Region, c.Cluster.Name)
	if !ok {
		return nil
	}
	return &m
}

// pulledImage is a run's image as nodes pull it: through the stack's mirror when there is one
// and it mirrors the image's registry (experiments of another release may run another image of
// it).
func pulledImage(c *Config, image string, m *cluster.ImageMirror) string {
	if m == nil {
		return image
	}
	if own, ok := cluster.MirrorOf(image, c.Project, c.Region, c.Cluster.Name); ok && own.RepositoryID == m.RepositoryID {
		return own.Image
	}
	return image
}
