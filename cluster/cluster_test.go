package cluster_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cluster"
	"gke-rl/infra/plan"
	"gke-rl/infra/plan/plantest"
)

const (
	clusterType  = "gcp:container/cluster:Cluster"
	nodePoolType = "gcp:container/nodePool:NodePool"
)

var machineTypes = map[string]string{"b200": "a4-highgpu-8g", "h200": "a3-ultragpu-8g"}
var accelerators = map[string]string{"b200": "nvidia-b200", "h200": "nvidia-h200-141gb"}

// overridesFor turns a GPU type and provisioning model into config overrides on b200-spot.
func overridesFor(gpu, provisioning string) []string {
	o := []string{"gpu.type=" + gpu, "gpu.provisioning=" + provisioning}
	if provisioning == "reservation" {
		o = append(o, "gpu.reservation=my-res/reservationBlocks/block-1")
	}
	return o
}

func TestStandardGPUPoolMatrix(t *testing.T) {
	for _, gpu := range []string{"b200", "h200"} {
		for _, prov := range []string{"spot", "reservation", "flex-start", "on-demand"} {
			t.Run(fmt.Sprintf("a %s pool on %s capacity", gpu, prov), func(t *testing.T) {
				res := plantest.Plan(t, "b200-spot", overridesFor(gpu, prov)...)
				pool := res.Find(nodePoolType, "gpu")
				require.NotNil(t, pool)
				in := func(path string) any { v, _ := plan.LookupInput(pool, path); return v }

				assert.Equal(t, machineTypes[gpu], in("nodeConfig.machineType"))
				acc := in("nodeConfig.guestAccelerators").([]any)[0].(map[string]any)
				assert.Equal(t, accelerators[gpu], acc["type"])
				assert.EqualValues(t, 8, acc["count"])
				assert.Equal(t, "DEFAULT", acc["gpuDriverInstallationConfig"].(map[string]any)["gpuDriverVersion"])
				assert.Equal(t, true, in("nodeConfig.gvnic.enabled"))
				assert.Equal(t, "GKE_METADATA", in("nodeConfig.workloadMetadataConfig.mode"))
				assert.Equal(t, []any{"us-east1-b"}, in("nodeLocations"))
				assert.Equal(t, []any{map[string]any{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}}, in("nodeConfig.taints"))

				extra := in("networkConfig.additionalNodeNetworkConfigs").([]any)
				require.Len(t, extra, 9, "gVNIC and 8 RDMA subnets")
				assert.Equal(t, "ray-a4-gpu-spot-gvnic-sub", extra[0].(map[string]any)["subnetwork"])
				for i := 0; i < 8; i++ {
					assert.Equal(t, fmt.Sprintf("ray-a4-gpu-spot-rdma-sub-%d", i), extra[i+1].(map[string]any)["subnetwork"], "NIC order")
				}
				assert.ElementsMatch(t, []string{"initialNodeCount", "nodeCount"}, pool.Options.IgnoreChanges, "node count drift is ignored")

				spot, _ := plan.LookupInput(pool, "nodeConfig.spot")
				flex, _ := plan.LookupInput(pool, "nodeConfig.flexStart")
				affinity, _ := plan.LookupInput(pool, "nodeConfig.reservationAffinity")
				autoRepair := in("management.autoRepair")
				switch prov {
				case "spot":
					assert.Equal(t, true, spot)
					assert.Nil(t, affinity, "spot takes no reservation")
					assert.EqualValues(t, 8, in("initialNodeCount"))
				case "reservation":
					assert.Nil(t, spot)
					assert.Equal(t, map[string]any{
						"consumeReservationType": "SPECIFIC_RESERVATION",
						"key":                    "compute.googleapis.com/reservation-name",
						"values":                 []any{"my-res/reservationBlocks/block-1"},
					}, affinity)
				case "flex-start":
					assert.Equal(t, true, flex)
					assert.Nil(t, spot, "flex-start is not spot")
					assert.Equal(t, "NO_RESERVATION", affinity.(map[string]any)["consumeReservationType"])
					assert.Equal(t, false, autoRepair, "flex-start has auto-repair off")
					assert.EqualValues(t, 0, in("initialNodeCount"), "flex-start has no static node count")
					assert.EqualValues(t, 0, in("autoscaling.totalMinNodeCount"))
				case "on-demand":
					assert.Nil(t, spot)
					assert.Nil(t, flex)
					assert.Nil(t, affinity)
				}
				if prov != "flex-start" {
					assert.Equal(t, true, autoRepair)
					assert.EqualValues(t, 8, in("autoscaling.totalMinNodeCount"))
					assert.EqualValues(t, 8, in("autoscaling.totalMaxNodeCount"))
				}
			})
		}
	}
}

