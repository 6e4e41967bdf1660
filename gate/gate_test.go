package gate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/gate"
	"gke-rl/gate/gatetest"
	"gke-rl/internal/gpunode"
	"gke-rl/internal/kube"
	"gke-rl/test/clitest"
)

func gateArgs(nodes int) gate.Args {
	return gate.Args{
		Name: "rl-gate", Namespace: "gke-rl", GPUsPerNode: 8, NCCLNodes: nodes,
		MinBusBandwidthGBps: 100, StorageMiB: 4, ExpectedMBps: 1000,
		NodeSelector: map[string]string{"cloud.google.com/gke-nodepool": "rl-gpu"},
		NICs:         gpunode.NICs(8),
		Storage:      kube.SharedVolume{MountPath: "/data", ClaimName: "rl-shared", ServiceAccountName: "rl-storage"},
	}
}

// The recorded run of two healthy A4 nodes passes: the gate reads the bus bandwidth at 8 GB
// (260 GB/s), not NCCL's average over all sizes (59 GB/s), and reports every node's GPUs.
func TestNCCLGatePassesAHealthyFastPair(t *testing.T) {
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}.Run(t, gate.NCCLJob(gateArgs(2)))
	require.NoError(t, err, out)
	assert.Contains(t, out, ": 8 GPUs, 0 uncorrected ECC errors")
	assert.Contains(t, out, ": 8 of 8 up")
	assert.Contains(t, out, "gate: GPU health on rl-gate-nccl-1: 8 GPUs, 0 uncorrected ECC errors", "the peer's result, read from its pod")
	assert.Contains(t, out, "run_nccl_tests.sh args: -t all_gather -b 1K -e 8G rl-gate-nccl-0.rl-gate-nccl rl-gate-nccl-1.rl-gate-nccl")
	assert.Contains(t, out, "gate: NCCL all_gather over 2 nodes: bus bandwidth 260.03 GB/s at 8589934592 B (minimum 100); "+
		"from 1 GiB: 1024 MiB 248.09 GB/s, 2048 MiB 259.66 GB/s, 4096 MiB 261.57 GB/s, 8192 MiB 260.03 GB/s")
}

func TestNCCLGateFailsWhatWouldSlowOrBreakARun(t *testing.T) {
	cases := map[string]struct {
		node gatetest.Node
		want string
		exit int32
	}{
		"a missing GPU":            {gatetest.Node{GPUs: "7", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}, "gate: FAILED: GPU health", gate.ExitGPUHealth},
		"an uncorrected ECC error": {gatetest.Node{GPUs: "8", ECC: "2", NCCL: "nccl-all_gather-a4-gib-2node.txt"}, "gate: FAILED: GPU health", gate.ExitGPUHealth},
		"no figure from NCCL":      {gatetest.Node{GPUs: "8", ECC: "0"}, "gate: FAILED: NCCL is below the minimum", gate.ExitNCCL},
		"NCCL over TCP":            {gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_reduce-tcp-socket-2node.txt"}, "gate: FAILED: NCCL is below the minimum and ran over TCP sockets", gate.ExitNCCL},
		"an RDMA NIC down":         {gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt", Down: "eth5"}, "gate: FAILED: RDMA NICs on " /* host */, gate.ExitRDMANICs},
		"an RDMA NIC missing":      {gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt", Absent: "eth9"}, ": eth9 absent", gate.ExitRDMANICs},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := tc.node.Run(t, gate.NCCLJob(gateArgs(2)))
			require.Error(t, err, out)
			assert.Contains(t, out, tc.want)
			assertExit(t, err, tc.exit)
		})
	}
}

// A peer whose sshd never answers is waited for a bounded time, then named in a FAILED line:
// NCCL would not start on it anyway.
func TestNCCLGateWaitsForItsPeersSSHD(t *testing.T) {
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt", SSH: `case "$*" in *rl-gate-nccl-1*) echo "ssh $*"; exit 255 ;; esac`}.Run(t, gate.NCCLJob(gateArgs(2)))
	require.Error(t, err, out)
	assert.Equal(t, 2, strings.Count(out, "waiting for rl-gate-nccl-1.rl-gate-nccl's sshd"), out)
	assert.Contains(t, out, "ssh -p 222 -o StrictHostKeyChecking=no -o ConnectTimeout=5 rl-gate-nccl-1.rl-gate-nccl true")
	assert.Contains(t, out, "gate: FAILED: rl-gate-nccl-1 did not answer over ssh after 3 attempts: its pod is on its node but")
	assert.NotContains(t, out, "run_nccl_tests.sh args", "no NCCL run without every peer")
	assertExit(t, err, gate.ExitNCCL)
}

// A peer whose pod never got a node has no address in the headless Service: the gate says no
// capacity, with its own exit status, not a broken node.
func TestNCCLGateNamesAPeerWithoutANodeNoCapacity(t *testing.T) {
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt", Unscheduled: "rl-gate-nccl-1",
		SSH: `case "$*" in *rl-gate-nccl-1*) exit 255 ;; esac`}.Run(t, gate.NCCLJob(gateArgs(2)))
	require.Error(t, err, out)
	assert.Contains(t, out, "gate: FAILED: no capacity: rl-gate-nccl-1 has no GPU node after 0s")
	assert.Contains(t, out, "gate.capacityWaitMinutes")
	assertExit(t, err, gate.ExitNoCapacity)
}

