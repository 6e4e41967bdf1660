// Package cluster builds the GKE cluster (Standard or Autopilot), its node service account, the
// CPU pool for the Ray head and system pods, the GPU pool, the RDMA/NCCL installer, the
// workload namespace and the Kubernetes provider that every in-cluster object uses.
package cluster

import (
	_ "embed"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/artifactregistry"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/container"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/kinds"
	"gke-rl/internal/kube"
	"gke-rl/internal/lifecycle"
	"gke-rl/internal/naming"
)

// NodeRoles are the only project roles the node service account gets: GKE's own role for node
// service accounts (logs, metrics, resource metadata; GKE's hardening guide,
// https://cloud.google.com/kubernetes-engine/docs/how-to/service-accounts) and image pulls.
var NodeRoles = []string{
	"roles/artifactregistry.reader",
	"roles/container.defaultNodeServiceAccount",
}

// cloudPlatformScope is the only OAuth scope nodes get: IAM decides what they may do.
const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// Spec is the cluster as the config decides it: plain values, all known before anything exists.
type Spec struct {
	Project string
	// Region is the control plane's location; Zone holds every node.
	Region, Zone string
	// Name is the GKE cluster name (at most 40 characters) and the prefix of GCP resource names.
	Name               string
	Mode               kinds.Mode
	ReleaseChannel     string
	AuthorizedNetworks []netip.Prefix
	// PodRangeName and ServiceRangeName are the main subnet's secondary ranges.
	PodRangeName, ServiceRangeName string
	// LustreLegacyPort must be true exactly when the Managed Lustre instance has GKE support
	// (it then listens on 6988).
	LustreLegacyPort bool
	// CPUPool runs the Ray head and system pods; GPUPool the Ray workers. Standard mode only.
	CPUPool CPUPoolSpec
	GPUPool GPUPoolSpec
	// Namespace is created for the storage claim, the Ray cluster and the training run.
	Namespace string
	// NamespaceLabels are the namespace's labels beside PodSecurityLabels (the queue's
	// queue.NamespaceLabel, which Kueue's webhooks select).
	NamespaceLabels map[string]string
	// Maintenance is when GKE may maintain the cluster and what it may not do mid-run.
	Maintenance Maintenance
	// CRDFields are the custom resources' fields the program sets (ray.CRDFields): the CRD
	// wait fails, naming the field, when the cluster's CRDs lack one.
	CRDFields []string
	// ImageMirror caches the framework image in the region; nil pulls it from its registry.
	ImageMirror *ImageMirror
	// NodeServiceAccount is the email of a service account made once outside the stack (with
	// NodeRoles) for the nodes; empty, the program creates one and grants it NodeRoles, which
	// takes a deployer that may create service accounts and grant project roles.
	NodeServiceAccount string
	// PreviewServiceAccount is the pull-request previews' identity: it gets PreviewAccess.
	PreviewServiceAccount string
	// DeployServiceAccount is the deploy workflow's identity: it gets DeployAccess, in the
	// workload namespace (and the RDMA installer's DaemonSets in kube-system).
	DeployServiceAccount string
	// SecretManager turns on GKE's Secret Manager add-on, whose CSI driver mounts the tokens.
	// Off, the field is left unset: the provider reads a cluster without the add-on as
	// {enabled: false} and suppresses that diff (SecretManagerCfgSuppress,
	// resource_container_cluster.go at v6.49.2), while a cluster that had it gets it turned off.
	SecretManager bool
}

// Maintenance is the cluster's maintenance policy.
type Maintenance struct {
	// DailyStart is the daily window's start, HH:MM in UTC.
	DailyStart string
	// NoUpgradesFrom and NoUpgradesUntil bound an exclusion of scope NO_MINOR_OR_NODE_UPGRADES:
	// no minor version and no node upgrade (either would drain the GPU nodes mid-run), while
	// security patches of the control plane still apply. Fixed times, so that a second
	// `pulumi up` shows no diff; no exclusion when NoUpgradesUntil is empty.
	NoUpgradesFrom, NoUpgradesUntil string
}

