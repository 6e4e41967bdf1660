package preflight

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gke-rl/cluster"
	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/kinds"
)

// Needs is what `pulumi up` of one stack asks of the project: derived from the stack's plan, so
// that a resource added to the program is checked without a second list to keep.
type Needs struct {
	Project, Region, Zone string
	MachineType           string
	// CPUMachineType is the CPU pool's machine type; empty on Autopilot, which has no pool.
	// CPUNodes and CPUMaxNodes bound its autoscaler; CPUBootDiskGB is each node's pd-balanced
	// boot disk.
	CPUMachineType                       string
	CPUNodes, CPUMaxNodes, CPUBootDiskGB int
	// LocalSSDGB is the local SSD of one GPU node, in the GB the quota counts (375 per disk).
	LocalSSDGB  int
	GPUsPerNode int
	// Nodes is what the run asks for (gpu.nodes); MaxNodes is what the autoscaler may add.
	Nodes, MaxNodes int
	Provisioning    kinds.Provisioning
	// Reservation is the reservation's name (without a /reservationBlocks/ suffix), set with
	// gpu.provisioning=reservation; ReservationProject owns it (Project, or the project that
	// shares it: gpu.reservation=projects/<owner>/reservations/<name>).
	Reservation, ReservationProject string
	// QuotaMetric is the Compute Engine regional quota the GPU nodes draw on; empty with a
	// reservation, whose capacity carries its own quota.
	QuotaMetric string
	// APIs are the services `up` calls, sorted.
	APIs []string
	// Permissions are what `up` does with the caller's credentials, sorted.
	Permissions []string
	// Mode is the cluster's; GPUSKU the bill's name of the GPU nodes' price, and CatalogSlice
	// the hardware catalog's SKU description that prices them (empty: none known).
	Mode         kinds.Mode
	GPUSKU       string
	CatalogSlice string
	// Lustre is the stack's Managed Lustre instance; nil without one.
	Lustre *LustreNeeds
	// Hub is what the run downloads from the Hugging Face Hub; with jobs, Experiments are what
	// each experiment downloads (Hub is then empty).
	Hub         infra.HubDownloads
	Experiments []ExperimentDownloads
	// FitWith plans the stack again with job.modelSize set to a size the Hub told, and returns
	// the plan's refusals ("key: message"); nil when it cannot (tests of the checks alone).
	FitWith func(modelSize string) []string
}

// LustreNeeds is the instance `up` creates, or takes over with storage.adopt.
type LustreNeeds struct {
	// Name is the instance's full name (projects/<p>/locations/<zone>/instances/<id>).
	Name  string
	Adopt bool
	// ThroughputMBpsPerTiB is its performance tier, which prices its capacity.
	ThroughputMBpsPerTiB int
}

// ExperimentDownloads is what one experiment of jobs downloads.
type ExperimentDownloads struct {
	Name string
	Hub  infra.HubDownloads
}

// NeedsOf derives the needs from a stack's plan. It fails on a resource type the tables below do
// not know, which a test keeps from happening for every variant of the shipped stacks.
func NeedsOf(r *offline.Result) (Needs, error) {
	bp := r.Blueprint
	pool := bp.Cluster.GPUPool
	n := Needs{
		Project: bp.Project, Region: bp.Region, Zone: bp.Zone,
		MachineType: pool.MachineType, GPUsPerNode: pool.GPUsPerNode,
		Nodes: pool.Nodes, MaxNodes: pool.MaxNodes, Provisioning: pool.Provisioning,
		Mode: bp.Cluster.Mode, GPUSKU: infra.GPUSKU(pool.MachineType, pool.Provisioning, bp.Cluster.Mode),
		CatalogSlice: bp.Hardware.CatalogSlice,
		Hub:          bp.Run.Hub,
		LocalSSDGB:   bp.Hardware.LocalSSDs * infra.LocalSSDGiB,
	}
	for _, x := range bp.Run.Experiments {
		if !x.Stopped {
			n.Experiments = append(n.Experiments, ExperimentDownloads{Name: x.Name, Hub: x.Hub})
		}
	}
	if bp.Cluster.Mode == kinds.Standard {
		n.CPUMachineType = bp.Cluster.CPUPool.MachineType
		n.CPUNodes, n.CPUMaxNodes, n.CPUBootDiskGB = cluster.CPUPoolMinNodes, cluster.CPUPoolMaxNodes, cluster.CPUBootDiskGB
	}
	if l := bp.Storage.Lustre; l != nil {
		n.Lustre = &LustreNeeds{
			Name:                 l.InstanceName(),
			Adopt:                l.Adopt,
			ThroughputMBpsPerTiB: l.ThroughputMBpsPerTiB,
		}
	}
	if pool.Provisioning == kinds.Reservation {
		n.ReservationProject, n.Reservation = SplitReservation(n.Project, pool.Reservation)
	} else {
		n.QuotaMetric = QuotaMetric(bp.Hardware, pool.Provisioning)
	}
	apis := map[string]bool{}
	for _, api := range clusterAPIs {
		apis[api] = true
	}
	perms := map[string]bool{}
	for _, res := range r.Resources {
		need, ok := resourceNeeds(res.Type, res.Name)
		if !ok {
			return Needs{}, fmt.Errorf("preflight knows no permission for %s %q: add it to cmd/preflight/needs.go", res.Type, res.Name)
		}
		if need.api != "" {
			apis[need.api] = true
		}
		for _, p := range need.permissions {
			perms[p] = true
		}
	}
	n.APIs, n.Permissions = slices.Sorted(maps.Keys(apis)), slices.Sorted(maps.Keys(perms))
	return n, nil
}

