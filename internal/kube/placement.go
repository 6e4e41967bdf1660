package kube

import (
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Placement is where a component puts its in-cluster objects, handed to every component the same
// way: the cluster's Kubernetes provider, deletion with the cluster (so that `pulumi destroy`
// does not wait on an API server that is going away), the workload namespace, and the objects
// they wait for.
type Placement struct {
	// Provider talks to the cluster's API server.
	Provider pulumi.ProviderResource
	// Cluster is the GKE cluster: in-cluster objects are deleted with it.
	Cluster pulumi.Resource
	// Namespace is the workload namespace's name; NamespaceObject is the namespace itself,
	// which namespaced objects wait for.
	Namespace       string
	NamespaceObject pulumi.Resource
	// After are further objects to wait for (a claim, network objects, a Secret).
	After []pulumi.Resource
}

// Namespaced are the options of an object in the workload namespace.
func (p Placement) Namespaced(extra ...pulumi.ResourceOption) []pulumi.ResourceOption {
	deps := slices.Clone(p.After)
	if p.NamespaceObject != nil {
		deps = append(deps, p.NamespaceObject)
	}
	return p.options(deps, extra)
}

// ClusterScoped are the options of a cluster-scoped object (a PersistentVolume, a network
// object): it waits for the After objects but not for the namespace.
func (p Placement) ClusterScoped(extra ...pulumi.ResourceOption) []pulumi.ResourceOption {
	return p.options(slices.Clone(p.After), extra)
}

// WaitingFor is a copy of p whose objects also wait for rs.
func (p Placement) WaitingFor(rs ...pulumi.Resource) Placement {
	p.After = append(slices.Clone(p.After), rs...)
	return p
}

func (p Placement) options(deps []pulumi.Resource, extra []pulumi.ResourceOption) []pulumi.ResourceOption {
	var opts []pulumi.ResourceOption
	if p.Provider != nil {
		opts = append(opts, pulumi.Provider(p.Provider))
	}
	if p.Cluster != nil {
		opts = append(opts, pulumi.DeletedWith(p.Cluster))
	}
	if len(deps) > 0 {
		opts = append(opts, pulumi.DependsOn(deps))
	}
	return append(opts, extra...)
}