func TestAutoscalingBoundsFromConfig(t *testing.T) {
	res := plantest.Plan(t, "b200-spot", "gpu.minNodes=2", "gpu.maxNodes=12")
	pool := res.Find(nodePoolType, "gpu")
	assert.EqualValues(t, 2, plantest.Input(t, pool, "autoscaling.totalMinNodeCount"))
	assert.EqualValues(t, 12, plantest.Input(t, pool, "autoscaling.totalMaxNodeCount"))
}

func TestStandardClusterSettings(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	gke := res.Find(clusterType, "gke")
	in := func(path string) any { return plantest.Input(t, gke, path) }
	assert.Equal(t, "ray-a4-gpu-spot", in("name"))
	assert.Equal(t, true, in("removeDefaultNodePool"))
	assert.Equal(t, "REGULAR", in("releaseChannel.channel"))
	assert.Equal(t, "your-project-id.svc.id.goog", in("workloadIdentityConfig.workloadPool"))
	assert.Equal(t, "ADVANCED_DATAPATH", in("datapathProvider"))
	assert.Equal(t, true, in("enableMultiNetworking"))
	assert.Equal(t, "ray-a4-gpu-spot-pods", in("ipAllocationPolicy.clusterSecondaryRangeName"))
	assert.Equal(t, "ray-a4-gpu-spot-services", in("ipAllocationPolicy.servicesSecondaryRangeName"))
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

func TestLegacyLustrePortFollowsGKESupport(t *testing.T) {
	cases := []struct {
		sentence  string
		stack     string
		overrides []string
		legacy    bool
	}{
		{"Lustre with GKE support listens on 6988, so the driver uses the legacy port", "b200-spot", nil, true},
		{"Lustre without GKE support listens on 988", "b200-spot", []string{"storage.gkeSupport=false"}, false},
		{"GCS FUSE storage has no Lustre instance", "h200-reserved", nil, false},
		{"Lustre on the H200 stack with GKE support", "h200-reserved", []string{"storage.type=lustre"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			gke := plantest.Plan(t, tc.stack, tc.overrides...).Find(clusterType, "gke")
			assert.Equal(t, tc.legacy, plantest.Input(t, gke, "addonsConfig.lustreCsiDriverConfig.enableLegacyLustrePort"))
		})
	}
}

func TestNodeServiceAccountHasOnlyNodeRoles(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	var roles []string
	for _, m := range res.OfType("gcp:projects/iAMMember:IAMMember") {
		assert.Equal(t, "serviceAccount:ray-a4-gpu-spot-nodes@your-project-id.iam.gserviceaccount.com", plantest.Input(t, m, "member"))
		roles = append(roles, plantest.Input(t, m, "role").(string))
	}
	assert.ElementsMatch(t, cluster.NodeRoles, roles)
	for _, name := range []string{"cpu", "gpu"} {
		pool := res.Find(nodePoolType, name)
		assert.Equal(t, "ray-a4-gpu-spot-nodes@your-project-id.iam.gserviceaccount.com", plantest.Input(t, pool, "nodeConfig.serviceAccount"),
			"never the default Compute Engine account")
	}
}

func TestCPUPoolIsOnDemand(t *testing.T) {
	pool := plantest.Plan(t, "b200-spot").Find(nodePoolType, "cpu")
	_, spot := plan.LookupInput(pool, "nodeConfig.spot")
	assert.False(t, spot, "the Ray head's pool is never spot")
	assert.Equal(t, "n2-standard-16", plantest.Input(t, pool, "nodeConfig.machineType"))
}

func TestAutopilotHasNoNodePools(t *testing.T) {
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			res := plantest.Plan(t, stack, "cluster.mode=autopilot")
			assert.Empty(t, res.OfType(nodePoolType))
			gke := res.Find(clusterType, "gke")
			assert.Equal(t, true, plantest.Input(t, gke, "enableAutopilot"))
			assert.Equal(t, true, plantest.Input(t, gke, "enableMultiNetworking"))
			ds := res.OfType("kubernetes:apps/v1:DaemonSet")
			require.Len(t, ds, 1)
			assert.Equal(t, "rdma-system", plantest.Input(t, ds[0], "metadata.namespace"), "the installer's Autopilot variant")
		})
	}
}

