package network_test

import (
	"net/netip"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/gpunode"
	"gke-rl/internal/kube"
	"gke-rl/internal/recorder"
	"gke-rl/internal/recorder/recordertest"
	"gke-rl/network"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

const (
	networkType  = "gcp:compute/network:Network"
	subnetType   = "gcp:compute/subnetwork:Subnetwork"
	firewallType = "gcp:compute/firewall:Firewall"
	paramSetType = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"
	netCRType    = "kubernetes:networking.gke.io/v1:Network"
)

// fixture is the address plan of an 8-NIC node in us-east1-b.
func fixture() *network.NetworksArgs {
	var rdma []netip.Prefix
	for i := 0; i < 8; i++ {
		rdma = append(rdma, netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 168, byte(8 + i), 0}), 24))
	}
	return &network.NetworksArgs{
		Project: "acme-rl", Region: "us-east1", Zone: "us-east1-b", NamePrefix: "rl",
		NodeCIDR:    netip.MustParsePrefix("10.0.0.0/20"),
		PodCIDR:     netip.MustParsePrefix("10.4.0.0/14"),
		ServiceCIDR: netip.MustParsePrefix("10.8.0.0/20"),
		GVNICCIDR:   netip.MustParsePrefix("192.168.0.0/24"),
		RDMASubnets: rdma,
		MTU:         8896,
	}
}

// record registers the networks and, in the same program, the network objects of the NICs.
func record(t *testing.T, args *network.NetworksArgs, nics []gpunode.NIC) *recorder.Recording {
	t.Helper()
	return recordertest.Record(t, func(ctx *pulumi.Context) error {
		n, err := network.NewNetworks(ctx, "networks", args)
		if err != nil {
			return err
		}
		attachments, err := n.Attach(nics)
		if err != nil {
			return err
		}
		_, err = network.NewMapping(ctx, "network-mapping", &network.MappingArgs{NICs: attachments, Placement: kube.Placement{Namespace: "gke-rl"}})
		return err
	})
}

// input reads a resource's input, failing the test when it is not set.
var input = recordertest.Input

func TestNetworkInvariants(t *testing.T) {
	rec := record(t, fixture(), gpunode.NICs(8))
	rdma := rec.Find(networkType, "networks-rdma")
	gvnic := rec.Find(networkType, "networks-gvnic")

	t.Run("the RDMA VPC has the GPU zone's RoCE profile", func(t *testing.T) {
		assert.Equal(t, "projects/acme-rl/global/networkProfiles/us-east1-b-vpc-roce", input(t, rdma, "networkProfile"))
	})
	t.Run("all three VPCs use the configured MTU", func(t *testing.T) {
		assert.EqualValues(t, 8896, input(t, rdma, "mtu"))
		assert.EqualValues(t, 8896, input(t, gvnic, "mtu"))
		assert.EqualValues(t, 8896, input(t, rec.Find(networkType, "networks-main"), "mtu"), "Lustre reads about 10 % faster than at 1460")
	})
	t.Run("one RDMA subnet per NIC, in NIC order", func(t *testing.T) {
		for i, want := range fixture().RDMASubnets {
			s := rec.Find(subnetType, "networks-rdma-"+string(rune('0'+i)))
			assert.Equal(t, want.String(), input(t, s, "ipCidrRange"))
			assert.Contains(t, s.Dependencies, rdma.URN)
		}
	})
	t.Run("no firewall rule on the RDMA VPC", func(t *testing.T) {
		for _, fw := range rec.OfType(firewallType) {
			assert.NotContains(t, fw.Dependencies, rdma.URN, fw.Name)
		}
	})
	t.Run("the gVNIC firewall admits its own subnet only", func(t *testing.T) {
		fw := rec.Find(firewallType, "networks-gvnic-internal")
		assert.Equal(t, []any{"192.168.0.0/24"}, input(t, fw, "sourceRanges"))
	})
	t.Run("subnets do not wait for each other", func(t *testing.T) {
		subnets := rec.OfType(subnetType)
		require.Len(t, subnets, 1+1+8)
		for _, s := range subnets {
			for _, other := range subnets {
				assert.NotContains(t, s.Dependencies, other.URN)
			}
		}
	})
	t.Run("the main subnet carries the pod and service ranges, and NAT", func(t *testing.T) {
		main := rec.Find(subnetType, "networks-main")
		assert.Equal(t, []any{
			map[string]any{"rangeName": "rl-pods", "ipCidrRange": "10.4.0.0/14"},
			map[string]any{"rangeName": "rl-services", "ipCidrRange": "10.8.0.0/20"},
		}, input(t, main, "secondaryIpRanges"))
		assert.NotNil(t, rec.Find("gcp:compute/routerNat:RouterNat", "networks-main"))
	})
}

func TestNetworkObjectsFollowTheNICs(t *testing.T) {
	nics := gpunode.NICs(8)
	rec := record(t, fixture(), nics)
	paramSets, networks := rec.OfType(paramSetType), rec.OfType(netCRType)
	require.Len(t, paramSets, len(nics))
	require.Len(t, networks, len(nics))
	for _, nic := range nics {
		ps := rec.Find(paramSetType, "network-mapping-gkenetworkparamset-"+nic.Name)
		net := rec.Find(netCRType, "network-mapping-network-"+nic.Name)
		assert.Equal(t, nic.Name, input(t, ps, "metadata.name"))
		assert.Equal(t, nic.Name, input(t, net, "metadata.name"))
		assert.Equal(t, nic.Name, input(t, net, "spec.parametersRef.name"), "a Network points at its own param set")
		assert.Equal(t, "Device", input(t, net, "spec.type"))
		if nic.Kind == gpunode.GVNIC {
			assert.Equal(t, "NetDevice", input(t, ps, "spec.deviceMode"))
			assert.Equal(t, "rl-gvnic-net", input(t, ps, "spec.vpc"))
			assert.Equal(t, "rl-gvnic-sub", input(t, ps, "spec.vpcSubnet"))
		} else {
			assert.Equal(t, "RDMA", input(t, ps, "spec.deviceMode"), nic.Name)
			assert.Equal(t, "rl-rdma-net", input(t, ps, "spec.vpc"))
			assert.Equal(t, "rl-rdma-sub-"+string(rune('0'+nic.Subnet)), input(t, ps, "spec.vpcSubnet"))
		}
		assert.Empty(t, net.Options.DeletedWith, "no cluster in this test")
	}
}

func TestAttachRefusesANICWithoutASubnet(t *testing.T) {
	_, err := recorder.Run(func(ctx *pulumi.Context) error {
		n, err := network.NewNetworks(ctx, "networks", fixture())
		if err != nil {
			return err
		}
		_, err = n.Attach(gpunode.NICs(9))
		return err
	})
	assert.ErrorContains(t, err, "NIC rdma-8: no rdma subnet 8")
}

func TestTwoInstancesCoexist(t *testing.T) {
	_, err := recorder.Run(func(ctx *pulumi.Context) error {
		if _, err := network.NewNetworks(ctx, "a", fixture()); err != nil {
			return err
		}
		other := fixture()
		other.NamePrefix = "rl2"
		_, err := network.NewNetworks(ctx, "b", other)
		return err
	})
	assert.NoError(t, err, "child names derive from the component's name")
}
