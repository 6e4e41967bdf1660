package kubetest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"gke-rl/internal/kube"
	"gke-rl/test/clitest"
	"gke-rl/test/crdschema"
	"gke-rl/test/kubetest"
	"gke-rl/test/plantest"
	"gke-rl/workloads/queue"
)

// releaseManifest is Kueue's release manifest as far as the install step reads it, assembled
// from the release's own sources at queue.KueueVersion (the module's config/): its namespace, its
// CRDs, the manager's ServiceAccount, its configuration's ConfigMap, its Deployment and its
// webhooks (releaseWebhooks), named as
// the release's kustomization names them (config/default: namePrefix kueue-, namespace
// kueue-system, the image registry.k8s.io/kueue/kueue:<version>). The Deployment's selector and
// labels are the kustomization's `control-plane: controller-manager`.
// A stranded release's manager can run on no node: its rollout never ends.
func releaseManifest(t *testing.T, dir string, stranded bool) string {
	t.Helper()
	src, err := crdschema.KueueDir(queue.KueueVersion)
	require.NoError(t, err)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(src, rel))
		require.NoError(t, err)
		return string(b)
	}
	docs := []string{"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kueue-system\n"}
	crds, err := filepath.Glob(filepath.Join(src, "config/components/crd/bases/*.yaml"))
	require.NoError(t, err)
	for _, f := range crds {
		docs = append(docs, read(strings.TrimPrefix(f, src+"/")))
	}
	docs = append(docs, "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: kueue-controller-manager\n  namespace: kueue-system\n")
	config := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "kueue-manager-config", "namespace": "kueue-system"},
		"data":     map[string]any{"controller_manager_config.yaml": read("config/components/manager/controller_manager_config.yaml")}}
	b, err := yaml.Marshal(config)
	require.NoError(t, err)
	docs = append(docs, string(b))

	manager := strings.SplitN(read("config/components/manager/manager.yaml"), "---", 2)[1]
	var deploy map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(manager), &deploy))
	labels := map[string]any{"control-plane": "controller-manager"}
	deploy["metadata"] = map[string]any{"name": queue.Deployment, "namespace": queue.Namespace, "labels": labels}
	spec := deploy["spec"].(map[string]any)
	spec["selector"] = map[string]any{"matchLabels": labels}
	tmpl := spec["template"].(map[string]any)
	tmpl["metadata"].(map[string]any)["labels"] = labels
	pod := tmpl["spec"].(map[string]any)
	pod["serviceAccountName"] = "kueue-controller-manager"
	if stranded {
		pod["nodeSelector"] = map[string]any{"no-such-pool": "anywhere"}
	}
	pod["containers"].([]any)[0].(map[string]any)["image"] = queue.Image
	b, err = yaml.Marshal(deploy)
	require.NoError(t, err)
	docs = append(docs, string(b))

	docs = append(docs, releaseWebhooks(t, read)...)

	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err = w.Write([]byte(strings.Join(docs, "\n---\n")))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	path := filepath.Join(dir, "manifests.yaml.gz")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	return path
}

// releaseWebhooks are the release's two webhook configurations and their Service as
// config/components/webhook builds them: manifests.yaml with the kustomization's patches (the
// namespace selectors of the pod, Deployment and StatefulSet webhooks), the names prefixed and
// the Service placed as config/default does (namePrefix kueue-, namespace kueue-system).
func releaseWebhooks(t *testing.T, read func(string) string) []string {
	t.Helper()
	var kustomization struct {
		Patches []struct{ Patch string } `json:"patches"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(read("config/components/webhook/kustomization.yaml")), &kustomization))
	selectors := map[string]any{}
	for _, p := range kustomization.Patches {
		var patch struct {
			Webhooks []map[string]any `json:"webhooks"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(p.Patch), &patch))
		for _, w := range patch.Webhooks {
			selectors[w["name"].(string)] = w["namespaceSelector"]
		}
	}
	require.Len(t, selectors, 6, "the kustomization's namespace selectors")
	var docs []string
	for _, doc := range strings.Split(read("config/components/webhook/manifests.yaml"), "\n---\n") {
		var config map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &config))
		if config == nil {
			continue
		}
		meta := config["metadata"].(map[string]any)
		meta["name"] = "kueue-" + meta["name"].(string)
		for _, w := range config["webhooks"].([]any) {
			w := w.(map[string]any)
			if sel, ok := selectors[w["name"].(string)]; ok {
				w["namespaceSelector"] = sel
			}
			svc := w["clientConfig"].(map[string]any)["service"].(map[string]any)
			svc["name"], svc["namespace"] = "kueue-"+svc["name"].(string), queue.Namespace
		}
		b, err := yaml.Marshal(config)
		require.NoError(t, err)
		docs = append(docs, string(b))
	}
	require.Len(t, docs, 2, "a mutating and a validating configuration")
	var svc map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(read("config/components/webhook/service.yaml")), &svc))
	svc["metadata"] = map[string]any{"name": "kueue-webhook-service", "namespace": queue.Namespace}
	svc["spec"].(map[string]any)["selector"] = map[string]any{"control-plane": "controller-manager"}
	b, err := yaml.Marshal(svc)
	require.NoError(t, err)
	return append(docs, string(b))
}