// assertExit checks that a gate script ended with the exit status of its cause.
func assertExit(t *testing.T, err error, want int32) {
	t.Helper()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.EqualValues(t, want, exit.ExitCode(), gate.FailureCauses[want])
}

// A run of run_nccl_tests.sh that fails (mpirun's status: 1 when it cannot start a rank, 134
// when NCCL aborts) is named in a FAILED line with its status, instead of ending the script
// through pipefail with no gate line.
func TestNCCLGateNamesAFailedNCCLRun(t *testing.T) {
	for _, status := range []string{"1", "134"} {
		out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCLExit: status}.Run(t, gate.NCCLJob(gateArgs(2)))
		require.Error(t, err, out)
		assert.Contains(t, out, "gate: FAILED: NCCL all_gather over 2 nodes exited with status "+status+" (1: mpirun could not start on every node; 134: NCCL aborted)")
	}
}

// When every pair of the ring is below the minimum, the gate blames the fabric, not every node.
func TestNCCLGateBlamesTheFabricWhenEveryPairIsSlow(t *testing.T) {
	args := gateArgs(4)
	args.MinBusBandwidthGBps = 300 // above the recorded healthy pair's 260 GB/s: every pair is slow
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}.Run(t, gate.NCCLJob(args))
	require.Error(t, err, out)
	assert.Contains(t, out, "gate: FAILED: NCCL is below the minimum between every pair of nodes: the fabric or the transport, not a node")
	assert.NotContains(t, out, "slow in both of its pairs")
}

// The gIB image's set_nccl_env.sh is sourced as upstream sources it, without `set -u`: a variable
// it reads unset does not end the gate.
func TestNCCLGateSourcesTheNCCLEnvironmentWithoutNounset(t *testing.T) {
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt", NCCLEnv: `export LD_LIBRARY_PATH=/usr/local/gib/lib64:${GKE_RL_UNSET_IN_THE_IMAGE}`}.Run(t, gate.NCCLJob(gateArgs(2)))
	require.NoError(t, err, out)
	assert.Contains(t, out, "bus bandwidth 260.03 GB/s")
}

func TestNCCLGateThresholdIsTheConfiguredOne(t *testing.T) {
	args := gateArgs(2)
	args.MinBusBandwidthGBps = 300
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}.Run(t, gate.NCCLJob(args))
	require.Error(t, err, out)
	assert.Contains(t, out, "(minimum 300)")
}

