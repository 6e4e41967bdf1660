// Package gate is the post-deploy gate: Jobs on the GPU nodes that check every GPU and RDMA NIC,
// NCCL's all_gather over the RDMA fabric and the shared volume before the Ray cluster and the
// run start, their scripts, and the component that registers and awaits them.
package gate

import (
	_ "embed"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/internal/gpunode"
	"gke-rl/internal/kube"
)

// Image is container-engine-accelerators' NCCL diagnostic image for the gIB plugin, at the
// installer's version (gpudirect-rdma/nccl-test-a4.yaml): NCCL tests, MPI over ssh, and
// /usr/local/gib/scripts/run_nccl_tests.sh.
const Image = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1"

// ResultPrefix starts every line a gate Job prints as its result, which the stack output
// `gateResults` collects.
const ResultPrefix = "gate:"

// RDMANICGbps is the line rate of each RDMA NIC of the GPU machines (ConnectX-7, 400 Gb/s, on A4
// and A3 Ultra: docs.cloud.google.com/compute/docs/gpus, "GPU network bandwidth").
const RDMANICGbps = 400

// MaxAllGatherBusGBps is the bus bandwidth all_gather cannot exceed on nodes nodes with nics
// RDMA NICs each. Across nodes, every node receives (nodes-1)/nodes of the data over its NICs
// (NVLink carries the rest), so the bus bandwidth stays below the NICs' line rate ×
// nodes/(nodes-1). On one node the gate runs all_gather over the NICs alone: every hop of NCCL's
// ring goes through one GPU's NIC, so one NIC's line rate bounds it. A minimum above the bound
// can never pass.
func MaxAllGatherBusGBps(nodes, nics int) int {
	if nodes < 2 {
		return RDMANICGbps / 8
	}
	return nics * RDMANICGbps / 8 * nodes / (nodes - 1)
}

// OneNodeNCCLEnv makes NCCL's all_gather on one node go through the RDMA NICs: without
// peer-to-peer (NVLink, PCIe), shared memory and NVLink SHARP (NVLS), the only transport left
// between two GPUs of the node is the network plugin (NCCL's env documentation,
// docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
var OneNodeNCCLEnv = []string{"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_NVLS_ENABLE=0"}

// The gate's clocks. Each gate pod bounds its own work with the pod's activeDeadlineSeconds,
// which the kubelet counts from the pod's startTime, when the node's kubelet accepts it
// (k8s.io/api core/v1 PodSpec.ActiveDeadlineSeconds and PodStatus.StartTime): a node that comes
// late (spot capacity, a scale-up from zero, 10 to 15 minutes of creation with the driver and
// the RDMA installer) does not shorten it. The Job's own activeDeadlineSeconds, counted from its
// creation, adds the capacity wait (Args.CapacityWaitSeconds) in front: past it, no node came,
// and the gate fails with the Job's DeadlineExceeded, which troubleshooting names no capacity.
const (
	// gatePullSeconds covers the diagnostic image's pull on a new node.
	gatePullSeconds = 15 * 60
	// ncclGateWorkSeconds: the peers' sshd once their pods run (5 min), then all_gather from 1 KB
	// to 8 GB (under a minute on two A4 nodes in the recorded run; the 8 GB size grows with the
	// nodes).
	ncclGateWorkSeconds = 5*60 + 10*60
	// storageGateMinMBps is the slowest write or read the storage deadline allows for.
	storageGateMinMBps = 50
	// peerRetrySeconds is how often index 0 asks a peer's sshd.
	peerRetrySeconds = 5
)

// Exit statuses of the gate's scripts, one per cause. The Jobs' podFailurePolicy fails the Job
// on each with a FailJob rule, whose condition message names the container's exit status
// ("... failed with exit code 23 matching FailJob rule at index 1": the Job controller,
// k8s.io/kubernetes pkg/controller/job/pod_failure_policy.go), which `pulumi up` prints and
// docs/troubleshooting.md reads back into the cause.
const (
	ExitNoCapacity int32 = 20
	ExitGPUHealth  int32 = 21
	ExitRDMANICs   int32 = 22
	ExitNCCL       int32 = 23
	ExitVolume     int32 = 24
)

