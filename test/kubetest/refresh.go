package kubetest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"gke-rl/infra/offline"
)

// Refresh models what `pulumi up --refresh` does with a Kubernetes object that the controllers
// have written to since `up` applied it, as pulumi-kubernetes v4.32.0 does it: Read takes the
// live object pruned to the shape of the program's inputs as the new inputs
// (provider/pkg/provider/provider.go, Read: `liveInputs := pruneLiveState(liveObj, oldInputs)`),
// and the next diff compares the program's inputs with them; a change under a replace-on-change
// path that is not ignored replaces the object.

// Prune is pulumi-kubernetes v4.32.0's pruneMap (provider/pkg/provider/util.go): the source's
// keys that the target has, recursively; a value whose type differs from the target's is kept
// whole.
func Prune(source, target map[string]any) map[string]any {
	if target == nil || source == nil {
		return nil
	}
	result := map[string]any{}
	for key, value := range source {
		targetValue, ok := target[key]
		if !ok {
			continue
		}
		valueT, targetT := reflect.TypeOf(value), reflect.TypeOf(targetValue)
		if valueT == nil || targetT == nil || valueT != targetT {
			result[key] = value
			continue
		}
		switch v := value.(type) {
		case map[string]any:
			result[key] = Prune(v, targetValue.(map[string]any))
		case []any:
			result[key] = pruneSlice(v, targetValue.([]any))
		default:
			result[key] = value
		}
	}
	return result
}

// pruneSlice is pulumi-kubernetes v4.32.0's pruneSlice (provider/pkg/provider/util.go): the
// source's elements at the target's indexes, pruned as the target's; a list of elements of
// another type is kept whole.
func pruneSlice(source, target []any) []any {
	if target == nil || source == nil {
		return nil
	}
	result := make([]any, 0, len(target))
	if len(source) == 0 || len(target) == 0 {
		return result
	}
	if reflect.TypeOf(source[0]) != reflect.TypeOf(target[0]) {
		return slices.Clone(source)
	}
	for i, targetValue := range target {
		if i >= len(source) {
			break
		}
		value := source[i]
		if value == nil || targetValue == nil {
			result = append(result, value)
			continue
		}
		switch v := value.(type) {
		case map[string]any:
			if tm, ok := targetValue.(map[string]any); ok {
				result = append(result, Prune(v, tm))
				continue
			}
		case []any:
			if ts, ok := targetValue.([]any); ok {
				result = append(result, pruneSlice(v, ts))
				continue
			}
		}
		result = append(result, value)
	}
	return result
}

// Replacements are the fields of a planned Kubernetes object whose live values, read back and
// pruned as a refresh stores them, differ from what the program applies, under one of its
// replace-on-change paths and outside its ignored ones: each is a replacement that
// `pulumi up --refresh` would propose.
func Replacements(program, live map[string]any, replaceOnChanges, ignoreChanges []string) []string {
	refreshed := Prune(live, program)
	var out []string
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		if slices.ContainsFunc(ignoreChanges, func(ig string) bool { return under(path, ig) }) {
			return
		}
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			keys := maps.Clone(am)
			maps.Copy(keys, bm)
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				walk(join(path, k), am[k], bm[k])
			}
			return
		}
		as, aok := a.([]any)
		bs, bok := b.([]any)
		if aok && bok && len(as) == len(bs) {
			for i := range as {
				walk(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i])
			}
			return
		}
		if !reflect.DeepEqual(a, b) && slices.ContainsFunc(replaceOnChanges, func(r string) bool { return under(path, r) }) {
			out = append(out, fmt.Sprintf("%s: applied %s, refreshed %s", path, shown(a), shown(b)))
		}
	}
	walk("", program, refreshed)
	return out
}

// under reports whether path is field or inside it (`spec.suspend` is under `spec`); a field's
// `[*]` stands for any index.
func under(path, field string) bool {
	if strings.Contains(field, "[*]") {
		prefix, rest, _ := strings.Cut(field, "[*]")
		if !strings.HasPrefix(path, prefix+"[") {
			return false
		}
		_, after, ok := strings.Cut(strings.TrimPrefix(path, prefix+"["), "]")
		return ok && under(strings.TrimPrefix(after, "."), strings.TrimPrefix(rest, "."))
	}
	return field == "" || path == field || strings.HasPrefix(path, field+".") || strings.HasPrefix(path, field+"[")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// RefreshReplacements reads back every Kubernetes object of the plan that has replace-on-change
// paths (its options: the RayJobs, the long-lived RayCluster) and returns the replacements
// `pulumi up --refresh` would propose, one line per field, named by object; an object the
// cluster no longer holds is one too. The provider's own replace-on-change fields of built-in
// kinds (a Job's template, provider/pkg/provider/diff.go) are not modelled here.
func (cp *ControlPlane) RefreshReplacements(t testing.TB, res *offline.Result) []string {
	t.Helper()
	admin := cp.As(t, Admin)
	var out []string
	for _, r := range res.Resources {
		m, ok := offline.ManifestOf(r)
		if !ok || len(r.Options.ReplaceOnChanges) == 0 {
			continue
		}
		live, err := admin.Get(context.Background(), m.Object)
		if apierrors.IsNotFound(err) {
			// Read finds nothing: the refresh drops it from the state, and up creates it again.
			out = append(out, m.File+": gone from the cluster: up would create it again")
			continue
		}
		if err != nil {
			t.Fatalf("reading %s: %v", m.File, err)
		}
		for _, d := range Replacements(m.Object, live.Object, r.Options.ReplaceOnChanges, r.Options.IgnoreChanges) {
			out = append(out, m.File+": "+d)
		}
	}
	return out
}

// shown is a value as a replacement's line says it: an absent one (the API server omits a
// false boolean) as such.
func shown(v any) string {
	if v == nil {
		return "(absent)"
	}
	return fmt.Sprint(v)
}