// installEnv is the install step's environment on cp as its administrator (no cluster when cp
// is nil), with the release's manifest (stranded: its manager can run on no node) and the
// rollout's timeout.
func installEnv(t *testing.T, cp *kubetest.ControlPlane, stranded bool, rolloutTimeout string) []string {
	t.Helper()
	var kubeconfig []byte
	if cp != nil {
		var err error
		kubeconfig, err = os.ReadFile(cp.Kubeconfig(t, kubetest.Admin))
		require.NoError(t, err)
	}
	env := []string{"KUBECONFIG_DATA=" + string(kubeconfig), "ROLLOUT_TIMEOUT=" + rolloutTimeout}
	manifest := releaseManifest(t, t.TempDir(), stranded)
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	for k, v := range queue.InstallEnv("gke-rl-smoke") {
		switch k {
		case "KUEUE_MANIFEST":
			v = manifest
		case "KUEUE_MANIFEST_SHA256":
			v = hex.EncodeToString(sum[:])
		}
		env = append(env, k+"="+v)
	}
	return env
}

// The objects of the manifest the install tests apply (a part of the release: the harness runs
// Kueue's manager in-process, and cannot serve the release's visibility API) are the program's
// copy's, by kind, namespace and name.
func TestTheInstallTestsManifestIsAPartOfTheRelease(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), queue.ManifestFile))
	require.NoError(t, err)
	key := func(obj map[string]any) string {
		meta := obj["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		return obj["kind"].(string) + " " + ns + "/" + meta["name"].(string)
	}
	release := map[string]bool{}
	for _, obj := range objects(t, gunzip(t, data)) {
		release[key(obj)] = true
	}
	part, err := os.ReadFile(releaseManifest(t, t.TempDir(), false))
	require.NoError(t, err)
	objs := objects(t, gunzip(t, part))
	require.NotEmpty(t, objs)
	for _, obj := range objs {
		assert.True(t, release[key(obj)], "%s is in the release", key(obj))
	}
}

// A manifest that is not the one the program was built with (edited, or another file at its
// path) or that is missing: the step changes nothing, and says why, before it reads the cluster.
func TestTheKueueInstallStepAppliesOnlyTheProgramsManifest(t *testing.T) {
	clitest.Tool(t, "kubectl")
	env := installEnv(t, nil, false, "5s")
	for i, kv := range env {
		if strings.HasPrefix(kv, "KUEUE_MANIFEST_SHA256=") {
			env[i] = "KUEUE_MANIFEST_SHA256=" + queue.ManifestSHA256()
		}
	}
	r := clitest.RunScript(t, kube.KubectlScript(queue.InstallScript()), env...)
	assert.Equal(t, 1, r.Code, r.Stdout+r.Stderr)
	assert.Regexp(t, `Kueue's manifest \S+manifests.yaml.gz has SHA-256 [0-9a-f]{64}, not `+queue.ManifestSHA256()+`, the one this program was built with: nothing is installed`, r.Stderr)
	assert.NotContains(t, r.Stdout, "installing")

	for i, kv := range env {
		if strings.HasPrefix(kv, "KUEUE_MANIFEST=") {
			env[i] = "KUEUE_MANIFEST=" + queue.ManifestFile
		}
	}
	r = clitest.RunScript(t, kube.KubectlScript(queue.InstallScript()), env...)
	assert.Equal(t, 1, r.Code, r.Stdout+r.Stderr)
	assert.Contains(t, r.Stderr, "cannot read Kueue's manifest "+queue.ManifestFile+" in ")
	assert.Contains(t, r.Stderr, "run pulumi up in the repository's root, where Pulumi.yaml is")
}