// FailureCauses names the cause of each exit status, as docs/troubleshooting.md does.
var FailureCauses = map[int32]string{
	ExitNoCapacity: "no capacity: a peer's pod got no GPU node within the capacity wait",
	ExitGPUHealth:  "GPU health: a GPU missing or with uncorrected ECC errors",
	ExitRDMANICs:   "RDMA NICs: a NIC down or absent",
	ExitNCCL:       "NCCL: all_gather failed, or its bus bandwidth is below the minimum",
	ExitVolume:     "volume: an I/O error on the shared volume",
}

// exitEnv gives the scripts their exit statuses.
func exitEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "EXIT_NO_CAPACITY", Value: strconv.Itoa(int(ExitNoCapacity))},
		{Name: "EXIT_GPU_HEALTH", Value: strconv.Itoa(int(ExitGPUHealth))},
		{Name: "EXIT_RDMA_NICS", Value: strconv.Itoa(int(ExitRDMANICs))},
		{Name: "EXIT_NCCL", Value: strconv.Itoa(int(ExitNCCL))},
		{Name: "EXIT_VOLUME", Value: strconv.Itoa(int(ExitVolume))},
	}
}

// podFailurePolicy keeps a gate Job alive through a pod's disruption and names the cause of a
// failed check. A pod that the node's preemption (spot), a drain or the scheduler's preemption
// ends carries the DisruptionTarget condition: Ignore makes the Job start a new pod for it
// without counting a failure (Kubernetes' "Handling retriable and non-retriable pod failures
// with Pod failure policy"). The checks' own statuses fail the Job at once, naming the status.
func podFailurePolicy(container string) *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
		},
		{
			Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To(container),
				Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
				Values:        []int32{ExitNoCapacity, ExitGPUHealth, ExitRDMANICs, ExitNCCL, ExitVolume},
			},
		},
	}}
}

// Args place and size the post-deploy gate.
type Args struct {
	// Name prefixes the gate's objects; Namespace holds them.
	Name, Namespace string
	// GPUsPerNode is what each node must show; NCCLNodes is how many nodes are checked, and
	// the all_gather spans them when there are two or more.
	GPUsPerNode, NCCLNodes int
	// MinBusBandwidthGBps fails the NCCL test below it.
	MinBusBandwidthGBps int
	// CapacityWaitSeconds is how long a gate pod may wait for its GPU node before the gate fails
	// naming no capacity (gate.capacityWaitMinutes).
	CapacityWaitSeconds int
	// StorageMiB is written and read back on the shared volume; ExpectedMBps is the storage's
	// aggregate throughput, printed next to the measured one.
	StorageMiB   int
	ExpectedMBps int
	NodeSelector map[string]string
	NICs         []gpunode.NIC
	Storage      kube.SharedVolume
}

// ncclGateScript is the NCCL gate's pod script (nccl.sh); ncclGateEnv gives it its values.
//
//go:embed nccl.sh
var ncclGateScript string

// storageGateScript is the storage gate's script (storage.sh).
//
//go:embed storage.sh
var storageGateScript string

