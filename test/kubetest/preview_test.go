package kubetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"gke-rl/cluster"
	"gke-rl/infra/offline"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
)

const previewUser = "gke-rl-preview@your-project-id.iam.gserviceaccount.com"

// The preview identity's access on a real API server, with its own credentials: its admission
// policy is accepted; with it, every object every shipped stack manages can be dry-run (created,
// then updated), and no real create, update, patch or delete passes, in the stack's namespace,
// in kube-system or cluster-scoped.
func TestPreviewIdentityOnlyDryRuns(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{Users: []string{previewUser}})
	cp.InstallCRDs(t, kubetest.UpstreamCRDs(t)...)
	// A stack with jobs also manages the queue's Kueue objects.
	cp.InstallCRDs(t, kubetest.KueueCRDs(t)...)
	ctx := context.Background()
	admin, preview := cp.As(t, kubetest.Admin), cp.As(t, previewUser)

	access := cluster.PreviewAccess(previewUser)
	for _, obj := range append(append([]any{}, toAny(access.Limit)...), toAny(access.Access)...) {
		_, err := admin.Apply(ctx, obj, false)
		require.NoError(t, err, "the API server accepts %T", obj)
	}
	// The policy takes effect once the API server's policy informer has it.
	probe := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "preview-probe"}}
	kubetest.Eventually(t, kubetest.SettleTimeout, "the policy refuses the preview identity's writes", func() (bool, string) {
		_, err := preview.Apply(ctx, probe, false)
		return err != nil && strings.Contains(err.Error(), "may only dry-run"), errText(err)
	})

	objects := stackObjects(t)
	require.NotEmpty(t, objects)
	var kinds []string
	for _, obj := range objects {
		kinds = append(kinds, obj.kind())
	}
	assert.Contains(t, kinds, "SecretProviderClass", "the tokens' classes are dry-run too")
	for _, obj := range objects {
		if obj.kind() == "Namespace" {
			_, err := admin.Apply(ctx, obj.object, false)
			require.NoError(t, err)
		}
	}
	// Dry-run creates pass, real creates do not.
	for _, obj := range objects {
		_, err := preview.Apply(ctx, obj.object, true)
		assert.NoError(t, err, "dry-run create of %s", obj)
		_, err = preview.Apply(ctx, obj.object, false)
		assertRefused(t, err, "create of "+obj.String())
		if obj.namespaced() {
			elsewhere := obj.in("kube-system")
			_, err = preview.Apply(ctx, elsewhere, true)
			assert.NoError(t, err, "dry-run create of %s in kube-system", obj)
			_, err = preview.Apply(ctx, elsewhere, false)
			assertRefused(t, err, "create of "+obj.String()+" in kube-system")
		}
	}
	// Once the objects exist: dry-run updates pass; real updates, patches and deletes do not.
	for _, obj := range objects {
		_, err := admin.Apply(ctx, obj.object, false)
		require.NoError(t, err, "the deploy identity creates %s", obj)
	}
	for _, obj := range objects {
		_, err := preview.Apply(ctx, obj.withLabel(), true)
		assert.NoError(t, err, "dry-run update of %s", obj)
		_, err = preview.Apply(ctx, obj.withLabel(), false)
		assertRefused(t, err, "update of "+obj.String())
		u, err := kubetest.Unstructured(obj.object)
		require.NoError(t, err)
		r, err := preview.Resource(u)
		require.NoError(t, err)
		_, err = r.Patch(ctx, u.GetName(), types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`), metav1.PatchOptions{})
		assertRefused(t, err, "merge patch of "+obj.String())
		err = r.Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		assertRefused(t, err, "delete of "+obj.String())
	}
	// Its own limit stays: it may read the policy, not change or remove it.
	for _, obj := range toAny(access.Limit) {
		u, err := kubetest.Unstructured(obj)
		require.NoError(t, err)
		r, err := preview.Resource(u)
		require.NoError(t, err)
		_, err = r.Get(ctx, u.GetName(), metav1.GetOptions{})
		assert.NoError(t, err, "reads %s", u.GetKind())
		assertRefused(t, r.Delete(ctx, u.GetName(), metav1.DeleteOptions{}), "delete of its own "+u.GetKind())
	}
}

// assertRefused checks that the API server refused a write: by the admission policy or by RBAC.
func assertRefused(t *testing.T, err error, what string) {
	t.Helper()
	if !assert.Error(t, err, "the preview identity's real %s must be refused", what) {
		return
	}
	assert.True(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "%s: %v", what, err)
}

func errText(err error) string {
	if err == nil {
		return "accepted"
	}
	return err.Error()
}

func toAny[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// stackObject is one object a shipped stack applies.
type stackObject struct {
	stack  string
	object map[string]any
}

func (o stackObject) kind() string { return o.object["kind"].(string) }

func (o stackObject) meta() map[string]any { return o.object["metadata"].(map[string]any) }

func (o stackObject) namespaced() bool { _, ok := o.meta()["namespace"]; return ok }

func (o stackObject) String() string {
	return o.stack + " " + o.kind() + " " + o.meta()["name"].(string)
}

// in is a copy of the object in namespace ns.
func (o stackObject) in(ns string) map[string]any {
	c := deepCopy(o.object)
	c["metadata"].(map[string]any)["namespace"] = ns
	return c
}

// withLabel is a copy of the object with one label more: an update.
func (o stackObject) withLabel() map[string]any {
	c := deepCopy(o.object)
	m := c["metadata"].(map[string]any)
	labels, _ := m["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels["preview"] = "update"
	m["labels"] = labels
	return c
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	return c
}

// stackObjects are the Kubernetes objects of every shipped stack with a preview identity, the
// managed kinds only (the policy objects are read-only to it): each stack as shipped, then with
// both tokens on (the tokens add their readers' service accounts and one SecretProviderClass
// each, which a preview of a stack with tokens dry-runs).
func stackObjects(t *testing.T) []stackObject {
	t.Helper()
	preview := "cluster.previewServiceAccount=" + previewUser
	out := managedObjects(t, []string{preview}, []string{preview, "tokens.huggingFace=true", "tokens.wandb=true"}, append([]string{preview}, queuedVariant...))
	sort.SliceStable(out, func(i, j int) bool { return out[i].kind() == "Namespace" && out[j].kind() != "Namespace" })
	return out
}

// queuedVariant gives each shipped stack a queue of two experiments (jobs).
var queuedVariant = []string{"jobs.first.priority=1", "jobs.second.priority=2"}

// managedObjects are the objects of the managed kinds (cluster.ManagedKinds) of every shipped
// stack planned with each variant's overrides, each object once.
func managedObjects(t *testing.T, variants ...[]string) []stackObject {
	t.Helper()
	managed := map[string]bool{}
	for _, rule := range cluster.ManagedKinds {
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				managed[g+"/"+r] = true
			}
		}
	}
	var out []stackObject
	seen := map[string]bool{}
	for _, stack := range plantest.Stacks {
		for _, variant := range variants {
			out = appendManaged(out, seen, managed, stack, plantest.Plan(t, stack, variant...))
		}
	}
	return out
}

// appendManaged appends the objects of res whose kinds the preview identity manages, skipping
// those seen already.
func appendManaged(out []stackObject, seen, managed map[string]bool, stack string, res *offline.Result) []stackObject {
	for _, m := range offline.Manifests(res) {
		o := stackObject{stack: stack, object: m.Object}
		group, _, _ := strings.Cut(m.Object["apiVersion"].(string), "/")
		if !strings.Contains(m.Object["apiVersion"].(string), "/") {
			group = ""
		}
		resource, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: o.kind()})
		// One cluster holds one object of each name: the first stack's.
		id := fmt.Sprint(o.kind(), "/", o.meta()["namespace"], "/", o.meta()["name"])
		if !managed[group+"/"+resource.Resource] || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, o)
	}
	return out
}
