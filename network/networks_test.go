package network_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/plan"
	"gke-rl/infra/plan/plantest"
)

const (
	networkType  = "gcp:compute/network:Network"
	subnetType   = "gcp:compute/subnetwork:Subnetwork"
	firewallType = "gcp:compute/firewall:Firewall"
)

func TestNetworkInvariants(t *testing.T) {
	zones := map[string]string{"b200-spot": "us-east1-b", "h200-reserved": "us-south1-b"}
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			res := plantest.Plan(t, stack)
			rdma := res.Find(networkType, "rdma")
			gvnic := res.Find(networkType, "gvnic")

			t.Run("the RDMA VPC has the GPU zone's RoCE profile", func(t *testing.T) {
				assert.Equal(t, "projects/your-project-id/global/networkProfiles/"+zones[stack]+"-vpc-roce",
					plantest.Input(t, rdma, "networkProfile"))
			})
			t.Run("the gVNIC and RDMA VPCs use the RDMA MTU", func(t *testing.T) {
				assert.EqualValues(t, 8896, plantest.Input(t, rdma, "mtu"))
				assert.EqualValues(t, 8896, plantest.Input(t, gvnic, "mtu"))
			})
			t.Run("one RDMA subnet per NIC, disjoint, in order", func(t *testing.T) {
				var ranges []netip.Prefix
				for _, s := range res.OfType(subnetType) {
					if dependsOn(s, rdma) {
						ranges = append(ranges, netip.MustParsePrefix(plantest.Input(t, s, "ipCidrRange").(string)))
					}
				}
				require.Len(t, ranges, 8)
				all := append(ranges, subnetRanges(t, res, "main", "gvnic")...)
				for i := range all {
					for j := i + 1; j < len(all); j++ {
						assert.False(t, all[i].Overlaps(all[j]), "%s overlaps %s", all[i], all[j])
					}
				}
			})
			t.Run("no firewall rule on the RDMA VPC", func(t *testing.T) {
				for _, fw := range res.OfType(firewallType) {
					assert.False(t, dependsOn(fw, rdma), fw.Name)
				}
			})
			t.Run("firewall sources are internal only", func(t *testing.T) {
				for _, fw := range res.OfType(firewallType) {
					for _, src := range plantest.Input(t, fw, "sourceRanges").([]any) {
						p := netip.MustParsePrefix(src.(string))
						assert.True(t, p.Addr().IsPrivate(), "%s allows %s", fw.Name, p)
					}
				}
			})
			t.Run("subnets do not wait for each other", func(t *testing.T) {
				subnets := res.OfType(subnetType)
				for _, s := range subnets {
					for _, other := range subnets {
						assert.NotContains(t, s.Dependencies, other.URN)
					}
				}
			})
			t.Run("the main subnet carries pod and service ranges and NAT", func(t *testing.T) {
				main := res.Find(subnetType, "main")
				assert.Len(t, plantest.Input(t, main, "secondaryIpRanges"), 2)
				assert.NotNil(t, res.Find("gcp:compute/routerNat:RouterNat", "main"))
			})
		})
	}
}

func dependsOn(res, target *plan.Resource) bool {
	for _, d := range res.Dependencies {
		if d == target.URN {
			return true
		}
	}
	return false
}

func subnetRanges(t *testing.T, res *plan.Result, names ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, n := range names {
		s := res.Find(subnetType, n)
		out = append(out, netip.MustParsePrefix(plantest.Input(t, s, "ipCidrRange").(string)))
	}
	return out
}
