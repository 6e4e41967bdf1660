// Package kube converts upstream Kubernetes Go types into the unstructured maps that Pulumi's
// CustomResource takes, so that custom resources are built from their projects' own types.
package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// ToUnstructured converts a typed object (or a part of one, such as a spec) to a map, dropping
// what the API server owns: `status` and `metadata.creationTimestamp`.
func ToUnstructured(obj any) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return m, nil
}
