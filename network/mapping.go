package network

import (
	"fmt"
	"strings"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	k8smeta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/infra/kube"
)

// Device modes of the extra networks (GKENetworkParamSet `deviceMode`).
const (
	DeviceModeNetDevice = string(networkv1.NetDevice)
	DeviceModeRDMA      = string(networkv1.RDMA)
)

// ExtraNetwork is one node network beyond the default one, as pods see it.
type ExtraNetwork struct {
	// Name is the Network CR's name, which pods list in `networking.gke.io/interfaces`.
	Name string
	// VPC and Subnet are the GCP network and subnetwork names.
	VPC, Subnet pulumi.StringInput
	// DeviceMode is DeviceModeNetDevice (gVNIC) or DeviceModeRDMA.
	DeviceMode string
}

// MappingArgs lists the extra networks in NIC order (eth1, eth2, ...).
type MappingArgs struct {
	Networks []ExtraNetwork
}

// Mapping is one GKENetworkParamSet and one Network per extra network.
type Mapping struct {
	pulumi.ResourceState

	// Names are the Network CR names in NIC order: the single source of the pods' interface
	// annotation.
	Names []string
	// Objects are the CRs, for the pods that use the networks to wait for. Depend on these,
	// not on the component: the Go SDK records a component's children while they register, so
	// a DependsOn on the component can miss the last ones.
	Objects []pulumi.Resource
}

// ExtraNetworks is the standard layout of a GPU node: `gvnic-1` on the gVNIC subnet, then
// `rdma-0` ... `rdma-<n-1>` on the RDMA subnets, in NIC order.
func ExtraNetworks(n *Networks) []ExtraNetwork {
	out := []ExtraNetwork{{Name: "gvnic-1", VPC: n.GVNICNetwork.Name, Subnet: n.GVNICSubnet.Name, DeviceMode: DeviceModeNetDevice}}
	for i, s := range n.RDMASubnets {
		out = append(out, ExtraNetwork{Name: fmt.Sprintf("rdma-%d", i), VPC: n.RDMANetwork.Name, Subnet: s.Name, DeviceMode: DeviceModeRDMA})
	}
	return out
}

// ParamSetSpec is the GKENetworkParamSet spec of one extra network.
func ParamSetSpec(vpc, subnet, deviceMode string) networkv1.GKENetworkParamSetSpec {
	return networkv1.GKENetworkParamSetSpec{VPC: vpc, VPCSubnet: subnet, DeviceMode: networkv1.DeviceModeType(deviceMode)}
}

// NetworkSpec is the Network spec that points at the param set of the same name.
func NetworkSpec(name string) networkv1.NetworkSpec {
	return networkv1.NetworkSpec{
		Type: networkv1.DeviceNetworkType,
		ParametersRef: &networkv1.NetworkParametersReference{
			Group: networkv1.GroupName,
			Kind:  "GKENetworkParamSet",
			Name:  name,
		},
	}
}

// NewMapping registers the network CRs. Pass the cluster's Kubernetes provider and DeletedWith
// in opts.
func NewMapping(ctx *pulumi.Context, name string, args *MappingArgs, opts ...pulumi.ResourceOption) (*Mapping, error) {
	m := &Mapping{}
	if err := ctx.RegisterComponentResource("gke-rl:network:Mapping", name, m, opts...); err != nil {
		return nil, err
	}
	child := append(append([]pulumi.ResourceOption{}, opts...), pulumi.Parent(m))
	for _, n := range args.Networks {
		deviceMode := n.DeviceMode
		paramSpec := pulumi.All(n.VPC, n.Subnet).ApplyT(func(v []any) (map[string]any, error) {
			spec := ParamSetSpec(v[0].(string), v[1].(string), deviceMode)
			return kube.ToUnstructured(&spec)
		})
		paramSet, err := customResource(ctx, "GKENetworkParamSet", n.Name, paramSpec, child)
		if err != nil {
			return nil, err
		}
		netSpec, err := kube.ToUnstructured(ptr(NetworkSpec(n.Name)))
		if err != nil {
			return nil, err
		}
		net, err := customResource(ctx, "Network", n.Name, netSpec, child)
		if err != nil {
			return nil, err
		}
		m.Names = append(m.Names, n.Name)
		m.Objects = append(m.Objects, paramSet, net)
	}
	names := pulumi.StringArray{}
	for _, n := range m.Names {
		names = append(names, pulumi.String(n))
	}
	if err := ctx.RegisterResourceOutputs(m, pulumi.Map{"names": names}); err != nil {
		return nil, err
	}
	return m, nil
}

// customResource registers a cluster-scoped networking.gke.io/v1 object.
func customResource(ctx *pulumi.Context, kind, name string, spec any, opts []pulumi.ResourceOption) (*apiextensions.CustomResource, error) {
	gv := networkv1.GroupVersion
	return apiextensions.NewCustomResource(ctx, fmt.Sprintf("%s-%s", strings.ToLower(kind), name), &apiextensions.CustomResourceArgs{
		ApiVersion:  pulumi.String(k8smeta.GroupVersion(gv).String()),
		Kind:        pulumi.String(kind),
		Metadata:    &metav1.ObjectMetaArgs{Name: pulumi.String(name)},
		OtherFields: kubernetes.UntypedArgs{"spec": spec},
	}, opts...)
}

func ptr[T any](v T) *T { return &v }
