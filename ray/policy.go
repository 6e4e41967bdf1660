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
	RayPolicyName      = "ray-ingress"
	HeadPolicyName     = "ray-head-ingress"
	MetricsPolicyName  = "ray-metrics-ingress"
)

// SubmitterLabels label the RayJob's submitter pods (its submitterPodTemplate, which KubeRay
// v1.5.0 passes to the submitter Job as it is: rayjob_controller.go, getSubmitterTemplate): the
// only pods of the namespace that reach a head's job API.
var SubmitterLabels = map[string]string{"gke-rl/role": "ray-job-submitter"}

// rayPods selects every Ray pod (KubeRay labels heads and workers with ray.io/node-type).
func rayPods() metav1.LabelSelector {
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: utils.RayNodeTypeLabelKey, Operator: metav1.LabelSelectorOpExists}}}
}

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

// WorkloadIngressPolicy admits traffic to the namespace's pods that are not Ray pods (the gate's,
// whose sshd carries MPI between them, the data preparation, the submitter) from the
// namespace's own pods only, on every port. Nothing outside the namespace reaches them.
func WorkloadIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	notRay := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: utils.RayNodeTypeLabelKey, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	return ingressPolicy(namespace, WorkloadPolicyName, notRay,
		networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}})
}

// RayIngressPolicy admits traffic to the Ray pods from the Ray pods only, on every port: Ray's
// GCS (6379), its client (10001, which runs any code it is sent), every node's dashboard agent
// (52365, whose job API runs any command), the object manager and the workers' ports. The
// namespace's other pods (the gate, the data preparation) do not reach them; the exceptions are
// the policies below.
func RayIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	sources := rayPods()
	return ingressPolicy(namespace, RayPolicyName, rayPods(),
		networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &sources}}})
}

// HeadIngressPolicy also admits the Ray heads' dashboard and job API (8265), which runs any
// command it is sent, from the submitter's pods (SubmitterLabels) and from the API server's
// Konnectivity agents, and from nothing else: no other pod of this namespace, no pod of another
// namespace, nothing outside the cluster. The agents are where the KubeRay operator's requests
// come from: GKE hosts the operator of its Ray add-on outside the cluster's network, and an
// operator there reaches a head's dashboard through the API server's service proxy
// (`/api/v1/namespaces/<ns>/services/<head>:dashboard/proxy`: KubeRay v1.5.0
// ray-operator/controllers/ray/utils/util.go, GetRayDashboardClientFunc, its
// --use-kubernetes-proxy mode), which GKE's API server dials through its Konnectivity agents,
// pods of kube-system labelled k8s-app=konnectivity-agent, so that the connection arrives from a
// pod address (tigera/operator PR #5212, which admits them for the same reason on GKE and AKS).
func HeadIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	heads := metav1.LabelSelector{MatchLabels: map[string]string{utils.RayNodeTypeLabelKey: string(rayv1.HeadNode)}}
	return ingressPolicy(namespace, HeadPolicyName, heads, networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{
			{PodSelector: &metav1.LabelSelector{MatchLabels: SubmitterLabels}},
			{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": KonnectivityNamespace}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: KonnectivityAgentLabels},
			},
		},
		Ports: []networkingv1.NetworkPolicyPort{port(DashboardPort)},
	})
}

// GKE's Konnectivity agents: the namespace and labels of the pods the API server's connections
// into the cluster come from (HeadIngressPolicy).
const KonnectivityNamespace = "kube-system"

// KonnectivityAgentLabels label the agents in KonnectivityNamespace.
var KonnectivityAgentLabels = map[string]string{"k8s-app": "konnectivity-agent"}

// MetricsIngressPolicy also admits the metrics port of every Ray pod from Managed Service for
// Prometheus' collectors only.
func MetricsIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	return ingressPolicy(namespace, MetricsPolicyName, rayPods(), networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": collectorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{collectorLabel: collectorName}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{port(metricsPort)},
	})
}

// IngressPolicies are the workload namespace's policies, the default first.
func IngressPolicies(namespace string) []*networkingv1.NetworkPolicy {
	return []*networkingv1.NetworkPolicy{WorkloadIngressPolicy(namespace), RayIngressPolicy(namespace), HeadIngressPolicy(namespace), MetricsIngressPolicy(namespace)}
}
