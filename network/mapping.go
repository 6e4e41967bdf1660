package network

import (
	"fmt"
	"strings"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/gpunode"
	"gke-rl/internal/kube"
	"gke-rl/internal/naming"
)

// deviceModes is the GKENetworkParamSet `deviceMode` of each NIC kind.
var deviceModes = map[gpunode.NICKind]networkv1.DeviceModeType{
	gpunode.GVNIC: networkv1.NetDevice,
	gpunode.RDMA:  networkv1.RDMA,
}

// MappingArgs are the extra NICs with their networks, in NIC order (eth1, eth2, ...).
type MappingArgs struct {
	NICs []Attachment
	// Placement is where the objects go (they are cluster-scoped); it waits for the CRDs.
	Placement kube.Placement
}

// Mapping is one GKENetworkParamSet and one Network per extra NIC.
type Mapping struct {
	pulumi.ResourceState

	// Objects are the CRs, for the pods that use the networks to wait for. Depend on these,
	// not on the component: the Go SDK records a component's children while they register, so
	// a DependsOn on the component can miss the last ones.
	Objects []pulumi.Resource
}

// ParamSetSpec is the GKENetworkParamSet spec of one extra NIC.
func ParamSetSpec(vpc, subnet string, kind gpunode.NICKind) networkv1.GKENetworkParamSetSpec {
	return networkv1.GKENetworkParamSetSpec{VPC: vpc, VPCSubnet: subnet, DeviceMode: deviceModes[kind]}
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

// NewMapping registers the network CRs.
func NewMapping(ctx *pulumi.Context, name string, args *MappingArgs, opts ...pulumi.ResourceOption) (*Mapping, error) {
	m := &Mapping{}
	if err := ctx.RegisterComponentResource("gke-rl:network:Mapping", name, m, opts...); err != nil {
		return nil, err
	}
	for _, a := range args.NICs {
		kind := a.NIC.Kind
		paramSpec := pulumi.All(a.VPC, a.Subnetwork).ApplyT(func(v []any) (map[string]any, error) {
			spec := ParamSetSpec(v[0].(string), v[1].(string), kind)
			return kube.ToUnstructured(&spec)
		})
		paramSet, err := m.customResource(ctx, name, "GKENetworkParamSet", a.NIC.Name, paramSpec, args.Placement)
		if err != nil {
			return nil, err
		}
		netSpec := NetworkSpec(a.NIC.Name)
		netFields, err := kube.ToUnstructured(&netSpec)
		if err != nil {
			return nil, err
		}
		// A Network refers to its param set by name: it is applied after it.
		net, err := m.customResource(ctx, name, "Network", a.NIC.Name, netFields, args.Placement.WaitingFor(paramSet))
		if err != nil {
			return nil, err
		}
		m.Objects = append(m.Objects, paramSet, net)
	}
	names := pulumi.StringArray{}
	for _, a := range args.NICs {
		names = append(names, pulumi.String(a.NIC.Name))
	}
	if err := ctx.RegisterResourceOutputs(m, pulumi.Map{"names": names}); err != nil {
		return nil, err
	}
	return m, nil
}

// customResource registers a cluster-scoped networking.gke.io/v1 object.
func (m *Mapping) customResource(ctx *pulumi.Context, component, kind, name string, spec any, p kube.Placement) (*apiextensions.CustomResource, error) {
	role := fmt.Sprintf("%s-%s", strings.ToLower(kind), name)
	childName, opts := naming.Children{Component: component, Parent: m}.Of(role, role)
	return apiextensions.NewCustomResource(ctx, childName, &apiextensions.CustomResourceArgs{
		ApiVersion:  pulumi.String(networkv1.GroupVersion.String()),
		Kind:        pulumi.String(kind),
		Metadata:    &metav1.ObjectMetaArgs{Name: pulumi.String(name)},
		OtherFields: kubernetes.UntypedArgs{"spec": spec},
	}, p.ClusterScoped(opts...)...)
}
