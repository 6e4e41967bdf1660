package ray_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"

	"gke-rl/ray"
)

// allows says whether the policy admits a connection to port from a pod of namespace `from`
// with the given labels (Kubernetes' NetworkPolicy semantics, for the peers the policy uses).
func allows(t *testing.T, p *networkingv1.NetworkPolicy, fromNamespace string, fromLabels map[string]string, port int) bool {
	t.Helper()
	for _, rule := range p.Spec.Ingress {
		portOK := len(rule.Ports) == 0
		for _, rp := range rule.Ports {
			portOK = portOK || rp.Port.IntValue() == port
		}
		peerOK := len(rule.From) == 0
		for _, peer := range rule.From {
			require.Nil(t, peer.NamespaceSelector, "only same-namespace peers are modelled")
			require.Nil(t, peer.IPBlock)
			sel := labels.SelectorFromSet(peer.PodSelector.MatchLabels)
			peerOK = peerOK || (fromNamespace == p.Namespace && sel.Matches(labels.Set(fromLabels)))
		}
		if portOK && peerOK {
			return true
		}
	}
	return false
}

func TestHeadIngressPolicy(t *testing.T) {
	p := ray.HeadIngressPolicy("gke-rl")
	assert.Equal(t, map[string]string{"ray.io/node-type": "head"}, p.Spec.PodSelector.MatchLabels, "every head of the namespace, whatever its cluster's generated name")
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, p.Spec.PolicyTypes, "egress is left alone")

	worker := map[string]string{"ray.io/node-type": "worker", "ray.io/cluster": "rl-grpo-x7k2p"}
	for _, port := range []int{6379, 10001, 8265, 8080, 12345} {
		assert.True(t, allows(t, p, "gke-rl", worker, port), "a worker reaches the head's port %d", port)
		assert.True(t, allows(t, p, "gke-rl", map[string]string{"batch.kubernetes.io/job-name": "rl-grpo"}, port), "the submitter reaches port %d", port)
	}
	for _, port := range []int{6379, 10001, 52365} {
		assert.False(t, allows(t, p, "default", nil, port), "a pod of another namespace does not reach port %d", port)
	}
	assert.True(t, allows(t, p, "kube-system", nil, ray.DashboardPort), "the dashboard stays reachable: the GKE-hosted operator polls job status there")
	assert.True(t, allows(t, p, "gmp-system", nil, 8080), "Managed Prometheus scrapes the metrics port")
}
