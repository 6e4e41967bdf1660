package ray

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Names of the workload namespace's NetworkPolicies. Dataplane V2, which the cluster uses,
// enforces them; they add up (a connection is admitted when any policy that selects its pod
// admits it), and they filter only the pod network: `kubectl port-forward` reaches a pod from
// inside its network namespace, and NCCL's traffic on the RDMA NICs is not on the pod network.
const (
	WorkloadPolicyName = "workload-ingress"
	HeadPolicyName     = "ray-head-ingress"
	MetricsPolicyName  = "ray-metrics-ingress"
)

// metricsPort is where KubeRay has Ray export Prometheus metrics when the pod names no metrics
// port (ray-operator v1.5.0 controllers/ray/utils/constant.go, DefaultMetricsPort); the Ray
// add-on's monitoring scrapes it.
const metricsPort = utils.DefaultMetricsPort

// Managed Service for Prometheus' collectors: pods labelled app.kubernetes.io/name=collector in
// the namespace gmp-system (GoogleCloudPlatform/prometheus-engine manifests/operator.yaml; GKE's
// managed collection runs the same DaemonSet).
const (
	collectorNamespace = "gmp-system"
	collectorLabel     = "app.kubernetes.io/name"
	collectorName      = "collector"
)

func port(p int) networkingv1.NetworkPolicyPort {
	v := intstr.FromInt32(int32(p))
	return networkingv1.NetworkPolicyPort{Port: &v}
}

func ingressPolicy(namespace, name string, pods metav1.LabelSelector, rules ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: pods,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     rules,
		},
	}
}

// WorkloadIngressPolicy admits traffic to every pod of the namespace (Ray heads and workers,
// the gate's pods and their sshd, the Jobs) from the namespace's own pods only, on every port:
// Ray's GCS (6379), its client (10001, which runs any code it is sent), every node's dashboard
// agent (52365, whose job API runs any command), the object manager and the workers' ports.
// Nothing outside the namespace reaches them; the exceptions are the policies below.
func WorkloadIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	return ingressPolicy(namespace, WorkloadPolicyName, metav1.LabelSelector{},
		networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}})
}

// HeadIngressPolicy also admits the Ray heads' dashboard and job API (8265) from every pod of
// the cluster, and from nothing outside it (no node, no address): the GKE-hosted KubeRay
// operator polls it for the RayJob's status from a place GKE's documentation does not name,
// through a pod or through the API server's proxy and its Konnectivity agents, which are pods
// too (closing it could leave a RayJob without a status).
func HeadIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	heads := metav1.LabelSelector{MatchLabels: map[string]string{utils.RayNodeTypeLabelKey: string(rayv1.HeadNode)}}
	return ingressPolicy(namespace, HeadPolicyName, heads, networkingv1.NetworkPolicyIngressRule{
		From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}},
		Ports: []networkingv1.NetworkPolicyPort{port(DashboardPort)},
	})
}

// MetricsIngressPolicy also admits the metrics port of every Ray pod from Managed Service for
// Prometheus' collectors only.
func MetricsIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	rayPods := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: utils.RayNodeTypeLabelKey, Operator: metav1.LabelSelectorOpExists}}}
	return ingressPolicy(namespace, MetricsPolicyName, rayPods, networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": collectorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{collectorLabel: collectorName}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{port(metricsPort)},
	})
}

// IngressPolicies are the workload namespace's policies, the default first.
func IngressPolicies(namespace string) []*networkingv1.NetworkPolicy {
	return []*networkingv1.NetworkPolicy{WorkloadIngressPolicy(namespace), HeadIngressPolicy(namespace), MetricsIngressPolicy(namespace)}
}
