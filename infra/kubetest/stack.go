package kubetest

import (
	"path/filepath"
	"testing"

	"gke-rl/infra/kube/crdschema"
)

// UpstreamCRDs are the CustomResourceDefinitions the program's custom resources need, as they
// ship inside the upstream Go modules of this build: KubeRay's (which GKE's Ray add-on serves),
// GKE's networking objects, and the Secrets Store CSI driver's SecretProviderClass (which GKE's
// Secret Manager add-on serves).
func UpstreamCRDs(t testing.TB) []string {
	t.Helper()
	var files []string
	for module, pattern := range map[string]string{
		"github.com/ray-project/kuberay/ray-operator":       "config/crd/bases/ray.io_*.yaml",
		"github.com/GoogleCloudPlatform/gke-networking-api": "config/crds/networking.gke.io_*.yaml",
		"sigs.k8s.io/secrets-store-csi-driver":              "config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasses.yaml",
	} {
		dir, err := crdschema.ModuleDir(module)
		if err != nil {
			t.Fatal(err)
		}
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil || len(matches) == 0 {
			t.Fatalf("no CRD %s in %s", pattern, dir)
		}
		files = append(files, matches...)
	}
	return files
}
