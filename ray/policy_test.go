package ray_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"gke-rl/ray"
)

// source is where a connection comes from: a pod (its namespace and labels), or, with no
// namespace, something that is not a pod of the cluster (a node, an address in the VPC).
type source struct {
	namespace string
	labels    map[string]string
}

var outside = source{}

func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	require.NoError(t, err)
	return s.Matches(labels.Set(set))
}

// admits applies Kubernetes' NetworkPolicy semantics: a pod that no policy selects takes any
// connection; a pod that some select takes a connection that one of their ingress rules admits
// (its port listed or none, its source matched by a peer or no peer listed). A namespace
// selector matches a namespace by its labels (kubernetes.io/metadata.name is always one); a
// namespace selector with a pod selector must match both; a pod selector alone means the
// policy's namespace.
func admits(t *testing.T, policies []*networkingv1.NetworkPolicy, pod map[string]string, from source, port int) bool {
	t.Helper()
	isolated := false
	for _, p := range policies {
		if !selects(t, &p.Spec.PodSelector, pod) {
			continue
		}
		isolated = true
		for _, rule := range p.Spec.Ingress {
			portOK := len(rule.Ports) == 0
			for _, rp := range rule.Ports {
				portOK = portOK || rp.Port.IntValue() == port
			}
			peerOK := len(rule.From) == 0
			for _, peer := range rule.From {
				require.Nil(t, peer.IPBlock, "no address blocks")
				if from.namespace == "" {
					continue // a peer list admits pods only
				}
				nsOK := from.namespace == p.Namespace
				if peer.NamespaceSelector != nil {
					nsOK = selects(t, peer.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": from.namespace})
				}
				podOK := peer.PodSelector == nil || selects(t, peer.PodSelector, from.labels)
				peerOK = peerOK || (nsOK && podOK)
			}
			if portOK && peerOK {
				return true
			}
		}
	}
	return !isolated
}

// No Ray port of any pod of the workload namespace is reachable from outside the cluster; from
// other namespaces, only the heads' 8265 (from any pod) and the Ray pods' metrics port (from
// Managed Prometheus' collectors); within the namespace, everything.
func TestIngressPolicies(t *testing.T) {
	policies := ray.IngressPolicies("gke-rl")
	require.Len(t, policies, 3)
	assert.Equal(t, []string{"workload-ingress", "ray-head-ingress", "ray-metrics-ingress"}, []string{policies[0].Name, policies[1].Name, policies[2].Name})
	for _, p := range policies {
		assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, p.Spec.PolicyTypes, "%s: egress is left alone", p.Name)
	}

	head := map[string]string{"ray.io/node-type": "head", "ray.io/cluster": "rl-grpo-x7k2p"}
	worker := map[string]string{"ray.io/node-type": "worker", "ray.io/cluster": "rl-grpo-x7k2p"}
	gatePod := map[string]string{"batch.kubernetes.io/job-name": "rl-gate-nccl"}
	submitter := source{"gke-rl", map[string]string{"batch.kubernetes.io/job-name": "rl-grpo"}}
	collector := source{"gmp-system", map[string]string{"app.kubernetes.io/name": "collector"}}
	operatorPod := source{"kube-system", map[string]string{"app": "kuberay-operator"}}
	otherPod := source{"default", map[string]string{"app.kubernetes.io/name": "collector"}}

	rayPorts := []int{6379, 10001, 8265, 8080, 52365, 12345}
	for _, pod := range []map[string]string{head, worker, gatePod} {
		for _, p := range append(rayPorts, 222) {
			assert.False(t, admits(t, policies, pod, outside, p), "%v: port %d from outside the cluster", pod, p)
			assert.True(t, admits(t, policies, pod, submitter, p), "%v: port %d from the namespace", pod, p)
		}
	}
	for _, p := range []int{6379, 10001, 52365, 12345} {
		assert.False(t, admits(t, policies, head, operatorPod, p), "head port %d from another namespace", p)
		assert.False(t, admits(t, policies, worker, operatorPod, p), "worker port %d from another namespace", p)
	}
	assert.True(t, admits(t, policies, head, operatorPod, ray.DashboardPort), "the operator polls the head's job API from wherever it runs in the cluster")
	assert.False(t, admits(t, policies, worker, operatorPod, ray.DashboardPort), "a worker has no 8265 for other namespaces")
	assert.False(t, admits(t, policies, worker, operatorPod, 52365), "no node's dashboard agent for other namespaces")
	for _, pod := range []map[string]string{head, worker} {
		assert.True(t, admits(t, policies, pod, collector, 8080), "Managed Prometheus scrapes the metrics port")
		assert.False(t, admits(t, policies, pod, otherPod, 8080), "a pod labelled like a collector in another namespace does not")
		assert.False(t, admits(t, policies, pod, collector, 6379), "the collectors reach the metrics port only")
	}
	assert.False(t, admits(t, policies, gatePod, collector, 8080), "the gate's pods are not Ray pods")
}