// On one node the gate runs all_gather between the node's GPUs with NVLink, peer-to-peer and
// shared memory off, so that it goes over the RDMA NICs, and requires NCCL to name gIB as its
// network. No one-node run over the NICs is published: the fake replays gIB's INFO lines and a
// recorded table (two A4 nodes, which the gate reads the same way).
func TestNCCLGateOnOneNodeRunsOverItsNICs(t *testing.T) {
	args := gateArgs(1)
	args.MinBusBandwidthGBps = 25
	job := gate.NCCLJob(args)
	assert.Equal(t, int32(1), *job.Spec.Completions)
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCLInfo: "nccl-gib-info-lines.txt", NCCL: "nccl-all_gather-a4-gib-2node-vms.txt"}.Run(t, job)
	require.NoError(t, err, out)
	assert.Contains(t, out, "run_nccl_tests.sh args: -t all_gather -b 1K -e 8G rl-gate-nccl-0.rl-gate-nccl\n")
	for _, v := range []string{"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_NVLS_ENABLE=0", "OMPI_MCA_mca_base_env_list=NCCL_P2P_DISABLE;NCCL_SHM_DISABLE;NCCL_NVLS_ENABLE"} {
		assert.Contains(t, out, "\n"+v+"\n", "run_nccl_tests.sh and its ranks get %s", v)
	}
	assert.Contains(t, out, "gate: NCCL all_gather on one node over its RDMA NICs: bus bandwidth 377.38 GB/s at 17179869184 B (minimum 25)")

	for recording, want := range map[string]string{
		"nccl-all_gather-a4-gib-2node.txt":     "(no \"NCCL INFO Using network gIB\" line; )",
		"nccl-all_reduce-tcp-socket-2node.txt": "(no \"NCCL INFO Using network gIB\" line; NCCL INFO Using network Socket)",
	} {
		out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: recording}.Run(t, job)
		require.Error(t, err, out)
		assert.Contains(t, out, "gate: FAILED: NCCL all_gather on one node over its RDMA NICs did not use the gIB plugin "+want, recording)
	}
	out, err = gatetest.Node{GPUs: "8", ECC: "0", NCCLInfo: "nccl-gib-info-lines.txt", NCCL: "nccl-all_gather-a4-gib-2node-vms.txt"}.Run(t, gate.NCCLJob(gateArgs(1)))
	require.NoError(t, err, out)
	args.MinBusBandwidthGBps = 400
	out, err = gatetest.Node{GPUs: "8", ECC: "0", NCCLInfo: "nccl-gib-info-lines.txt", NCCL: "nccl-all_gather-a4-gib-2node-vms.txt"}.Run(t, gate.NCCLJob(args))
	require.Error(t, err, out)
	assert.Contains(t, out, "(minimum 400)")
	assert.Contains(t, out, "gate: FAILED: NCCL is below the minimum")
}

// Across nodes NCCL keeps NVLink and shared memory inside each node.
func TestNCCLGateAcrossNodesKeepsNVLink(t *testing.T) {
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}.Run(t, gate.NCCLJob(gateArgs(2)))
	require.NoError(t, err, out)
	assert.NotContains(t, out, "NCCL_P2P_DISABLE")
}

// The ring's pairs run in rounds of disjoint pairs, all the pairs of a round at once: eight
// nodes in two rounds of four, five nodes in rounds of two, two and one (the pair that closes
// an odd ring shares a node with both other rounds).
func TestNCCLGateRunsThePairsInParallelRounds(t *testing.T) {
	for nodes, want := range map[int]int{8: 4, 5: 2} {
		args := gateArgs(nodes)
		args.MinBusBandwidthGBps = 300 // every pair below it: all of them run and are reported
		out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt", NCCLSeconds: "1"}.Run(t, gate.NCCLJob(args))
		require.Error(t, err, out)
		assert.Equal(t, nodes, strings.Count(out, "-t all_gather -b 1G -e 1G "), "one run a pair")
		assert.Equal(t, nodes, strings.Count(out, "gate: NCCL all_gather between "))
		_, concurrent, _ := strings.Cut(out, "run_nccl_tests.sh concurrent: ")
		most := 0
		for _, f := range strings.Fields(concurrent) {
			if n, convErr := strconv.Atoi(f); convErr == nil {
				most = max(most, n)
			}
		}
		assert.Equal(t, want, most, "%d nodes: the pairs of a round run at once, and no more", nodes)
	}
}

