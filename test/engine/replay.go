// Package engine runs the program's in-cluster resources under the real Pulumi engine: the
// Pulumi CLI at the SDK's version (.ci/pulumi) and the pulumi-kubernetes provider built from the
// Go module proxy (.ci/kube/build), against the control plane of test/kubetest with KubeRay's
// reconcilers and Kueue's manager. The cloud half stays out: a planned stack's Kubernetes
// objects are registered again, each with the type, name, parent, inputs and options the
// program gave it (Replay), by a Go program the automation API hands to the CLI.
package engine

import (
	"fmt"
	"slices"
	"strings"

	k8s "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/infra/offline"
)

// providerType is the type of the Kubernetes provider resource the program creates for its
// cluster.
const providerType = "pulumi:providers:kubernetes"

// InCluster says whether a planned resource is replayed: the Kubernetes provider, every
// Kubernetes object, and the components that parent them. The cloud resources, and the local
// commands (pulumi-command's provider is not served by the module proxy; the control plane
// already runs what the Kueue install step installs), stay out.
func InCluster(r *offline.Resource) bool {
	return !r.Custom || r.Type == providerType || (strings.HasPrefix(r.Type, "kubernetes:") && !strings.HasPrefix(r.Type, "kubernetes:index:"))
}

// object is any replayed custom resource: the engine keeps its outputs; the test reads the
// cluster.
type object struct{ pulumi.CustomResourceState }

type component struct{ pulumi.ResourceState }

// Replay is a Pulumi program that registers plan's in-cluster resources (InCluster) as the
// program registered them: same type, name and parent (so the same URN), the recorded inputs,
// and the options that decide what an update does (dependencies among the replayed ones,
// ignoreChanges, replaceOnChanges, deleteBeforeReplace, custom timeouts, aliases, protect,
// retainOnDelete). The Kubernetes provider gets the control plane's kubeconfig instead of the
// GKE cluster's. deletedWith names the GKE cluster, which is not replayed: here `destroy`
// deletes each object, where the real stack leaves them to the cluster's deletion.
func Replay(plan *offline.Result, kubeconfig string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		byURN := map[string]*offline.Resource{}
		for _, r := range plan.Resources {
			if InCluster(r) {
				byURN[r.URN] = r
			}
		}
		registered := map[string]pulumi.Resource{}
		var register func(r *offline.Resource) error
		register = func(r *offline.Resource) error {
			if _, ok := registered[r.URN]; ok {
				return nil
			}
			var opts []pulumi.ResourceOption
			if p, ok := byURN[r.Parent]; ok {
				if err := register(p); err != nil {
					return err
				}
				opts = append(opts, pulumi.Parent(registered[p.URN]))
			}
			var deps []pulumi.Resource
			for _, d := range r.Dependencies {
				if dep, ok := byURN[d]; ok {
					if err := register(dep); err != nil {
						return err
					}
					deps = append(deps, registered[d])
				}
			}
			if len(deps) > 0 {
				opts = append(opts, pulumi.DependsOn(deps))
			}
			opts = append(opts, options(r.Options)...)
			if prov := providerOf(r.Options.Provider); prov != "" {
				p, ok := byURN[prov]
				if !ok {
					return fmt.Errorf("%s: its provider %s is not in the plan", r.URN, prov)
				}
				if err := register(p); err != nil {
					return err
				}
				opts = append(opts, pulumi.Provider(registered[prov].(pulumi.ProviderResource)))
			}
			res, err := registerOne(ctx, r, kubeconfig, opts)
			if err != nil {
				return fmt.Errorf("%s: %w", r.URN, err)
			}
			registered[r.URN] = res
			return nil
		}
		urns := make([]string, 0, len(byURN))
		for urn := range byURN {
			urns = append(urns, urn)
		}
		slices.Sort(urns)
		for _, urn := range urns {
			if err := register(byURN[urn]); err != nil {
				return err
			}
		}
		return nil
	}
}

func registerOne(ctx *pulumi.Context, r *offline.Resource, kubeconfig string, opts []pulumi.ResourceOption) (pulumi.Resource, error) {
	switch {
	case !r.Custom:
		c := &component{}
		return c, ctx.RegisterComponentResource(r.Type, r.Name, c, opts...)
	case r.Type == providerType:
		inputs := r.Inputs.Copy()
		inputs["kubeconfig"] = resource.MakeSecret(resource.NewStringProperty(kubeconfig))
		// The engine picks the provider binary on PATH (the one .ci/kube/build built).
		delete(inputs, "version")
		p := &k8s.Provider{}
		return p, ctx.RegisterResource(r.Type, r.Name, Inputs(inputs), p, opts...)
	default:
		o := &object{}
		return o, ctx.RegisterResource(r.Type, r.Name, Inputs(r.Inputs), o, opts...)
	}
}

// providerOf is the URN of a provider reference (URN::ID), or "".
func providerOf(ref string) string {
	if i := strings.LastIndex(ref, "::"); i > 0 {
		return ref[:i]
	}
	return ref
}

// options are a recorded resource's options that decide what an update does.
func options(o offline.Options) []pulumi.ResourceOption {
	var opts []pulumi.ResourceOption
	if len(o.IgnoreChanges) > 0 {
		opts = append(opts, pulumi.IgnoreChanges(o.IgnoreChanges))
	}
	if len(o.ReplaceOnChanges) > 0 {
		opts = append(opts, pulumi.ReplaceOnChanges(o.ReplaceOnChanges))
	}
	if o.DeleteBeforeReplace {
		opts = append(opts, pulumi.DeleteBeforeReplace(true))
	}
	if o.Protect {
		opts = append(opts, pulumi.Protect(true))
	}
	if o.RetainOnDelete {
		opts = append(opts, pulumi.RetainOnDelete(true))
	}
	if t := o.CustomTimeouts; t != nil {
		opts = append(opts, pulumi.Timeouts(&pulumi.CustomTimeouts{Create: t.Create, Update: t.Update, Delete: t.Delete}))
	}
	for _, a := range o.Aliases {
		opts = append(opts, pulumi.Aliases([]pulumi.Alias{{URN: pulumi.URN(a)}}))
	}
	return opts
}

// Inputs are recorded inputs as the program's: secrets stay secret.
func Inputs(m resource.PropertyMap) pulumi.Map {
	out := pulumi.Map{}
	for k, v := range m {
		if in := input(v); in != nil {
			out[string(k)] = in
		}
	}
	return out
}

func input(v resource.PropertyValue) pulumi.Input {
	switch {
	case v.IsSecret():
		in := input(v.SecretValue().Element)
		if in == nil {
			return nil
		}
		return pulumi.ToSecret(in)
	case v.IsObject():
		return Inputs(v.ObjectValue())
	case v.IsArray():
		arr := pulumi.Array{}
		for _, e := range v.ArrayValue() {
			arr = append(arr, input(e))
		}
		return arr
	case v.IsString():
		return pulumi.String(v.StringValue())
	case v.IsNumber():
		return pulumi.Float64(v.NumberValue())
	case v.IsBool():
		return pulumi.Bool(v.BoolValue())
	}
	return nil
}
