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
func SplitCIDR(block string, n int) ([]string, error) {
	p, err := parseCIDR(block)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("cannot split into %d subnets", n)
	}
	extra := bits.Len(uint(n - 1))
	size := p.Bits() + extra
	if size > maxSubnetPrefixLen {
		return nil, fmt.Errorf("is too small for %d subnets: each would be a /%d, and GCP's smallest subnet is a /%d", n, size, maxSubnetPrefixLen)
	}
	step := uint32(1) << (32 - size)
	base := p.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	out := make([]string, n)
	for i := 0; i < n; i++ {
		a := start + uint32(i)*step
		addr := netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
		out[i] = netip.PrefixFrom(addr, size).String()
	}
	return out, nil
}

// UsableAddresses is how many node addresses a GCP subnet of this prefix holds.
func UsableAddresses(cidr string) int {
	p, err := parseCIDR(cidr)
	if err != nil {
		return 0
	}
	return 1<<(32-p.Bits()) - gcpReservedAddresses
}

// RDMASubnetCIDRs is the address plan of the RDMA VPC's subnets, in NIC order.
func (c *Config) RDMASubnetCIDRs() []string {
	cidrs, _ := SplitCIDR(c.Network.RDMACIDR, c.Network.RDMASubnets)
	return cidrs
}
