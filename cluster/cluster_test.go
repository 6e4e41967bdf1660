package cluster_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/cluster"
	"gke-rl/internal/kinds"
	"gke-rl/internal/recorder"
	"gke-rl/internal/recorder/recordertest"
	"gke-rl/test/clitest"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

const (
	clusterType  = "gcp:container/cluster:Cluster"
	nodePoolType = "gcp:container/nodePool:NodePool"
)

// fixture is a Standard cluster with an 8-node B200 spot pool; each case changes a copy.
func fixture() *cluster.ClusterArgs {
	cpu, gpu := cluster.PoolNames("rl")
	args := &cluster.ClusterArgs{
		Spec: cluster.Spec{
			Project: "acme-rl", Region: "us-east1", Zone: "us-east1-b",
			Name:               "rl",
			Mode:               kinds.Standard,
			ReleaseChannel:     "REGULAR",
			AuthorizedNetworks: []netip.Prefix{netip.MustParsePrefix("203.0.113.7/32")},
			PodRangeName:       "rl-pods", ServiceRangeName: "rl-services",
			LustreLegacyPort: true,
			CPUPool:          cluster.CPUPoolSpec{Name: cpu, MachineType: "n2-standard-16", SecureBoot: true},
			GPUPool: cluster.GPUPoolSpec{
				Name: gpu, MachineType: "a4-highgpu-8g", Accelerator: "nvidia-b200", GPUsPerNode: 8,
				Nodes: 8, MinNodes: 8, MaxNodes: 8, Provisioning: kinds.Spot, LocalSSDs: 32,
			},
			Namespace: "gke-rl",
			Maintenance: cluster.Maintenance{
				DailyStart: "03:00", NoUpgradesFrom: "2026-11-01T00:00:00Z", NoUpgradesUntil: "2027-04-30T00:00:00Z",
			},
		},
		Network:    pulumi.String("projects/acme-rl/global/networks/rl-net"),
		Subnetwork: pulumi.String("projects/acme-rl/regions/us-east1/subnetworks/rl-sub"),
	}
	for i := 0; i < 9; i++ {
		args.GPUNetworks = append(args.GPUNetworks, cluster.AdditionalNetwork{
			Network: pulumi.String(fmt.Sprintf("net-%d", i)), Subnetwork: pulumi.String(fmt.Sprintf("sub-%d", i)),
		})
	}
	return args
}

func record(t *testing.T, args *cluster.ClusterArgs) *recorder.Recording {
	t.Helper()
	return recordertest.Record(t, func(ctx *pulumi.Context) error {
		c, err := cluster.NewCluster(ctx, "cluster", args)
		if err == nil && (c == nil || c.Namespace == nil) {
			// The callers read the component's outputs (the namespace, the pools).
			return errors.New("NewCluster returned no cluster and no error")
		}
		return err
	})
}

// input reads a resource's input, failing the test when it is not set.
var input = recordertest.Input

