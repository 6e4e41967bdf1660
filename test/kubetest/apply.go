package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// FieldManager is the field manager of the harness's server-side applies, pulumi-kubernetes's
// own (it applies with server-side apply: the program's provider sets enableServerSideApply).
const FieldManager = "pulumi-kubernetes"

// Session acts on the control plane as one user.
type Session struct {
	User    string
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// As is a session of user.
func (cp *ControlPlane) As(t testing.TB, user string) *Session {
	t.Helper()
	cfg := cp.Config(user)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cp.Config(Admin))
	if err != nil {
		t.Fatal(err)
	}
	return &Session{User: user, dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// Unstructured turns a typed object (or a map) into an unstructured one.
func Unstructured(obj any) (*unstructured.Unstructured, error) {
	if m, ok := obj.(map[string]any); ok {
		return &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, json.Unmarshal(b, &u.Object)
}

// Resource is the client for obj's kind, in its namespace.
func (s *Session) Resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		s.mapper.Reset()
		if m, err = s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, fmt.Errorf("%s: %w", gvk, err)
		}
	}
	r := s.dynamic.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ns := u.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		return r.Namespace(ns), nil
	}
	return r, nil
}

// Apply applies obj with server-side apply, as pulumi-kubernetes does (a dry run with dryRun).
func (s *Session) Apply(ctx context.Context, obj any, dryRun bool) (*unstructured.Unstructured, error) {
	u, r, err := s.resourceOf(obj)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptrTrue()}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return r.Patch(ctx, u.GetName(), types.ApplyPatchType, data, opts)
}

// Get reads obj's current state.
func (s *Session) Get(ctx context.Context, obj any) (*unstructured.Unstructured, error) {
	u, r, err := s.resourceOf(obj)
	if err != nil {
		return nil, err
	}
	return r.Get(ctx, u.GetName(), metav1.GetOptions{})
}

// resourceOf is obj as an unstructured object, and the client for its kind and namespace.
func (s *Session) resourceOf(obj any) (*unstructured.Unstructured, dynamic.ResourceInterface, error) {
	u, err := Unstructured(obj)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.Resource(u)
	return u, r, err
}

func ptrTrue() *bool { t := true; return &t }

// InstallCRDs creates the CustomResourceDefinitions in files (YAML, one CRD a file) and waits
// until each is established.
func (cp *ControlPlane) InstallCRDs(t testing.TB, files ...string) {
	t.Helper()
	admin := cp.As(t, Admin)
	ctx := context.Background()
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		if _, err := admin.Apply(ctx, &crd, false); err != nil {
			t.Fatalf("CRD %s: %v", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, name := range names {
		Eventually(t, SettleTimeout, "CRD "+name+" established", func() (bool, string) {
			u, err := admin.dynamic.Resource(crds).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, ""
				}
			}
			return false, "not established"
		})
	}
	admin.mapper.Reset()
}

// Eventually polls cond until it holds or timeout passes, then fails the test with what cond
// last said.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ok, why := cond()
		if ok {
			return
		}
		last = why
	}
	t.Fatalf("%s: not after %s (%s)", what, timeout, last)
}