// CPUPoolSpec describes the CPU node pool.
type CPUPoolSpec struct {
	Name        string
	MachineType string
	// SecureBoot is off when the pool mounts Managed Lustre: the Lustre client's kernel modules
	// load on Secure Boot nodes only of GPU machine types (Managed Lustre's "Connect from GKE"
	// limitations, https://cloud.google.com/managed-lustre/docs/connect-from-kubernetes-engine-existing-instance).
	SecureBoot bool
}

// CPUPoolMinNodes and CPUPoolMaxNodes bound the CPU pool's autoscaler: one node holds the Ray
// head and the system pods, and the autoscaler adds nodes when CPU Jobs (the data preparation,
// the submitter) do not fit beside them.
const (
	CPUPoolMinNodes = 1
	CPUPoolMaxNodes = 3
)

// ClusterArgs are the Spec and the networks it attaches to, known once they exist.
type ClusterArgs struct {
	Spec
	// Network and Subnetwork are the main VPC and subnet.
	Network, Subnetwork pulumi.StringInput
	// GPUNetworks are the GPU nodes' extra NICs in NIC order.
	GPUNetworks []AdditionalNetwork
}

// AdditionalNetwork is one extra node NIC: a VPC and subnet.
type AdditionalNetwork struct {
	Network, Subnetwork pulumi.StringInput
}

// Cluster is the GKE cluster and what runs on it before any workload.
type Cluster struct {
	pulumi.ResourceState

	Cluster *container.Cluster
	// NodeServiceAccount is the account the program created for the nodes, nil when the spec
	// names one; NodeEmail is the nodes' account either way.
	NodeServiceAccount *serviceaccount.Account
	NodeEmail          pulumi.StringOutput
	// CPUPool and GPUPool are nil in Autopilot mode.
	CPUPool *container.NodePool
	GPUPool *container.NodePool
	// RDMAInstaller installs the gIB NCCL plugin on the GPU nodes; in Standard mode it is created
	// after the GPU pool and is ready once every node the pool starts with has the plugin.
	RDMAInstaller *appsv1.DaemonSet
	// Provider talks to the cluster's API server; every in-cluster object uses it.
	Provider  *kubernetes.Provider
	Namespace *corev1.Namespace
	// CRDs waits until the custom resource definitions that GKE's Ray add-on and
	// multi-networking install after the cluster exists are established: custom resources wait
	// for it.
	CRDs *local.Command
	// Images is the framework image's mirror, nil without one: pods of that image wait for it.
	Images *artifactregistry.Repository
	spec   Spec
}

// GPUsReady are what the GPU workloads (the gate, the Ray cluster, the run) wait for: the GPU
// pool and the RDMA installer on its nodes. A Job's activeDeadlineSeconds and a RayJob's deadline
// count from their creation; created while the pool is still being made (10 to 30 minutes for a
// reserved pool of A4 or A3 Ultra nodes), they would spend their time waiting for nodes, and a
// pod started on a node before the installer would find no /usr/local/gib.
func (c *Cluster) GPUsReady() []pulumi.Resource {
	ready := []pulumi.Resource{c.RDMAInstaller}
	if c.GPUPool != nil {
		ready = append(ready, c.GPUPool)
	}
	return ready
}

// CRDs are the custom resource definitions the program's custom resources need. GKE installs
// them asynchronously after the cluster is created, and pulumi-kubernetes gives up on "no matches
// for kind" after a few retries (pulumi-kubernetes #1446).
var CRDs = []string{
	"rayclusters.ray.io",
	"rayjobs.ray.io",
	"gkenetworkparamsets.networking.gke.io",
	"networks.networking.gke.io",
}

// SecretManagerCRD is the CRD of the SecretProviderClass, which the Secret Manager add-on
// installs.
const SecretManagerCRD = "secretproviderclasses.secrets-store.csi.x-k8s.io"

// CRDsOf are the CRDs a cluster of spec waits for.
func CRDsOf(spec Spec) []string {
	if spec.SecretManager {
		return append(slices.Clone(CRDs), SecretManagerCRD)
	}
	return CRDs
}

// WaitForCRDsScript waits for each CRD in $CRDS to exist and be established.
var WaitForCRDsScript = kube.KubectlScript(waitForCRDs)

