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

// Pod Security's baseline level, as k8s.io/pod-security-admission v0.35.4 checks it (policy/):
// what a container may add of the capabilities (check_capabilities_baseline.go), the sysctls a
// pod may set (check_sysctls.go, as of 1.32) and the SELinux types it may ask for
// (check_seLinuxOptions.go, as of 1.31).
var (
	baselineCapabilities = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
		"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
	baselineSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
		"net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
	baselineSELinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)

// The SELinux and Windows rules hold for the pod's security context and each container's, which
// are of two types (CEL adds no lists of two types): one condition on a context s, used twice.
var (
	seLinuxBaseline = "!has(s.seLinuxOptions) || ((!has(s.seLinuxOptions.type) || s.seLinuxOptions.type in " + celList(baselineSELinuxTypes) + ") && !has(s.seLinuxOptions.user) && !has(s.seLinuxOptions.role))"
	notHostProcess  = "!has(s.windowsOptions) || !has(s.windowsOptions.hostProcess) || !s.windowsOptions.hostProcess"
)

// celList is a CEL list of string literals.
func celList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// WorkloadPodPolicy is a ValidatingAdmissionPolicy, bound to the workload namespace, that refuses
// a pod the program never makes there: what Pod Security's baseline level refuses, but for the
// two host directories the GPU pods need read-only. That is a privileged container, the node's
// network, PID or IPC namespace, a host port, a host directory other than hostPathsAllowed or one
// of those mounted writable, an added capability outside baseline's set (SYS_ADMIN, BPF,
// DAC_READ_SEARCH, ... are each root on the node without privileged), an Unconfined seccomp or
// AppArmor profile, an unmasked /proc, an unsafe sysctl, an SELinux type, user or role of its
// own, a Windows host process, and any ephemeral container (a debugging container would escape
// every rule on containers; the program adds none).
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
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/ephemeralcontainers"}, Scope: ptr.To(admissionv1.NamespacedScope)},
				}}},
			},
			Variables: []admissionv1.Variable{
				{Name: "containers", Expression: "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"},
				{Name: "hostPaths", Expression: "has(object.spec.volumes) ? object.spec.volumes.filter(v, has(v.hostPath)) : []"},
				// The pod's security context and each container's: seccomp, AppArmor and SELinux
				// can be set at either level.
				{Name: "podSecurity", Expression: "has(object.spec.securityContext) ? [object.spec.securityContext] : []"},
				{Name: "containerSecurity", Expression: "variables.containers.filter(c, has(c.securityContext)).map(c, c.securityContext)"},
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
				{
					Expression: "variables.containerSecurity.all(s, !has(s.capabilities) || !has(s.capabilities.add) || s.capabilities.add.all(x, x in " + celList(baselineCapabilities) + "))",
					Message:    "a pod of the gke-rl workload namespace may add no capability but " + strings.Join(baselineCapabilities, ", ") + " (Pod Security baseline): SYS_ADMIN, BPF, DAC_READ_SEARCH and the others are root on the node",
				},
				{
					Expression: "variables.podSecurity.all(s, !has(s.seccompProfile) || s.seccompProfile.type != 'Unconfined') && variables.containerSecurity.all(s, !has(s.seccompProfile) || s.seccompProfile.type != 'Unconfined')",
					Message:    "a pod of the gke-rl workload namespace may not run Unconfined by seccomp: the program's pods run RuntimeDefault",
				},
				{
					Expression: "variables.podSecurity.all(s, !has(s.appArmorProfile) || s.appArmorProfile.type != 'Unconfined') && variables.containerSecurity.all(s, !has(s.appArmorProfile) || s.appArmorProfile.type != 'Unconfined') && " +
						"(!has(object.metadata.annotations) || object.metadata.annotations.all(k, !k.startsWith('container.apparmor.security.beta.kubernetes.io/') || object.metadata.annotations[k] == 'runtime/default' || object.metadata.annotations[k].startsWith('localhost/')))",
					Message: "a pod of the gke-rl workload namespace may not run Unconfined by AppArmor (allowed: RuntimeDefault or a Localhost profile)",
				},
				{
					Expression: "variables.containerSecurity.all(s, !has(s.procMount) || s.procMount == 'Default')",
					Message:    "a pod of the gke-rl workload namespace may not unmask /proc (procMount Unmasked): the program's pods use the default",
				},
				{
					Expression: "variables.containers.all(c, !has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))",
					Message:    "a pod of the gke-rl workload namespace may not bind a host port: the program's pods use none",
				},
				{
					Expression: "variables.podSecurity.all(s, !has(s.sysctls) || s.sysctls.all(x, x.name in " + celList(baselineSysctls) + "))",
					Message:    "a pod of the gke-rl workload namespace may set no sysctl outside Pod Security baseline's safe set",
				},
				{
					Expression: "variables.podSecurity.all(s, " + seLinuxBaseline + ") && variables.containerSecurity.all(s, " + seLinuxBaseline + ")",
					Message:    "a pod of the gke-rl workload namespace may not choose its SELinux user, role or a type outside Pod Security baseline's",
				},
				{
					Expression: "variables.podSecurity.all(s, " + notHostProcess + ") && variables.containerSecurity.all(s, " + notHostProcess + ")",
					Message:    "a pod of the gke-rl workload namespace may not run as a Windows host process",
				},
				{
					Expression: "!has(object.spec.ephemeralContainers) || size(object.spec.ephemeralContainers) == 0",
					Message:    "a pod of the gke-rl workload namespace may have no ephemeral container: the rules above do not reach them, and the program adds none",
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