// Every gate pod ends by a deadline sized from what it does, counted from its start on its node;
// the Job adds the capacity wait in front; MPI keeps the pods' full names.
func TestGateJobsHaveDeadlines(t *testing.T) {
	args := gateArgs(2)
	args.CapacityWaitSeconds = 60 * 60
	nccl := gate.NCCLJob(args)
	// The pull, the wait for a peer that comes up to the capacity wait later and pulls, the work.
	pod := int64(15*60 + (60*60 + 15*60) + 15*60)
	assert.Equal(t, pod, *nccl.Spec.Template.Spec.ActiveDeadlineSeconds, "the pod's clock starts on its node")
	assert.Equal(t, 60*60+pod, *nccl.Spec.ActiveDeadlineSeconds, "the Job's adds the wait for the node")
	args.NCCLNodes = 8
	assert.EqualValues(t, pod+2*60, *gate.NCCLJob(args).Spec.Template.Spec.ActiveDeadlineSeconds, "a minute for each round of the ring's pairs")
	args.NCCLNodes = 5
	assert.EqualValues(t, pod+3*60, *gate.NCCLJob(args).Spec.Template.Spec.ActiveDeadlineSeconds, "three rounds for an odd ring")
	args.NCCLNodes = 1
	assert.EqualValues(t, 30*60, *gate.NCCLJob(args).Spec.Template.Spec.ActiveDeadlineSeconds, "one node waits for no peer")

	storage := gate.StorageJob(args)
	assert.EqualValues(t, 15*60+2*1, *storage.Spec.Template.Spec.ActiveDeadlineSeconds, "4 MiB at 50 MB/s, twice")
	assert.EqualValues(t, 60*60+15*60+2*1, *storage.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, 15*60+2*86, gate.StoragePodSeconds(4096), "4 GiB at 50 MB/s, twice")
	env := map[string]string{}
	for _, e := range nccl.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "1", env["OMPI_MCA_orte_keep_fqdn_hostnames"])
	assert.Equal(t, strconv.Itoa((60*60+15*60+5*60)/5), env["ATTEMPTS"], "index 0 asks a peer's sshd every 5 s for as long as the peer may take")
}

// A gate pod that a spot preemption or a drain ends is replaced without failing the Job; each
// check's own failure fails it at once, and the Job's condition names the check's exit status.
func TestGateJobsSurviveDisruptionsAndNameTheirFailures(t *testing.T) {
	for _, job := range []*batchv1.Job{gate.NCCLJob(gateArgs(2)), gate.StorageJob(gateArgs(2))} {
		rules := job.Spec.PodFailurePolicy.Rules
		require.Len(t, rules, 2, job.Name)
		assert.Equal(t, batchv1.PodFailurePolicyActionIgnore, rules[0].Action)
		assert.Equal(t, corev1.DisruptionTarget, rules[0].OnPodConditions[0].Type)
		assert.Equal(t, batchv1.PodFailurePolicyActionFailJob, rules[1].Action)
		assert.Equal(t, job.Spec.Template.Spec.Containers[0].Name, *rules[1].OnExitCodes.ContainerName)
		assert.Len(t, rules[1].OnExitCodes.Values, len(gate.FailureCauses))
		for _, code := range rules[1].OnExitCodes.Values {
			assert.NotEmpty(t, gate.FailureCauses[code], code)
		}
	}
}

// The bound no all_gather across nodes can pass: 8 NICs × 400 Gb/s = 400 GB/s into a node,
// × N/(N-1).
func TestMaxAllGatherBusBandwidth(t *testing.T) {
	assert.Equal(t, 800, gate.MaxAllGatherBusGBps(2, 8))
	assert.Equal(t, 457, gate.MaxAllGatherBusGBps(8, 8))
	assert.Equal(t, 50, gate.MaxAllGatherBusGBps(1, 8), "one node: a ring through one NIC a hop")
}

