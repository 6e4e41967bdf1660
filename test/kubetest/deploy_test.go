package kubetest_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"gke-rl/cluster"
	"gke-rl/test/kubetest"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

const deployUser = "gke-rl-deploy@your-project-id.iam.gserviceaccount.com"

// The deploy identity's access on a real API server with RBAC, with its own credentials and no
// Google role that reaches objects (GKE adds IAM's rights to RBAC's; roles/container.clusterAdmin
// adds none): once an administrator's `up` has applied the access objects (its roles and the
// preview identity's), it creates, updates and deletes every other object of every shipped
// stack; it reads the access objects and writes none of them; and it reads no Secret, execs
// into no pod, port-forwards to none, writes nothing in a namespace that is not the stack's,
// and cannot grant itself more.
func TestDeployIdentityDoesWhatUpDoesAndNoMore(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{Users: []string{deployUser}})
	cp.InstallCRDs(t, kubetest.UpstreamCRDs(t)...)
	// A stack with jobs also manages the queue's Kueue objects.
	cp.InstallCRDs(t, kubetest.KueueCRDs(t)...)
	ctx := context.Background()
	admin, deploy := cp.As(t, kubetest.Admin), cp.As(t, deployUser)

	objects := deployObjects(t)
	var namespaces []string
	for _, obj := range objects {
		if obj.kind() == "Namespace" {
			namespaces = append(namespaces, obj.meta()["name"].(string))
		}
	}
	require.NotEmpty(t, namespaces)
	// The administrator's first `up`: the namespaces and the access objects.
	var access, work []stackObject
	for _, obj := range objects {
		if isAccess(obj) {
			access = append(access, obj)
		} else {
			work = append(work, obj)
		}
	}
	require.NotEmpty(t, access)
	for _, obj := range objects {
		if obj.kind() == "Namespace" {
			_, err := admin.Apply(ctx, obj.object, false)
			require.NoError(t, err)
		}
	}
	for _, obj := range access {
		_, err := admin.Apply(ctx, obj.object, false)
		require.NoError(t, err, "the administrator applies %s", obj)
	}
	for _, obj := range cluster.PreviewAccess(previewUser).Limit {
		_, err := admin.Apply(ctx, obj, false)
		require.NoError(t, err)
	}

	// Every later `up`, as the deploy identity: create, then update every other object.
	for _, obj := range work {
		_, err := deploy.Apply(ctx, obj.object, false)
		assert.NoError(t, err, "the deploy identity creates %s", obj)
	}
	for _, obj := range work {
		_, err := deploy.Apply(ctx, obj.withLabel(), false)
		assert.NoError(t, err, "the deploy identity updates %s", obj)
	}
	// The access objects it reads (a refresh) and writes none of.
	for _, obj := range access {
		u, err := kubetest.Unstructured(obj.object)
		require.NoError(t, err)
		_, err = deploy.Get(ctx, obj.object)
		assert.NoError(t, err, "the deploy identity reads %s", obj)
		_, err = deploy.Apply(ctx, obj.withLabel(), false)
		forbiddenErr(t, "updating "+obj.String(), err)
		r, err := deploy.Resource(u)
		require.NoError(t, err)
		forbiddenErr(t, "deleting "+obj.String(), r.Delete(ctx, u.GetName(), metav1.DeleteOptions{}))
	}

	client, err := kubernetes.NewForConfig(cp.Config(deployUser))
	require.NoError(t, err)
	ns := namespaces[0]
	_, err = cp.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	forbidden := func(what string, err error) {
		t.Helper()
		forbiddenErr(t, what, err)
	}
	_, err = client.CoreV1().Secrets(ns).Get(ctx, "someone-elses", metav1.GetOptions{})
	forbidden("reading a Secret", err)
	_, err = client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	forbidden("listing Secrets", err)
	_, err = client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
	forbidden("creating a Secret", err)
	_, err = client.CoreV1().ConfigMaps(ns).Get(ctx, "someone-elses", metav1.GetOptions{})
	forbidden("reading a ConfigMap that is not the run script", err)
	for _, sub := range []string{"exec", "attach", "portforward", "proxy"} {
		err = client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("any").SubResource(sub).Do(ctx).Error()
		forbidden("pods/"+sub, err)
	}
	_, err = client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "direct"},
		Spec: corev1.PodSpec{ServiceAccountName: workloads.HFToken.Reader, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	forbidden("creating a pod directly", err)
	for _, obj := range objects {
		if obj.kind() == "Job" {
			_, err = deploy.Apply(ctx, obj.in("team-b"), false)
			forbidden("a Job in a namespace not the stack's", err)
			_, err = deploy.Apply(ctx, obj.in("kube-system"), false)
			forbidden("a Job in kube-system, where it may write the RDMA installer's DaemonSet only", err)
			break
		}
	}
	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: deployUser}},
	}, metav1.CreateOptions{})
	forbidden("binding itself cluster-admin", err)
	// In its namespace it may write roles and bindings (the launches'), but none that grants
	// what it does not hold.
	_, err = client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: deployUser}},
	}, metav1.CreateOptions{})
	forbidden("binding itself cluster-admin in its namespace", err)
	_, err = client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "secrets"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	forbidden("a role that reads Secrets", err)
	_, err = client.RbacV1().Roles(ns).Update(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}, metav1.UpdateOptions{})
	forbidden("updating a role that is not the launches'", err)
	role, err := client.RbacV1().ClusterRoles().Get(ctx, cluster.DeployAccessName, metav1.GetOptions{})
	require.NoError(t, err)
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	_, err = client.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	forbidden("adding Secrets to its own role", err)

	// And a replacement's deletes: every object but the namespaces.
	for _, obj := range work {
		if obj.kind() == "Namespace" {
			continue
		}
		u, err := kubetest.Unstructured(obj.object)
		require.NoError(t, err)
		r, err := deploy.Resource(u)
		require.NoError(t, err)
		assert.NoError(t, r.Delete(ctx, u.GetName(), metav1.DeleteOptions{}), "the deploy identity deletes %s", obj)
	}
}

func forbiddenErr(t *testing.T, what string, err error) {
	t.Helper()
	assert.True(t, apierrors.IsForbidden(err), "%s must be forbidden: %v", what, err)
}

// isAccess is whether obj grants access (a role or a binding): an administrator's to apply,
// but for the experiments' launches' Role and binding, which grant what the deploy identity
// holds and change with the experiments.
func isAccess(obj stackObject) bool {
	return strings.HasPrefix(obj.object["apiVersion"].(string), "rbac.authorization.k8s.io/") && obj.meta()["name"] != queue.LauncherRole
}

// deployObjects are the Kubernetes objects of every shipped stack with a preview and a deploy
// identity and both tokens, the managed kinds only, namespaces first.
func deployObjects(t *testing.T) []stackObject {
	t.Helper()
	base := []string{"cluster.previewServiceAccount=" + previewUser, "cluster.deployServiceAccount=" + deployUser,
		"tokens.huggingFace=true", "tokens.wandb=true"}
	out := managedObjects(t, base, append(slices.Clone(base), queuedVariant...))
	require.True(t, slices.ContainsFunc(out, func(o stackObject) bool { return o.kind() == "ClusterQueue" }), "the queue's objects are among them")
	sort.SliceStable(out, func(i, j int) bool { return out[i].kind() == "Namespace" && out[j].kind() != "Namespace" })
	return out
}
