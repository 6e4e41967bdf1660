// Package cluster builds the GKE cluster (Standard or Autopilot), its node service account, the
// CPU pool for the Ray head and system pods, the GPU pool, the RDMA/NCCL installer and the
// Kubernetes provider that every in-cluster object uses.
package cluster

import (
	"fmt"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/container"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/infra/naming"
)

// Mode is the GKE mode of operation.
type Mode string

// The cluster modes.
const (
	Standard  Mode = "standard"
	Autopilot Mode = "autopilot"
)

// NodeRoles are the only project roles the node service account gets: write logs and metrics,
// read monitoring, write resource metadata, pull images.
var NodeRoles = []string{
	"roles/artifactregistry.reader",
	"roles/logging.logWriter",
	"roles/monitoring.metricWriter",
	"roles/monitoring.viewer",
	"roles/stackdriver.resourceMetadata.writer",
}

// ClusterArgs configures the cluster.
type ClusterArgs struct {
	Project pulumi.StringInput
	// ProjectID is the plain project ID, for the Workload Identity pool name.
	ProjectID string
	// Region is the control plane's location; Zone holds every node.
	Region, Zone string
	// Name is the GKE cluster name (at most 40 characters) and the prefix of child names.
	Name               string
	Mode               Mode
	ReleaseChannel     string
	AuthorizedNetworks []string
	// Network and Subnetwork are the main VPC and subnet; the ranges are its secondary ranges.
	Network, Subnetwork            pulumi.StringInput
	PodRangeName, ServiceRangeName string
	// LustreLegacyPort must be true exactly when the Managed Lustre instance has GKE support
	// (it then listens on 6988).
	LustreLegacyPort bool
	// CPUMachineType sizes the CPU pool that runs the Ray head and system pods.
	CPUMachineType string
	GPU            GPUPoolSpec
	// GPUNetworks are the GPU nodes' extra NICs in order: gVNIC, then each RDMA subnet.
	GPUNetworks []AdditionalNetwork
	// WorkloadNamespace is the namespace created for the storage claim, the Ray cluster and the
	// training run.
	WorkloadNamespace string
}

// Cluster is the GKE cluster and what runs on it before any workload.
type Cluster struct {
	pulumi.ResourceState

	Cluster            *container.Cluster
	NodeServiceAccount *serviceaccount.Account
	// CPUPool and GPUPool are nil in Autopilot mode.
	CPUPool *container.NodePool
	GPUPool *container.NodePool
	// Provider talks to the cluster's API server; every in-cluster object uses it.
	Provider *kubernetes.Provider
	// Namespace is the workload namespace's name, known once the namespace exists, so that
	// objects placed in it wait for it.
	Namespace pulumi.StringOutput
	// GPUNodeSelector and HeadNodeSelector place Ray workers on GPU nodes and the Ray head on
	// CPU nodes, in either mode.
	GPUNodeSelector  map[string]string
	HeadNodeSelector map[string]string
}

// NewCluster registers the cluster. Node pools wait only for the cluster and their subnets.
func NewCluster(ctx *pulumi.Context, name string, args *ClusterArgs, opts ...pulumi.ResourceOption) (*Cluster, error) {
	c := &Cluster{}
	if err := ctx.RegisterComponentResource("gke-rl:cluster:Cluster", name, c, opts...); err != nil {
		return nil, err
	}
	names := naming.New(args.Name)
	child := pulumi.Parent(c)

	if err := c.nodeServiceAccount(ctx, names, args, child); err != nil {
		return nil, fmt.Errorf("node service account: %w", err)
	}
	var err error
	c.Cluster, err = container.NewCluster(ctx, "gke", clusterArgs(args, c.NodeServiceAccount.Email), child)
	if err != nil {
		return nil, err
	}
	if args.Mode == Standard {
		if err := c.nodePools(ctx, names, args, child); err != nil {
			return nil, err
		}
		c.GPUNodeSelector = map[string]string{NodePoolLabel: names.Resource("gpu")}
		c.HeadNodeSelector = map[string]string{NodePoolLabel: names.Resource("cpu")}
	} else {
		c.GPUNodeSelector = AutopilotSelectors(args.GPU)
		// Autopilot places a pod without GPU requests on general-purpose, on-demand nodes.
		c.HeadNodeSelector = map[string]string{}
	}

	c.Provider, err = kubernetes.NewProvider(ctx, "gke", &kubernetes.ProviderArgs{
		Kubeconfig: Kubeconfig(c.Cluster),
		// Server-side apply lets the Ray operator and GKE own the fields they manage.
		EnableServerSideApply: pulumi.Bool(true),
	}, child)
	if err != nil {
		return nil, err
	}
	if err := NewRDMAInstaller(ctx, name+"-rdma", args.Mode, args.GPU.Accelerator, c.InClusterOptions(child)...); err != nil {
		return nil, fmt.Errorf("rdma installer: %w", err)
	}
	ns, err := corev1.NewNamespace(ctx, "workloads", &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(args.WorkloadNamespace)},
	}, c.InClusterOptions(child)...)
	if err != nil {
		return nil, fmt.Errorf("workload namespace: %w", err)
	}
	c.Namespace = ns.Metadata.Name().Elem()

	outputs := pulumi.Map{
		"name":      c.Cluster.Name,
		"endpoint":  c.Cluster.Endpoint,
		"namespace": c.Namespace,
	}
	if err := ctx.RegisterResourceOutputs(c, outputs); err != nil {
		return nil, err
	}
	return c, nil
}

