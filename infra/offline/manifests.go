package offline

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"sigs.k8s.io/yaml"

	"gke-rl/internal/recorder"
)

// Redacted replaces the data of Kubernetes Secrets in rendered manifests.
const Redacted = "[redacted]"

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
		if m, ok := ManifestOf(res); ok {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// ManifestOf is the Kubernetes object a resource applies; ok is false for other resources.
func ManifestOf(res *Resource) (Manifest, bool) {
	if !res.Custom || !strings.HasPrefix(res.Type, "kubernetes:") {
		return Manifest{}, false
	}
	obj := recorder.PlainMap(res.Inputs)
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
	return Manifest{File: file, Object: obj}, true
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
func LookupInput(res *Resource, path string) (any, bool) { return res.Input(path) }

// Lookup walks plain data (a rendered manifest, resource inputs) by a dotted path.
func Lookup(v any, path string) (any, bool) { return recorder.Lookup(v, path) }

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