func TestGPUPoolPerProvisioningModel(t *testing.T) {
	for _, prov := range kinds.Provisionings {
		t.Run(string(prov), func(t *testing.T) {
			args := fixture()
			args.GPUPool.Provisioning = prov
			if prov == kinds.Reservation {
				args.GPUPool.Reservation = "my-res/reservationBlocks/block-1"
			}
			if prov.Preemptible() {
				args.GPUPool.MinNodes = 0
			}
			pool := record(t, args).Find(nodePoolType, "cluster-gpu")
			in := func(path string) any { v, _ := pool.Input(path); return v }

			assert.Equal(t, "rl-gpu", in("name"))
			assert.Equal(t, "a4-highgpu-8g", in("nodeConfig.machineType"))
			acc := in("nodeConfig.guestAccelerators").([]any)[0].(map[string]any)
			assert.Equal(t, "nvidia-b200", acc["type"])
			assert.EqualValues(t, 8, acc["count"])
			assert.Equal(t, "DEFAULT", acc["gpuDriverInstallationConfig"].(map[string]any)["gpuDriverVersion"])
			assert.Equal(t, true, in("nodeConfig.gvnic.enabled"))
			assert.Equal(t, "GKE_METADATA", in("nodeConfig.workloadMetadataConfig.mode"))
			assert.Equal(t, []any{"us-east1-b"}, in("nodeLocations"))
			assert.Equal(t, []any{map[string]any{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}}, in("nodeConfig.taints"))
			extra := in("networkConfig.additionalNodeNetworkConfigs").([]any)
			require.Len(t, extra, 9)
			for i, e := range extra {
				assert.Equal(t, fmt.Sprintf("sub-%d", i), e.(map[string]any)["subnetwork"], "NIC order")
			}
			assert.ElementsMatch(t, []string{"initialNodeCount", "nodeCount"}, pool.Options.IgnoreChanges, "node count drift is ignored")

			spot, flex, affinity := in("nodeConfig.spot"), in("nodeConfig.flexStart"), in("nodeConfig.reservationAffinity")
			switch prov {
			case kinds.Spot:
				assert.Equal(t, true, spot)
				assert.Nil(t, affinity, "spot takes no reservation")
				assert.EqualValues(t, 0, in("initialNodeCount"), "spot capacity is requested when the workers need it")
			case kinds.Reservation:
				assert.Nil(t, spot)
				assert.Equal(t, map[string]any{
					"consumeReservationType": "SPECIFIC_RESERVATION",
					"key":                    "compute.googleapis.com/reservation-name",
					"values":                 []any{"my-res/reservationBlocks/block-1"},
				}, affinity)
			case kinds.FlexStart:
				assert.Equal(t, true, flex)
				assert.Nil(t, spot, "flex-start is not spot")
				assert.Equal(t, "NO_RESERVATION", affinity.(map[string]any)["consumeReservationType"])
				assert.Equal(t, false, in("management.autoRepair"), "flex-start has auto-repair off")
				assert.EqualValues(t, 0, in("initialNodeCount"), "flex-start has no static node count")
			case kinds.OnDemand:
				assert.Nil(t, spot)
				assert.Nil(t, flex)
				assert.Nil(t, affinity)
			}
			if prov != kinds.FlexStart {
				assert.Equal(t, true, in("management.autoRepair"))
			}
			if !prov.Preemptible() {
				assert.EqualValues(t, 8, in("initialNodeCount"), "reserved and on-demand pools hold their size")
			}
			assert.EqualValues(t, args.GPUPool.MinNodes, in("autoscaling.totalMinNodeCount"))
			assert.EqualValues(t, args.GPUPool.MaxNodes, in("autoscaling.totalMaxNodeCount"))
		})
	}
}

func TestStandardClusterSettings(t *testing.T) {
	gke := record(t, fixture()).Find(clusterType, "cluster-gke")
	in := func(path string) any { return input(t, gke, path) }
	assert.Equal(t, "rl", in("name"))
	assert.Equal(t, true, in("removeDefaultNodePool"))
	assert.Equal(t, "REGULAR", in("releaseChannel.channel"))
	assert.Equal(t, "acme-rl.svc.id.goog", in("workloadIdentityConfig.workloadPool"))
	assert.Equal(t, "ADVANCED_DATAPATH", in("datapathProvider"), "multi-networking needs Dataplane V2")
	assert.Equal(t, true, in("enableMultiNetworking"))
	assert.Equal(t, "rl-pods", in("ipAllocationPolicy.clusterSecondaryRangeName"))
	assert.Equal(t, "rl-services", in("ipAllocationPolicy.servicesSecondaryRangeName"))
	assert.Equal(t, true, in("privateClusterConfig.enablePrivateNodes"))
	assert.Equal(t, []any{map[string]any{"cidrBlock": "203.0.113.7/32", "displayName": "authorized 203.0.113.7/32"}}, in("masterAuthorizedNetworksConfig.cidrBlocks"))
	assert.Equal(t, true, in("enableShieldedNodes"))
	assert.Equal(t, true, in("monitoringConfig.managedPrometheus.enabled"))
	assert.Contains(t, in("monitoringConfig.enableComponents"), "DCGM")
	assert.Equal(t, false, in("deletionProtection"))
	ray := in("addonsConfig.rayOperatorConfigs").([]any)[0].(map[string]any)
	assert.Equal(t, true, ray["enabled"])
	assert.Equal(t, true, ray["rayClusterLoggingConfig"].(map[string]any)["enabled"])
	assert.Equal(t, true, ray["rayClusterMonitoringConfig"].(map[string]any)["enabled"])
	assert.Equal(t, true, in("addonsConfig.lustreCsiDriverConfig.enabled"))
	assert.Equal(t, true, in("addonsConfig.gcsFuseCsiDriverConfig.enabled"))
}

