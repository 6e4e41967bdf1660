package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"sigs.k8s.io/yaml"
)

// Redacted replaces the data of Kubernetes Secrets in rendered manifests.
const Redacted = "[redacted]"

// plainValue converts a property value to plain JSON-able data, hiding secrets.
func plainValue(v resource.PropertyValue) any {
	switch {
	case v.IsSecret():
		return SecretPlaceholder
	case v.IsComputed():
		return "[unknown]"
	case v.IsOutput():
		o := v.OutputValue()
		if o.Secret {
			return SecretPlaceholder
		}
		if !o.Known {
			return "[unknown]"
		}
		return plainValue(o.Element)
	case v.IsNull():
		return nil
	case v.IsBool():
		return v.BoolValue()
	case v.IsNumber():
		f := v.NumberValue()
		if f == float64(int64(f)) {
			return int64(f)
		}
		return f
	case v.IsString():
		return v.StringValue()
	case v.IsArray():
		arr := v.ArrayValue()
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = plainValue(e)
		}
		return out
	case v.IsObject():
		return plainMap(v.ObjectValue())
	case v.IsResourceReference():
		return string(v.ResourceReferenceValue().URN)
	case v.IsAsset(), v.IsArchive():
		return "[asset]"
	}
	return fmt.Sprint(v.V)
}

func plainMap(m resource.PropertyMap) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[string(k)] = plainValue(v)
	}
	return out
}

// jsonResource is one resource in `plan --json`.
type jsonResource struct {
	URN          string         `json:"urn"`
	Type         string         `json:"type"`
	Name         string         `json:"name"`
	Parent       string         `json:"parent"`
	Dependencies []string       `json:"dependencies"`
	Inputs       map[string]any `json:"inputs"`
	Options      Options        `json:"options"`
}

