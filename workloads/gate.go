package workloads

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"gke-rl/infra/gpunode"
	"gke-rl/infra/kube"
)

// GateImage is container-engine-accelerators' NCCL diagnostic image for the gIB plugin, at the
// installer's version (gpudirect-rdma/nccl-test-a4.yaml): NCCL tests, MPI over ssh, and
// /usr/local/gib/scripts/run_nccl_tests.sh.
const GateImage = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1"

// GateResultPrefix starts every line a gate Job prints as its result, which the stack output
// `gateResults` collects.
const GateResultPrefix = "gate:"

// GateArgs place and size the post-deploy gate.
type GateArgs struct {
	// Name prefixes the gate's objects; Namespace holds them.
	Name, Namespace string
	// GPUsPerNode is what each node must show; NCCLNodes is how many nodes are checked, and
	// the all_gather spans them when there are two or more.
	GPUsPerNode, NCCLNodes int
	// MinBusBandwidthGBps fails the NCCL test below it.
	MinBusBandwidthGBps int
	// StorageMiB is written and read back on the shared volume; ExpectedMBps is the storage's
	// aggregate throughput, printed next to the measured one.
	StorageMiB   int
	ExpectedMBps int
	NodeSelector map[string]string
	NICs         []gpunode.NIC
	Storage      kube.SharedVolume
}

// ncclGateScript is the NCCL gate's pod script (gate-nccl.sh); ncclGateEnv gives it its values.
//
//go:embed gate-nccl.sh
var ncclGateScript string

// storageGateScript is the storage gate's script (gate-storage.sh).
//
//go:embed gate-storage.sh
var storageGateScript string

// ncclGateEnv are the NCCL gate script's values: the GPUs each node must show, the pods' host
// names (index 0 first) and the minimum bus bandwidth.
func ncclGateEnv(a GateArgs) []corev1.EnvVar {
	hosts := make([]string, a.NCCLNodes)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("%s-nccl-%d.%s-nccl", a.Name, i, a.Name)
	}
	return []corev1.EnvVar{
		{Name: "GPUS", Value: strconv.Itoa(a.GPUsPerNode)},
		{Name: "HOSTS", Value: strings.Join(hosts, " ")},
		{Name: "MIN_BUS_BANDWIDTH_GBPS", Value: strconv.Itoa(a.MinBusBandwidthGBps)},
		{Name: "PREFIX", Value: GateResultPrefix},
	}
}

// NCCLGateJob is the Indexed Job of the NCCL test: one pod per node, each with all the node's
// GPUs and RDMA NICs, done when index 0 is.
func NCCLGateJob(a GateArgs) *batchv1.Job {
	n := int32(a.NCCLNodes)
	gpus := corev1.ResourceList{gpunode.GPUResource: resource.MustParse(strconv.Itoa(a.GPUsPerNode))}
	job := runOnceJob(a.Name+"-nccl", a.Namespace, 0, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: gpunode.InterfaceAnnotations(a.NICs)},
		Spec: corev1.PodSpec{
			Subdomain:    a.Name + "-nccl",
			NodeSelector: a.NodeSelector,
			Tolerations:  []corev1.Toleration{gpunode.Toleration()},
			Containers: []corev1.Container{{
				Name:         "nccl",
				Image:        GateImage,
				Command:      []string{"/bin/bash", "-c", ncclGateScript},
				Env:          append([]corev1.EnvVar{{Name: "LD_LIBRARY_PATH", Value: gpunode.NvidiaPath + "/lib64"}}, ncclGateEnv(a)...),
				Resources:    corev1.ResourceRequirements{Requests: gpus, Limits: gpus},
				VolumeMounts: gpunode.VolumeMounts(),
			}},
			// 250 GiB of /dev/shm, as the upstream NCCL test (gpudirect-rdma/nccl-test-a4.yaml).
			Volumes: gpunode.Volumes(250),
		},
	})
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	job.Spec.Completions, job.Spec.Parallelism = &n, &n
	job.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	return job
}

// StorageGateJob writes (synced to the storage) and reads back StorageMiB on the shared volume
// from a GPU node, and reports MB/s against the storage's aggregate throughput. It fails only on
// an I/O error: one node's figure is a sample, not the aggregate.
func StorageGateJob(a GateArgs) *batchv1.Job {
	env := []corev1.EnvVar{
		{Name: "FILE", Value: a.Storage.MountPath + "/.gke-rl-gate-" + a.Name},
		{Name: "MIB", Value: strconv.Itoa(a.StorageMiB)},
		{Name: "EXPECTED_MBPS", Value: strconv.Itoa(a.ExpectedMBps)},
		{Name: "PREFIX", Value: GateResultPrefix},
	}
	return runOnceJob(a.Name+"-storage", a.Namespace, 0, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: a.Storage.Annotations()},
		Spec: corev1.PodSpec{
			ServiceAccountName: a.Storage.ServiceAccountName,
			NodeSelector:       a.NodeSelector,
			Tolerations:        []corev1.Toleration{gpunode.Toleration()},
			Containers: []corev1.Container{{
				Name:         "storage",
				Image:        GateImage,
				Command:      []string{"/bin/bash", "-c", storageGateScript},
				Env:          env,
				VolumeMounts: []corev1.VolumeMount{a.Storage.Mount()},
			}},
			Volumes: []corev1.Volume{a.Storage.Volume()},
		},
	})
}