func TestLegacyLustrePortIsTheSpecs(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		args := fixture()
		args.LustreLegacyPort = legacy
		gke := record(t, args).Find(clusterType, "cluster-gke")
		assert.Equal(t, legacy, input(t, gke, "addonsConfig.lustreCsiDriverConfig.enableLegacyLustrePort"))
	}
}

func TestNodeServiceAccountHasOnlyNodeRoles(t *testing.T) {
	rec := record(t, fixture())
	var roles []string
	for _, m := range rec.OfType("gcp:projects/iAMMember:IAMMember") {
		assert.Equal(t, "serviceAccount:rl-nodes@acme-rl.iam.gserviceaccount.com", input(t, m, "member"))
		roles = append(roles, input(t, m, "role").(string))
	}
	assert.ElementsMatch(t, cluster.NodeRoles, roles)
	for _, name := range []string{"cluster-cpu", "cluster-gpu"} {
		assert.Equal(t, "rl-nodes@acme-rl.iam.gserviceaccount.com", input(t, rec.Find(nodePoolType, name), "nodeConfig.serviceAccount"),
			"never the default Compute Engine account")
	}
}

func TestCPUPoolIsOnDemand(t *testing.T) {
	pool := record(t, fixture()).Find(nodePoolType, "cluster-cpu")
	_, spot := pool.Input("nodeConfig.spot")
	assert.False(t, spot, "the Ray head's pool is never spot")
	assert.Equal(t, "n2-standard-16", input(t, pool, "nodeConfig.machineType"))
	assert.Equal(t, "rl-cpu", input(t, pool, "name"))
}

func TestAutopilotHasNoNodePools(t *testing.T) {
	args := fixture()
	args.Mode = kinds.Autopilot
	rec := record(t, args)
	assert.Empty(t, rec.OfType(nodePoolType))
	gke := rec.Find(clusterType, "cluster-gke")
	assert.Equal(t, true, input(t, gke, "enableAutopilot"))
	assert.Equal(t, true, input(t, gke, "enableMultiNetworking"))
	ds := rec.OfType("kubernetes:apps/v1:DaemonSet")
	require.Len(t, ds, 1)
	assert.Equal(t, "rdma-system", input(t, ds[0], "metadata.namespace"), "the installer's Autopilot variant")
}

func TestNodeSelectors(t *testing.T) {
	args := fixture()
	gpu, head := cluster.NodeSelectors(kinds.Standard, args.CPUPool, args.GPUPool)
	assert.Equal(t, map[string]string{"cloud.google.com/gke-nodepool": "rl-gpu"}, gpu)
	assert.Equal(t, map[string]string{"cloud.google.com/gke-nodepool": "rl-cpu"}, head)

	gpu, head = cluster.NodeSelectors(kinds.Autopilot, args.CPUPool, args.GPUPool)
	assert.Equal(t, map[string]string{
		"cloud.google.com/gke-accelerator":                 "nvidia-b200",
		"cloud.google.com/gke-accelerator-count":           "8",
		"cloud.google.com/compute-class":                   "Performance",
		"cloud.google.com/gke-spot":                        "true",
		"cloud.google.com/gke-ephemeral-storage-local-ssd": "true",
	}, gpu)
	assert.Empty(t, head, "Autopilot puts a pod without GPU requests on general-purpose, on-demand nodes")

	args.GPUPool.Provisioning, args.GPUPool.Reservation = kinds.Reservation, "res-a/reservationBlocks/b1"
	gpu, _ = cluster.NodeSelectors(kinds.Autopilot, args.CPUPool, args.GPUPool)
	assert.Equal(t, "res-a", gpu["cloud.google.com/reservation-name"])
	assert.NotContains(t, gpu, "cloud.google.com/gke-spot")
}

