package infra_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/gate"
	"gke-rl/gate/gatetest"
	"gke-rl/infra/offline"
	"gke-rl/test/plantest"
)

func gateJobs(res *offline.Result) []*offline.Resource {
	var jobs []*offline.Resource
	for _, name := range []string{"gate-nccl", "gate-storage"} {
		if r := res.Find(jobType, name); r != nil {
			jobs = append(jobs, r)
		}
	}
	return jobs
}

// The gate runs where the nodes are there anyway (reserved, on-demand) and is opt-in where
// they are paid for by the run (spot, flex-start), whose pools are empty until a run.
func TestGateIsOnByDefaultOnlyOnStandingCapacity(t *testing.T) {
	assert.Len(t, gateJobs(plantest.Plan(t, "h200-reserved")), 2)
	assert.Empty(t, gateJobs(plantest.Plan(t, "b200-spot")))
	assert.Len(t, gateJobs(plantest.Plan(t, "b200-spot", "gate.enabled=true")), 2)
	off := plantest.Plan(t, "h200-reserved", "gate.enabled=false")
	assert.Empty(t, gateJobs(off))
	assert.NotContains(t, off.Outputs, "gateResults")
}

func TestRayWaitsForTheGate(t *testing.T) {
	for _, stack := range []string{"h200-reserved", "b200-spot"} {
		res := plantest.Plan(t, stack, "gate.enabled=true")
		jobs := gateJobs(res)
		require.Len(t, jobs, 2, stack)
		for _, typ := range []string{rayJobType, rayClusterType} {
			for _, r := range res.OfType(typ) {
				deps := res.DependencyClosure(r)
				for _, job := range jobs {
					assert.True(t, deps[job.URN], "%s %s waits for %s", stack, typ, job.Name)
				}
			}
		}
		results := res.Find("command:local:Command", "gate-results")
		require.NotNil(t, results, stack)
		triggers, _ := offline.LookupInput(results, "triggers")
		assert.Len(t, triggers, 2, "%s results are collected again when a gate Job is replaced (its uid)", stack)
		closure := res.DependencyClosure(results)
		for _, job := range jobs {
			assert.True(t, closure[job.URN], "%s results are collected after %s", stack, job.Name)
		}
		assert.Contains(t, res.Outputs, "gateResults")
	}
}

