package kube

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	k8smeta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is a typed Kubernetes object from its project's Go types (a RayCluster, a Job).
type Object interface {
	runtime.Object
	k8smeta.Object
}

// NewObject registers obj as it would be applied. Its TypeMeta must be set; opts place it (see
// Placement).
//
// Pulumi's Kubernetes provider picks its behaviour (await logic included) from the type token
// `kubernetes:<apiVersion>:<kind>`, which this registration shares with the typed resources.
func NewObject(ctx *pulumi.Context, name string, obj Object, opts ...pulumi.ResourceOption) (*apiextensions.CustomResource, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("%s: %T has no apiVersion and kind", name, obj)
	}
	if gvk.Group == "" {
		// The provider names core kinds `kubernetes:core/v1:<kind>`, which a CustomResource of
		// apiVersion v1 would not match: register them with the typed resources.
		return nil, fmt.Errorf("%s: %s is a core kind; register it with pulumi-kubernetes' core/v1 resources", name, gvk.Kind)
	}
	fields, err := ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// An unstructured object's fields are its own map: the deletions below must not reach it.
	fields = maps.Clone(fields)
	delete(fields, "apiVersion")
	delete(fields, "kind")
	delete(fields, "metadata")
	meta := &metav1.ObjectMetaArgs{
		Name:        pulumi.String(obj.GetName()),
		Labels:      stringMap(obj.GetLabels()),
		Annotations: stringMap(obj.GetAnnotations()),
	}
	if ns := obj.GetNamespace(); ns != "" {
		meta.Namespace = pulumi.String(ns)
	}
	other := kubernetes.UntypedArgs{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		other[k] = fields[k]
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return apiextensions.NewCustomResource(ctx, name, &apiextensions.CustomResourceArgs{
		ApiVersion:  pulumi.String(apiVersion),
		Kind:        pulumi.String(kind),
		Metadata:    meta,
		OtherFields: other,
	}, opts...)
}

func stringMap(m map[string]string) pulumi.StringMap {
	if len(m) == 0 {
		return nil
	}
	out := pulumi.StringMap{}
	for k, v := range m {
		out[k] = pulumi.String(v)
	}
	return out
}
