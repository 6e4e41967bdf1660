package ray_test

import (
	"testing"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"gke-rl/ray"
)

// source is where a connection comes from: a pod (its namespace and labels), or, with no
// namespace, something that is not a pod of the cluster (a node, an address in the VPC).
type source struct {
	namespace string
	labels    map[string]string
}

var outside = source{}

// admits asks an implementation of the NetworkPolicy specification, cyclonus's matcher (the
// engine of the network-policy-api project's policy-assistant, which grew out of it), whether
// the policies let from reach port (TCP) of a pod of the policies' namespace labelled pod.
// Namespaces carry the label the API server gives each, kubernetes.io/metadata.name.
func admits(t *testing.T, policies []*networkingv1.NetworkPolicy, pod map[string]string, from source, port int) bool {
	t.Helper()
	require.NotEmpty(t, policies)
	namespace := policies[0].Namespace
	peer := &matcher.TrafficPeer{IP: "10.128.0.9"} // outside: a node or an address of the VPC
	if from.namespace != "" {
		peer = &matcher.TrafficPeer{IP: "10.4.1.7", Internal: &matcher.InternalPeer{
			Namespace: from.namespace, NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": from.namespace}, PodLabels: from.labels}}
	}
	traffic := &matcher.Traffic{
		Source: peer,
		Destination: &matcher.TrafficPeer{IP: "10.4.2.3", Internal: &matcher.InternalPeer{
			Namespace: namespace, NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": namespace}, PodLabels: pod}},
		ResolvedPort: port, Protocol: corev1.ProtocolTCP,
	}
	return matcher.BuildNetworkPolicies(false, policies).IsTrafficAllowed(traffic).Ingress.IsAllowed()
}

// No port of any pod of the workload namespace is reachable from outside the cluster. The Ray
// pods take Ray's ports from the Ray pods only; a head's job API (8265) also from the
// submitter and from the API server's Konnectivity agents (the GKE-hosted operator's way in),
// not from the gate, the data preparation or any other namespace's pod; the metrics port from
// Managed Prometheus' collectors. The other
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
	konnectivity := source{ray.KonnectivityNamespace, ray.KonnectivityAgentLabels}
	agentElsewhere := source{"team-b", ray.KonnectivityAgentLabels}
	otherJob := source{"team-b", map[string]string{"batch.kubernetes.io/job-name": "ray-job-of-team-b"}}
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
		assert.False(t, admits(t, policies, head, otherJob, p), "head port %d from another namespace's job", p)
	}
	assert.True(t, admits(t, policies, head, konnectivity, ray.DashboardPort), "the operator polls the head's job API through the API server's proxy")
	for _, p := range []int{6379, 10001, 52365, 12345} {
		assert.False(t, admits(t, policies, head, konnectivity, p), "the API server's agents reach the job API only, not head port %d", p)
	}
	assert.False(t, admits(t, policies, worker, konnectivity, ray.DashboardPort), "a worker has no 8265 for the agents")
	assert.False(t, admits(t, policies, head, otherJob, ray.DashboardPort), "a job of another namespace does not reach the job API")
	assert.False(t, admits(t, policies, head, operatorPod, ray.DashboardPort), "nor does another pod of kube-system")
	assert.False(t, admits(t, policies, head, agentElsewhere, ray.DashboardPort), "nor a pod labelled as an agent in another namespace")
	assert.False(t, admits(t, policies, head, lookalike, ray.DashboardPort), "nor a pod labelled as a submitter in another namespace")
	for _, pod := range []map[string]string{head, worker} {
		assert.True(t, admits(t, policies, pod, collector, 8080), "Managed Prometheus scrapes the metrics port")
		assert.False(t, admits(t, policies, pod, otherPod, 8080), "a pod labelled like a collector in another namespace does not")
		assert.False(t, admits(t, policies, pod, collector, 6379), "the collectors reach the metrics port only")
	}
	assert.True(t, admits(t, policies, gatePod, fromGate, 222), "the gate's pods reach each other's sshd (MPI)")
	assert.True(t, admits(t, policies, gatePod, fromHead, 222), "the namespace's pods reach the gate's")
	assert.False(t, admits(t, policies, gatePod, collector, 8080), "the gate's pods are not Ray pods")
}