func TestGateFollowsTheStack(t *testing.T) {
	res := plantest.Plan(t, "b200-spot", "gate.enabled=true", "gate.minBusBandwidthGBps=250", "gate.storageGib=16")
	var nccl, storage map[string]any
	for _, job := range manifestsOf(res, "Job") {
		switch get(t, job, "metadata.name") {
		case "ray-a4-gpu-spot-gate-nccl":
			nccl = job
		case "ray-a4-gpu-spot-gate-storage":
			storage = job
		}
	}
	require.NotNil(t, nccl)
	require.NotNil(t, storage)
	env := func(job map[string]any) map[string]any {
		vars := map[string]any{}
		for _, e := range get(t, job, "spec.template.spec.containers.0.env").([]any) {
			vars[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"]
		}
		return vars
	}
	assert.Equal(t, "250", env(nccl)["MIN_BUS_BANDWIDTH_GBPS"])
	assert.Equal(t, "8", env(nccl)["GPUS"], "an A4 node has 8 GPUs")
	hosts := strings.Fields(env(nccl)["HOSTS"].(string))
	assert.Len(t, hosts, 8, "every GPU node")
	assert.Equal(t, "ray-a4-gpu-spot-gate-nccl-7.ray-a4-gpu-spot-gate-nccl", hosts[7])
	assert.EqualValues(t, 8, get(t, nccl, "spec.completions"), "every one of the 8 nodes")
	assert.Equal(t, get(t, clusterSpecOf(t, res), "workerGroupSpecs.0.template.metadata.annotations"), get(t, nccl, "spec.template.metadata.annotations"), "the NCCL test uses the workers' NICs")
	assert.Equal(t, get(t, clusterSpecOf(t, res), "workerGroupSpecs.0.template.spec.nodeSelector"), get(t, nccl, "spec.template.spec.nodeSelector"))
	assert.Equal(t, "16384", env(storage)["MIB"])

	// gate.capacityWaitMinutes is added, in seconds, in front of each gate Job's deadline: a
	// minute more of it is 60 s more of the storage Job's, and 120 s more of the NCCL Job's, whose
	// pod at index 0 also waits for a peer whose node may come up to the wait after its own.
	deadlines := func(wait string) map[string]int64 {
		out := map[string]int64{}
		for _, job := range manifestsOf(plantest.Plan(t, "b200-spot", "gate.enabled=true", "gate.capacityWaitMinutes="+wait), "Job") {
			if name := get(t, job, "metadata.name").(string); strings.Contains(name, "-gate-") {
				out[name] = get(t, job, "spec.activeDeadlineSeconds").(int64)
			}
		}
		return out
	}
	thirty, more := deadlines("30"), deadlines("31")
	require.Len(t, thirty, 2)
	assert.Equal(t, thirty["ray-a4-gpu-spot-gate-storage"]+60, more["ray-a4-gpu-spot-gate-storage"])
	assert.Equal(t, thirty["ray-a4-gpu-spot-gate-nccl"]+120, more["ray-a4-gpu-spot-gate-nccl"])
	for name, seconds := range thirty {
		assert.Greater(t, seconds, int64(30*60), "%s: the wait, then the check", name)
	}
	assert.Equal(t, "rl-shared", get(t, storage, "spec.template.spec.volumes.0.persistentVolumeClaim.claimName"))

	single := plantest.Plan(t, "h200-reserved", "gpu.nodes=1", "gpu.minNodes=1")
	checked := 0
	for _, job := range manifestsOf(single, "Job") {
		if get(t, job, "metadata.name") == "verl-h200-gate-nccl" {
			assert.EqualValues(t, 1, get(t, job, "spec.completions"), "one node checks its own GPUs")
			checked++
		}
	}
	assert.Equal(t, 1, checked, "a single node still gets its GPU check")
}

// A minimum no all_gather on the GPU nodes can reach is refused at plan time, naming the bound:
// across nodes, the NICs into each node; on one node (smoke's 900 was planned silently and never
// used), one NIC a hop.
func TestGateRefusesAnUnreachableMinimum(t *testing.T) {
	_, err := plantest.TryPlan("b200-spot", "gpu.nodes=8", "gate.minBusBandwidthGBps=500")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gate.minBusBandwidthGBps: 500 GB/s is above what all_gather can reach across 8 nodes (8 NICs × 400 Gb/s into each node × 8/7 = 457 GB/s); allowed: 1 to 457")
	plantest.Plan(t, "b200-spot", "gpu.nodes=8", "gate.minBusBandwidthGBps=457")
	_, err = plantest.TryPlan("smoke", "gate.minBusBandwidthGBps=900")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gate.minBusBandwidthGBps: 900 GB/s is above what all_gather can reach on one GPU node over its RDMA NICs (every hop of the ring crosses one 400 Gb/s NIC: 50 GB/s); allowed: 1 to 50")
	plantest.Plan(t, "smoke", "gate.minBusBandwidthGBps=50")
}

// The default minimum is the machine's, from published runs, across nodes; half a NIC's line
// rate on one node.
func TestGateDefaultMinimumIsTheMachines(t *testing.T) {
	for _, tc := range []struct {
		stack     string
		overrides []string
		want      int
	}{
		{"b200-spot", []string{"gate.enabled=true"}, 195},
		{"h200-reserved", nil, 244},
		{"smoke", nil, 25},
		{"h200-reserved", []string{"gpu.nodes=1", "gpu.minNodes=1"}, 25},
		{"b200-spot", []string{"gate.enabled=true", "gate.minBusBandwidthGBps=300"}, 300},
	} {
		bp := plantest.Resolve(t, tc.stack, tc.overrides...)
		require.NotNil(t, bp.Run.Gate, tc.stack)
		var got string
		for _, e := range bp.Run.Gate.NCCL.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "MIN_BUS_BANDWIDTH_GBPS" {
				got = e.Value
			}
		}
		assert.Equal(t, strconv.Itoa(tc.want), got, "%s %v", tc.stack, tc.overrides)
	}
}

// A gate Job runs once: a later change of its spec does not replace it (which, with the
// long-lived Ray cluster holding every GPU, would leave its pods pending until the deadline and
// fail `pulumi up`). Re-running it is a deliberate `pulumi up --replace`.
func TestGateJobsRunOnce(t *testing.T) {
	res := plantest.Plan(t, "h200-reserved")
	for _, name := range []string{"gate-nccl", "gate-storage"} {
		job := res.Find("kubernetes:batch/v1:Job", name)
		require.NotNil(t, job, name)
		assert.Contains(t, job.Options.IgnoreChanges, "spec", name)
	}
	assert.NotContains(t, res.Find("kubernetes:batch/v1:Job", "grpo-data-prep").Options.IgnoreChanges, "spec")
}