// The NCCL test's hosts are the Indexed Job's pods, named <job>-<index> in the headless
// Service's subdomain; the Job is done when index 0 is, which stops the others.
func TestNCCLGateJobShape(t *testing.T) {
	job := gate.NCCLJob(gateArgs(2))
	pod := job.Spec.Template.Spec
	assert.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode)
	assert.Equal(t, int32(2), *job.Spec.Parallelism)
	assert.Equal(t, int32(0), *job.Spec.BackoffLimit, "a failed check is not retried into a pass")
	assert.Equal(t, "0", *job.Spec.SuccessPolicy.Rules[0].SucceededIndexes)
	assert.Equal(t, job.Name, pod.Subdomain)
	assert.Equal(t, "8", pod.Containers[0].Resources.Limits.Name(gpunode.GPUResource, "").String(), "every GPU of the node")
	assert.Equal(t, []string{"nvidia.com/gpu"}, []string{pod.Tolerations[0].Key})
	env := map[string]string{}
	for _, e := range pod.Containers[0].Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "INFO", env["NCCL_DEBUG"], "NCCL names its transport, which a TCP failure reports")
	assert.Equal(t, "INIT,NET", env["NCCL_DEBUG_SUBSYS"])
	assert.Equal(t, "eth2 eth3 eth4 eth5 eth6 eth7 eth8 eth9", env["RDMA_INTERFACES"], "the RDMA NICs of the interfaces annotation, after eth0 and gVNIC's eth1")
}

func TestStorageGateWritesAndReadsTheSharedVolume(t *testing.T) {
	dir := t.TempDir()
	args := gateArgs(2)
	args.Storage.MountPath = dir
	job := gate.StorageJob(args)
	c := job.Spec.Template.Spec.Containers[0]
	// The pod mounts one directory of the volume, which kubelet creates when it is missing; the
	// rest of the volume (the checkpoints) it does not see.
	require.Len(t, c.VolumeMounts, 1)
	assert.Equal(t, gate.StorageGateDir, c.VolumeMounts[0].SubPath)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, c.VolumeMounts[0].SubPath), 0o755))
	// A dd that notes its arguments before running the real one.
	bin := t.TempDir()
	realDD, err := exec.LookPath("dd")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bin, "dd"), []byte("#!/bin/sh\necho \"$*\" >> \""+bin+"/dd.log\"\nexec "+realDD+" \"$@\"\n"), 0o755))
	run := func(extra ...string) ([]byte, error) {
		cmd := exec.Command("/bin/bash", "-c", c.Command[2])
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		for _, e := range c.Env {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
		cmd.Env = append(cmd.Env, extra...) // the last of a name wins
		return cmd.CombinedOutput()
	}
	out, err := run()
	require.NoError(t, err, string(out))
	assert.Regexp(t, `^gate: shared volume from one GPU node: write \d+ MB/s, read \d+ MB/s \(the storage aggregate: 1000 MB/s\)\n$`, string(out))
	ddCalls, err := os.ReadFile(filepath.Join(bin, "dd.log"))
	require.NoError(t, err)
	assert.Contains(t, string(ddCalls), "iflag=direct", "the read bypasses the node's page cache")
	left, err := os.ReadDir(filepath.Join(dir, gate.StorageGateDir))
	require.NoError(t, err)
	assert.Empty(t, left, "the test file is removed")

	// A volume that is not there (a mount that failed under the pod): the write fails, whoever
	// runs the test.
	out, err = run("FILE=" + filepath.Join(dir, "not-mounted", "file"))
	assert.Contains(t, string(out), "gate: FAILED: shared volume: I/O error")
	assertExit(t, err, gate.ExitVolume)
	assert.Equal(t, "rl-storage", job.Spec.Template.Spec.ServiceAccountName)
}