// The install step on the control plane, with the real kubectl: on a cluster without Kueue it
// applies the release and waits for its manager; the next `up` finds it installed; a Kueue of
// someone else's is used as it is, and refused when it does not manage RayJobs.
func TestKueueInstallStep(t *testing.T) {
	clitest.Tool(t, "kubectl")
	// kueue-blind reads the CRDs and nothing in kueue-system: an identity the install step cannot
	// judge the cluster's Kueue with.
	cp := kubetest.Start(t, kubetest.Options{Users: []string{"kueue-blind"}})
	nodes := cp.NewNodes(t)
	ctx := context.Background()
	require.NoError(t, nodes.CreatePool(ctx, kubetest.Pool{Name: "cpu", Machine: "n2-standard-16",
		Labels: map[string]string{"cloud.google.com/gke-nodepool": "cpu"}, Initial: 1, Max: 1}))
	env := installEnv(t, cp, false, "120s")
	run := func(env []string) clitest.Result {
		t.Helper()
		r := clitest.RunScript(t, kube.KubectlScript(queue.InstallScript()), env...)
		t.Logf("install step (exit %d):\n%s%s", r.Code, r.Stdout, r.Stderr)
		return r
	}
	install := func() clitest.Result { t.Helper(); return run(env) }

	first := install()
	require.Zero(t, first.Code)
	assert.Contains(t, first.Stdout, "installing Kueue "+queue.KueueVersion)
	assert.Contains(t, first.Stdout, "successfully rolled out")
	deploy, err := cp.Client.AppsV1().Deployments(queue.Namespace).Get(ctx, queue.Deployment, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "gke-rl-smoke", deploy.Annotations["gke-rl/installed-by"])
	assertKueueContained(t, cp)

	// Webhooks widened again (by hand here; an apply of the release does the same) are
	// narrowed by the next `up`.
	widen := `[{"op":"test","path":"/webhooks/0/name","value":"mappwrapper.kb.io"},{"op":"add","path":"/webhooks/0/namespaceSelector","value":{}}]`
	_, err = cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, "kueue-mutating-webhook-configuration", types.JSONPatchType, []byte(widen), metav1.PatchOptions{})
	require.NoError(t, err)
	again := install()
	require.Zero(t, again.Code)
	assert.Contains(t, again.Stdout, "Kueue "+queue.KueueVersion+" is installed (gke-rl-smoke)")
	assert.Contains(t, again.Stdout, "Kueue's mutating webhooks for pods and jobs select only the namespaces labelled "+queue.NamespaceLabel)
	assert.NotContains(t, again.Stdout, "validating webhooks", "nothing to narrow there")
	assert.NotContains(t, again.Stdout, "installing")
	assertKueueContained(t, cp)

	// An earlier version of ours: the next version's `up` applies its release.
	older := `{"spec":{"template":{"spec":{"containers":[{"name":"manager","image":"registry.k8s.io/kueue/kueue:v0.16.0"}]}}}}`
	_, err = cp.Client.AppsV1().Deployments(queue.Namespace).Patch(ctx, queue.Deployment, types.StrategicMergePatchType, []byte(older), metav1.PatchOptions{})
	require.NoError(t, err)
	upgrade := install()
	require.Zero(t, upgrade.Code)
	assert.Contains(t, upgrade.Stdout, "installing Kueue "+queue.KueueVersion)
	deploy, err = cp.Client.AppsV1().Deployments(queue.Namespace).Get(ctx, queue.Deployment, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, queue.Image, deploy.Spec.Template.Spec.Containers[0].Image)
	// The release's apply gave the webhooks its own selectors and one replica back.
	assertKueueContained(t, cp)

	// Someone else's Kueue: no annotation of ours.
	patch := `{"metadata":{"annotations":{"gke-rl/installed-by":null}}}`
	_, err = cp.Client.AppsV1().Deployments(queue.Namespace).Patch(ctx, queue.Deployment, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	theirs := install()
	require.Zero(t, theirs.Code)
	assert.Contains(t, theirs.Stdout, "the cluster runs a Kueue already (API v1beta1 v1beta2): using it")
	assert.NotContains(t, theirs.Stdout, "installing")

	blindConfig, err := os.ReadFile(cp.Kubeconfig(t, "kueue-blind"))
	require.NoError(t, err)
	asBlind := func() clitest.Result {
		t.Helper()
		r := clitest.RunScript(t, kube.KubectlScript(queue.InstallScript()), append(slices.Clone(env), "KUBECONFIG_DATA="+string(blindConfig))...)
		t.Logf("install step as kueue-blind (exit %d):\n%s%s", r.Code, r.Stdout, r.Stderr)
		return r
	}
	// An identity that cannot read the CRDs cannot tell whether the cluster runs a Kueue: the
	// step fails instead of installing over it (and, failing, removing what it holds).
	noCRDs := asBlind()
	assert.Equal(t, 1, noCRDs.Code)
	assert.Contains(t, noCRDs.Stderr, "cannot read customresourcedefinition clusterqueues.kueue.x-k8s.io (")
	assert.Contains(t, noCRDs.Stderr, "forbidden")
	assert.NotContains(t, noCRDs.Stdout, "installing")
	assert.NotContains(t, noCRDs.Stderr, "removing")

	// An identity that cannot read kueue-system cannot tell ours from theirs: the step fails
	// instead of reporting success on a Kueue it did not look at.
	_, err = cp.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "crd-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crd-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "crd-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "kueue-blind"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	blind := asBlind()
	assert.Equal(t, 1, blind.Code)
	assert.Contains(t, blind.Stderr, "cannot read deployment "+queue.Namespace+"/"+queue.Deployment+" (")
	assert.Contains(t, blind.Stderr, "forbidden")
	assert.NotContains(t, blind.Stdout, "using it")

	config, err := cp.Client.CoreV1().ConfigMaps(queue.Namespace).Get(ctx, "kueue-manager-config", metav1.GetOptions{})
	require.NoError(t, err)
	// The integration named in a comment only: not managed.
	config.Data["controller_manager_config.yaml"] = strings.ReplaceAll(config.Data["controller_manager_config.yaml"], `- "ray.io/rayjob"`, `# - "ray.io/rayjob"`)
	_, err = cp.Client.CoreV1().ConfigMaps(queue.Namespace).Update(ctx, config, metav1.UpdateOptions{})
	require.NoError(t, err)
	noRay := install()
	assert.Equal(t, 1, noRay.Code)
	assert.Contains(t, noRay.Stderr, `does not manage RayJobs: add "ray.io/rayjob" to integrations.frameworks`)
}

