package cluster

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/internal/gpunode"
	"gke-rl/internal/kube"
)

// WorkloadPodPolicyName names the policy that narrows what the workload namespace's pods may take
// of their node.
const WorkloadPodPolicyName = "gke-rl-workload-pods"

// hostPathsAllowed are the node directories a workload pod may mount, read-only: the driver's
// libraries and the gIB NCCL plugin (gpunode.Volumes).
var hostPathsAllowed = []string{gpunode.NvidiaHostPath, gpunode.GIBHostPath}

// WorkloadPodPolicy is a ValidatingAdmissionPolicy, bound to the workload namespace, that refuses
// a pod the program never makes there: a privileged container, the node's network, PID or IPC
// namespace, a host directory other than hostPathsAllowed, or one of those mounted writable.
// The namespace's Pod Security level must stay privileged (PodSecurityLabels: the baseline level
// forbids every hostPath volume, and the GPU pods need the two read-only ones), and whoever may
// create a Job there (the deploy identity, a workflow acting as it) could otherwise run a
// privileged pod, which is root on the node. Only an administrator's `up` applies it: the deploy
// identity reads admission policies and writes none (DeployAccess).
func WorkloadPodPolicy(namespace string) []kube.Object {
	labels := map[string]string{"app.kubernetes.io/managed-by": "gke-rl"}
	quoted := make([]string, len(hostPathsAllowed))
	for i, p := range hostPathsAllowed {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: WorkloadPodPolicyName, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To(admissionv1.NamespacedScope)},
				}}},
			},
			Variables: []admissionv1.Variable{
				{Name: "containers", Expression: "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"},
				{Name: "hostPaths", Expression: "has(object.spec.volumes) ? object.spec.volumes.filter(v, has(v.hostPath)) : []"},
			},
			Validations: []admissionv1.Validation{
				{
					Expression: "variables.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)",
					Message:    "a pod of the gke-rl workload namespace may not run a privileged container: the program makes none",
				},
				{
					Expression: "!(has(object.spec.hostNetwork) && object.spec.hostNetwork) && !(has(object.spec.hostPID) && object.spec.hostPID) && !(has(object.spec.hostIPC) && object.spec.hostIPC)",
					Message:    "a pod of the gke-rl workload namespace may not share the node's network, PID or IPC namespace: the program's pods share none",
				},
				{
					Expression: fmt.Sprintf("variables.hostPaths.all(v, v.hostPath.path in [%s])", strings.Join(quoted, ", ")),
					Message:    "a pod of the gke-rl workload namespace may mount no host directory but " + strings.Join(hostPathsAllowed, " and "),
				},
				{
					Expression: "variables.containers.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m, !variables.hostPaths.exists(v, v.name == m.name) || (has(m.readOnly) && m.readOnly)))",
					Message:    "a pod of the gke-rl workload namespace mounts host directories read-only: the driver and the NCCL plugin that every later GPU pod of the node loads are the installer's to write",
				},
			},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: WorkloadPodPolicyName + "-" + namespace, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        WorkloadPodPolicyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace},
			}},
		},
	}
	return []kube.Object{policy, binding}
}
