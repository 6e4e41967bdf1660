package network_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/plan/plantest"
)

func TestNetworkCRNamesEqualTheExportedList(t *testing.T) {
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			res := plantest.Plan(t, stack)
			exported := res.Outputs["podNetworks"]
			want := []string{"gvnic-1", "rdma-0", "rdma-1", "rdma-2", "rdma-3", "rdma-4", "rdma-5", "rdma-6", "rdma-7"}
			assert.Equal(t, want, exported)

			var paramSets, networks []string
			for _, r := range res.OfType("kubernetes:networking.gke.io/v1:GKENetworkParamSet") {
				paramSets = append(paramSets, plantest.Input(t, r, "metadata.name").(string))
			}
			for _, r := range res.OfType("kubernetes:networking.gke.io/v1:Network") {
				networks = append(networks, plantest.Input(t, r, "metadata.name").(string))
				ref := plantest.Input(t, r, "spec.parametersRef").(map[string]any)
				assert.Equal(t, plantest.Input(t, r, "metadata.name"), ref["name"], "a Network points at its own param set")
				assert.Equal(t, "Device", plantest.Input(t, r, "spec.type"))
			}
			assert.ElementsMatch(t, want, paramSets)
			assert.ElementsMatch(t, want, networks)
		})
	}
}

func TestParamSetsUseTheRightDeviceMode(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	for _, r := range res.OfType("kubernetes:networking.gke.io/v1:GKENetworkParamSet") {
		name := plantest.Input(t, r, "metadata.name").(string)
		mode := plantest.Input(t, r, "spec.deviceMode")
		if name == "gvnic-1" {
			assert.Equal(t, "NetDevice", mode)
			assert.Equal(t, "ray-a4-gpu-spot-gvnic-net", plantest.Input(t, r, "spec.vpc"))
		} else {
			assert.Equal(t, "RDMA", mode, name)
			assert.Equal(t, "ray-a4-gpu-spot-rdma-net", plantest.Input(t, r, "spec.vpc"))
		}
	}
	rdma3 := res.Find("kubernetes:networking.gke.io/v1:GKENetworkParamSet", "gkenetworkparamset-rdma-3")
	require.NotNil(t, rdma3)
	assert.Equal(t, "ray-a4-gpu-spot-rdma-sub-3", plantest.Input(t, rdma3, "spec.vpcSubnet"))
}
