package workloads

import (
	"fmt"
	"strconv"

	"al.essio.dev/pkg/shellescape"
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

// ncclGateScript checks the node's GPUs on every pod, then, on index 0 and with two nodes or
// more, runs NCCL's all_gather across the pods with the gIB plugin over the RDMA NICs and fails
// below the minimum average bus bandwidth. The other pods serve MPI over ssh until index 0 is
// done (the Job's success policy then stops them). Index 0 first waits, for up to five minutes,
// until every pod's sshd (port 222) answers, as container-engine-accelerators'
// gpudirect-rdma/nccl-test-a4x-max-jobset.yaml does: a pod resolves in DNS before its GPU check
// has finished and its sshd has started.
func ncclGateScript(a GateArgs) string {
	hosts := ""
	for i := 0; i < a.NCCLNodes; i++ {
		hosts += fmt.Sprintf(" %s-nccl-%d.%s-nccl", a.Name, i, a.Name)
	}
	if a.NCCLNodes < 2 {
		return gpuHealthScript(a.GPUsPerNode) + `
echo "` + GateResultPrefix + ` NCCL all_gather skipped: one GPU node, no network between nodes to test"
`
	}
	return gpuHealthScript(a.GPUsPerNode) + `
/scripts/container_entry.sh shell
source /usr/local/gib/scripts/set_nccl_env.sh
if [ "$JOB_COMPLETION_INDEX" != 0 ]; then sleep infinity; fi
for host in` + hosts + `; do
  for attempt in $(seq 1 "${ATTEMPTS:-60}"); do
    ssh -p 222 -o StrictHostKeyChecking=no -o ConnectTimeout=5 "$host" true 2>/dev/null && break
    echo "waiting for $host's sshd ($attempt)"; sleep "${RETRY_SECONDS:-5}"
  done
done
/usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1K -e 8G` + hosts + ` | tee /tmp/nccl.log
bw=$(awk '/Avg bus bandwidth/ && $NF ~ /^[0-9]+(\.[0-9]+)?$/ {print $NF}' /tmp/nccl.log)
echo "` + GateResultPrefix + ` NCCL all_gather over ` + strconv.Itoa(a.NCCLNodes) + ` nodes: average bus bandwidth ${bw:-none} GB/s (minimum ` + strconv.Itoa(a.MinBusBandwidthGBps) + `)"
awk -v bw="${bw:-0}" -v min=` + strconv.Itoa(a.MinBusBandwidthGBps) + ` 'BEGIN { exit !(bw >= min) }' || {
  echo "` + GateResultPrefix + ` FAILED: NCCL is below the minimum; is it on RDMA? grep NET/ in this log" >&2; exit 1; }
`
}

// gpuHealthScript fails unless the node shows every GPU and none has an uncorrected ECC error
// (Cluster Toolkit's NCCL example checks the same in an init container).
func gpuHealthScript(gpus int) string {
	return `set -euo pipefail
smi=/usr/local/nvidia/bin/nvidia-smi
count=$($smi --query-gpu=index --format=csv,noheader | wc -l)
ecc=$($smi --query-gpu=ecc.errors.uncorrected.volatile.total --format=csv,noheader | awk '{s += $1} END {print s + 0}')
echo "` + GateResultPrefix + ` GPU health on $(hostname): $count GPUs, $ecc uncorrected ECC errors"
[ "$count" -eq ` + strconv.Itoa(gpus) + ` ] && [ "$ecc" -eq 0 ] || { echo "` + GateResultPrefix + ` FAILED: GPU health on $(hostname)" >&2; exit 1; }`
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
				Command:      []string{"/bin/bash", "-c", ncclGateScript(a)},
				Env:          []corev1.EnvVar{{Name: "LD_LIBRARY_PATH", Value: gpunode.NvidiaPath + "/lib64"}},
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
	file := a.Storage.MountPath + "/.gke-rl-gate-" + a.Name
	script := fmt.Sprintf(`set -euo pipefail
mib=%d
f=%s
t0=$(date +%%s.%%N); dd if=/dev/zero of="$f" bs=1M count=$mib conv=fsync status=none
t1=$(date +%%s.%%N); dd if="$f" of=/dev/null bs=1M status=none
t2=$(date +%%s.%%N); rm -f "$f"
awk -v mib=$mib -v t0=$t0 -v t1=$t1 -v t2=$t2 'BEGIN { printf "%s shared volume from one GPU node: write %%.0f MB/s, read %%.0f MB/s (the storage aggregate: %d MB/s)\n", mib*1.048576/(t1-t0), mib*1.048576/(t2-t1) }'
`, a.StorageMiB, shellescape.Quote(file), GateResultPrefix, a.ExpectedMBps)
	return runOnceJob(a.Name+"-storage", a.Namespace, 0, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: a.Storage.Annotations()},
		Spec: corev1.PodSpec{
			ServiceAccountName: a.Storage.ServiceAccountName,
			NodeSelector:       a.NodeSelector,
			Tolerations:        []corev1.Toleration{gpunode.Toleration()},
			Containers: []corev1.Container{{
				Name:         "storage",
				Image:        GateImage,
				Command:      []string{"/bin/bash", "-c", script},
				VolumeMounts: []corev1.VolumeMount{a.Storage.Mount()},
			}},
			Volumes: []corev1.Volume{a.Storage.Volume()},
		},
	})
}
