package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Harden applies to a pod of the workload what its images allow (the framework and diagnostic
// images run as root; neither is rebuilt here):
//   - the container runtime's default seccomp profile (RuntimeDefault), which Autopilot applies
//     to every pod anyway, so the images are known to run under it;
//   - no service account token: no pod of the workload calls the Kubernetes API (Ray's
//     autoscaler is off; Workload Identity and the GCS FUSE and Lustre CSI drivers get their
//     credentials from the GKE metadata server and the kubelet, not from a mounted token);
//   - no privilege escalation (no_new_privs) in every container that does not say otherwise: a
//     setuid binary gains nothing. A container that needs it (the NCCL gate's sshd) sets
//     AllowPrivilegeEscalation itself, with its reason.
//
// Capabilities stay the runtime's default: the framework images run as root on volumes whose
// files other pods created (dropping DAC_OVERRIDE or CHOWN could break them), and the GPU pods
// use the RDMA NICs.
func Harden(spec *corev1.PodSpec) {
	spec.AutomountServiceAccountToken = ptr.To(false)
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		if c.SecurityContext.AllowPrivilegeEscalation == nil {
			c.SecurityContext.AllowPrivilegeEscalation = ptr.To(false)
		}
	}
}