// InClusterOptions are the options of an in-cluster object: the cluster's provider, and deletion
// with the cluster so that `pulumi destroy` does not wait on an API server that is going away.
func (c *Cluster) InClusterOptions(extra ...pulumi.ResourceOption) []pulumi.ResourceOption {
	return append([]pulumi.ResourceOption{pulumi.Provider(c.Provider), pulumi.DeletedWith(c.Cluster)}, extra...)
}

func (c *Cluster) nodeServiceAccount(ctx *pulumi.Context, names naming.Namer, args *ClusterArgs, child pulumi.ResourceOption) error {
	var err error
	// Service account IDs are at most 30 characters.
	c.NodeServiceAccount, err = serviceaccount.NewAccount(ctx, "nodes", &serviceaccount.AccountArgs{
		Project:     args.Project,
		AccountId:   pulumi.String(names.Name(30, "nodes")),
		DisplayName: pulumi.String(fmt.Sprintf("GKE nodes of %s", args.Name)),
	}, child)
	if err != nil {
		return err
	}
	for _, role := range NodeRoles {
		if _, err := projects.NewIAMMember(ctx, "nodes-"+role[len("roles/"):], &projects.IAMMemberArgs{
			Project: args.Project,
			Role:    pulumi.String(role),
			Member:  c.NodeServiceAccount.Member,
		}, child); err != nil {
			return err
		}
	}
	return nil
}

// clusterArgs is the cluster resource for either mode.
func clusterArgs(args *ClusterArgs, nodeSA pulumi.StringOutput) *container.ClusterArgs {
	authorized := container.ClusterMasterAuthorizedNetworksConfigCidrBlockArray{}
	for _, cidr := range args.AuthorizedNetworks {
		authorized = append(authorized, container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs{
			CidrBlock: pulumi.String(cidr), DisplayName: pulumi.String("authorized " + cidr),
		})
	}
	ca := &container.ClusterArgs{
		Project:               args.Project,
		Name:                  pulumi.String(args.Name),
		Location:              pulumi.String(args.Region),
		Network:               args.Network,
		Subnetwork:            args.Subnetwork,
		DeletionProtection:    pulumi.Bool(false), // the cluster holds no data; storage does
		ReleaseChannel:        &container.ClusterReleaseChannelArgs{Channel: pulumi.String(args.ReleaseChannel)},
		DatapathProvider:      pulumi.String("ADVANCED_DATAPATH"),
		EnableMultiNetworking: pulumi.Bool(true),
		IpAllocationPolicy: &container.ClusterIpAllocationPolicyArgs{
			ClusterSecondaryRangeName:  pulumi.String(args.PodRangeName),
			ServicesSecondaryRangeName: pulumi.String(args.ServiceRangeName),
		},
		PrivateClusterConfig: &container.ClusterPrivateClusterConfigArgs{
			EnablePrivateNodes:    pulumi.Bool(true),
			EnablePrivateEndpoint: pulumi.Bool(false),
		},
		MasterAuthorizedNetworksConfig: &container.ClusterMasterAuthorizedNetworksConfigArgs{CidrBlocks: authorized},
		WorkloadIdentityConfig:         &container.ClusterWorkloadIdentityConfigArgs{WorkloadPool: pulumi.String(args.ProjectID + ".svc.id.goog")},
		AddonsConfig: &container.ClusterAddonsConfigArgs{
			RayOperatorConfigs: container.ClusterAddonsConfigRayOperatorConfigArray{
				container.ClusterAddonsConfigRayOperatorConfigArgs{
					Enabled:                    pulumi.Bool(true),
					RayClusterLoggingConfig:    &container.ClusterAddonsConfigRayOperatorConfigRayClusterLoggingConfigArgs{Enabled: pulumi.Bool(true)},
					RayClusterMonitoringConfig: &container.ClusterAddonsConfigRayOperatorConfigRayClusterMonitoringConfigArgs{Enabled: pulumi.Bool(true)},
				},
			},
			LustreCsiDriverConfig: &container.ClusterAddonsConfigLustreCsiDriverConfigArgs{
				Enabled:                pulumi.Bool(true),
				EnableLegacyLustrePort: pulumi.Bool(args.LustreLegacyPort),
			},
			GcsFuseCsiDriverConfig: &container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs{Enabled: pulumi.Bool(true)},
		},
	}
	if args.Mode == Autopilot {
		ca.EnableAutopilot = pulumi.Bool(true)
		ca.ClusterAutoscaling = &container.ClusterClusterAutoscalingArgs{
			AutoProvisioningDefaults: &container.ClusterClusterAutoscalingAutoProvisioningDefaultsArgs{ServiceAccount: nodeSA},
		}
		return ca
	}
	ca.NodeLocations = pulumi.StringArray{pulumi.String(args.Zone)}
	// The default pool is replaced by the program's own pools.
	ca.RemoveDefaultNodePool = pulumi.Bool(true)
	ca.InitialNodeCount = pulumi.Int(1)
	ca.EnableShieldedNodes = pulumi.Bool(true)
	ca.MonitoringConfig = &container.ClusterMonitoringConfigArgs{
		EnableComponents:  pulumi.StringArray{pulumi.String("SYSTEM_COMPONENTS"), pulumi.String("DCGM")},
		ManagedPrometheus: &container.ClusterMonitoringConfigManagedPrometheusArgs{Enabled: pulumi.Bool(true)},
	}
	ca.NodeConfig = &container.ClusterNodeConfigArgs{ServiceAccount: nodeSA, OauthScopes: pulumi.StringArray{pulumi.String("https://www.googleapis.com/auth/cloud-platform")}}
	return ca
}

