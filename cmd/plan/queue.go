package plan

import (
	"fmt"
	"io"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/cost"
	"gke-rl/internal/words"
	"gke-rl/workloads/queue"
)

// writeQueue prints the queue of a stack with `jobs`: its quota, which experiments run as soon
// as the stack is applied and which wait, and what each running one costs an hour on the GPU
// nodes (the rest of the stack's hour is in the costs below).
func writeQueue(w io.Writer, r *offline.Result) {
	run := r.Blueprint.Run
	if run.Queue == nil {
		return
	}
	perNode := gpuNodeHour(r.Costs)
	fmt.Fprintf(w, "Queue (Kueue %s, ClusterQueue %s): %d GPUs at once (gpu.maxNodes × %d); with every experiment waiting, highest priority first, then by name:\n",
		queue.KueueVersion, run.Queue.Name, run.Queue.GPUs, r.Blueprint.Hardware.GPUsPerNode)
	// Columns as wide as the longest name and priority, at least the usual ones: an
	// experiment's name may take up to infra.MaxQueuedNameLength characters.
	nameWidth, priorityWidth := 24, 4
	for _, x := range run.Experiments {
		nameWidth = max(nameWidth, len(x.Name))
		priorityWidth = max(priorityWidth, len(fmt.Sprint(x.Priority)))
	}
	for _, x := range run.Experiments {
		line := fmt.Sprintf("  %-8s %-*s priority %-*d %3d GPUs (%s)", x.Start, nameWidth, x.Name, priorityWidth, x.Priority, x.GPUs, words.Count(x.Nodes, "node"))
		if x.Start == infra.StartsAtOnce {
			line += "  GPU nodes " + perNode.times(x.Nodes)
		}
		if usd, longest, ok := ExperimentMost(r.Costs, x); ok {
			line += fmt.Sprintf("  at most %s (%s)", cost.Dollars(usd), infra.Hours(longest))
		}
		fmt.Fprintln(w, line)
	}
	nodes, names := run.RunningAtOnce()
	fmt.Fprintf(w, "  at once: %s (%s): GPU nodes %s; a waiting experiment holds no node and starts by itself when one ends\n", words.Count(nodes, "node"), names, perNode.times(nodes))
	fmt.Fprintf(w, "  at most the queue: %s\n", queueMostText(r.Costs, run.Experiments))
	if !perNode.known {
		fmt.Fprintln(w, "  (the GPU node's price is unknown: plan --prices FILE adds it)")
	}
	writeSettings(w, "the experiments", run.Experiments)
}

// writeRunSettings prints what the single run trains with that a config key sets, as the
// queue's table does for each experiment.
func writeRunSettings(w io.Writer, r *offline.Result) {
	run := r.Blueprint.Run
	if run.Queue != nil || len(run.RunSettings) == 0 {
		return
	}
	writeSettings(w, "the run", []infra.ExperimentPlan{{Name: "experiment", Layout: run.Layout, Settings: run.RunSettings, Release: run.Release}})
}

// writeSettings prints what each experiment trains with that a config key sets, and the key
// that set it: the entry's own, job's, or a key's default. It is what tells the experiments
// apart without reading their RayJobs.
func writeSettings(w io.Writer, what string, xs []infra.ExperimentPlan) {
	fmt.Fprintf(w, "Settings of %s (the framework's key = value, from the config key that sets it):\n", what)
	for _, x := range xs {
		if x.Stopped {
			fmt.Fprintf(w, "  %s: stopped (jobs.%s.enabled=false)\n", x.Name, x.Name)
			continue
		}
		fmt.Fprintf(w, "  %s (%s, %s):\n", x.Name, x.Layout.Run, x.Release.Name())
		width := 0
		for _, s := range x.Settings {
			width = max(width, len(s.Key)+len(s.Value)+3)
		}
		for _, s := range x.Settings {
			fmt.Fprintf(w, "    %-*s  %s\n", width, s.Key+" = "+s.Value, s.From)
		}
	}
}

// nodeHour is one GPU node's hour, when its price is known.
type nodeHour struct {
	usd   float64
	known bool
}

func (n nodeHour) times(nodes int) string {
	if !n.known {
		return "unknown/h"
	}
	return cost.Dollars(n.usd*float64(nodes)) + "/h"
}

// gpuNodeHour is the GPU nodes' line's price per node-hour.
func gpuNodeHour(e cost.Estimate) nodeHour {
	for _, l := range e.Lines {
		if l.Item == "GPU nodes" && l.Price != nil {
			return nodeHour{usd: l.Price.USD, known: true}
		}
	}
	return nodeHour{}
}
