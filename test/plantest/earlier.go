package plantest

import (
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"gke-rl/infra/offline"
	"gke-rl/internal/jsonvalue"
)

// Renamed is plan with every occurrence of from, in each resource's URN, name, parent,
// dependencies, provider and inputs, in the stack's outputs and in the blueprint's namespace,
// replaced by to: the plan an earlier version of the program made where it derived one name
// otherwise (the workload namespace, before it was one-to-one) and nothing else. from must
// appear nowhere but where the name was derived: a namespace such as rl-smoke, which no other
// name of a plan contains.
func Renamed(plan *offline.Result, from, to string) *offline.Result {
	swap := func(s string) string { return strings.ReplaceAll(s, from, to) }
	out := *plan
	bp := *plan.Blueprint
	bp.Namespace = swap(bp.Namespace)
	out.Blueprint = &bp
	out.Outputs = map[string]any{}
	for k, v := range plan.Outputs {
		out.Outputs[k] = jsonvalue.MapStrings(v, swap)
	}
	rec := *plan.Recording
	rec.Resources = nil
	for _, r := range plan.Resources {
		c := *r
		c.URN, c.Name, c.Parent = swap(r.URN), swap(r.Name), swap(r.Parent)
		c.Dependencies = nil
		for _, d := range r.Dependencies {
			c.Dependencies = append(c.Dependencies, swap(d))
		}
		c.Options.Provider = swap(r.Options.Provider)
		c.Inputs = renamedMap(r.Inputs, swap)
		rec.Resources = append(rec.Resources, &c)
	}
	out.Recording = &rec
	return &out
}

func renamedMap(m resource.PropertyMap, swap func(string) string) resource.PropertyMap {
	out := resource.PropertyMap{}
	for k, v := range m {
		out[k] = renamedValue(v, swap)
	}
	return out
}

func renamedValue(v resource.PropertyValue, swap func(string) string) resource.PropertyValue {
	switch {
	case v.IsSecret():
		return resource.MakeSecret(renamedValue(v.SecretValue().Element, swap))
	case v.IsObject():
		return resource.NewObjectProperty(renamedMap(v.ObjectValue(), swap))
	case v.IsArray():
		var arr []resource.PropertyValue
		for _, e := range v.ArrayValue() {
			arr = append(arr, renamedValue(e, swap))
		}
		return resource.NewArrayProperty(arr)
	case v.IsString():
		return resource.NewStringProperty(swap(v.StringValue()))
	}
	return v
}
