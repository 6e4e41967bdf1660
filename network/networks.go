// Package network builds the three VPCs that a GPU cluster with RDMA needs (main, gVNIC, RDMA)
// and, inside the cluster, the network objects that let pods use the extra NICs.
package network

import (
	"fmt"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/compute"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/infra/naming"
)

// NetworksArgs is the address plan of the three VPCs.
type NetworksArgs struct {
	// Project and Region place every network resource.
	Project pulumi.StringInput
	Region  pulumi.StringInput
	// Zone is the GPU zone; the RDMA VPC takes that zone's RoCE network profile.
	Zone string
	// NamePrefix starts every resource name (the cluster name).
	NamePrefix string
	// NodeCIDR, PodCIDR and ServiceCIDR are the main subnet's primary and secondary ranges.
	NodeCIDR, PodCIDR, ServiceCIDR string
	// GVNICCIDR is the gVNIC VPC's subnet.
	GVNICCIDR string
	// RDMASubnetCIDRs are the RDMA VPC's subnets, one per RDMA NIC, in NIC order.
	RDMASubnetCIDRs []string
	// MTU of the gVNIC and RDMA VPCs (8896 for GPUDirect RDMA).
	MTU int
}

// Networks is the main VPC (cluster nodes, pods, services, Cloud NAT for private nodes), the
// gVNIC VPC and the RDMA VPC.
type Networks struct {
	pulumi.ResourceState

	// MainNetwork and MainSubnet carry the cluster; PodRangeName and ServiceRangeName are the
	// subnet's secondary ranges for IP aliases.
	MainNetwork      *compute.Network
	MainSubnet       *compute.Subnetwork
	PodRangeName     string
	ServiceRangeName string
	// GVNICNetwork and GVNICSubnet are the GPU nodes' second NIC.
	GVNICNetwork *compute.Network
	GVNICSubnet  *compute.Subnetwork
	// RDMANetwork and RDMASubnets are the GPU nodes' RoCE NICs, in NIC order.
	RDMANetwork *compute.Network
	RDMASubnets []*compute.Subnetwork
}

// RoCEProfile is the network profile that makes a VPC an RDMA (RoCE) network in a zone. It is
// the zone's, not the region's.
func RoCEProfile(project pulumi.StringInput, zone string) pulumi.StringOutput {
	return pulumi.Sprintf("projects/%s/global/networkProfiles/%s-vpc-roce", project, zone)
}

// NewNetworks registers the three VPCs. The subnets depend only on their own VPC, so Pulumi
// creates them all at once.
func NewNetworks(ctx *pulumi.Context, name string, args *NetworksArgs, opts ...pulumi.ResourceOption) (*Networks, error) {
	n := &Networks{}
	if err := ctx.RegisterComponentResource("gke-rl:network:Networks", name, n, opts...); err != nil {
		return nil, err
	}
	names := naming.New(args.NamePrefix)
	child := pulumi.Parent(n)

	if err := n.main(ctx, names, args, child); err != nil {
		return nil, fmt.Errorf("main network: %w", err)
	}
	if err := n.gvnic(ctx, names, args, child); err != nil {
		return nil, fmt.Errorf("gvnic network: %w", err)
	}
	if err := n.rdma(ctx, names, args, child); err != nil {
		return nil, fmt.Errorf("rdma network: %w", err)
	}

	rdmaLinks := pulumi.StringArray{}
	for _, s := range n.RDMASubnets {
		rdmaLinks = append(rdmaLinks, s.SelfLink)
	}
	if err := ctx.RegisterResourceOutputs(n, pulumi.Map{
		"mainNetwork":  n.MainNetwork.SelfLink,
		"mainSubnet":   n.MainSubnet.SelfLink,
		"gvnicNetwork": n.GVNICNetwork.SelfLink,
		"rdmaNetwork":  n.RDMANetwork.SelfLink,
		"rdmaSubnets":  rdmaLinks,
	}); err != nil {
		return nil, err
	}
	return n, nil
}

