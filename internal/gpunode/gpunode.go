// Package gpunode is what a GKE GPU node offers the pods that run on it, defined once for the
// node pool that creates it, the RDMA installer that prepares it and the Ray workers that use it:
// its taint and labels, the host directories the driver and the gIB NCCL plugin land in, and its
// extra NICs in order.
package gpunode

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The taint every GPU node carries, so that only pods that tolerate it (the Ray workers, the
// RDMA installer) land there. TaintEffectGKE is the same effect as GKE's node pool API spells it.
const (
	TaintKey       = "nvidia.com/gpu"
	TaintValue     = "present"
	TaintEffect    = corev1.TaintEffectNoSchedule
	TaintEffectGKE = "NO_SCHEDULE"
)

// Toleration is what a pod needs to run on a GPU node.
func Toleration() corev1.Toleration {
	return corev1.Toleration{Key: TaintKey, Operator: corev1.TolerationOpExists, Effect: TaintEffect}
}

// GPUResource is the extended resource of NVIDIA GPUs.
const GPUResource = corev1.ResourceName("nvidia.com/gpu")

// Node labels that GKE sets or reads, and the program's own role label.
const (
	AcceleratorLabel         = "cloud.google.com/gke-accelerator"
	AcceleratorCountLabel    = "cloud.google.com/gke-accelerator-count"
	NodePoolLabel            = "cloud.google.com/gke-nodepool"
	SpotLabel                = "cloud.google.com/gke-spot"
	FlexStartLabel           = "cloud.google.com/gke-flex-start"
	ComputeClassLabel        = "cloud.google.com/compute-class"
	ReservationLabel         = "cloud.google.com/reservation-name"
	ReservationAffinityLabel = "cloud.google.com/reservation-affinity"
	// DriverVersionLabel asks Autopilot for GPU nodes with GKE's `default` or `latest` driver.
	DriverVersionLabel = "cloud.google.com/gke-gpu-driver-version"
	// LocalSSDEphemeralLabel asks Autopilot for nodes whose ephemeral storage is on local SSDs.
	LocalSSDEphemeralLabel = "cloud.google.com/gke-ephemeral-storage-local-ssd"
	// LustreMultiNICLabel set to "false" keeps the Lustre CSI driver on the primary NIC.
	LustreMultiNICLabel = "lustre.csi.storage.gke.io/multi-nic"
	// RoleLabel marks the program's pools (`cpu`, `gpu`).
	RoleLabel = "gke-rl/role"
)

// Host directories and where GPU containers mount them. GKE installs the driver libraries under
// NvidiaHostPath; the RDMA installer (container-engine-accelerators gpudirect-rdma/
// nccl-rdma-installer.yaml) copies the gIB NCCL plugin to GIBHostPath.
const (
	NvidiaHostPath = "/home/kubernetes/bin/nvidia"
	GIBHostPath    = "/home/kubernetes/bin/gib"
	NvidiaPath     = "/usr/local/nvidia"
	GIBPath        = "/usr/local/gib"
	// NCCLEnvScript sets the gIB plugin's NCCL environment; workers source it before `ray start`.
	NCCLEnvScript = GIBPath + "/scripts/set_nccl_env.sh"
)

// NICKind is the VPC a GPU node's extra NIC sits in.
type NICKind string

// The extra NIC kinds.
const (
	GVNIC NICKind = "gvnic"
	RDMA  NICKind = "rdma"
)

// NIC is one extra network interface of a GPU node, beyond eth0 on the cluster's VPC. Its Name
// is the name of the Network object that pods list in their interfaces annotation.
type NIC struct {
	Name string
	Kind NICKind
	// Subnet is the index of the NIC's subnet in its VPC (always 0 for gVNIC).
	Subnet int
}

// NICs is the standard layout of an A4 or A3 Ultra node, in NIC order (eth1, eth2, ...):
// `gvnic-1` on the gVNIC subnet, then `rdma-0` ... `rdma-<n-1>` on the RDMA subnets. The node
// pool's additional networks, the Network objects and every pod's annotation follow this list.
func NICs(rdmaSubnets int) []NIC {
	out := []NIC{{Name: "gvnic-1", Kind: GVNIC}}
	for i := 0; i < rdmaSubnets; i++ {
		out = append(out, NIC{Name: fmt.Sprintf("rdma-%d", i), Kind: RDMA, Subnet: i})
	}
	return out
}

// RDMAInterfaces are the pod interface names of the RDMA NICs (Interfaces' order).
func RDMAInterfaces(nics []NIC) []string {
	interfaces := Interfaces(nics)
	var out []string
	for i, n := range nics {
		if n.Kind == RDMA {
			out = append(out, interfaces[i+1].InterfaceName) // eth0 is the pod network
		}
	}
	return out
}

// Annotations that attach a pod's interfaces to the node's extra networks.
const (
	DefaultInterfaceAnnotation = "networking.gke.io/default-interface"
	InterfacesAnnotation       = "networking.gke.io/interfaces"
)

// Interface is one entry of the `networking.gke.io/interfaces` annotation.
type Interface struct {
	InterfaceName string `json:"interfaceName"`
	Network       string `json:"network"`
}

// Interfaces maps eth0 to the pod network and eth1... to the extra NICs in order.
func Interfaces(nics []NIC) []Interface {
	out := []Interface{{InterfaceName: "eth0", Network: "default"}}
	for i, n := range nics {
		out = append(out, Interface{InterfaceName: "eth" + strconv.Itoa(i+1), Network: n.Name})
	}
	return out
}

// InterfaceAnnotations are the annotations that give a pod every NIC of the node.
func InterfaceAnnotations(nics []NIC) map[string]string {
	// A slice of string pairs always marshals.
	b, _ := json.Marshal(Interfaces(nics))
	return map[string]string{DefaultInterfaceAnnotation: "eth0", InterfacesAnnotation: string(b)}
}

// Volumes are what a GPU container needs from its node: /dev/shm in memory of shmGiB (NCCL and
// vLLM use it between processes), and the driver libraries and the gIB plugin from the host.
// The host directories must exist: until the RDMA installer has copied the plugin, the kubelet
// retries the mount instead of starting a container without it. VolumeMounts mounts them.
func Volumes(shmGiB int) []corev1.Volume {
	shm := resource.MustParse(fmt.Sprintf("%dGi", shmGiB))
	hostPath := func(name, path string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
		}}
	}
	return []corev1.Volume{
		{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}},
		hostPath("nvidia", NvidiaHostPath),
		hostPath("gib", GIBHostPath),
	}
}

// VolumeMounts mounts Volumes where GPU containers expect them, the host's driver and gIB
// plugin directories read-only: code in a pod must not replace the NCCL plugin or the driver
// libraries that every later GPU pod on the node loads. Only the installer DaemonSet writes them.
// The NCCL diagnostic image runs with them read-only too: container-engine-accelerators'
// gpudirect-rdma/nccl-test-a4-autopilot.yaml (992db812) mounts both read-only for the same
// image and the same /scripts/container_entry.sh (its Standard twin nccl-test-a4.yaml leaves
// them read-write).
func VolumeMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: "dshm", MountPath: "/dev/shm"},
		{Name: "nvidia", MountPath: NvidiaPath, ReadOnly: true},
		{Name: "gib", MountPath: GIBPath, ReadOnly: true},
	}
}
