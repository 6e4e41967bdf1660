package ray

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// HeadPolicyName names the NetworkPolicy of the Ray heads.
const HeadPolicyName = "ray-head-ingress"

// metricsPort is where KubeRay has Ray export Prometheus metrics when the pod names no metrics
// port (ray-operator v1.5.0 controllers/ray/utils/constant.go, DefaultMetricsPort); the Ray
// add-on's monitoring scrapes it.
const metricsPort = utils.DefaultMetricsPort

// HeadIngressPolicy admits traffic to every Ray head of the namespace (KubeRay labels them
// ray.io/node-type=head) from the namespace's own pods only (the workers, the RayJob submitter,
// the Jobs), on every port: the GCS (6379), the Ray client (10001, which runs any code it is
// sent), the object manager and the rest. Two ports stay open to the whole cluster: the
// dashboard (8265), which the GKE-hosted KubeRay operator polls for the RayJob's status from a
// place GKE's documentation does not name (closing it could leave a RayJob without a status),
// and the metrics port, which Managed Prometheus's collectors scrape from their own namespace.
// `kubectl port-forward` reaches the pod from inside its network namespace and is not filtered.
// Dataplane V2, which the cluster uses, enforces NetworkPolicies.
func HeadIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	port := func(p int) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(int32(p))
		return networkingv1.NetworkPolicyPort{Port: &v}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: HeadPolicyName, Namespace: namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{utils.RayNodeTypeLabelKey: string(rayv1.HeadNode)}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}},
				{Ports: []networkingv1.NetworkPolicyPort{port(DashboardPort), port(metricsPort)}},
			},
		},
	}
}