// ncclGateEnv are the NCCL gate script's values: the GPUs each node must show, the pods' host
// names (index 0 first) and the minimum bus bandwidth.
func ncclGateEnv(a Args) []corev1.EnvVar {
	hosts := make([]string, a.NCCLNodes)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("%s-nccl-%d.%s-nccl", a.Name, i, a.Name)
	}
	return []corev1.EnvVar{
		// Open MPI cuts host names to their first label unless told to keep them, and
		// `<job>-nccl-1` alone does not resolve (container-engine-accelerators
		// gpudirect-rdma/nccl-test-a4x-max-jobset.yaml at 992db812 passes
		// `--mca orte_keep_fqdn_hostnames 1`); the image's run_nccl_tests.sh starts mpirun, which
		// reads MCA parameters from the environment.
		{Name: "OMPI_MCA_orte_keep_fqdn_hostnames", Value: "1"},
		// NCCL then names its transport ("Using network ..."), which a failure reports.
		{Name: "NCCL_DEBUG", Value: "INFO"},
		{Name: "NCCL_DEBUG_SUBSYS", Value: "INIT,NET"},
		{Name: "GPUS", Value: strconv.Itoa(a.GPUsPerNode)},
		{Name: "RDMA_INTERFACES", Value: strings.Join(gpunode.RDMAInterfaces(a.NICs), " ")},
		{Name: "HOSTS", Value: strings.Join(hosts, " ")},
		{Name: "MIN_BUS_BANDWIDTH_GBPS", Value: strconv.Itoa(a.MinBusBandwidthGBps)},
		{Name: "PREFIX", Value: ResultPrefix},
		{Name: "ONE_NODE_NCCL_ENV", Value: strings.Join(OneNodeNCCLEnv, " ")},
		// Index 0 waits for each peer's sshd as long as the peer's pod may wait for its node and
		// pull its image, and then for its checks.
		{Name: "ATTEMPTS", Value: strconv.Itoa(peerWaitSeconds(a) / peerRetrySeconds)},
		{Name: "RETRY_SECONDS", Value: strconv.Itoa(peerRetrySeconds)},
	}
}

// peerWaitSeconds is how long index 0 of the NCCL gate waits for a peer's sshd: the peer's
// node may come up to the capacity wait after its own, then pull the image and run its checks.
func peerWaitSeconds(a Args) int {
	return a.CapacityWaitSeconds + gatePullSeconds + 5*60
}

// NCCLJob is the Indexed Job of the NCCL test: one pod per node, each with all the node's
// GPUs and RDMA NICs, done when index 0 is.
func NCCLJob(a Args) *batchv1.Job {
	n := int32(a.NCCLNodes)
	gpus := corev1.ResourceList{gpunode.GPUResource: resource.MustParse(strconv.Itoa(a.GPUsPerNode))}
	job := kube.RunOnceJob(a.Name+"-nccl", a.Namespace, 0, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: gpunode.InterfaceAnnotations(a.NICs)},
		Spec: onGPUNodes(a, corev1.PodSpec{
			Subdomain: a.Name + "-nccl",
			Containers: []corev1.Container{{
				Name:         "nccl",
				Image:        Image,
				Command:      []string{"/bin/bash", "-c", ncclGateScript},
				Env:          slices.Concat([]corev1.EnvVar{{Name: "LD_LIBRARY_PATH", Value: gpunode.NvidiaPath + "/lib64"}}, ncclGateEnv(a), exitEnv()),
				Resources:    corev1.ResourceRequirements{Requests: gpus, Limits: gpus},
				VolumeMounts: gpunode.VolumeMounts(),
				// sshd, MPI's transport between the pods, runs in it: privilege escalation stays
				// allowed (kube.Harden denies it to every other container), and it keeps the
				// capabilities sshd uses of those kube.Harden drops.
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true), Capabilities: &corev1.Capabilities{
					Drop: slices.DeleteFunc(slices.Clone(kube.DroppedCapabilities), func(c corev1.Capability) bool { return slices.Contains(kube.SSHDCapabilities, c) }),
				}},
			}},
			// 250 GiB of /dev/shm, as the upstream NCCL test (gpudirect-rdma/nccl-test-a4.yaml).
			Volumes: gpunode.Volumes(250),
		}),
	})
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	job.Spec.Completions, job.Spec.Parallelism = &n, &n
	job.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	job.Spec.PodFailurePolicy = podFailurePolicy("nccl")
	job.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To(int64(NCCLPodSeconds(a)))
	job.Spec.ActiveDeadlineSeconds = ptr.To(int64(a.CapacityWaitSeconds + NCCLPodSeconds(a)))
	return job
}

// onGPUNodes places a gate pod: on the GPU nodes it tests (their selector and taint), at the
// gate's priority.
func onGPUNodes(a Args, spec corev1.PodSpec) corev1.PodSpec {
	spec.PriorityClassName = PriorityClass
	spec.NodeSelector = a.NodeSelector
	spec.Tolerations = []corev1.Toleration{gpunode.Toleration()}
	return spec
}