// WriteJSON prints the plan as `{"stack", "resources", "outputs"}`.
func WriteJSON(w io.Writer, r *Result) error {
	doc := struct {
		Stack     string         `json:"stack"`
		Resources []jsonResource `json:"resources"`
		Outputs   map[string]any `json:"outputs"`
	}{Stack: r.Stack, Resources: []jsonResource{}, Outputs: r.Outputs}
	for _, res := range r.Resources {
		opts := res.Options
		if opts.IgnoreChanges == nil {
			opts.IgnoreChanges = []string{}
		}
		deps := res.Dependencies
		if deps == nil {
			deps = []string{}
		}
		doc.Resources = append(doc.Resources, jsonResource{
			URN: res.URN, Type: res.Type, Name: res.Name, Parent: res.Parent,
			Dependencies: deps, Inputs: plainMap(res.Inputs), Options: opts,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// summaryKeys are the inputs the tree shows for a resource, in this order, when present.
var summaryKeys = []string{
	"kind", "metadata.name", "name", "location", "region", "ipCidrRange", "mtu", "networkProfile",
	"sourceRanges", "nodeConfig.machineType", "nodeCount", "capacityGib", "perUnitStorageThroughput",
	"filesystem", "gkeSupportEnabled", "purpose", "prefixLength", "role", "member",
}

// WriteTree prints the plan as an indented tree of resources and a closing count.
func WriteTree(w io.Writer, r *Result) {
	children := map[string][]*Resource{}
	var roots []*Resource
	known := map[string]bool{}
	for _, res := range r.Resources {
		known[res.URN] = true
	}
	for _, res := range r.Resources {
		if res.Parent == "" || !known[res.Parent] {
			roots = append(roots, res)
		} else {
			children[res.Parent] = append(children[res.Parent], res)
		}
	}
	fmt.Fprintf(w, "Plan for stack %s/%s (offline; placeholders stand for values the cloud computes)\n", r.Project, r.Stack)
	var walk func(list []*Resource, indent string)
	walk = func(list []*Resource, indent string) {
		for i, res := range list {
			branch, next := "├─ ", "│  "
			if i == len(list)-1 {
				branch, next = "└─ ", "   "
			}
			line := fmt.Sprintf("%s%s%s %s", indent, branch, res.Type, res.Name)
			if s := summary(res); s != "" {
				line += "  " + s
			}
			fmt.Fprintln(w, line)
			walk(children[res.URN], indent+next)
		}
	}
	walk(roots, "")
	custom, components := 0, 0
	for _, res := range r.Resources {
		if res.Custom {
			custom++
		} else {
			components++
		}
	}
	fmt.Fprintf(w, "%d resources to create (%d cloud and Kubernetes resources, %d components)\n", len(r.Resources), custom, components)
}

func summary(res *Resource) string {
	inputs := plainMap(res.Inputs)
	var parts []string
	for _, key := range summaryKeys {
		v, ok := Lookup(inputs, key)
		if !ok || v == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%s", key[strings.LastIndex(key, ".")+1:], compact(v)))
	}
	var flags []string
	if res.Options.Protect {
		flags = append(flags, "protected")
	}
	if res.Options.RetainOnDelete {
		flags = append(flags, "retained on delete")
	}
	if len(flags) > 0 {
		parts = append(parts, "["+strings.Join(flags, ", ")+"]")
	}
	return strings.Join(parts, " ")
}

// Lookup walks plain data (a rendered manifest, resource inputs) by a dotted path; a number
// indexes a list (`spec.containers.0.image`).
func Lookup(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = cur[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(cur) {
				return nil, false
			}
			v = cur[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func compact(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = compact(e)
		}
		return strings.Join(parts, ",")
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}

// Manifest is one Kubernetes object as it would be sent to the API server.
type Manifest struct {
	// File is the manifest's file name: `<kind>-<namespace>-<name>.yaml`.
	File   string
	Object map[string]any
}

// Manifests returns every Kubernetes object of the plan, Secret data redacted, sorted by file.
func Manifests(r *Result) []Manifest {
	var out []Manifest
	for _, res := range r.Resources {
		if !res.Custom || !strings.HasPrefix(res.Type, "kubernetes:") {
			continue
		}
		obj := plainMap(res.Inputs)
		if obj["kind"] == "Secret" {
			for _, field := range []string{"data", "stringData"} {
				if keys := secretKeys(res.Inputs[resource.PropertyKey(field)]); keys != nil {
					obj[field] = keys
				}
			}
		}
		kind, _ := obj["kind"].(string)
		name, namespace := res.Name, ""
		if meta, ok := obj["metadata"].(map[string]any); ok {
			if n, ok := meta["name"].(string); ok {
				name = n
			}
			namespace, _ = meta["namespace"].(string)
		}
		file := strings.ToLower(strings.Join(nonEmpty(kind, namespace, name), "-")) + ".yaml"
		out = append(out, Manifest{File: file, Object: obj})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// secretKeys shows a Secret's data as its keys, each value Redacted: a reader sees which tokens
// the Secret carries, never what they are. The map may itself be a secret as a whole.
func secretKeys(v resource.PropertyValue) map[string]any {
	for v.IsSecret() || v.IsOutput() {
		if v.IsSecret() {
			v = v.SecretValue().Element
		} else {
			v = v.OutputValue().Element
		}
	}
	if !v.IsObject() {
		return nil
	}
	out := map[string]any{}
	for k := range v.ObjectValue() {
		out[string(k)] = Redacted
	}
	return out
}

// WriteManifests writes every Kubernetes object to dir, one YAML file each, and returns the
// file names.
func WriteManifests(dir string, r *Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, m := range Manifests(r) {
		b, err := yaml.Marshal(m.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.File, err)
		}
		if err := os.WriteFile(filepath.Join(dir, m.File), b, 0o644); err != nil {
			return nil, err
		}
		files = append(files, m.File)
	}
	return files, nil
}

func nonEmpty(parts ...string) []string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// LookupInput returns a resource input by dotted path, secrets hidden, and whether it is set.
func LookupInput(res *Resource, path string) (any, bool) {
	return Lookup(plainMap(res.Inputs), path)
}

// ManifestsYAML renders every Kubernetes object of the plan as one multi-document YAML stream,
// each document headed by its file name: the golden form of a stack's manifests.
func ManifestsYAML(r *Result) ([]byte, error) {
	var out []byte
	for _, m := range Manifests(r) {
		b, err := yaml.Marshal(m.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.File, err)
		}
		out = append(out, []byte("---\n# "+m.File+"\n")...)
		out = append(out, b...)
	}
	return out, nil
}