// A first install that fails (here its manager can run on no node, so its rollout times out)
// removes what it created, webhooks first: none is left to refuse the cluster's pods and jobs
// with no manager to answer it. What the manifest names but existed before stays: here the
// namespace kueue-system, which someone made with something in it.
func TestAFailedKueueInstallLeavesNothing(t *testing.T) {
	clitest.Tool(t, "kubectl")
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	// The step's temporary files (the kubeconfig, the manifest's copy) go with it: its own EXIT
	// trap takes the place of the kubeconfig preamble's, so it removes both.
	tmp := t.TempDir()
	r := clitest.RunScript(t, kube.KubectlScript(queue.InstallScript()), append(installEnv(t, cp, true, "5s"), "TMPDIR="+tmp)...)
	t.Logf("install step (exit %d):\n%s%s", r.Code, r.Stdout, r.Stderr)
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stdout, "select only the namespaces labelled", "the webhooks were narrowed before the wait")
	assert.Contains(t, r.Stderr, "the install of Kueue "+queue.KueueVersion+" failed: removing what it created")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the step's temporary files are removed")
	for _, kind := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		list, err := cp.Client.AdmissionregistrationV1().RESTClient().Get().AbsPath("/apis/admissionregistration.k8s.io/v1/" + kind).DoRaw(ctx)
		require.NoError(t, err)
		assert.NotContains(t, string(list), "kueue-", kind)
	}
	// Deleted, or being deleted: the namespace controller finishes in its own time.
	ns, err := cp.Client.CoreV1().Namespaces().Get(ctx, queue.Namespace, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil), "namespace %s: %v", queue.Namespace, err)
	crd, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterqueues.kueue.x-k8s.io").DoRaw(ctx)
	assert.True(t, apierrors.IsNotFound(err) || strings.Contains(string(crd), "deletionTimestamp"), "the CRDs: %v", err)
}