// PriorityClass is the gate pods' priority class. A gate run again (`gate.runId`) while Ray
// workers hold every GPU (the long-lived cluster of reservation and on-demand capacity) would
// otherwise wait out its deadline: with a higher priority than the Ray pods (which have none, 0)
// the scheduler preempts the workers the gate needs, and KubeRay re-creates them, to be
// scheduled once the gate's pods have finished. The value stays far below the system classes
// (system-cluster-critical is 2,000,000,000).
const (
	PriorityClass = "gke-rl-gate"
	Priority      = 1000000
)

// PriorityClassObject is the cluster-scoped PriorityClass the gate's pods use.
func PriorityClassObject() *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{
		TypeMeta:         metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
		ObjectMeta:       metav1.ObjectMeta{Name: PriorityClass},
		Value:            Priority,
		PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
		Description:      "gke-rl's post-deploy gate: its pods preempt the Ray workers when it runs again while they hold the GPUs",
	}
}

// NCCLPodSeconds bounds an NCCL gate pod once it is on its node: the pull, the wait for the
// peers (each may come up to the capacity wait later, then pull), the work, and a minute for
// each round of the ring's pairs that name a slow node (an mpirun start and 1 GiB messages; the
// pairs of a round run at once): two rounds, three for an odd count.
func NCCLPodSeconds(a Args) int {
	rounds := 0
	if a.NCCLNodes > 2 {
		rounds = 2 + a.NCCLNodes%2
	}
	wait := 0
	if a.NCCLNodes > 1 {
		wait = peerWaitSeconds(a) - 5*60 // the sshd's own wait is part of the work
	}
	return gatePullSeconds + wait + ncclGateWorkSeconds + 60*rounds
}

// StoragePodSeconds bounds the storage gate pod once it is on its node: the pull, then the
// write and the read of mib MiB at storageGateMinMBps each.
func StoragePodSeconds(mib int) int {
	return gatePullSeconds + 2*int(math.Ceil(float64(mib)*1.048576/storageGateMinMBps))
}

// JobSeconds is a gate Job's whole deadline: the capacity wait, then its pod's.
func JobSeconds(job *batchv1.Job) int {
	return int(ptr.Deref(job.Spec.ActiveDeadlineSeconds, 0))
}

// StorageGateDir is the one directory of the shared volume the storage gate mounts and writes
// its file in: it sees no checkpoint.
const StorageGateDir = ".gke-rl-gate"

// StorageJob writes (synced to the storage) and reads back StorageMiB on the shared volume
// from a GPU node, and reports MB/s against the storage's aggregate throughput. It fails only on
// an I/O error: one node's figure is a sample, not the aggregate.
func StorageJob(a Args) *batchv1.Job {
	env := []corev1.EnvVar{
		{Name: "FILE", Value: path.Join(a.Storage.MountPath, StorageGateDir, a.Name)},
		{Name: "MIB", Value: strconv.Itoa(a.StorageMiB)},
		{Name: "EXPECTED_MBPS", Value: strconv.Itoa(a.ExpectedMBps)},
		{Name: "PREFIX", Value: ResultPrefix},
	}
	env = append(env, exitEnv()...)
	job := kube.RunOnceJob(a.Name+"-storage", a.Namespace, 0, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: a.Storage.Annotations()},
		Spec: onGPUNodes(a, corev1.PodSpec{
			ServiceAccountName: a.Storage.ServiceAccountName,
			Containers: []corev1.Container{{
				Name:         "storage",
				Image:        Image,
				Command:      []string{"/bin/bash", "-c", storageGateScript},
				Env:          env,
				VolumeMounts: a.Storage.MountDirs(StorageGateDir),
			}},
			Volumes: []corev1.Volume{a.Storage.Volume()},
		}),
	})
	job.Spec.PodFailurePolicy = podFailurePolicy("storage")
	job.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To(int64(StoragePodSeconds(a.StorageMiB)))
	job.Spec.ActiveDeadlineSeconds = ptr.To(int64(a.CapacityWaitSeconds + StoragePodSeconds(a.StorageMiB)))
	return job
}
