// Package kube holds the Kubernetes helpers the components share: converting and registering
// objects built from their projects' own Go types, and the shared volume every run pod mounts.
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