// assertKueueContained checks the program's Kueue: its webhooks for pods and jobs call it only
// for a namespace labelled queue.NamespaceLabel (a Job elsewhere is created with its manager
// unreachable, as the test API server cannot reach a Service's pods; one in a labelled namespace
// is refused, the webhooks failing closed there), its own kinds' webhooks are as released, and
// its manager runs queue.Replicas replicas under a disruption budget of one.
func assertKueueContained(t *testing.T, cp *kubetest.ControlPlane) {
	t.Helper()
	ctx := context.Background()
	narrowed := metav1.LabelSelector{MatchLabels: map[string]string{queue.NamespaceLabel: queue.NamespaceLabelValue}}
	check := func(name string, groups []string, sel *metav1.LabelSelector) {
		if slices.Contains(groups, "kueue.x-k8s.io") {
			assert.Empty(t, sel.MatchLabels, "%s: a webhook of Kueue's own kinds is left as released", name)
			return
		}
		assert.Equal(t, narrowed, *sel, "%s selects the queue's namespaces only", name)
	}
	mutating, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "kueue-mutating-webhook-configuration", metav1.GetOptions{})
	require.NoError(t, err)
	validating, err := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "kueue-validating-webhook-configuration", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, mutating.Webhooks)
	require.NotEmpty(t, validating.Webhooks)
	for _, w := range mutating.Webhooks {
		check(w.Name, w.Rules[0].APIGroups, w.NamespaceSelector)
	}
	for _, w := range validating.Webhooks {
		check(w.Name, w.Rules[0].APIGroups, w.NamespaceSelector)
	}

	deploy, err := cp.Client.AppsV1().Deployments(queue.Namespace).Get(ctx, queue.Deployment, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(queue.Replicas), *deploy.Spec.Replicas)
	pdb, err := cp.Client.PolicyV1().PodDisruptionBudgets(queue.Namespace).Get(ctx, "kueue-manager-pdb", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, pdb.Spec.MinAvailable.IntValue())
	assert.Equal(t, deploy.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels)

	job := func(ns string) error {
		_, err := cp.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			labels := map[string]string{}
			if ns == "queued" {
				labels[queue.NamespaceLabel] = queue.NamespaceLabelValue
			}
			_, err = cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
		}
		require.NoError(t, err)
		_, err = cp.Client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"},
			Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
		}, metav1.CreateOptions{})
		return err
	}
	assert.NoError(t, job("elsewhere"), "a Job outside the queue's namespaces does not wait on Kueue")
	err = job("queued")
	require.Error(t, err, "a Job in a queue's namespace goes through Kueue's webhooks")
	assert.Contains(t, err.Error(), `failed calling webhook "mjob.kb.io"`)
}

// A failed first install removes only what it created: a namespace kueue-system that existed
// before, with what it holds, stays; the CRDs and webhooks it made go.
func TestAFailedKueueInstallKeepsWhatExistedBefore(t *testing.T) {
	clitest.Tool(t, "kubectl")
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	_, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: queue.Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().ConfigMaps(queue.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	r := clitest.RunScript(t, kube.KubectlScript(queue.InstallScript()), installEnv(t, cp, true, "5s")...)
	t.Logf("install step (exit %d):\n%s%s", r.Code, r.Stdout, r.Stderr)
	assert.Equal(t, 1, r.Code)
	ns, err := cp.Client.CoreV1().Namespaces().Get(ctx, queue.Namespace, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, ns.DeletionTimestamp, "the namespace that existed before stays")
	_, err = cp.Client.CoreV1().ConfigMaps(queue.Namespace).Get(ctx, "theirs", metav1.GetOptions{})
	assert.NoError(t, err, "with what it holds")
	_, err = cp.Client.AppsV1().Deployments(queue.Namespace).Get(ctx, queue.Deployment, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the manager it created goes: %v", err)
	_, err = cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "kueue-mutating-webhook-configuration", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "its webhooks go: %v", err)
	crd, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterqueues.kueue.x-k8s.io").DoRaw(ctx)
	assert.True(t, apierrors.IsNotFound(err) || strings.Contains(string(crd), "deletionTimestamp"), "its CRDs go: %v", err)
}
