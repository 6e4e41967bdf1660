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

// No port of any pod of the workload namespace is reachable from outside the cluster. The Ray
// pods take Ray's ports from the Ray pods only; a head's job API (8265) also from the
// submitter and from other namespaces (the GKE-hosted operator's unnamed place), not from the
// gate or the data preparation; the metrics port from Managed Prometheus' collectors. The other
// pods of the namespace (the gate's sshd) take the namespace's pods.
func TestIngressPolicies(t *testing.T) {
	policies := ray.IngressPolicies("gke-rl")
	var names []string
	for _, p := range policies {
		names = append(names, p.Name)
		assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, p.Spec.PolicyTypes, "%s: egress is left alone", p.Name)
	}
	assert.Equal(t, []string{"workload-ingress", "ray-ingress", "ray-head-ingress", "ray-metrics-ingress"}, names)

	head := map[string]string{"ray.io/node-type": "head", "ray.io/cluster": "rl-grpo-x7k2p"}
	worker := map[string]string{"ray.io/node-type": "worker", "ray.io/cluster": "rl-grpo-x7k2p"}
	gatePod := map[string]string{"batch.kubernetes.io/job-name": "rl-gate-nccl"}
	submitter := source{"gke-rl", map[string]string{"batch.kubernetes.io/job-name": "rl-grpo", "gke-rl/role": "ray-job-submitter"}}
	fromHead := source{"gke-rl", head}
	fromWorker := source{"gke-rl", worker}
	fromGate := source{"gke-rl", gatePod}
	fromPrep := source{"gke-rl", map[string]string{"batch.kubernetes.io/job-name": "rl-data-prep"}}
	lookalike := source{"default", map[string]string{"gke-rl/role": "ray-job-submitter"}}
	collector := source{"gmp-system", map[string]string{"app.kubernetes.io/name": "collector"}}
	operatorPod := source{"kube-system", map[string]string{"app": "kuberay-operator"}}
	otherPod := source{"default", map[string]string{"app.kubernetes.io/name": "collector"}}

	rayPorts := []int{6379, 10001, 8265, 8080, 52365, 12345}
	for _, pod := range []map[string]string{head, worker, gatePod} {
		for _, p := range append(rayPorts, 222) {
			assert.False(t, admits(t, policies, pod, outside, p), "%v: port %d from outside the cluster", pod, p)
		}
	}
	for _, pod := range []map[string]string{head, worker} {
		for _, p := range rayPorts {
			assert.True(t, admits(t, policies, pod, fromHead, p), "%v: port %d from the head", pod, p)
			assert.True(t, admits(t, policies, pod, fromWorker, p), "%v: port %d from a worker", pod, p)
			assert.False(t, admits(t, policies, pod, fromGate, p), "%v: port %d from the gate", pod, p)
			assert.False(t, admits(t, policies, pod, fromPrep, p), "%v: port %d from the data preparation", pod, p)
		}
	}
	assert.True(t, admits(t, policies, head, submitter, ray.DashboardPort), "the submitter submits and follows the run")
	for _, p := range []int{6379, 10001, 52365, 12345} {
		assert.False(t, admits(t, policies, head, submitter, p), "the submitter reaches the job API only, not head port %d", p)
		assert.False(t, admits(t, policies, worker, submitter, p), "nor worker port %d", p)
		assert.False(t, admits(t, policies, head, operatorPod, p), "head port %d from another namespace", p)
		assert.False(t, admits(t, policies, worker, operatorPod, p), "worker port %d from another namespace", p)
	}
	assert.True(t, admits(t, policies, head, operatorPod, ray.DashboardPort), "the operator polls the head's job API from wherever it runs in the cluster")
	assert.True(t, admits(t, policies, head, lookalike, ray.DashboardPort), "another namespace is admitted for the operator, whatever its labels")
	assert.False(t, admits(t, policies, worker, operatorPod, ray.DashboardPort), "a worker has no 8265 for other namespaces")
	for _, pod := range []map[string]string{head, worker} {
		assert.True(t, admits(t, policies, pod, collector, 8080), "Managed Prometheus scrapes the metrics port")
		assert.False(t, admits(t, policies, pod, otherPod, 8080), "a pod labelled like a collector in another namespace does not")
		assert.False(t, admits(t, policies, pod, collector, 6379), "the collectors reach the metrics port only")
	}
	assert.True(t, admits(t, policies, gatePod, fromGate, 222), "the gate's pods reach each other's sshd (MPI)")
	assert.True(t, admits(t, policies, gatePod, fromHead, 222), "the namespace's pods reach the gate's")
	assert.False(t, admits(t, policies, gatePod, collector, 8080), "the gate's pods are not Ray pods")
}