func (c *Cluster) nodePools(ctx *pulumi.Context, names naming.Namer, args *ClusterArgs, child pulumi.ResourceOption) error {
	scopes := pulumi.StringArray{pulumi.String("https://www.googleapis.com/auth/cloud-platform")}
	var err error
	cpu := c.poolArgs(names, args, "cpu")
	cpu.InitialNodeCount = pulumi.Int(1)
	cpu.Autoscaling = &container.NodePoolAutoscalingArgs{TotalMinNodeCount: pulumi.Int(1), TotalMaxNodeCount: pulumi.Int(3)}
	cpu.Management = &container.NodePoolManagementArgs{AutoRepair: pulumi.Bool(true), AutoUpgrade: pulumi.Bool(true)}
	cpu.NodeConfig = &container.NodePoolNodeConfigArgs{
		// On-demand, never spot: a preempted head takes the whole Ray cluster with it.
		MachineType:            pulumi.String(args.CPUMachineType),
		ServiceAccount:         c.NodeServiceAccount.Email,
		OauthScopes:            scopes,
		WorkloadMetadataConfig: &container.NodePoolNodeConfigWorkloadMetadataConfigArgs{Mode: pulumi.String("GKE_METADATA")},
		Labels:                 pulumi.StringMap{RoleLabel: pulumi.String("cpu")},
		ShieldedInstanceConfig: &container.NodePoolNodeConfigShieldedInstanceConfigArgs{
			EnableSecureBoot: pulumi.Bool(true), EnableIntegrityMonitoring: pulumi.Bool(true),
		},
	}
	c.CPUPool, err = container.NewNodePool(ctx, "cpu", cpu, child, ignoreNodeCount)
	if err != nil {
		return fmt.Errorf("cpu pool: %w", err)
	}

	extra := container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArray{}
	for _, n := range args.GPUNetworks {
		extra = append(extra, container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs{Network: n.Network, Subnetwork: n.Subnetwork})
	}
	gpu := c.poolArgs(names, args, "gpu")
	gpu.InitialNodeCount = pulumi.Int(initialNodes(args.GPU))
	gpu.Autoscaling = gpuAutoscaling(args.GPU)
	gpu.Management = &container.NodePoolManagementArgs{
		// Flex-start nodes are not repaired: a repaired node would be a new request.
		AutoRepair:  pulumi.Bool(args.GPU.Provisioning != FlexStart),
		AutoUpgrade: pulumi.Bool(true),
	}
	gpu.NodeConfig = gpuNodeConfig(args.GPU, c.NodeServiceAccount.Email)
	gpu.NetworkConfig = &container.NodePoolNetworkConfigArgs{AdditionalNodeNetworkConfigs: extra}
	c.GPUPool, err = container.NewNodePool(ctx, "gpu", gpu, child, ignoreNodeCount)
	if err != nil {
		return fmt.Errorf("gpu pool: %w", err)
	}
	return nil
}

// ignoreNodeCount leaves the pools' size to the autoscaler after creation.
var ignoreNodeCount = pulumi.IgnoreChanges([]string{"initialNodeCount", "nodeCount"})

// poolArgs are the settings every node pool shares: the cluster, region and zone, and its name.
func (c *Cluster) poolArgs(names naming.Namer, args *ClusterArgs, role string) *container.NodePoolArgs {
	return &container.NodePoolArgs{
		Project:       args.Project,
		Cluster:       c.Cluster.ID(),
		Location:      pulumi.String(args.Region),
		Name:          pulumi.String(names.Resource(role)),
		NodeLocations: pulumi.StringArray{pulumi.String(args.Zone)},
	}
}

// Kubeconfig is a kubeconfig for the cluster that authenticates with gke-gcloud-auth-plugin, so
// that no credential is stored in the state.
func Kubeconfig(cl *container.Cluster) pulumi.StringOutput {
	return pulumi.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gke
  cluster:
    server: https://%s
    certificate-authority-data: %s
contexts:
- name: gke
  context:
    cluster: gke
    user: gke
current-context: gke
users:
- name: gke
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin, e.g. gcloud components install gke-gcloud-auth-plugin
      provideClusterInfo: true
`, cl.Endpoint, cl.MasterAuth.ClusterCaCertificate().Elem())
}