// QuotaMetric is the regional quota metric GPU nodes of the provisioning model draw on. Spot and
// flex-start VMs consume preemptible quota ("Flex-start VMs ... consume preemptible quota",
// cloud.google.com/blog/products/compute/introducing-flex-start-vms-for-the-compute-engine-instance-api;
// "Preemptible quota is charged" for Flex-start and Spot in the AI Hypercomputer consumption
// options); on-demand VMs the GPU's own.
func QuotaMetric(gpu infra.GPUSpec, p kinds.Provisioning) string {
	if p.Preemptible() {
		return "PREEMPTIBLE_" + gpu.QuotaMetric
	}
	return gpu.QuotaMetric
}

// clusterAPIs are services the cluster uses that no resource type names: image streaming (the
// pools' gcfsConfig) needs the Container File System API; the Ray add-on's logging and Managed
// Service for Prometheus (cluster/cluster.go) write to Cloud Logging and Cloud Monitoring.
var clusterAPIs = []string{"containerfilesystem.googleapis.com", "logging.googleapis.com", "monitoring.googleapis.com"}

type need struct {
	api         string
	permissions []string
}

// typeNeeds maps a registered resource type to the service that creates it and the IAM
// permissions its creation takes. Permission names are those of the predefined roles the README
// names (roles/container.admin's container.* list as GitLab's GRIT docs reproduce it; Managed
// Lustre's roles/lustre.admin; the others from Google's IAM permissions reference).
var typeNeeds = map[string]need{
	"gcp:compute/network:Network":                 {"compute.googleapis.com", []string{"compute.networks.create"}},
	"gcp:compute/subnetwork:Subnetwork":           {"compute.googleapis.com", []string{"compute.subnetworks.create"}},
	"gcp:compute/firewall:Firewall":               {"compute.googleapis.com", []string{"compute.firewalls.create"}},
	"gcp:compute/router:Router":                   {"compute.googleapis.com", []string{"compute.routers.create"}},
	"gcp:compute/routerNat:RouterNat":             {"compute.googleapis.com", []string{"compute.routers.update"}},
	"gcp:compute/globalAddress:GlobalAddress":     {"compute.googleapis.com", []string{"compute.globalAddresses.create"}},
	"gcp:servicenetworking/connection:Connection": {"servicenetworking.googleapis.com", []string{"servicenetworking.services.addPeering"}},
	"gcp:container/cluster:Cluster":               {"container.googleapis.com", []string{"container.clusters.create"}},
	// A node pool is an update of its cluster, and its nodes run as the node service account.
	"gcp:container/nodePool:NodePool":                   {"container.googleapis.com", []string{"container.clusters.update", "iam.serviceAccounts.actAs"}},
	"gcp:lustre/instance:Instance":                      {"lustre.googleapis.com", []string{"lustre.instances.create"}},
	"gcp:storage/bucket:Bucket":                         {"storage.googleapis.com", []string{"storage.buckets.create"}},
	"gcp:storage/bucketIAMMember:BucketIAMMember":       {"storage.googleapis.com", []string{"storage.buckets.setIamPolicy"}},
	"gcp:artifactregistry/repository:Repository":        {"artifactregistry.googleapis.com", []string{"artifactregistry.repositories.create"}},
	"gcp:monitoring/alertPolicy:AlertPolicy":            {"monitoring.googleapis.com", []string{"monitoring.alertPolicies.create"}},
	"gcp:monitoring/dashboard:Dashboard":                {"monitoring.googleapis.com", []string{"monitoring.dashboards.create"}},
	"gcp:projects/iAMMember:IAMMember":                  {"cloudresourcemanager.googleapis.com", []string{"resourcemanager.projects.setIamPolicy"}},
	"gcp:serviceaccount/account:Account":                {"iam.googleapis.com", []string{"iam.serviceAccounts.create"}},
	"gcp:secretmanager/secret:Secret":                   {"secretmanager.googleapis.com", []string{"secretmanager.secrets.create"}},
	"gcp:secretmanager/secretIamMember:SecretIamMember": {"secretmanager.googleapis.com", []string{"secretmanager.secrets.setIamPolicy"}},
	// Kubernetes objects: GKE authorizes them by IAM (or RBAC, which a new cluster's deployer
	// does not yet have), with one container.* permission per kind; every custom resource is a
	// thirdPartyObject.
	"kubernetes:core/v1:Namespace":                               {"", []string{"container.namespaces.create"}},
	"kubernetes:core/v1:ConfigMap":                               {"", []string{"container.configMaps.create"}},
	"kubernetes:core/v1:PersistentVolume":                        {"", []string{"container.persistentVolumes.create"}},
	"kubernetes:core/v1:PersistentVolumeClaim":                   {"", []string{"container.persistentVolumeClaims.create"}},
	"kubernetes:core/v1:Service":                                 {"", []string{"container.services.create"}},
	"kubernetes:core/v1:ServiceAccount":                          {"", []string{"container.serviceAccounts.create"}},
	"kubernetes:apps/v1:DaemonSet":                               {"", []string{"container.daemonSets.create"}},
	"kubernetes:batch/v1:Job":                                    {"", []string{"container.jobs.create"}},
	"kubernetes:networking.k8s.io/v1:NetworkPolicy":              {"", []string{"container.networkPolicies.create"}},
	"kubernetes:scheduling.k8s.io/v1:PriorityClass":              {"", []string{"container.priorityClasses.create"}},
	"kubernetes:rbac.authorization.k8s.io/v1:ClusterRole":        {"", []string{"container.clusterRoles.create"}},
	"kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": {"", []string{"container.clusterRoleBindings.create", "container.clusterRoles.bind"}},
	// The experiments' launches' Role and its binding (workloads/queue).
	"kubernetes:rbac.authorization.k8s.io/v1:Role":        {"", []string{"container.roles.create"}},
	"kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": {"", []string{"container.roleBindings.create", "container.roles.bind"}},
	// The admission policy of the preview identity: the published container.* list predates
	// ValidatingAdmissionPolicy and names no permission for it, and testIamPermissions refuses
	// a permission it does not know, so none is asked; roles/container.admin covers it.
	"kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy":        {},
	"kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding": {},
	"kubernetes:networking.gke.io/v1:GKENetworkParamSet":                          {"", []string{"container.thirdPartyObjects.create"}},
	"kubernetes:networking.gke.io/v1:Network":                                     {"", []string{"container.thirdPartyObjects.create"}},
	"kubernetes:ray.io/v1:RayCluster":                                             {"", []string{"container.thirdPartyObjects.create"}},
	"kubernetes:ray.io/v1:RayJob":                                                 {"", []string{"container.thirdPartyObjects.create"}},
	"kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor":                            {"", []string{"container.thirdPartyObjects.create"}},
	"kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue":                              {"", []string{"container.thirdPartyObjects.create"}},
	"kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue":                                {"", []string{"container.thirdPartyObjects.create"}},
	"kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass":                     {"", []string{"container.thirdPartyObjects.create"}},
	"kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass":                {"", []string{"container.thirdPartyObjects.create"}},
	// The Kubernetes provider and the program's components create nothing themselves.
	"pulumi:providers:kubernetes": {},
}

