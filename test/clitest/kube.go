package clitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Kube is a fake Kubernetes API server for the real kubectl: legacy discovery, GET of objects by
// name, lists filtered by label and by metadata.name, and pod logs. Objects are the upstream Go
// types (k8s.io/api, apiextensions), so what kubectl reads has the real shape; a request the fake
// does not serve is a test error.
type Kube struct {
	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	resources map[schema.GroupVersion][]metav1.APIResource
	objects   map[string]map[string]any // collection path → name → object
	logs      map[string]string         // namespace/pod → log
	requests  []string
	// Hide makes GET and list of an object answer as if it did not exist, for this many requests
	// more (an object that appears later).
	hide map[string]int
	// forbidden answers 403 for every request under these paths (no permission).
	forbidden []string
	// readOnly answers 403 to every write, as the API server does to a user who may only read.
	readOnly bool
}

// NewKube starts the fake API server; it stops when the test ends.
func NewKube(t testing.TB) *Kube {
	t.Helper()
	k := &Kube{t: t, resources: map[schema.GroupVersion][]metav1.APIResource{}, objects: map[string]map[string]any{},
		logs: map[string]string{}, hide: map[string]int{}}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	k.Serve(schema.GroupVersion{Version: "v1"}, metav1.APIResource{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "list"}},
		metav1.APIResource{Name: "pods/log", Kind: "Pod", Namespaced: true, Verbs: []string{"get"}})
	return k
}

// ReadOnly makes every write answer 403 Forbidden, as for a user who may only read: a command
// line that writes (kubectl run, delete) is then parsed and sent, and refused by the server, not
// by kubectl.
func (k *Kube) ReadOnly() *Kube {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.readOnly = true
	return k
}

// Serve adds resources to discovery.
func (k *Kube) Serve(gv schema.GroupVersion, resources ...metav1.APIResource) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range resources {
		if r.SingularName == "" && !strings.Contains(r.Name, "/") {
			r.SingularName = strings.ToLower(r.Kind)
		}
		k.resources[gv] = append(k.resources[gv], r)
	}
}

// Add stores an object under its collection (e.g. "/api/v1/namespaces/gke-rl/pods").
func (k *Kube) Add(collection, name string, obj any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.objects[collection] == nil {
		k.objects[collection] = map[string]any{}
	}
	k.objects[collection][name] = obj
}

// AddPod stores a running pod with labels and its log.
func (k *Kube) AddPod(namespace, name string, podLabels map[string]string, log string) {
	k.Add("/api/v1/namespaces/"+namespace+"/pods", name, &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: podLabels, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	})
	k.mu.Lock()
	k.logs[namespace+"/"+name] = log
	k.mu.Unlock()
}

// HideFor answers as if the object did not exist for the next n requests that name or list it.
func (k *Kube) HideFor(collection, name string, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hide[collection+"/"+name] = n
}

// Forbid answers every later request under path with 403 Forbidden, as the API server does for
// an identity without the permission.
func (k *Kube) Forbid(path string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.forbidden = append(k.forbidden, path)
}

// Requests are "METHOD path" of every request but discovery, in order.
func (k *Kube) Requests() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.requests...)
}