//go:embed wait-for-crds.sh
var waitForCRDs string

// PoolNames are the node pools' GKE names; pods select them through the node pool label. GKE
// takes at most 40 characters: a cluster name of 37 to 40 characters gets pool names cut with a
// hash, and every name that fits stays as it was.
func PoolNames(clusterName string) (cpu, gpu string) {
	names := naming.New(clusterName)
	return names.Name(naming.MaxNodePoolNameLength, "cpu"), names.Name(naming.MaxNodePoolNameLength, "gpu")
}

// NewCluster registers the cluster. Node pools wait only for the cluster and their subnets.
func NewCluster(ctx *pulumi.Context, name string, args *ClusterArgs, opts ...pulumi.ResourceOption) (*Cluster, error) {
	c := &Cluster{spec: args.Spec}
	if err := ctx.RegisterComponentResource("gke-rl:cluster:Cluster", name, c, opts...); err != nil {
		return nil, err
	}
	b := builder{ctx: ctx, kids: naming.Children{Component: name, Parent: c}}

	if err := c.nodeServiceAccount(b, args); err != nil {
		return nil, fmt.Errorf("node service account: %w", err)
	}
	var err error
	gkeName, gkeOpts := b.child("gke", "gke")
	c.Cluster, err = container.NewCluster(ctx, gkeName, clusterArgs(args, c.NodeEmail),
		append(slices.Clone(gkeOpts), lifecycle.Options(lifecycle.ClusterType)...)...)
	if err != nil {
		return nil, err
	}
	if args.Mode == kinds.Standard {
		if err := c.nodePools(b, args); err != nil {
			return nil, err
		}
	}
	c.Provider, err = kubernetes.NewProvider(ctx, gkeName, &kubernetes.ProviderArgs{
		Kubeconfig: Kubeconfig(c.Cluster),
		// Server-side apply lets the Ray operator and GKE own the fields they manage.
		EnableServerSideApply: pulumi.Bool(true),
	}, gkeOpts...)
	if err != nil {
		return nil, err
	}
	crdName, crdOpts := b.child("crds", "")
	c.CRDs, err = kube.NewKubectlCommand(ctx, crdName, kube.KubectlCommandArgs{
		Script:     WaitForCRDsScript,
		Kubeconfig: Kubeconfig(c.Cluster),
		Env: pulumi.StringMap{
			"CRDS":       pulumi.String(strings.Join(CRDsOf(args.Spec), " ")),
			"CRD_FIELDS": pulumi.String(strings.Join(args.CRDFields, " ")),
		},
	}, crdOpts...)
	if err != nil {
		return nil, fmt.Errorf("crd wait: %w", err)
	}
	if m := args.ImageMirror; m != nil {
		mirrorName, mirrorOpts := b.child("images", "")
		c.Images, err = artifactregistry.NewRepository(ctx, mirrorName, mirrorArgs(&args.Spec, *m), mirrorOpts...)
		if err != nil {
			return nil, fmt.Errorf("image mirror: %w", err)
		}
	}
	inCluster := kube.Placement{Provider: c.Provider, Cluster: c.Cluster}
	installerPlacement := inCluster
	if c.GPUPool != nil {
		installerPlacement = inCluster.WaitingFor(c.GPUPool)
	}
	c.RDMAInstaller, err = newRDMAInstaller(ctx, naming.Child(name, "rdma"), args.Mode, args.GPUPool.Accelerator, installerPlacement, pulumi.Parent(c))
	if err != nil {
		return nil, fmt.Errorf("rdma installer: %w", err)
	}
	if sa := args.PreviewServiceAccount; sa != "" {
		if err := newPreviewAccess(b, PreviewAccess(sa), inCluster); err != nil {
			return nil, err
		}
	}
	// The workload namespace's pod policy is in force before the namespace exists, hence before
	// any of its pods.
	var podPolicy []pulumi.Resource
	for _, obj := range WorkloadPodPolicy(args.Namespace) {
		name, opts := b.child("pod-policy-"+strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind), "")
		o, err := kube.NewObject(ctx, name, obj, inCluster.ClusterScoped(opts...)...)
		if err != nil {
			return nil, fmt.Errorf("workload pod policy: %w", err)
		}
		podPolicy = append(podPolicy, o)
	}
	nsName, nsOpts := b.child("workloads", "workloads")
	c.Namespace, err = corev1.NewNamespace(ctx, nsName, &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(args.Namespace), Labels: pulumi.ToStringMap(namespaceLabels(args.Spec))},
	}, inCluster.WaitingFor(podPolicy...).ClusterScoped(nsOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("workload namespace: %w", err)
	}
	if sa := args.DeployServiceAccount; sa != "" {
		if err := newDeployAccess(b, DeployAccess(sa, []string{args.Namespace}), inCluster.WaitingFor(c.Namespace)); err != nil {
			return nil, err
		}
	}

	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"name":      c.Cluster.Name,
		"endpoint":  c.Cluster.Endpoint,
		"namespace": c.Namespace.Metadata.Name().Elem(),
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// namespaceLabels are the workload namespace's labels: its Pod Security levels and the spec's own.
func namespaceLabels(spec Spec) map[string]string {
	labels := maps.Clone(PodSecurityLabels)
	maps.Copy(labels, spec.NamespaceLabels)
	return labels
}