func TestAutopilotSelectors(t *testing.T) {
	spec := cluster.GPUPoolSpec{Accelerator: "nvidia-b200", GPUsPerNode: 8, Provisioning: cluster.Spot}
	assert.Equal(t, map[string]string{
		"cloud.google.com/gke-accelerator":       "nvidia-b200",
		"cloud.google.com/gke-accelerator-count": "8",
		"cloud.google.com/compute-class":         "Performance",
		"cloud.google.com/gke-spot":              "true",
	}, cluster.AutopilotSelectors(spec))
	spec.Provisioning, spec.Reservation = cluster.Reservation, "res-a/reservationBlocks/b1"
	sel := cluster.AutopilotSelectors(spec)
	assert.Equal(t, "res-a", sel["cloud.google.com/reservation-name"])
	assert.NotContains(t, sel, "cloud.google.com/gke-spot")
}

func TestInClusterObjectsUseTheProviderAndDieWithTheCluster(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	gke := res.Find(clusterType, "gke")
	provider := res.Find("pulumi:providers:kubernetes", "gke")
	require.NotNil(t, provider)
	for _, r := range res.Resources {
		if !r.Custom || len(r.Type) < 11 || r.Type[:11] != "kubernetes:" {
			continue
		}
		assert.Contains(t, r.Options.Provider, provider.URN, r.Name)
		assert.Equal(t, gke.URN, r.Options.DeletedWith, r.Name)
	}
}

func TestDependenciesAllowParallelDeployment(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	gpuPool := res.Find(nodePoolType, "gpu")
	for _, r := range res.Resources {
		if r.Custom && len(r.Type) > 11 && r.Type[:11] == "kubernetes:" {
			assert.NotContains(t, res.DependencyClosure(r), gpuPool.URN, "%s waits for the GPU pool", r.Name)
		}
	}
	for _, d := range gpuPool.Dependencies {
		dep := res.ByURN(d)
		assert.Contains(t, []string{clusterType, "gcp:serviceaccount/account:Account", "gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork"}, dep.Type,
			"the GPU pool waits only for the cluster, its service account and its networks")
	}
}

func TestInstallerRunsOnGPUNodesOnly(t *testing.T) {
	for gpu, acc := range accelerators {
		res := plantest.Plan(t, "b200-spot", "gpu.type="+gpu)
		ds := res.OfType("kubernetes:apps/v1:DaemonSet")[0]
		terms := plantest.Input(t, ds, "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms").([]any)
		expr := terms[0].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)
		assert.Equal(t, "cloud.google.com/gke-accelerator", expr["key"])
		assert.Equal(t, []any{acc}, expr["values"])
		for _, c := range plantest.Input(t, ds, "spec.template.spec.initContainers").([]any) {
			assert.NotContains(t, c.(map[string]any)["image"], ":latest")
		}
	}
}