// Running the gate again is one deliberate key: a new gate.runId renames the gate's Jobs (same
// URNs, so Pulumi creates the renamed Jobs and deletes the old), whose pods have a priority that
// preempts the Ray workers holding the GPUs on a long-lived cluster. An unrelated change renames
// nothing.
func TestGateRunsAgainOnANewRunID(t *testing.T) {
	names := func(overrides ...string) map[string]string {
		res := plantest.Plan(t, "h200-reserved", overrides...)
		out := map[string]string{}
		for _, m := range offline.Manifests(res) {
			if m.Object["kind"] == "Job" || m.Object["kind"] == "Service" {
				meta := m.Object["metadata"].(map[string]any)
				out[m.File] = meta["name"].(string)
			}
		}
		for _, j := range gateJobs(res) {
			out[j.URN] = "present"
		}
		return out
	}
	before, again := names(), names("gate.runId=2")
	assert.Contains(t, before, "urn:pulumi:h200-reserved::gke-rl::gke-rl:workloads:Gate$kubernetes:batch/v1:Job::gate-nccl")
	for urn := range before {
		if strings.HasPrefix(urn, "urn:") {
			assert.Contains(t, again, urn, "the same resource, renamed")
		}
	}
	assert.Contains(t, again, "job-rl-verl-h200-verl-h200-gate-2-nccl.yaml")
	assert.Contains(t, again, "job-rl-verl-h200-verl-h200-gate-2-storage.yaml")
	assert.Contains(t, again, "service-rl-verl-h200-verl-h200-gate-2-nccl.yaml")
	assert.Equal(t, before, names("gate.minBusBandwidthGBps=150", "job.maxSteps=30"), "an unrelated change renames nothing")

	res := plantest.Plan(t, "h200-reserved")
	priority := one(t, res, "PriorityClass")
	assert.EqualValues(t, 1000000, priority["value"])
	assert.Equal(t, "PreemptLowerPriority", priority["preemptionPolicy"])
	for _, j := range gateJobs(res) {
		assert.Equal(t, "gke-rl-gate", plantest.Input(t, j, "spec.template.spec.priorityClassName"), j.Name)
		assert.True(t, res.DependencyClosure(j)[res.Find("kubernetes:scheduling.k8s.io/v1:PriorityClass", "gate-priority").URN], "%s waits for its priority class", j.Name)
	}
	for _, pod := range manifestsOf(res, "RayCluster") {
		spec := pod["spec"].(map[string]any)
		for _, g := range spec["workerGroupSpecs"].([]any) {
			tmpl := g.(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			assert.NotContains(t, tmpl, "priorityClassName", "Ray workers have the default priority, which the gate preempts")
		}
	}
}

// The sample of gateResults in docs/operations.md is what the gate of a
// shipped stack prints for the recorded healthy A4 pair: b200-spot, with the gate on and two
// nodes.
func TestDocsGateSampleIsTheGatesOutput(t *testing.T) {
	bp := plantest.Resolve(t, "b200-spot", "gate.enabled=true", "gpu.nodes=2").Run
	require.NotNil(t, bp.Gate)
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}.Run(t, bp.Gate.NCCL)
	require.NoError(t, err, out)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, gate.ResultPrefix) {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 5)
	sample := "```\n" + strings.Join(lines, "\n") + "\n```"
	for _, doc := range []string{"../docs/operations.md"} {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		assert.True(t, strings.Contains(string(text), sample), "%s's gateResults sample should be:\n%s", doc, sample)
	}
}

// Each shipped stack's rendered NCCL gate, run on fake nodes that replay recorded runs: smoke's
// single node goes over its NICs with gIB (Google's recorded INFO lines and table), the others
// across their nodes at the machine's default minimum; on b200-spot's eight nodes a node whose
// pairs give NCCL no figure is named.
func TestShippedStacksGatesPassHealthyNodesAndNameABrokenOne(t *testing.T) {
	for _, tc := range []struct {
		stack         string
		node          gatetest.Node
		want, minimum string
	}{
		{"smoke", gatetest.Node{GPUs: "8", ECC: "0", NCCLInfo: "nccl-gib-info-lines.txt", NCCL: "nccl-all_gather-a4-gib-2node-vms.txt"}, "on one node over its RDMA NICs", "(minimum 25)"},
		{"h200-reserved", gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}, "over 2 nodes", "(minimum 244)"},
		{"b200-spot", gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt"}, "over 8 nodes", "(minimum 195)"},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			bp := plantest.Resolve(t, tc.stack, "gate.enabled=true")
			require.NotNil(t, bp.Run.Gate)
			out, err := tc.node.Run(t, bp.Run.Gate.NCCL)
			require.NoError(t, err, out)
			assert.Contains(t, out, "gate: NCCL all_gather "+tc.want+": bus bandwidth ")
			assert.Contains(t, out, tc.minimum)
		})
	}
	// The broken node gives the whole all_gather no figure; the ring's pairs without it pass the
	// default minimum.
	bp := plantest.Resolve(t, "b200-spot", "gate.enabled=true")
	broken := bp.Run.Gate.NCCL.Name + "-5"
	out, err := gatetest.Node{GPUs: "8", ECC: "0", NCCL: "nccl-all_gather-a4-gib-2node.txt", Broken: broken}.Run(t, bp.Run.Gate.NCCL)
	require.Error(t, err, out)
	assert.Contains(t, out, "gate: FAILED: NCCL is below the minimum; slow in both of its pairs: "+broken+" (drain it")
}