func TestInClusterObjectsUseTheProviderAndDieWithTheCluster(t *testing.T) {
	rec := record(t, fixture())
	gke := rec.Find(clusterType, "cluster-gke")
	provider := rec.Find("pulumi:providers:kubernetes", "cluster-gke")
	require.NotNil(t, provider)
	var objects int
	for _, r := range rec.Resources {
		if r.Custom && strings.HasPrefix(r.Type, "kubernetes:") {
			objects++
			assert.Contains(t, r.Options.Provider, provider.URN, r.Name)
			assert.Equal(t, gke.URN, r.Options.DeletedWith, r.Name)
		}
	}
	assert.Equal(t, 4, objects, "the RDMA installer, the workload namespace and its pod policy with its binding")
	ns := rec.Find("kubernetes:core/v1:Namespace", "cluster-workloads")
	require.NotNil(t, ns)
	policy := rec.Find("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "cluster-pod-policy-validatingadmissionpolicy")
	binding := rec.Find("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "cluster-pod-policy-validatingadmissionpolicybinding")
	require.NotNil(t, policy)
	require.NotNil(t, binding)
	assert.Subset(t, ns.Dependencies, []string{policy.URN, binding.URN}, "the policy is in force before the namespace's first pod")
}

func TestGPUPoolWaitsOnlyForWhatItUses(t *testing.T) {
	rec := record(t, fixture())
	gpuPool := rec.Find(nodePoolType, "cluster-gpu")
	for _, d := range gpuPool.Dependencies {
		assert.Contains(t, []string{clusterType, "gcp:serviceaccount/account:Account"}, rec.ByURN(d).Type,
			"the GPU pool waits only for the cluster and its service account (and, in a stack, its networks)")
	}
	// Of the cluster's Kubernetes objects only the RDMA installer waits for the GPU pool, so
	// that its creation lasts until the pool's first nodes have the plugin (Cluster.GPUsReady).
	for _, r := range rec.Resources {
		if strings.HasPrefix(r.Type, "kubernetes:") {
			installer := r.Type == "kubernetes:apps/v1:DaemonSet"
			assert.Equal(t, installer, rec.DependencyClosure(r)[gpuPool.URN], "%s waits for the GPU pool: %v", r.Name, installer)
		}
	}
}

func TestInstallerRunsOnGPUNodesOnly(t *testing.T) {
	ds := record(t, fixture()).OfType("kubernetes:apps/v1:DaemonSet")[0]
	terms := input(t, ds, "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms").([]any)
	expr := terms[0].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)
	assert.Equal(t, "cloud.google.com/gke-accelerator", expr["key"])
	assert.Equal(t, []any{"nvidia-b200"}, expr["values"])
	for _, c := range input(t, ds, "spec.template.spec.initContainers").([]any) {
		assert.NotContains(t, c.(map[string]any)["image"], ":latest")
	}
	assert.Equal(t, "/home/kubernetes/bin/gib", input(t, ds, "spec.template.spec.volumes.1.hostPath.path"), "where the workers mount it from")
}

func TestTwoInstancesCoexist(t *testing.T) {
	_, err := recorder.Run(func(ctx *pulumi.Context) error {
		if _, err := cluster.NewCluster(ctx, "a", fixture()); err != nil {
			return err
		}
		other := fixture()
		other.Name = "rl2"
		_, err := cluster.NewCluster(ctx, "b", other)
		return err
	})
	assert.NoError(t, err, "child names derive from the component's name")
}

// What keeps a multi-day run alive: no upgrade drains the GPU nodes mid-run, an upgrade needs no
// spare GPU machine, ephemeral storage is on local SSDs.
func TestGPUNodesLastForDays(t *testing.T) {
	rec := record(t, fixture())
	gke := rec.Find(clusterType, "cluster-gke")
	assert.Equal(t, "03:00", input(t, gke, "maintenancePolicy.dailyMaintenanceWindow.startTime"))
	assert.Equal(t, []any{map[string]any{
		"exclusionName":    "no-minor-or-node-upgrades",
		"startTime":        "2026-11-01T00:00:00Z",
		"endTime":          "2027-04-30T00:00:00Z",
		"exclusionOptions": map[string]any{"scope": "NO_MINOR_OR_NODE_UPGRADES"},
	}}, input(t, gke, "maintenancePolicy.maintenanceExclusions"))

	pool := rec.Find(nodePoolType, "cluster-gpu")
	assert.Equal(t, "SURGE", input(t, pool, "upgradeSettings.strategy"))
	assert.EqualValues(t, 0, input(t, pool, "upgradeSettings.maxSurge"), "no spare GPU machine")
	assert.EqualValues(t, 1, input(t, pool, "upgradeSettings.maxUnavailable"))
	assert.EqualValues(t, 32, input(t, pool, "nodeConfig.ephemeralStorageLocalSsdConfig.localSsdCount"))
	assert.Equal(t, "false", input(t, pool, "nodeConfig.labels").(map[string]any)["lustre.csi.storage.gke.io/multi-nic"], "Lustre stays on eth0")
	_, compact := pool.Input("placementPolicy")
	assert.False(t, compact)

	args := fixture()
	args.Maintenance.NoUpgradesUntil = ""
	args.GPUPool.CompactPlacement = true
	rec = record(t, args)
	_, excluded := rec.Find(clusterType, "cluster-gke").Input("maintenancePolicy.maintenanceExclusions")
	assert.False(t, excluded, "none: GKE upgrades freely")
	assert.Equal(t, "COMPACT", input(t, rec.Find(nodePoolType, "cluster-gpu"), "placementPolicy.type"))
}

func TestControlPlaneAdmitsOnlyTheListedCIDRs(t *testing.T) {
	gke := record(t, fixture()).Find(clusterType, "cluster-gke")
	assert.Equal(t, false, input(t, gke, "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled"), "not every Google Cloud address")
}

func TestSecureBootFollowsTheSpec(t *testing.T) {
	for _, secure := range []bool{true, false} {
		args := fixture()
		args.CPUPool.SecureBoot = secure
		rec := record(t, args)
		assert.Equal(t, secure, input(t, rec.Find(nodePoolType, "cluster-cpu"), "nodeConfig.shieldedInstanceConfig.enableSecureBoot"))
		assert.Equal(t, true, input(t, rec.Find(nodePoolType, "cluster-gpu"), "nodeConfig.shieldedInstanceConfig.enableSecureBoot"), "GPU machine types load the Lustre client with Secure Boot")
	}
}

// The installer follows container-engine-accelerators' current gpudirect-rdma manifests: the
// Standard one installs the plugin only, the Autopilot one NCCL too, in its own namespace.
func TestInstallerMatchesUpstreamPerMode(t *testing.T) {
	std := record(t, fixture()).OfType("kubernetes:apps/v1:DaemonSet")[0]
	inits := input(t, std, "spec.template.spec.initContainers").([]any)
	require.Len(t, inits, 1, "the plugin installer only")
	installNCCL := func(init any) any { return init.(map[string]any)["env"].([]any)[0].(map[string]any)["value"] }
	assert.Equal(t, "false", installNCCL(inits[0]), "the plugin only")
	assert.Equal(t, "system-node-critical", input(t, std, "spec.template.spec.priorityClassName"))
	assert.Equal(t, "kube-system", input(t, std, "metadata.namespace"))

	args := fixture()
	args.Mode = kinds.Autopilot
	rec := record(t, args)
	ap := rec.OfType("kubernetes:apps/v1:DaemonSet")[0]
	assert.Equal(t, "true", installNCCL(input(t, ap, "spec.template.spec.initContainers").([]any)[0]), "NCCL too")
	_, priority := ap.Input("spec.template.spec.priorityClassName")
	assert.False(t, priority)
	ns := rec.OfType("kubernetes:core/v1:Namespace")
	var labelled bool
	for _, n := range ns {
		if v, _ := n.Input("metadata.labels.name"); v == "rdma-system" {
			labelled = true
		}
	}
	assert.True(t, labelled)
}

// The Kubernetes provider reaches the control plane through its DNS-based endpoint, by IAM:
// no runner IP needs to be in the authorized networks, and no credential is in the state.
func TestProviderUsesTheDNSEndpoint(t *testing.T) {
	rec := record(t, fixture())
	gke := rec.Find(clusterType, "cluster-gke")
	assert.Equal(t, true, input(t, gke, "controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic"))
	kubeconfig := input(t, rec.Find("pulumi:providers:kubernetes", "cluster-gke"), "kubeconfig").(string)
	assert.Contains(t, kubeconfig, "server: https://gke-rl-offline.us-east1.gke.goog")
	assert.NotContains(t, kubeconfig, "certificate-authority-data", "a publicly trusted certificate")
	assert.Contains(t, kubeconfig, "command: gke-gcloud-auth-plugin")
}

// crds is the collection of CustomResourceDefinitions in the Kubernetes API.
const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

// crdAPI is a fake Kubernetes API server that serves CustomResourceDefinitions to kubectl.
func crdAPI(t *testing.T) *clitest.Kube {
	api := clitest.NewKube(t)
	api.Serve(apiextensionsv1.SchemeGroupVersion, metav1.APIResource{Name: "customresourcedefinitions", Kind: "CustomResourceDefinition",
		ShortNames: []string{"crd", "crds"}, Verbs: []string{"get", "list", "watch"}})
	return api
}

// The CRD wait, run with the real kubectl against a fake API server: it polls until each CRD
// exists, then waits for it to be established.
func TestWaitForCRDsScript(t *testing.T) {
	clitest.Tool(t, "kubectl")
	api := crdAPI(t)
	for _, name := range cluster.CRDs {
		group := name[strings.Index(name, ".")+1:]
		api.Add(crds, name, &apiextensionsv1.CustomResourceDefinition{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: name[:strings.Index(name, ".")], Kind: "X"}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
			}},
		})
	}
	api.HideFor(crds, "rayjobs.ray.io", 2) // GKE installs it a little later
	res := clitest.RunScript(t, cluster.WaitForCRDsScript, "KUBECONFIG_DATA="+api.Kubeconfig(t),
		"CRDS="+strings.Join(cluster.CRDs, " "), "RETRY_SECONDS=0", "ATTEMPTS=5")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "waiting for CRD rayjobs.ray.io (2)")
	assert.NotContains(t, res.Stdout, "waiting for CRD rayclusters.ray.io")
	for _, crd := range cluster.CRDs {
		assert.Contains(t, res.Stdout, "customresourcedefinition.apiextensions.k8s.io/"+crd+" condition met")
	}
	assert.NotContains(t, res.Stdout, "waiting for CRD rayjobs.ray.io (3)", "polled until it exists")

	// A CRD that never comes fails after the attempts, naming it.
	api.HideFor(crds, "networks.networking.gke.io", 100)
	res = clitest.RunScript(t, cluster.WaitForCRDsScript, "KUBECONFIG_DATA="+api.Kubeconfig(t),
		"CRDS=networks.networking.gke.io", "RETRY_SECONDS=0", "ATTEMPTS=3")
	assert.Equal(t, 1, res.Code)
	assert.Contains(t, res.Stderr, "CRD networks.networking.gke.io did not appear after 3 attempts")

	// No permission is not retried: it fails at once, with kubectl's message.
	api.Forbid(crds)
	before := len(api.Requests())
	res = clitest.RunScript(t, cluster.WaitForCRDsScript, "KUBECONFIG_DATA="+api.Kubeconfig(t),
		"CRDS=rayjobs.ray.io", "RETRY_SECONDS=0", "ATTEMPTS=5")
	assert.Equal(t, 1, res.Code)
	assert.Contains(t, res.Stderr, "Forbidden")
	assert.Len(t, api.Requests()[before:], 1, "one attempt")
}