// main registers the cluster's VPC and subnet, and a Cloud Router with NAT so that private
// nodes can pull images and download models.
func (n *Networks) main(ctx *pulumi.Context, names naming.Namer, args *NetworksArgs, child pulumi.ResourceOption) error {
	var err error
	n.MainNetwork, err = compute.NewNetwork(ctx, "main", &compute.NetworkArgs{
		Project:               args.Project,
		Name:                  pulumi.String(names.Resource("net")),
		AutoCreateSubnetworks: pulumi.Bool(false),
		RoutingMode:           pulumi.String("REGIONAL"),
	}, child)
	if err != nil {
		return err
	}
	n.PodRangeName = names.Resource("pods")
	n.ServiceRangeName = names.Resource("services")
	n.MainSubnet, err = compute.NewSubnetwork(ctx, "main", &compute.SubnetworkArgs{
		Project:               args.Project,
		Region:                args.Region,
		Name:                  pulumi.String(names.Resource("sub")),
		Network:               n.MainNetwork.ID(),
		IpCidrRange:           pulumi.String(args.NodeCIDR),
		PrivateIpGoogleAccess: pulumi.Bool(true),
		SecondaryIpRanges: compute.SubnetworkSecondaryIpRangeArray{
			compute.SubnetworkSecondaryIpRangeArgs{RangeName: pulumi.String(n.PodRangeName), IpCidrRange: pulumi.String(args.PodCIDR)},
			compute.SubnetworkSecondaryIpRangeArgs{RangeName: pulumi.String(n.ServiceRangeName), IpCidrRange: pulumi.String(args.ServiceCIDR)},
		},
	}, child)
	if err != nil {
		return err
	}
	router, err := compute.NewRouter(ctx, "main", &compute.RouterArgs{
		Project: args.Project,
		Region:  args.Region,
		Name:    pulumi.String(names.Resource("router")),
		Network: n.MainNetwork.ID(),
	}, child)
	if err != nil {
		return err
	}
	_, err = compute.NewRouterNat(ctx, "main", &compute.RouterNatArgs{
		Project:                       args.Project,
		Region:                        args.Region,
		Name:                          pulumi.String(names.Resource("nat")),
		Router:                        router.Name,
		NatIpAllocateOption:           pulumi.String("AUTO_ONLY"),
		SourceSubnetworkIpRangesToNat: pulumi.String("ALL_SUBNETWORKS_ALL_IP_RANGES"),
		LogConfig: &compute.RouterNatLogConfigArgs{
			Enable: pulumi.Bool(true),
			Filter: pulumi.String("ERRORS_ONLY"),
		},
	}, child)
	return err
}

// gvnic registers the gVNIC VPC, its subnet and a firewall that admits traffic from that subnet
// only.
func (n *Networks) gvnic(ctx *pulumi.Context, names naming.Namer, args *NetworksArgs, child pulumi.ResourceOption) error {
	var err error
	n.GVNICNetwork, err = compute.NewNetwork(ctx, "gvnic", &compute.NetworkArgs{
		Project:               args.Project,
		Name:                  pulumi.String(names.Resource("gvnic-net")),
		AutoCreateSubnetworks: pulumi.Bool(false),
		Mtu:                   pulumi.Int(args.MTU),
	}, child)
	if err != nil {
		return err
	}
	n.GVNICSubnet, err = compute.NewSubnetwork(ctx, "gvnic", &compute.SubnetworkArgs{
		Project:     args.Project,
		Region:      args.Region,
		Name:        pulumi.String(names.Resource("gvnic-sub")),
		Network:     n.GVNICNetwork.ID(),
		IpCidrRange: pulumi.String(args.GVNICCIDR),
	}, child)
	if err != nil {
		return err
	}
	_, err = compute.NewFirewall(ctx, "gvnic-internal", &compute.FirewallArgs{
		Project:      args.Project,
		Name:         pulumi.String(names.Resource("gvnic-internal")),
		Network:      n.GVNICNetwork.ID(),
		Direction:    pulumi.String("INGRESS"),
		SourceRanges: pulumi.StringArray{pulumi.String(args.GVNICCIDR)},
		Allows: compute.FirewallAllowArray{
			compute.FirewallAllowArgs{Protocol: pulumi.String("tcp"), Ports: pulumi.StringArray{pulumi.String("0-65535")}},
			compute.FirewallAllowArgs{Protocol: pulumi.String("udp"), Ports: pulumi.StringArray{pulumi.String("0-65535")}},
			compute.FirewallAllowArgs{Protocol: pulumi.String("icmp")},
		},
	}, child)
	return err
}

// rdma registers the RoCE VPC and one subnet per RDMA NIC. A RoCE VPC takes no firewall rules.
func (n *Networks) rdma(ctx *pulumi.Context, names naming.Namer, args *NetworksArgs, child pulumi.ResourceOption) error {
	var err error
	n.RDMANetwork, err = compute.NewNetwork(ctx, "rdma", &compute.NetworkArgs{
		Project:               args.Project,
		Name:                  pulumi.String(names.Resource("rdma-net")),
		AutoCreateSubnetworks: pulumi.Bool(false),
		Mtu:                   pulumi.Int(args.MTU),
		NetworkProfile:        RoCEProfile(args.Project, args.Zone),
	}, child)
	if err != nil {
		return err
	}
	for i, cidr := range args.RDMASubnetCIDRs {
		subnet, err := compute.NewSubnetwork(ctx, fmt.Sprintf("rdma-%d", i), &compute.SubnetworkArgs{
			Project:     args.Project,
			Region:      args.Region,
			Name:        pulumi.String(names.Resource(fmt.Sprintf("rdma-sub-%d", i))),
			Network:     n.RDMANetwork.ID(),
			IpCidrRange: pulumi.String(cidr),
		}, child)
		if err != nil {
			return fmt.Errorf("rdma subnet %d: %w", i, err)
		}
		n.RDMASubnets = append(n.RDMASubnets, subnet)
	}
	return nil
}
