package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The deploy identity's roles name no Secret, no wildcard and no subresource but pods' logs;
// they update no role or binding but the launches' (by name), and create no cluster role or
// binding (RBAC names no object on create; its escalation check refuses a namespaced role or
// binding that grants more than the author holds: test/kubetest); every kind the program manages is written by one of them (the
// access kinds read); and kube-system takes DaemonSets only.
func TestDeployAccessIsWhatUpDoes(t *testing.T) {
	objs := DeployAccess("gke-rl-deploy@acme-rl.iam.gserviceaccount.com", []string{"gke-rl-smoke"})
	written := map[string]bool{}
	var bindings []string
	for _, obj := range objs {
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			for _, r := range o.Rules {
				for _, res := range r.Resources {
					assert.NotEqual(t, "secrets", res, "%s", o.Name)
					assert.NotContains(t, res, "*", "%s", o.Name)
					if strings.Contains(res, "/") {
						assert.Equal(t, "pods/log", res, "%s: the only subresource", o.Name)
					}
					if slices.Contains(r.Verbs, "update") {
						// The launches' Role and binding by name, and no other.
						assert.False(t, accessKinds[res] && !slices.Equal(r.ResourceNames, []string{"gke-rl-launcher"}), "%s writes %s", o.Name, res)
					}
					if slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "update") {
						written[res] = true
					}
				}
				assert.NotContains(t, r.Verbs, "*", "%s", o.Name)
				assert.NotContains(t, r.Verbs, "escalate", "%s", o.Name)
				if slices.Contains(r.Verbs, "bind") {
					assert.Equal(t, rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"},
						ResourceNames: []string{"gke-rl-launcher"}, Verbs: []string{"bind"}}, r, "%s binds the launches' Role alone", o.Name)
				}
				assert.NotContains(t, r.Verbs, "impersonate", "%s", o.Name)
			}
			if o.Name == DeployAccessName+"-system" {
				for _, r := range o.Rules {
					if slices.Contains(r.Verbs, "create") {
						assert.Equal(t, []string{"daemonsets"}, r.Resources)
					}
				}
			}
		case *rbacv1.RoleBinding:
			bindings = append(bindings, o.Namespace+"/"+o.RoleRef.Name)
		}
	}
	for _, r := range ManagedKinds {
		for _, res := range r.Resources {
			assert.True(t, written[res] || accessKinds[res], "%s is written by no deploy role", res)
		}
	}
	assert.True(t, written["roles"] && written["rolebindings"], "the launches' Role and binding")
	assert.False(t, written["clusterroles"] || written["clusterrolebindings"])
	assert.ElementsMatch(t, []string{"kube-system/gke-rl-deploy-system", "gke-rl-smoke/gke-rl-deploy-namespaced"}, bindings)
}
