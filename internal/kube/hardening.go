package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// DroppedCapabilities are the container runtime's default capabilities that no container of
// the workload uses, each with the reason it is safe to drop:
//   - NET_RAW: raw and packet sockets (forged packets on the pod network). NCCL's RDMA goes
//     through the verbs devices, its bootstrap and Ray through TCP; nothing pings.
//   - MKNOD: creating device nodes. The GPUs and RDMA NICs come as devices the runtime adds.
//   - SETFCAP: setting file capabilities on binaries of the shared volume.
//   - SYS_CHROOT and AUDIT_WRITE: used only by sshd (privilege separation chroots, login
//     records go to the audit log), which runs in the NCCL gate alone; its container keeps them.
//
// The rest stay: the framework images run as root on volumes whose files other pods created
// (CHOWN, DAC_OVERRIDE, FOWNER, FSETID), Ray's workers signal their processes (KILL), and the
// images' entrypoints switch users (SETUID, SETGID, SETPCAP).
var DroppedCapabilities = []corev1.Capability{"NET_RAW", "MKNOD", "SETFCAP", "SYS_CHROOT", "AUDIT_WRITE"}

// SSHDCapabilities are the ones sshd needs of DroppedCapabilities.
var SSHDCapabilities = []corev1.Capability{"SYS_CHROOT", "AUDIT_WRITE"}

// Harden applies to a pod of the workload what its images allow (the framework and diagnostic
// images run as root; neither is rebuilt here):
//   - the container runtime's default seccomp profile (RuntimeDefault), which Autopilot applies
//     to every pod anyway, so the images are known to run under it;
//   - no service account token: no pod of the workload calls the Kubernetes API (Ray's
//     autoscaler is off; Workload Identity and the GCS FUSE and Lustre CSI drivers get their
//     credentials from the GKE metadata server and the kubelet, not from a mounted token);
//   - in every container, init containers included, that does not say otherwise: no privilege
//     escalation (no_new_privs: a setuid binary gains nothing) and DroppedCapabilities dropped. A
//     container that needs either (the NCCL gate's sshd) sets its own, with its reason.
func Harden(spec *corev1.PodSpec) {
	spec.AutomountServiceAccountToken = ptr.To(false)
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			hardenContainer(&cs[i])
		}
	}
}

func hardenContainer(c *corev1.Container) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if c.SecurityContext.AllowPrivilegeEscalation == nil {
		c.SecurityContext.AllowPrivilegeEscalation = ptr.To(false)
	}
	if c.SecurityContext.Capabilities == nil {
		c.SecurityContext.Capabilities = &corev1.Capabilities{Drop: slices.Clone(DroppedCapabilities)}
	}
}