// The results step, run with the real kubectl against a fake API server, keeps each gate Job's
// `gate:` lines and fails when kubectl does.
func TestGateResultsScriptKeepsTheGateLines(t *testing.T) {
	clitest.Tool(t, "kubectl")
	api := clitest.NewKube(t)
	job := func(name string) map[string]string { return map[string]string{"batch.kubernetes.io/job-name": name} }
	api.AddPod("gke-rl", "rl-gate-nccl-0-abcde", job("rl-gate-nccl"),
		"NCCL INFO NET/gIB\ngate: GPU health on n1: 8 GPUs, 0 uncorrected ECC errors\ngate: NCCL all_gather over 2 nodes: average bus bandwidth 352 GB/s (minimum 100)\n")
	api.AddPod("gke-rl", "rl-gate-storage-fghij", job("rl-gate-storage"),
		"gate: shared volume from one GPU node: write 900 MB/s, read 2000 MB/s (the storage aggregate: 1000 MB/s)\n")
	api.AddPod("gke-rl", "other", map[string]string{"app": "x"}, "gate: not a gate pod\n")
	run := func(jobs string, env ...string) clitest.Result {
		return clitest.RunScript(t, gate.ResultsScript, append([]string{"KUBECONFIG_DATA=" + api.Kubeconfig(t),
			"NAMESPACE=gke-rl", "JOBS=" + jobs, "PREFIX=" + gate.ResultPrefix}, env...)...)
	}
	res := run("rl-gate-nccl rl-gate-storage")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "gate: GPU health on n1: 8 GPUs, 0 uncorrected ECC errors\n"+
		"gate: NCCL all_gather over 2 nodes: average bus bandwidth 352 GB/s (minimum 100)\n"+
		"gate: shared volume from one GPU node: write 900 MB/s, read 2000 MB/s (the storage aggregate: 1000 MB/s)\n", res.Stdout)

	res = run("rl-gate-nccl", "KUBECONFIG_DATA=apiVersion: v1\nkind: Config\nclusters: []\n")
	assert.NotEqual(t, 0, res.Code, "a kubectl that fails fails the step")
	assert.Empty(t, res.Stdout)
}

// A slow fabric across four nodes is traced to the node that is slow with both its neighbours:
// each pair of the ring runs all_gather again, and the node in two failing pairs is named. A
// healthy set of pairs names nobody.
func TestNCCLGateNamesTheSlowNode(t *testing.T) {
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt", Broken: "rl-gate-nccl-2"}.Run(t, gate.NCCLJob(gateArgs(4)))
	require.Error(t, err, out)
	for _, pair := range []string{"rl-gate-nccl-0 and rl-gate-nccl-1: bus bandwidth 260.03", "rl-gate-nccl-1 and rl-gate-nccl-2: bus bandwidth none",
		"rl-gate-nccl-2 and rl-gate-nccl-3: bus bandwidth none", "rl-gate-nccl-3 and rl-gate-nccl-0: bus bandwidth 260.03"} {
		assert.Contains(t, out, "gate: NCCL all_gather between "+pair)
	}
	assert.Contains(t, out, "gate: FAILED: NCCL is below the minimum; slow in both of its pairs: rl-gate-nccl-2 (drain it")
	assert.Contains(t, out, "-t all_gather -b 1G -e 1G rl-gate-nccl-1.rl-gate-nccl rl-gate-nccl-2.rl-gate-nccl")

	out, err = gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}.Run(t, gate.NCCLJob(gateArgs(4)))
	require.NoError(t, err, out)
	assert.NotContains(t, out, "between", "a passing gate runs no pairs")
}

// The recorded run over TCP (mpirun's `[1,0]<stdout>:` tags on every line) is read through its
// tags: about 2 GB/s at 1 GiB, named as TCP.
func TestNCCLGateReadsTaggedOutput(t *testing.T) {
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_reduce-tcp-socket-2node.txt"}.Run(t, gate.NCCLJob(gateArgs(2)))
	require.Error(t, err, out)
	assert.Contains(t, out, "gate: NCCL all_gather over 2 nodes: bus bandwidth 2.00 GB/s at 1073741824 B (minimum 100); from 1 GiB: 1024 MiB 2.00 GB/s")
}

// On eight nodes every node's GPU line reaches the results: index 0 prints its own and collects
// the seven others'.
func TestNCCLGateReportsEveryNode(t *testing.T) {
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}.Run(t, gate.NCCLJob(gateArgs(8)))
	require.NoError(t, err, out)
	for i := 1; i < 8; i++ {
		assert.Contains(t, out, "gate: GPU health on rl-gate-nccl-"+strconv.Itoa(i)+": 8 GPUs, 0 uncorrected ECC errors")
	}
	assert.Contains(t, out, "over 8 nodes")
}
