package kubetest

import (
	"path/filepath"
	"testing"

	"gke-rl/test/crdschema"
)

// UpstreamCRDs are the files of the CustomResourceDefinitions the program's custom resources
// need (crdschema.Upstream), which the control plane installs as GKE's add-ons do.
func UpstreamCRDs(t testing.TB) []string {
	t.Helper()
	patterns, err := crdschema.Upstream()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range patterns {
		matches, err := filepath.Glob(p)
		if err != nil || len(matches) == 0 {
			t.Fatalf("no CRD file matches %s", p)
		}
		files = append(files, matches...)
	}
	return files
}
