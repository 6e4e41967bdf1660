package infra

import (
	"fmt"
	"math/bits"
	"net/netip"
)

// gcpReservedAddresses is how many addresses GCP keeps in every subnet (network, gateway,
// second-to-last and broadcast).
const gcpReservedAddresses = 4

// maxSubnetPrefixLen is the prefix of GCP's smallest IPv4 subnet, a /29.
const maxSubnetPrefixLen = 29

// AddressPlan is the stack's IPv4 ranges, parsed once.
type AddressPlan struct {
	// Node, Pod and Service are the main subnet's primary and secondary ranges.
	Node, Pod, Service netip.Prefix
	// GVNIC is the gVNIC VPC's only subnet.
	GVNIC netip.Prefix
	// RDMA are the RDMA VPC's subnets, one per RDMA NIC, in NIC order.
	RDMA []netip.Prefix
}

// parseCIDR accepts only an IPv4 prefix in canonical form (`10.0.0.0/20`, not `10.0.0.1/20`),
// because GCP rejects host bits in subnet ranges.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("is not a CIDR range like 10.0.0.0/20")
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("is not an IPv4 range")
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("has host bits set; the range starts at %s", p.Masked())
	}
	return p, nil
}

// SplitCIDR divides block into n equal subnets, the smallest power of two at least n, and
// returns the first n in address order.
func SplitCIDR(block netip.Prefix, n int) ([]netip.Prefix, error) {
	if n < 1 {
		return nil, fmt.Errorf("cannot split into %d subnets", n)
	}
	extra := bits.Len(uint(n - 1))
	size := block.Bits() + extra
	if size > maxSubnetPrefixLen {
		return nil, fmt.Errorf("is too small for %d subnets: each would be a /%d, and GCP's smallest subnet is a /%d", n, size, maxSubnetPrefixLen)
	}
	step := uint32(1) << (32 - size)
	base := block.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	out := make([]netip.Prefix, n)
	for i := 0; i < n; i++ {
		a := start + uint32(i)*step
		addr := netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
		out[i] = netip.PrefixFrom(addr, size)
	}
	return out, nil
}

// UsableAddresses is how many node addresses a GCP subnet of this prefix holds.
func UsableAddresses(p netip.Prefix) int {
	return 1<<(32-p.Bits()) - gcpReservedAddresses
}

// resolveAddressPlan parses the ranges of a validated config.
func resolveAddressPlan(n NetworkConfig) (AddressPlan, error) {
	var plan AddressPlan
	for _, r := range []struct {
		key, value string
		into       *netip.Prefix
	}{
		{"network.nodeCidr", n.NodeCIDR, &plan.Node},
		{"network.podCidr", n.PodCIDR, &plan.Pod},
		{"network.serviceCidr", n.ServiceCIDR, &plan.Service},
		{"network.gvnicCidr", n.GVNICCIDR, &plan.GVNIC},
	} {
		p, err := parseCIDR(r.value)
		if err != nil {
			return AddressPlan{}, fmt.Errorf("%s: %s %w", r.key, quote(r.value), err)
		}
		*r.into = p
	}
	rdma, err := parseCIDR(n.RDMACIDR)
	if err == nil {
		plan.RDMA, err = SplitCIDR(rdma, n.RDMASubnets)
	}
	if err != nil {
		return AddressPlan{}, fmt.Errorf("network.rdmaCidr: %s %w", quote(n.RDMACIDR), err)
	}
	return plan, nil
}