// Kubeconfig writes a kubeconfig that reaches the fake without credentials and returns its text.
func (k *Kube) Kubeconfig(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
current-context: fake
users:
- name: fake
  user: {}
`, k.srv.URL)
}

// KubeconfigFile writes Kubeconfig to a file and returns its path.
func (k *Kube) KubeconfigFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(k.Kubeconfig(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (k *Kube) serve(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := r.URL.Path
	write := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	notFound := func(what string) {
		write(http.StatusNotFound, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Message: what + " not found", Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
	}
	switch p {
	case "/api":
		write(http.StatusOK, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
		return
	case "/apis":
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for gv := range k.resources {
			if gv.Group == "" {
				continue
			}
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
		}
		write(http.StatusOK, list)
		return
	}
	for gv, res := range k.resources {
		prefix := "/apis/" + gv.String()
		if gv.Group == "" {
			prefix = "/api/" + gv.Version
		}
		if p == prefix {
			write(http.StatusOK, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(), APIResources: res})
			return
		}
	}
	k.requests = append(k.requests, r.Method+" "+p)
	for _, f := range k.forbidden {
		if strings.HasPrefix(p, f) {
			write(http.StatusForbidden, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Message: p + " is forbidden: User \"deployer\" cannot get resource", Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden})
			return
		}
	}
	if r.Method != http.MethodGet && k.readOnly {
		write(http.StatusForbidden, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Message: p + " is forbidden: User \"reader\" cannot " + strings.ToLower(r.Method) + " it", Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden})
		return
	}
	if r.Method != http.MethodGet {
		k.t.Errorf("fake Kubernetes API: %s %s is not served", r.Method, p)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if strings.HasSuffix(p, "/log") {
		pod := strings.TrimSuffix(p, "/log")
		ns, name := nsAndName(pod)
		log, ok := k.logs[ns+"/"+name]
		if !ok {
			notFound("pods " + name)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(log))
		return
	}
	if objs, ok := k.objects[p]; ok {
		k.list(w, r, p, objs, write)
		return
	}
	collection, name := p[:strings.LastIndex(p, "/")], p[strings.LastIndex(p, "/")+1:]
	obj, ok := k.objects[collection][name]
	if !ok || k.hidden(collection, name) {
		notFound(name)
		return
	}
	write(http.StatusOK, obj)
}

func (k *Kube) hidden(collection, name string) bool {
	key := collection + "/" + name
	if k.hide[key] > 0 {
		k.hide[key]--
		return true
	}
	return false
}

func (k *Kube) list(w http.ResponseWriter, r *http.Request, collection string, objs map[string]any, write func(int, any)) {
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		write(http.StatusBadRequest, metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Code: http.StatusBadRequest})
		return
	}
	wantName := strings.TrimPrefix(q.Get("fieldSelector"), "metadata.name=")
	watch := q.Get("watch") == "true" || q.Get("watch") == "1"
	items := []any{}
	for name, obj := range objs {
		if wantName != "" && name != wantName {
			continue
		}
		if k.hidden(collection, name) {
			continue
		}
		raw, _ := json.Marshal(obj)
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(raw, &meta)
		if !sel.Matches(labels.Set(meta.Metadata.Labels)) {
			continue
		}
		items = append(items, obj)
	}
	if watch {
		k.watch(w, r, items)
		return
	}
	gv, kind := k.kindOf(collection)
	write(http.StatusOK, map[string]any{"apiVersion": gv, "kind": kind + "List", "metadata": map[string]any{"resourceVersion": "1"}, "items": items})
}

// watch sends an ADDED event for each item, then holds the stream open until the client goes,
// as a watch from resourceVersion 1 on an unchanging store does.
func (k *Kube) watch(w http.ResponseWriter, r *http.Request, items []any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for _, obj := range items {
		_ = enc.Encode(map[string]any{"type": "ADDED", "object": obj})
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	k.mu.Unlock()
	defer k.mu.Lock()
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
	}
}

// kindOf is the group/version and kind of a collection's resource, from discovery.
func (k *Kube) kindOf(collection string) (gv, kind string) {
	for v, res := range k.resources {
		for _, r := range res {
			if strings.HasSuffix(collection, "/"+r.Name) && strings.Contains(collection, "/"+v.Version) &&
				(v.Group == "" || strings.Contains(collection, "/"+v.Group+"/")) {
				return v.String(), r.Kind
			}
		}
	}
	return "v1", ""
}

func nsAndName(p string) (ns, name string) {
	parts := strings.Split(p, "/")
	for i := range parts {
		if parts[i] == "namespaces" && i+1 < len(parts) {
			ns = parts[i+1]
		}
	}
	return ns, parts[len(parts)-1]
}