// PodSecurityLabels are the workload namespace's Pod Security Admission levels. The strictest
// its pods meet is privileged: the GPU pods mount the host's driver and gIB plugin directories
// (read-only), and the baseline level forbids every hostPath volume. Every pod the baseline
// level would refuse is reported (a warning to whoever creates it, an audit annotation), so
// that a new reason to stay at privileged shows.
var PodSecurityLabels = map[string]string{
	"pod-security.kubernetes.io/enforce": "privileged",
	"pod-security.kubernetes.io/warn":    "baseline",
	"pod-security.kubernetes.io/audit":   "baseline",
}

// Placement is where in-cluster objects go: through the cluster's provider, deleted with the
// cluster, in the workload namespace once it exists.
func (c *Cluster) Placement() kube.Placement {
	return kube.Placement{Provider: c.Provider, Cluster: c.Cluster, Namespace: c.spec.Namespace, NamespaceObject: c.Namespace}
}

// builder holds what every child of the component is registered with.
type builder struct {
	ctx  *pulumi.Context
	kids naming.Children
}

// child is the logical name and options of the child with a role; formerly is its name before
// names were derived from the component's.
func (b builder) child(role, formerly string) (string, []pulumi.ResourceOption) {
	return b.kids.Of(role, formerly)
}

func (c *Cluster) nodeServiceAccount(b builder, args *ClusterArgs) error {
	if args.NodeServiceAccount != "" {
		c.NodeEmail = pulumi.String(args.NodeServiceAccount).ToStringOutput()
		return nil
	}
	saName, saOpts := b.child("nodes", "nodes")
	var err error
	// Service account IDs are at most 30 characters.
	c.NodeServiceAccount, err = serviceaccount.NewAccount(b.ctx, saName, &serviceaccount.AccountArgs{
		Project:     pulumi.String(args.Project),
		AccountId:   pulumi.String(naming.New(args.Name).Name(30, "nodes")),
		DisplayName: pulumi.String(fmt.Sprintf("GKE nodes of %s", args.Name)),
	}, saOpts...)
	if err != nil {
		return err
	}
	c.NodeEmail = c.NodeServiceAccount.Email
	for _, role := range NodeRoles {
		short := "nodes-" + role[len("roles/"):]
		name, opts := b.child(short, short)
		if _, err := projects.NewIAMMember(b.ctx, name, &projects.IAMMemberArgs{
			Project: pulumi.String(args.Project),
			Role:    pulumi.String(role),
			Member:  c.NodeServiceAccount.Member,
		}, opts...); err != nil {
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
			CidrBlock: pulumi.String(cidr.String()), DisplayName: pulumi.String("authorized " + cidr.String()),
		})
	}
	ca := &container.ClusterArgs{
		Project:               pulumi.String(args.Project),
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
		MasterAuthorizedNetworksConfig: &container.ClusterMasterAuthorizedNetworksConfigArgs{
			CidrBlocks: authorized,
			// Only the listed CIDRs reach the public endpoint, not every Google Cloud address.
			GcpPublicCidrsAccessEnabled: pulumi.Bool(false),
		},
		MaintenancePolicy: maintenancePolicy(args.Maintenance),
		// GKE's DNS-based endpoint authorizes by IAM, from anywhere: the Kubernetes provider
		// (and a CI runner without a fixed IP) uses it, while the IP endpoint stays restricted
		// to the authorized networks.
		ControlPlaneEndpointsConfig: &container.ClusterControlPlaneEndpointsConfigArgs{
			DnsEndpointConfig: &container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs{AllowExternalTraffic: pulumi.Bool(true)},
		},
		WorkloadIdentityConfig: &container.ClusterWorkloadIdentityConfigArgs{WorkloadPool: pulumi.String(args.Project + ".svc.id.goog")},
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
	if args.SecretManager {
		ca.SecretManagerConfig = &container.ClusterSecretManagerConfigArgs{Enabled: pulumi.Bool(true)}
	}
	if args.Mode == kinds.Autopilot {
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
	ca.NodeConfig = &container.ClusterNodeConfigArgs{ServiceAccount: nodeSA, OauthScopes: pulumi.StringArray{pulumi.String(cloudPlatformScope)}}
	return ca
}

func (c *Cluster) nodePools(b builder, args *ClusterArgs) error {
	var err error
	cpu := c.poolArgs(args, args.CPUPool.Name)
	cpu.InitialNodeCount = pulumi.Int(CPUPoolMinNodes)
	cpu.Autoscaling = &container.NodePoolAutoscalingArgs{TotalMinNodeCount: pulumi.Int(CPUPoolMinNodes), TotalMaxNodeCount: pulumi.Int(CPUPoolMaxNodes)}
	cpu.Management = &container.NodePoolManagementArgs{AutoRepair: pulumi.Bool(true), AutoUpgrade: pulumi.Bool(true)}
	cpu.NodeConfig = cpuNodeConfig(args.CPUPool, c.NodeEmail)
	cpuName, cpuOpts := b.child("cpu", "cpu")
	c.CPUPool, err = container.NewNodePool(b.ctx, cpuName, cpu, append(cpuOpts, lifecycle.Options(lifecycle.NodePoolType)...)...)
	if err != nil {
		return fmt.Errorf("cpu pool: %w", err)
	}

	extra := container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArray{}
	for _, n := range args.GPUNetworks {
		extra = append(extra, container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs{Network: n.Network, Subnetwork: n.Subnetwork})
	}
	pool := args.GPUPool
	gpu := c.poolArgs(args, pool.Name)
	gpu.InitialNodeCount = pulumi.Int(initialNodes(pool))
	gpu.Autoscaling = gpuAutoscaling(pool)
	gpu.Management = &container.NodePoolManagementArgs{
		// Flex-start nodes are not repaired: a repaired node would be a new request.
		AutoRepair:  pulumi.Bool(pool.Provisioning != kinds.FlexStart),
		AutoUpgrade: pulumi.Bool(true),
	}
	gpu.NodeConfig = gpuNodeConfig(pool, c.NodeEmail)
	gpu.NetworkConfig = &container.NodePoolNetworkConfigArgs{AdditionalNodeNetworkConfigs: extra}
	// One node at a time and no spare: an exactly-sized reservation has no spare GPU machine
	// for a surge node (Cluster Toolkit's gke-node-pool defaults).
	gpu.UpgradeSettings = &container.NodePoolUpgradeSettingsArgs{
		Strategy: pulumi.String("SURGE"), MaxSurge: pulumi.Int(0), MaxUnavailable: pulumi.Int(1),
	}
	if pool.CompactPlacement {
		gpu.PlacementPolicy = &container.NodePoolPlacementPolicyArgs{Type: pulumi.String("COMPACT")}
	}
	gpuName, gpuOpts := b.child("gpu", "gpu")
	c.GPUPool, err = container.NewNodePool(b.ctx, gpuName, gpu, append(gpuOpts, lifecycle.GPUPoolOptions(pool.Nodes)...)...)
	if err != nil {
		return fmt.Errorf("gpu pool: %w", err)
	}
	return nil
}

// poolArgs are the settings every node pool shares: the cluster, region and zone, and its name.
func (c *Cluster) poolArgs(args *ClusterArgs, poolName string) *container.NodePoolArgs {
	return &container.NodePoolArgs{
		Project:       pulumi.String(args.Project),
		Cluster:       c.Cluster.ID(),
		Location:      pulumi.String(args.Region),
		Name:          pulumi.String(poolName),
		NodeLocations: pulumi.StringArray{pulumi.String(args.Zone)},
	}
}

// maintenancePolicy is the daily window and, when set, the exclusion that keeps GKE from
// upgrading the minor version or the nodes (Cluster Toolkit's gke-a4 and gke-a3-ultragpu
// blueprints set the same scope).
func maintenancePolicy(m Maintenance) *container.ClusterMaintenancePolicyArgs {
	p := &container.ClusterMaintenancePolicyArgs{
		DailyMaintenanceWindow: &container.ClusterMaintenancePolicyDailyMaintenanceWindowArgs{StartTime: pulumi.String(m.DailyStart)},
	}
	if m.NoUpgradesUntil != "" {
		p.MaintenanceExclusions = container.ClusterMaintenancePolicyMaintenanceExclusionArray{
			container.ClusterMaintenancePolicyMaintenanceExclusionArgs{
				ExclusionName: pulumi.String("no-minor-or-node-upgrades"),
				StartTime:     pulumi.String(m.NoUpgradesFrom),
				EndTime:       pulumi.String(m.NoUpgradesUntil),
				ExclusionOptions: &container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs{
					Scope: pulumi.String("NO_MINOR_OR_NODE_UPGRADES"),
				},
			},
		}
	}
	return p
}

// DNSEndpoint is the cluster's DNS-based control-plane endpoint.
func DNSEndpoint(cl *container.Cluster) pulumi.StringOutput {
	return cl.ControlPlaneEndpointsConfig.DnsEndpointConfig().Endpoint().Elem()
}

// Kubeconfig is a kubeconfig for the cluster's DNS-based endpoint (a publicly trusted
// certificate, access by IAM) that authenticates with gke-gcloud-auth-plugin, so that no
// credential is stored in the state.
func Kubeconfig(cl *container.Cluster) pulumi.StringOutput {
	return pulumi.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gke
  cluster:
    server: https://%s
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
`, DNSEndpoint(cl))
}

// newDeployAccess registers the deploy identity's roles and bindings, after the workload
// namespace its RoleBinding goes in.
func newDeployAccess(b builder, objs []kube.Object, placement kube.Placement) error {
	for _, obj := range objs {
		gvk := obj.GetObjectKind().GroupVersionKind()
		role := "deploy-" + strings.ToLower(gvk.Kind)
		if obj.GetName() != DeployAccessName {
			role += "-" + strings.TrimPrefix(obj.GetName(), DeployAccessName+"-")
		}
		name, opts := b.child(role, "")
		if _, err := kube.NewObject(b.ctx, name, obj, placement.ClusterScoped(opts...)...); err != nil {
			return fmt.Errorf("deploy access %s: %w", role, err)
		}
	}
	return nil
}

// newPreviewAccess registers the preview identity's limit, then the access it limits.
func newPreviewAccess(b builder, objs PreviewObjects, inCluster kube.Placement) error {
	var limit []pulumi.Resource
	register := func(obj kube.Object, placement kube.Placement) (pulumi.Resource, error) {
		kind := strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind)
		name, opts := b.child("preview-"+kind, "")
		o, err := kube.NewObject(b.ctx, name, obj, placement.ClusterScoped(opts...)...)
		if err != nil {
			return nil, fmt.Errorf("preview access %s: %w", kind, err)
		}
		return o, nil
	}
	for _, obj := range objs.Limit {
		o, err := register(obj, inCluster)
		if err != nil {
			return err
		}
		limit = append(limit, o)
	}
	for _, obj := range objs.Access {
		if _, err := register(obj, inCluster.WaitingFor(limit...)); err != nil {
			return err
		}
	}
	return nil
}