// The CRD wait, with the real kubectl, finds each field the program sets in the cluster's own
// CRD schema, and fails naming the first one an older KubeRay's CRD lacks.
func TestWaitForCRDsChecksTheOperatorsFields(t *testing.T) {
	clitest.Tool(t, "kubectl")
	api := crdAPI(t)
	rayJobCRD := func(fields ...string) *apiextensionsv1.CustomResourceDefinition {
		spec := map[string]apiextensionsv1.JSONSchemaProps{}
		for _, f := range fields {
			spec[f] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
		}
		return &apiextensionsv1.CustomResourceDefinition{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: "rayjobs.ray.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "ray.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "rayjobs", Kind: "RayJob"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: spec}},
					}}}}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
		}
	}
	fields := "rayjobs.ray.io/v1:spec.backoffLimit rayjobs.ray.io/v1:spec.entrypoint"
	run := func() clitest.Result {
		return clitest.RunScript(t, cluster.WaitForCRDsScript, "KUBECONFIG_DATA="+api.Kubeconfig(t),
			"CRDS=rayjobs.ray.io", "CRD_FIELDS="+fields, "RETRY_SECONDS=0", "ATTEMPTS=2")
	}

	api.Add(crds, "rayjobs.ray.io", rayJobCRD("backoffLimit", "entrypoint"))
	res := run()
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "rayjobs.ray.io v1 has spec.backoffLimit (integer)")

	api.Add(crds, "rayjobs.ray.io", rayJobCRD("entrypoint")) // KubeRay before backoffLimit
	res = run()
	assert.Equal(t, 1, res.Code)
	assert.Contains(t, res.Stderr, "the cluster's rayjobs.ray.io v1 has no spec.backoffLimit, which this program sets")
}

