package naming

import "github.com/pulumi/pulumi/sdk/v3/go/pulumi"

// Child is the logical name of a component's child, `<component>-<role>`: derived from the
// component's name, so that two instances of a component never register the same URN.
func Child(component, role string) string { return component + "-" + role }

// Children names the children of one component instance and parents them to it.
type Children struct {
	Component string
	Parent    pulumi.Resource
}

// Of is the logical name and options of the child with a role. formerly is the child's logical
// name before names were derived from the component's: when it differs, an alias (same parent,
// same type) keeps the child's URN, so that `pulumi up` renames it in the state instead of
// replacing it. For the Lustre instance or the bucket a replacement would lose the data.
func (c Children) Of(role, formerly string, extra ...pulumi.ResourceOption) (string, []pulumi.ResourceOption) {
	name := Child(c.Component, role)
	opts := []pulumi.ResourceOption{pulumi.Parent(c.Parent)}
	if formerly != "" && formerly != name {
		opts = append(opts, pulumi.Aliases([]pulumi.Alias{{Name: pulumi.String(formerly)}}))
	}
	return name, append(opts, extra...)
}
