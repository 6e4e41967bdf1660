package cluster

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/internal/kube"
)

// DeployAccessName names the objects that give the deploy identity its access in the cluster.
const DeployAccessName = "gke-rl-deploy"

// deployVerbs are what `pulumi up` and `pulumi destroy` do with an object the program manages.
var deployVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// clusterScoped are the managed resources that belong to no namespace.
var clusterScoped = map[string]bool{
	"namespaces": true, "persistentvolumes": true, "priorityclasses": true,
	"gkenetworkparamsets": true, "networks": true, "clusterroles": true, "clusterrolebindings": true,
	"clusterqueues": true, "resourceflavors": true, "workloadpriorityclasses": true,
}

// accessKinds are the managed resources that grant access (the preview identity's and the
// deploy identity's own roles and bindings): the deploy identity reads them and writes none.
// RBAC lets no one grant what they do not hold, and the deploy identity holds its namespaced
// rights in its namespaces only, so a role of cluster-wide rules is an administrator's to
// apply; writing its own roles would be granting itself more. The one exception is named: the
// experiments' launches' Role and binding in the stack's namespace, which grant a patch of the
// stack's RayJobs, a right the deploy identity holds itself (RBAC's escalation check refuses
// any role or binding that grants more than its author holds).
var accessKinds = map[string]bool{"clusterroles": true, "clusterrolebindings": true, "rolebindings": true}

// systemNamespace is where the RDMA installer's DaemonSet runs, the stack's only object there.
const systemNamespace = "kube-system"

// DeployAccess are the objects that give user (the deploy identity's email, the user name GKE
// authenticates it as) what `up` needs inside the stack's cluster, so that its Google roles need
// no Kubernetes rights (roles/container.clusterAdmin manages clusters and reaches no object):
//   - gke-rl-deploy, bound cluster-wide: the cluster-scoped kinds the program manages, and reads
//     of the access objects, the admission policies and the CRDs;
//   - gke-rl-deploy-namespaced, bound in the stack's namespaces: the namespaced kinds, and reads
//     of pods, their logs and events (the provider's waits, the gate's results);
//   - gke-rl-deploy-system, bound in kube-system: the RDMA installer's DaemonSets only.
//
// It reads no Secret, and has no exec, attach, port-forward or proxy (subresources the rules do
// not name), no write in another namespace, and no write of any role or binding but the
// launches' (accessKinds). The access objects are applied by an administrator's `up` (the
// first, and any that changes them).
func DeployAccess(user string, namespaces []string) []kube.Object {
	read := slices.Clone(readVerbs)
	clusterRules := []rbacv1.PolicyRule{}
	namespacedRules := []rbacv1.PolicyRule{}
	for _, r := range ManagedKinds {
		for _, res := range r.Resources {
			rule := rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: []string{res}, ResourceNames: r.ResourceNames, Verbs: slices.Clone(deployVerbs)}
			switch {
			case accessKinds[res] && len(r.ResourceNames) == 0:
				rule.Verbs = read
			case res == "daemonsets":
				continue // kube-system's, below
			case len(r.ResourceNames) > 0:
				// RBAC names no object for list, watch or create: the named object's own verbs,
				// and a create of the kind.
				rule.Verbs = []string{"get", "update", "patch", "delete"}
				namespacedRules = append(namespacedRules, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: []string{res}, Verbs: []string{"create"}})
			}
			if clusterScoped[res] {
				clusterRules = append(clusterRules, rule)
			} else {
				namespacedRules = append(namespacedRules, rule)
			}
		}
	}
	clusterRules = append(clusterRules,
		rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"},
			Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: read},
		rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: read},
	)
	podReads := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/log", "events"}, Verbs: read},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: read},
	}
	namespacedRules = append(namespacedRules, podReads...)
	namespacedRules = append(namespacedRules, launcherBind)
	systemRules := append([]rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: slices.Clone(deployVerbs)},
		// Its own binding there, which a refresh reads.
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: read},
	}, podReads...)

	labels := map[string]string{"app.kubernetes.io/managed-by": "gke-rl"}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	clusterRole := func(name string, rules []rbacv1.PolicyRule) kube.Object {
		return &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Rules:      rules,
		}
	}
	roleBinding := func(role, namespace string) kube.Object {
		return &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: namespace, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}
	}
	namespacedName, systemName := DeployAccessName+"-namespaced", DeployAccessName+"-system"
	objs := []kube.Object{
		clusterRole(DeployAccessName, clusterRules),
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: DeployAccessName, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: DeployAccessName},
			Subjects:   subjects,
		},
		clusterRole(namespacedName, namespacedRules),
		clusterRole(systemName, systemRules),
		roleBinding(systemName, systemNamespace),
	}
	for _, ns := range namespaces {
		objs = append(objs, roleBinding(namespacedName, ns))
	}
	return objs
}