// commandNeeds are what each kubectl or gcloud step does at `up` (its create script); a step that
// runs only at destroy needs nothing here.
var commandNeeds = map[string]need{
	// kubectl get crd ... -o jsonpath: reads the Ray add-on's CRDs.
	"cluster-crds": {"", []string{"container.customResourceDefinitions.get"}},
	// kubectl logs -l job-name=...: lists the gate's pods and reads their logs.
	"gate-results": {"", []string{"container.pods.list", "container.pods.getLogs"}},
	// Runs at destroy only (removes the Private Service Access peering).
	"storage-psa-cleanup": {},
	// kubectl apply --server-side of Kueue's release (workloads/queue/kueue-install.sh) on a
	// cluster without Kueue: its CRDs, namespace, RBAC, webhooks, visibility APIService, Secret,
	// Service and Deployment; on one with a Kueue, reads of its CRD, Deployment and ConfigMap.
	"queue-install": {"", []string{
		"container.customResourceDefinitions.create", "container.customResourceDefinitions.get",
		"container.namespaces.create", "container.serviceAccounts.create", "container.configMaps.create",
		"container.secrets.create", "container.services.create", "container.deployments.create", "container.deployments.get",
		"container.roles.create", "container.roles.bind", "container.roleBindings.create",
		"container.clusterRoles.create", "container.clusterRoles.bind", "container.clusterRoleBindings.create",
		"container.mutatingWebhookConfigurations.create", "container.validatingWebhookConfigurations.create",
		"container.apiServices.create",
	}},
}

func resourceNeeds(typ, name string) (need, bool) {
	switch {
	case typ == "command:local:Command":
		n, ok := commandNeeds[name]
		return n, ok
	case strings.HasPrefix(typ, "gke-rl:"):
		return need{}, true
	}
	n, ok := typeNeeds[typ]
	return n, ok
}

// SplitReservation is the project that owns a gpu.reservation and its name, without a
// /reservationBlocks/ suffix: projects/<owner>/reservations/<name>[/...] names a reservation that
// another project shares; a bare name is one of project.
func SplitReservation(project, reservation string) (owner, name string) {
	owner = project
	if rest, ok := strings.CutPrefix(reservation, "projects/"); ok {
		owner, rest, _ = strings.Cut(rest, "/reservations/")
		reservation = rest
	}
	name, _, _ = strings.Cut(reservation, "/")
	return owner, name
}
