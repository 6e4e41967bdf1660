package kubetest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"gke-rl/internal/kube"
	"gke-rl/test/clitest"
	"gke-rl/test/crdschema"
	"gke-rl/test/kubetest"
	"gke-rl/workloads/queue"
)

// releaseManifest is Kueue's release manifest as far as the install step reads it, assembled
// from the release's own sources at queue.KueueVersion (the module's config/): its namespace, its
// CRDs, the manager's ServiceAccount, its configuration's ConfigMap and its Deployment, named as
// the release's kustomization names them (config/default: namePrefix kueue-, namespace
// kueue-system, the image registry.k8s.io/kueue/kueue:<version>). The Deployment's selector and
// labels are the kustomization's `control-plane: controller-manager`.
func releaseManifest(t *testing.T, dir string) string {
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
	pod["containers"].([]any)[0].(map[string]any)["image"] = queue.Image
	b, err = yaml.Marshal(deploy)
	require.NoError(t, err)
	docs = append(docs, string(b))

	path := filepath.Join(dir, "manifests.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o600))
	return path
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
	kubeconfig, err := os.ReadFile(cp.Kubeconfig(t, kubetest.Admin))
	require.NoError(t, err)
	env := []string{"KUBECONFIG_DATA=" + string(kubeconfig), "ROLLOUT_TIMEOUT=120s"}
	for k, v := range queue.InstallEnv("gke-rl-smoke") {
		if k == "KUEUE_MANIFEST" {
			v = releaseManifest(t, t.TempDir())
		}
		env = append(env, k+"="+v)
	}
	install := func() clitest.Result {
		t.Helper()
		r := clitest.RunScript(t, kube.KubectlScript(queue.InstallScript()), env...)
		t.Logf("install step (exit %d):\n%s%s", r.Code, r.Stdout, r.Stderr)
		return r
	}

	first := install()
	require.Zero(t, first.Code)
	assert.Contains(t, first.Stdout, "installing Kueue "+queue.KueueVersion)
	assert.Contains(t, first.Stdout, "successfully rolled out")
	deploy, err := cp.Client.AppsV1().Deployments(queue.Namespace).Get(ctx, queue.Deployment, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "gke-rl-smoke", deploy.Annotations["gke-rl/installed-by"])

	again := install()
	require.Zero(t, again.Code)
	assert.Contains(t, again.Stdout, "Kueue "+queue.KueueVersion+" is installed (gke-rl-smoke)")
	assert.NotContains(t, again.Stdout, "installing")

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

	// Someone else's Kueue: no annotation of ours.
	patch := `{"metadata":{"annotations":{"gke-rl/installed-by":null}}}`
	_, err = cp.Client.AppsV1().Deployments(queue.Namespace).Patch(ctx, queue.Deployment, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	theirs := install()
	require.Zero(t, theirs.Code)
	assert.Contains(t, theirs.Stdout, "the cluster runs a Kueue already (API v1beta1 v1beta2): using it")
	assert.NotContains(t, theirs.Stdout, "installing")

	// An identity that cannot read kueue-system cannot tell ours from theirs: the step fails
	// instead of reporting success on a Kueue it did not look at.
	_, err = cp.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "crd-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crd-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "crd-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "kueue-blind"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	blindConfig, err := os.ReadFile(cp.Kubeconfig(t, "kueue-blind"))
	require.NoError(t, err)
	blind := clitest.RunScript(t, kube.KubectlScript(queue.InstallScript()), append(slices.Clone(env), "KUBECONFIG_DATA="+string(blindConfig))...)
	t.Logf("install step as kueue-blind (exit %d):\n%s%s", blind.Code, blind.Stdout, blind.Stderr)
	assert.Equal(t, 1, blind.Code)
	assert.Contains(t, blind.Stderr, "cannot read deployment "+queue.Namespace+"/"+queue.Deployment+" (")
	assert.Contains(t, blind.Stderr, "forbidden")
	assert.NotContains(t, blind.Stdout, "using it")

	config, err := cp.Client.CoreV1().ConfigMaps(queue.Namespace).Get(ctx, "kueue-manager-config", metav1.GetOptions{})
	require.NoError(t, err)
	config.Data["controller_manager_config.yaml"] = strings.ReplaceAll(config.Data["controller_manager_config.yaml"], `- "ray.io/rayjob"`, "")
	_, err = cp.Client.CoreV1().ConfigMaps(queue.Namespace).Update(ctx, config, metav1.UpdateOptions{})
	require.NoError(t, err)
	noRay := install()
	assert.Equal(t, 1, noRay.Code)
	assert.Contains(t, noRay.Stderr, `does not manage RayJobs: add "ray.io/rayjob" to integrations.frameworks`)
}