// GKE refuses node pool names over 40 characters: the longest accepted cluster names get pool
// names cut with a hash, and every name that fits keeps its name (no pool is replaced).
func TestPoolNamesFitGKE(t *testing.T) {
	cpu, gpu := cluster.PoolNames("ray-a4-gpu-spot")
	assert.Equal(t, "ray-a4-gpu-spot-cpu", cpu)
	assert.Equal(t, "ray-a4-gpu-spot-gpu", gpu)
	cpu, gpu = cluster.PoolNames("abcdefghijklmnopqrstuvwxyz0123456789a") // 37: the first that overflows
	assert.Len(t, cpu, 40)
	assert.LessOrEqual(t, len(gpu), 40)
	assert.NotEqual(t, cpu, gpu)
	for _, name := range []string{strings.Repeat("a", 40), "a" + strings.Repeat("1", 39), "a-" + strings.Repeat("-b", 19)} {
		cpu, gpu := cluster.PoolNames(name)
		assert.LessOrEqual(t, len(cpu), 40, name)
		assert.LessOrEqual(t, len(gpu), 40, name)
		assert.NotEqual(t, cpu, gpu, name)
		assert.False(t, strings.HasSuffix(cpu, "-"), cpu)
	}
	cpu, _ = cluster.PoolNames("abcdefghijklmnopqrstuvwxyz0123456") // 33 + 4 = 37
	assert.Equal(t, "abcdefghijklmnopqrstuvwxyz0123456-cpu", cpu, "a name that fits is unchanged")
}
