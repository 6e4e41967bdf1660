// Package crdschema checks objects against the OpenAPI schemas of CustomResourceDefinitions,
// with the API server's own code (k8s.io/apiextensions-apiserver): unknown fields, which the
// API server would silently prune, are reported as errors. Tests use it on every rendered
// custom resource, with the CRDs that ship inside the upstream Go modules.
package crdschema

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// ModuleDir is the directory of a Go module of this build, from the module cache.
func ModuleDir(module string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not downloaded; run `go mod download %s`", module, module)
	}
	return dir, nil
}

// Upstream are the glob patterns of the CustomResourceDefinitions the program's custom
// resources need, as they ship inside the upstream Go modules of this build: KubeRay's (which
// GKE's Ray add-on serves), GKE's networking objects, and the Secrets Store CSI driver's
// SecretProviderClass (which GKE's Secret Manager add-on serves).
func Upstream() ([]string, error) {
	var patterns []string
	for _, m := range []struct{ module, pattern string }{
		{"github.com/ray-project/kuberay/ray-operator", "config/crd/bases/ray.io_*.yaml"},
		{"github.com/GoogleCloudPlatform/gke-networking-api", "config/crds/networking.gke.io_*.yaml"},
		{"sigs.k8s.io/secrets-store-csi-driver", "config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasses.yaml"},
	} {
		dir, err := ModuleDir(m.module)
		if err != nil {
			return nil, err
		}
		patterns = append(patterns, filepath.Join(dir, m.pattern))
	}
	return patterns, nil
}

// Kueue are the glob patterns of Kueue's CRDs at version, from the Go module proxy: Kueue is
// not a module of this build (it requires a newer KubeRay than the program pins), so its module
// is downloaded by version, as .ci/kube/build downloads it for the harness.
func Kueue(version string) ([]string, error) {
	dir, err := KueueDir(version)
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(dir, "config/components/crd/bases/kueue.x-k8s.io_*.yaml")}, nil
}

// KueueDir is the directory of Kueue's module at version, downloaded from the Go module proxy.
func KueueDir(version string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/kueue@"+version).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download sigs.k8s.io/kueue@%s: %w", version, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download sigs.k8s.io/kueue@%s: no directory in %q", version, out)
	}
	return mod.Dir, nil
}

type versionSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
}

// Schemas are CRD schemas by `apiVersion/kind`.
type Schemas struct {
	byKind map[string]versionSchema
}

// Load reads every CRD file matching the glob patterns.
func Load(patterns ...string) (*Schemas, error) {
	s := &Schemas{byKind: map[string]versionSchema{}}
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no CRD file matches %s", pattern)
		}
		for _, f := range files {
			if err := s.add(f); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return s, nil
}

func (s *Schemas) add(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return err
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return err
		}
		structural, err := structuralschema.NewStructural(internal)
		if err != nil {
			return fmt.Errorf("version %s: %w", v.Name, err)
		}
		validator, _, err := validation.NewSchemaValidator(internal)
		if err != nil {
			return fmt.Errorf("version %s: %w", v.Name, err)
		}
		s.byKind[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = versionSchema{structural, validator}
	}
	return nil
}

// Validate returns every problem of obj: fields the schema does not know, then schema
// violations. obj is not modified.
func (s *Schemas) Validate(obj map[string]any) []string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	vs, ok := s.byKind[apiVersion+"/"+kind]
	if !ok {
		return []string{fmt.Sprintf("no schema loaded for %s %s", apiVersion, kind)}
	}
	// A JSON round trip gives the API server's own view: integers as int64, a private copy.
	raw, err := json.Marshal(obj)
	if err != nil {
		return []string{err.Error()}
	}
	var copied map[string]any
	if err := k8sjson.Unmarshal(raw, &copied); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	unknown := pruning.PruneWithOptions(copied, vs.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range unknown {
		problems = append(problems, "unknown field "+p)
	}
	for _, e := range validation.ValidateCustomResource(nil, copied, vs.validator) {
		problems = append(problems, e.Error())
	}
	return problems
}
