package cluster_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"gke-rl/cluster"
)

// The preview identity reads and dry-runs the kinds the stack manages, and nothing else: no
// Secrets, no deletes, no pods' exec or proxy, and no write to the policy that limits it.
func TestPreviewAccessReadsAndDryRunsOnly(t *testing.T) {
	const user = "gke-rl-preview@my-project.iam.gserviceaccount.com"
	objs := cluster.PreviewAccess(user)
	require.Len(t, objs.Limit, 2)
	require.Len(t, objs.Access, 2)
	policy := objs.Limit[0].(*admissionv1.ValidatingAdmissionPolicy)
	policyBinding := objs.Limit[1].(*admissionv1.ValidatingAdmissionPolicyBinding)
	role := objs.Access[0].(*rbacv1.ClusterRole)
	binding := objs.Access[1].(*rbacv1.ClusterRoleBinding)

	for _, rule := range role.Rules {
		assert.NotContains(t, rule.Resources, "secrets")
		assert.NotContains(t, rule.Resources, "*")
		assert.NotContains(t, rule.APIGroups, "*")
		for _, res := range rule.Resources {
			assert.NotContains(t, res, "/", "no subresource (exec, proxy, portforward, attach)")
		}
		for _, verb := range []string{"delete", "deletecollection", "escalate", "impersonate", "*"} {
			assert.NotContains(t, rule.Verbs, verb, "%v", rule.Resources)
		}
		if slices.Contains(rule.Verbs, "bind") {
			// The launches' Role, by name: a dry-run binding of it before it exists.
			assert.Equal(t, rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"},
				ResourceNames: []string{"gke-rl-launcher"}, Verbs: []string{"bind"}}, rule)
		}
		if slices.Contains(rule.APIGroups, "admissionregistration.k8s.io") {
			assert.Equal(t, []string{"get", "list", "watch"}, rule.Verbs, "its own limit is read-only to it")
		}
	}
	// A kind of which the program names the objects (the run script's ConfigMap, the launches'
	// Role and binding) is read and dry-run by name, and created by kind: RBAC names no object
	// for list, watch or create. Every other kind is read whole (list and watch, which the
	// provider's diff needs).
	var named, created [][]string
	for _, rule := range role.Rules {
		switch {
		case slices.Equal(rule.Verbs, []string{"bind"}):
		case len(rule.ResourceNames) > 0:
			named = append(named, append(slices.Clone(rule.Resources), rule.ResourceNames...))
			assert.Equal(t, []string{"get", "update", "patch"}, rule.Verbs, "%v %v", rule.Resources, rule.ResourceNames)
		case slices.Equal(rule.Verbs, []string{"create"}):
			created = append(created, rule.Resources)
		default:
			assert.Subset(t, rule.Verbs, []string{"get", "list", "watch"}, "%v", rule.Resources)
		}
	}
	assert.ElementsMatch(t, [][]string{{"configmaps", "gke-rl-run-script"}, {"roles", "rolebindings", "gke-rl-launcher"}}, named)
	assert.ElementsMatch(t, [][]string{{"configmaps"}, {"roles", "rolebindings"}}, created, "the named kinds' create")
	assert.Equal(t, []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}, binding.Subjects)
	assert.Equal(t, role.Name, binding.RoleRef.Name)

	assert.Equal(t, `request.userInfo.username == "`+user+`"`, policy.Spec.MatchConditions[0].Expression)
	assert.Equal(t, "request.dryRun == true", policy.Spec.Validations[0].Expression)
	assert.Equal(t, admissionv1.Fail, *policy.Spec.FailurePolicy, "an error in the policy refuses the write")
	rule := policy.Spec.MatchConstraints.ResourceRules[0]
	assert.ElementsMatch(t, []admissionv1.OperationType{"CREATE", "UPDATE", "DELETE", "CONNECT"}, rule.Operations)
	assert.Equal(t, []string{"*/*"}, rule.Resources, "every resource and subresource, and nothing beside it (the API server's rule)")
	assert.Equal(t, policy.Name, policyBinding.Spec.PolicyName)
	assert.Equal(t, []admissionv1.ValidationAction{admissionv1.Deny}, policyBinding.Spec.ValidationActions)
}
