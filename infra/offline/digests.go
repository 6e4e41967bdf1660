package offline

import (
	"fmt"

	"gke-rl/workloads"
)

// Digests fingerprints a Kubernetes object's fields by a digest of their JSON: each top-level
// field but apiVersion and kind, each field of its spec ("spec.template"), and each field of the
// objects in a list of its spec ("spec.workerGroupSpecs[0].replicas").
func Digests(obj map[string]any) map[string]string {
	out := map[string]string{}
	for key, v := range obj {
		if key == "apiVersion" || key == "kind" {
			continue
		}
		out[key] = digest(v)
		if meta, ok := v.(map[string]any); ok && key == "metadata" {
			// The provider replaces an object whose name or namespace changes; a queued RayJob is
			// replaced when its labels (its queue, its priority class) change.
			for _, field := range []string{"name", "namespace", "labels", "annotations"} {
				if fv, ok := meta[field]; ok {
					out["metadata."+field] = digest(fv)
				}
			}
			continue
		}
		spec, ok := v.(map[string]any)
		if key != "spec" || !ok {
			continue
		}
		for field, fv := range spec {
			out["spec."+field] = digest(fv)
			list, _ := fv.([]any)
			for i, item := range list {
				if m, ok := item.(map[string]any); ok {
					for sub, sv := range m {
						out[fmt.Sprintf("spec.%s[%d].%s", field, i, sub)] = digest(sv)
					}
				}
			}
		}
	}
	return out
}

// digest is the fingerprint of a plain value from the recorder (maps, lists, scalars), which
// always encodes.
func digest(v any) string {
	d, _ := workloads.Fingerprint(v)
	return d
}
