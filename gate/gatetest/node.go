// Package gatetest runs the NCCL gate's rendered script on a fake GPU node: the gate's own tests
// and those that check what the docs show of its output.
package gatetest

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"

	"gke-rl/internal/gpunode"
	"gke-rl/test/golden"
)

// Node fakes what a GPU node gives the NCCL gate: nvidia-smi replaying the line recorded on
// a real H200 (testdata/recorded/nvidia-smi-h200.txt) once for each of `GPUs` GPUs, renumbered,
// with `ECC` uncorrected errors on the last; the diagnostic image's run_nccl_tests.sh replaying
// `NCCL`, a recorded run under testdata/recorded (none: it prints nothing); and ssh, which
// reaches every peer (`SSH` replaces it) and gives a peer's GPU result as its pod wrote it.
//
// Its eight RDMA NICs (eth2 to eth9) are up in a sysfs tree of the kernel's layout
// (/sys/class/net/<if>/operstate holds "up" or "down", Documentation/ABI/testing/sysfs-class-net),
// but the one named by `Down`, which is down, or `Absent`, which is not there.
//
// getent resolves every peer's host name (the headless Service names a pod once it is on a node)
// but the one named by `Unscheduled`, a pod that has no GPU node yet.
//
// `Broken` names a pod whose fabric gives NCCL no figure: any run_nccl_tests.sh that includes it
// prints nothing (the recorded run otherwise).
//
// `NCCLExit` makes run_nccl_tests.sh print nothing and exit with that status; `NCCLEnv` is the
// body of the image's set_nccl_env.sh (an export of gIB's plugin by default). `NCCLInfo`, a
// recorded file, is printed before `NCCL`: NCCL's INFO lines.
//
// run_nccl_tests.sh notes its arguments and the NCCL_* and OMPI_* variables it was given, and how
// many runs of it were going on at once at most (each run lasts `NCCLSeconds`, 0 by default).
type Node struct {
	GPUs, ECC, NCCL, SSH, Down, Absent, Broken, NCCLExit, NCCLEnv, NCCLInfo string
	NCCLSeconds, Unscheduled                                                string
}

// Run runs the gate's script on the fake node as the pod of index 0 (the one that runs NCCL),
// with the container's environment and the absolute paths of the image and the node moved
// under a temporary directory.
func (n Node) Run(t testing.TB, job *batchv1.Job) (string, error) {
	t.Helper()
	root := t.TempDir()
	write := func(path, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, path), []byte("#!/bin/bash\n"+body), 0o755))
	}
	recorded, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata", "recorded", "nvidia-smi-h200.txt"))
	require.NoError(t, err)
	_, line, _ := strings.Cut(strings.TrimSpace(string(recorded)), "\n") // noheader: no first line
	fields := strings.Split(line, ", ")
	var smi strings.Builder
	gpus, _ := strconv.Atoi(n.GPUs)
	for i := range gpus {
		fields[0] = strconv.Itoa(i)
		if i == gpus-1 {
			fields[4] = n.ECC
		}
		smi.WriteString(strings.Join(fields, ", ") + "\n")
	}
	for i := 2; i <= 9; i++ {
		nic := "eth" + strconv.Itoa(i)
		if nic == n.Absent {
			continue
		}
		state := "up"
		if nic == n.Down {
			state = "down"
		}
		require.NoError(t, os.MkdirAll(filepath.Join(root, "sys/class/net", nic), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "sys/class/net", nic, "operstate"), []byte(state+"\n"), 0o644))
	}
	write("nvidia/bin/nvidia-smi", `[ "$*" = "--query-gpu=index,name,driver_version,ecc.mode.current,ecc.errors.uncorrected.volatile.total --format=csv,noheader" ] || exit 2
printf '%s' '`+smi.String()+`'`)
	write("scripts/container_entry.sh", "echo sshd started")
	// The pod of index 0's host name, as Kubernetes sets it for an Indexed Job's pod.
	write("bin/hostname", "echo "+job.Name+"-0")
	ncclEnv := "export NCCL_NET=gIB"
	if n.NCCLEnv != "" {
		ncclEnv = n.NCCLEnv
	}
	write("gib/scripts/set_nccl_env.sh", ncclEnv)
	nccl := "true"
	if n.NCCL != "" {
		nccl = "cat " + filepath.Join(golden.RepoRoot(), "testdata", "recorded", n.NCCL)
	}
	if n.NCCLInfo != "" {
		nccl = "cat " + filepath.Join(golden.RepoRoot(), "testdata", "recorded", n.NCCLInfo) + "; " + nccl
	}
	if n.Broken != "" {
		nccl = `case "$*" in *` + n.Broken + `.*) ;; *) ` + nccl + ` ;; esac`
	}
	if n.NCCLExit != "" {
		nccl = "exit " + n.NCCLExit
	}
	write("gib/scripts/run_nccl_tests.sh", `dir=$(dirname "$0"); echo "$*" >> "$dir/args"; env | grep -E '^(NCCL|OMPI)_' | sort >> "$dir/env"
mkdir -p "$dir/running"; touch "$dir/running/$$"; ls "$dir/running" | wc -l >> "$dir/concurrent"
sleep `+cmp.Or(n.NCCLSeconds, "0")+`; rm "$dir/running/$$"
`+nccl)
	ssh := n.SSH
	if ssh == "" {
		// The peer's file holds the lines its own pod printed: `hostname` there is the pod's name.
		ssh = `host=${@: -3:1}; case "$*" in *"/gate-health") printf 'gate: GPU health on %s: 8 GPUs, 0 uncorrected ECC errors\ngate: RDMA NICs on %s: 8 of 8 up\n' "${host%%.*}" "${host%%.*}" ;; esac`
	}
	write("bin/ssh", ssh)
	getent := `[ "$1" = hosts ] || exit 2; echo "10.8.0.7 $2"`
	if n.Unscheduled != "" {
		getent = `case "$2" in ` + n.Unscheduled + `.*) exit 2 ;; esac; ` + getent
	}
	write("bin/getent", getent)
	c := job.Spec.Template.Spec.Containers[0]
	script := strings.NewReplacer(gpunode.NvidiaPath, root+"/nvidia", gpunode.GIBPath, root+"/gib", "/scripts/container_entry.sh", root+"/scripts/container_entry.sh", "/tmp/", root+"/").Replace(c.Command[2])
	cmd := exec.Command("/bin/bash", "-c", script)
	cmd.Env = os.Environ()
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	// After the container's own: the last of a name wins (os/exec), and the peers' wait is cut
	// to three tries at once.
	cmd.Env = append(cmd.Env, "PATH="+root+"/bin:"+os.Getenv("PATH"), "JOB_COMPLETION_INDEX=0", "ATTEMPTS=3", "RETRY_SECONDS=0", "SYSFS_NET="+root+"/sys/class/net")
	out, err := cmd.CombinedOutput()
	for _, f := range []string{"args", "env", "concurrent"} {
		if noted, readErr := os.ReadFile(filepath.Join(root, "gib", "scripts", f)); readErr == nil {
			out = append(out, "run_nccl_tests.sh "+f+": "+string(noted)...)
		}
	}
	return string(out), err
}
