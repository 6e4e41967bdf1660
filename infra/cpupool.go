package infra

import (
	"fmt"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/cluster"
	"gke-rl/internal/kinds"
	"gke-rl/internal/machine"
	"gke-rl/workloads/queue"
)

// The queue's quota counts GPUs only: Kueue admits every experiment whose GPU nodes fit
// gpu.maxNodes, and each admitted one brings its Ray head and its submitter to the CPU pool,
// which grows to cluster.CPUPoolMaxNodes nodes and no further. A head that finds no room stays
// Pending while its experiment's GPU nodes start and bill, until the attempt's deadline fails it
// (and KubeRay does not retry a DeadlineExceeded attempt). So the set is checked as a whole:
// as many experiments as can run at once must fit the CPU pool together.

// cpuPod is what one pod asks of a node: CPU in millicores, memory in MiB.
type cpuPod struct {
	role          string
	cpuMilli, mib int64
}

// cpuPoolPods are the pods a queued experiment runs on the CPU pool while it trains: its Ray
// head and its submitter.
func cpuPoolPods(job *rayv1.RayJob) []cpuPod {
	var pods []cpuPod
	if s := job.Spec.RayClusterSpec; s != nil {
		pods = append(pods, podRequests("a Ray head", s.HeadGroupSpec.Template.Spec))
	}
	if t := job.Spec.SubmitterPodTemplate; t != nil {
		pods = append(pods, podRequests("a submitter", t.Spec))
	}
	return pods
}

func podRequests(role string, spec corev1.PodSpec) cpuPod {
	r := queue.PodRequests(spec)
	return cpuPod{role: role, cpuMilli: r.Cpu().MilliValue(), mib: r.Memory().Value() >> 20}
}

// mostAtOnce are the enabled experiments that can run at once with the most of them: Kueue
// admits any set whose GPUs fit the quota, and the smallest first make the largest such set.
func mostAtOnce(xs []ExperimentPlan, quotaGPUs int) []ExperimentPlan {
	var enabled []ExperimentPlan
	for _, x := range xs {
		if !x.Stopped {
			enabled = append(enabled, x)
		}
	}
	slices.SortStableFunc(enabled, func(a, b ExperimentPlan) int { return a.GPUs - b.GPUs })
	var out []ExperimentPlan
	used := 0
	for _, x := range enabled {
		if used+x.GPUs > quotaGPUs {
			break
		}
		used += x.GPUs
		out = append(out, x)
	}
	return out
}

// fits reports whether the pods fit nodes nodes of cpuMilli and mib each, placed largest first
// on the first node with room, as near as the scheduler's spreading gets.
func fits(pods []cpuPod, nodes int, cpuMilli, mib int64) bool {
	pods = slices.Clone(pods)
	slices.SortStableFunc(pods, func(a, b cpuPod) int { return int(b.cpuMilli - a.cpuMilli) })
	freeCPU, freeMem := make([]int64, nodes), make([]int64, nodes)
	for i := range nodes {
		freeCPU[i], freeMem[i] = cpuMilli, mib
	}
	for _, p := range pods {
		placed := false
		for i := range nodes {
			if p.cpuMilli <= freeCPU[i] && p.mib <= freeMem[i] {
				freeCPU[i] -= p.cpuMilli
				freeMem[i] -= p.mib
				placed = true
				break
			}
		}
		if !placed {
			return false
		}
	}
	return true
}

// checkCPUPool refuses a queue whose experiments, as many as can run at once, bring more heads
// and submitters than the CPU pool holds at its largest. Autopilot has no CPU pool to fill (it
// sizes a node for each pod); a machine type whose shape its name does not say is left to the
// warning.
func checkCPUPool(c *Config, xs []ExperimentPlan, quotaGPUs int, errs *Errors) {
	if c.Cluster.Mode == kinds.Autopilot {
		return
	}
	shape, ok := machine.ShapeOf(c.Cluster.CPUMachineType)
	if !ok {
		return
	}
	cpuMilli, mib := shape.Allocatable()
	atOnce := mostAtOnce(xs, quotaGPUs)
	// The largest number of them whose pods fit, smallest first.
	fitting := 0
	for n := 1; n <= len(atOnce); n++ {
		var pods []cpuPod
		for _, x := range atOnce[:n] {
			pods = append(pods, cpuPoolPods(x.RayJob)...)
		}
		if !fits(pods, cluster.CPUPoolMaxNodes, cpuMilli, mib) {
			break
		}
		fitting = n
	}
	if fitting == len(atOnce) {
		return
	}
	var names []string
	for _, x := range atOnce {
		names = append(names, x.Name)
	}
	// Fewer GPU nodes in the quota than the first experiment that does not fit would need
	// with those before it keeps the set within the pool.
	nodes := 0
	for _, x := range atOnce[:fitting+1] {
		nodes += x.Nodes
	}
	var asks []string
	for _, p := range cpuPoolPods(atOnce[0].RayJob) {
		asks = append(asks, fmt.Sprintf("%s of %s CPUs and %s", p.role, milli(p.cpuMilli), mebi(p.mib)))
	}
	errs.Add("gpu.maxNodes", "%d lets %d experiments run at once (%s), and each brings to the CPU pool %s; "+
		"the pool holds at most %d × %s (%s CPUs and %s for pods each): %d of them fit, and the next one's head would stay Pending while its GPU nodes bill, until its deadline fails the attempt; "+
		"allowed: gpu.maxNodes up to %d, or a larger cluster.cpuMachineType",
		c.GPU.MaxNodes, len(atOnce), strings.Join(names, ", "), strings.Join(asks, " and "),
		cluster.CPUPoolMaxNodes, c.Cluster.CPUMachineType, milli(cpuMilli), mebi(mib), fitting, nodes-1)
}

// milli prints millicores as CPUs: 8000 as 8, 15890 as 15.89.
func milli(m int64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", float64(m)/1000), "0"), ".")
}

// mebi prints MiB as GiB where whole or large (32 GiB, 58.4 GiB), as MiB otherwise (512 MiB).
func mebi(m int64) string {
	switch {
	case m%1024 == 0:
		return fmt.Sprintf("%d GiB", m>>10)
	case m >= 1024:
		return fmt.Sprintf("%.1f GiB", float64(m)/1024)
	}
	return fmt.Sprintf("%d MiB", m)
}
