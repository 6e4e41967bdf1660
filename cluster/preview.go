package cluster

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/internal/kube"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

// PreviewAccessName names the objects that give the preview identity its access.
const PreviewAccessName = "gke-rl-preview"

// ManagedKinds are the API groups and resources of every Kubernetes object the program manages,
// which a preview reads and dry-runs. Secrets are not among them: no token is in the cluster's
// API (workloads.Tokens), and the preview identity may read none.
var ManagedKinds = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"namespaces", "serviceaccounts", "services", "persistentvolumes", "persistentvolumeclaims"}},
	{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}},
	{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}},
	{APIGroups: []string{"ray.io"}, Resources: []string{"rayclusters", "rayjobs"}},
	{APIGroups: []string{"networking.gke.io"}, Resources: []string{"gkenetworkparamsets", "networks"}},
	{APIGroups: []string{"secrets-store.csi.x-k8s.io"}, Resources: []string{"secretproviderclasses"}},
	// The queue of a stack with jobs (workloads/queue).
	{APIGroups: []string{"kueue.x-k8s.io"}, Resources: []string{"clusterqueues", "resourceflavors", "workloadpriorityclasses", "localqueues"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "clusterrolebindings", "rolebindings"}},
	// The experiments' launches' Role and binding (workloads/queue), by their name: they change
	// with the experiments, so every `up` writes them.
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, ResourceNames: []string{queue.LauncherRole}},
	// The run's script (workloads.RunScriptObject) by its name only: other ConfigMaps of the
	// cluster may hold what a preview has no business reading.
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{workloads.RunScriptConfigMap}},
}

// launcherBind lets an identity bind the experiments' launches' Role (workloads/queue), by its
// name: RBAC lets a binding's author who may not bind its role create it only after checking
// that the author holds the role's rules, which a dry run (a preview, or the preview step of an
// `up`) cannot do before the role exists (the API server answers the role's "not found"). Who
// may update the role holds its rules anyway: RBAC's escalation check bounds what it may hold.
var launcherBind = rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"},
	ResourceNames: []string{queue.LauncherRole}, Verbs: []string{"bind"}}

// readVerbs read objects; dryRunVerbs are the writes a server-side dry run makes (the Kubernetes
// provider's preview applies each object with dryRun=All), which the admission policy lets the
// preview identity make only as dry runs. No delete, no exec, no port-forward, no proxy: those
// are subresources or verbs the rules do not name.
var (
	readVerbs   = []string{"get", "list", "watch"}
	dryRunVerbs = []string{"create", "update", "patch"}
)

// PreviewObjects are the objects that give the preview identity its access: Limit (the
// admission policy and its binding) must exist before Access (the ClusterRole and its binding)
// grants what it limits.
type PreviewObjects struct {
	Limit, Access []kube.Object
}

// PreviewAccess are the objects that let user (a Google service account's email, the user name
// GKE authenticates it as) preview the stack: a ClusterRole to read every kind the program
// manages and to write them, a binding, and a ValidatingAdmissionPolicy with its binding that
// refuses any of its writes that is not a dry run. The policy objects themselves are read-only
// to it: Kubernetes never matches a ValidatingAdmissionPolicy against requests for policies or
// their bindings (the API's documented exclusion), so only RBAC can keep the preview identity
// from removing its own limit.
func PreviewAccess(user string) PreviewObjects {
	rules := []rbacv1.PolicyRule{}
	for _, r := range ManagedKinds {
		if len(r.ResourceNames) > 0 {
			// RBAC names no object for list, watch or create (it is not known yet): get and
			// the dry-run updates by name, and a dry-run create of the kind.
			r.Verbs = []string{"get", "update", "patch"}
			rules = append(rules, r, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: []string{"create"}})
			continue
		}
		r.Verbs = append(append([]string{}, readVerbs...), dryRunVerbs...)
		rules = append(rules, r)
	}
	rules = append(rules,
		rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"},
			Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: readVerbs},
		// CRDs: the provider reads their schemas to type the custom resources.
		rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: readVerbs},
		launcherBind,
	)
	meta := metav1.ObjectMeta{Name: PreviewAccessName, Labels: map[string]string{"app.kubernetes.io/managed-by": "gke-rl"}}
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: meta,
		Rules:      rules,
	}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: PreviewAccessName},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	policyName := PreviewAccessName + "-dry-run-only"
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: policyName, Labels: meta.Labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect},
					// "*/*" alone: every resource and every subresource. The API server refuses it
					// beside any other entry ("if '*/*' is present, must not specify other
					// resources", k8s.io/kubernetes v1.35.4 pkg/apis/admissionregistration/
					// validation/validation.go, validateResources), so ["*", "*/*"] fails `up`.
					Rule: admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"},
						Scope: ptr.To(admissionv1.AllScopes)},
				}}},
			},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "preview-identity",
				Expression: fmt.Sprintf("request.userInfo.username == %q", user),
			}},
			Validations: []admissionv1.Validation{{
				Expression: "request.dryRun == true",
				Message:    "the preview identity " + user + " may only dry-run (pulumi preview); apply with the deploy identity",
			}},
		},
	}
	policyBinding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: policyName, Labels: meta.Labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return PreviewObjects{Limit: []kube.Object{policy, policyBinding}, Access: []kube.Object{role, binding}}
}
