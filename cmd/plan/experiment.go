package plan

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/kinds"
	"gke-rl/internal/lifecycle"
	"gke-rl/workloads"
)

// An ExperimentShift says what an update does to the run's experiment (job.name): a new one
// starts from step 0 in a directory of its own and leaves the earlier one's checkpoints where
// they are; the same one resumes from its newest checkpoint.
type ExperimentShift struct {
	// Before and After are the experiments' checkpoint directories; Before is "" when the
	// earlier plan had no run.
	Before, After string
	// ResumeFrom is the directory a new experiment starts from (job.resumeFrom), or "".
	ResumeFrom string
	// ShardsLost is set when verl's experiment stays but its GPU count changes: verl v0.6.0
	// saves one shard per rank (verl/utils/checkpoint/fsdp_checkpoint_manager.py,
	// model_world_size_{W}_rank_{r}.pt), which another world size cannot load.
	ShardsLost       bool
	GPUsBefore, GPUs int
	// Changes are the values the experiment trains with that the update changes
	// (changedSettings); none when the earlier plan does not carry them.
	Changes []string
}

// New reports whether the update starts another experiment.
func (s *ExperimentShift) New() bool { return s.Before != "" && s.Before != s.After }

var resumeFromWord = regexp.MustCompile(`(?:^| )RESUME_FROM=(\S+)`)
var frameworkWord = regexp.MustCompile(`(?:^| )FRAMEWORK=(\S+)`)

// CompareExperiment reads the experiments of an earlier plan and this one from their stack
// outputs (checkpointDir, which every version's plan has; gpuNodes and gpuType) and this plan's
// RayJob. It is nil when this plan runs nothing.
func CompareExperiment(before *EarlierPlan, after *offline.Result) *ExperimentShift {
	dir, _ := after.Outputs["checkpointDir"].(string)
	var job *offline.Resource
	for _, r := range after.OfType(lifecycle.RayJobType) {
		job = r
	}
	if dir == "" || job == nil {
		return nil
	}
	s := &ExperimentShift{After: dir, GPUs: gpusOf(after.Outputs)}
	s.Before, _ = before.Outputs["checkpointDir"].(string)
	s.GPUsBefore = gpusOf(before.Outputs)
	entrypoint, _ := job.Input("spec.entrypoint")
	text, _ := entrypoint.(string)
	if m := resumeFromWord.FindStringSubmatch(text); m != nil {
		s.ResumeFrom = m[1]
	}
	verl := false
	if m := frameworkWord.FindStringSubmatch(text); m != nil {
		verl = m[1] == string(kinds.Verl)
	}
	s.ShardsLost = verl && !s.New() && s.Before != "" && s.GPUsBefore > 0 && s.GPUs != s.GPUsBefore
	was, _ := before.Outputs["experiment"].(string)
	is, _ := after.Outputs["experiment"].(string)
	s.Changes = changedSettings(before.Settings[was], settingsJSON(after)[is])
	return s
}

// changedSettings names each framework value that differs between two plans of an experiment,
// with the key that set the new one: "actor_rollout_ref.actor.optim.lr 1e-06 → 5e-06
// (jobs.b.learningRate)". None when either plan does not carry its settings (plans of earlier
// versions).
func changedSettings(before, after map[string]jsonSetting) []string {
	if before == nil || after == nil {
		return nil
	}
	keys := slices.Collect(maps.Keys(after))
	for k := range before {
		if _, ok := after[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		b, had := before[k]
		a, has := after[k]
		change := ""
		switch {
		case had && has && a.Value != b.Value:
			change = fmt.Sprintf("%s %s → %s (%s)", k, b.Value, a.Value, a.From)
		case has && !had:
			change = fmt.Sprintf("%s set to %s (%s)", k, a.Value, a.From)
		case had && !has:
			change = fmt.Sprintf("%s back to the framework's own (was %s, %s)", k, b.Value, b.From)
		default:
			continue
		}
		// A value a checkpoint's optimizer state holds: what the resume does with it.
		if effect := workloads.SettingChangeEffect(k); effect != "" {
			change += ": " + effect
		}
		out = append(out, change)
	}
	return out
}

// changesText is " Changed: ...; ..." for a line of the comparison, or "".
func changesText(changes []string) string {
	if len(changes) == 0 {
		return ""
	}
	return " Changed: " + strings.Join(changes, "; ") + "."
}

// gpusOf is the GPU count of a plan's stack outputs, or 0 when they do not say it.
func gpusOf(outputs map[string]any) int {
	nodes, _ := outputs["gpuNodes"].(float64)
	if n, ok := outputs["gpuNodes"].(int); ok {
		nodes = float64(n)
	}
	gpuType, _ := outputs["gpuType"].(string)
	spec, ok := infra.LookupGPU(gpuType)
	if !ok {
		return 0
	}
	return int(nodes) * spec.GPUsPerNode
}

// Line says what the update does to the experiment, for WriteComparison.
func (s *ExperimentShift) Line(newStorage bool) string {
	name := path.Base(s.After)
	switch {
	case s.Before == "":
		return fmt.Sprintf("Experiment %s: a new one, in %s.", name, s.After)
	case s.New() && s.ResumeFrom != "":
		return fmt.Sprintf("Experiment %s: a new one (job.name changed, or what its default follows: framework and its release, model, dataset, revisions, recipe, verl's GPU count); it starts from %s's newest checkpoint (job.resumeFrom) and saves in %s; %s's checkpoints stay in %s.",
			name, path.Base(s.ResumeFrom), s.After, path.Base(s.Before), s.Before)
	case s.New():
		return fmt.Sprintf("Experiment %s: a new one (job.name changed, or what its default follows: framework and its release, model, dataset, revisions, recipe, verl's GPU count); it starts from step 0 in %s; %s's checkpoints stay in %s.%s",
			name, s.After, path.Base(s.Before), s.Before, changesText(s.Changes))
	case newStorage:
		return fmt.Sprintf("Experiment %s: the same name, on new storage: it starts from step 0.", name)
	case s.ShardsLost:
		return fmt.Sprintf("Experiment %s: the same one, but verl's checkpoints in %s are %d shards, one per GPU, and the run now has %d GPUs: verl cannot load them and the next attempt fails. Name a new experiment (job.name), or keep %d GPUs.",
			name, s.After, s.GPUsBefore, s.GPUs, s.GPUsBefore)
	default:
		return fmt.Sprintf("Experiment %s: the same one; a replaced RayJob resumes from its newest checkpoint in %s.%s", name, s.After, changesText(s.Changes))
	}
}

// jobEffect says where a replaced RayJob starts.
func (s *ExperimentShift) jobEffect(newStorage bool) string {
	switch {
	case newStorage:
		return "the new RayJob starts from step 0 on the new storage"
	case s.New() && s.ResumeFrom != "":
		return "the new experiment starts from " + path.Base(s.ResumeFrom) + "'s newest checkpoint"
	case s.New():
		return "the new experiment starts from step 0"
	case s.ShardsLost:
		return "the new RayJob cannot load verl's checkpoints, saved by another GPU count"
	default:
		return "the new RayJob resumes from the newest checkpoint (steps after it are done again)"
	}
}

// A QueueShift says what an update does to the experiments of a stack with jobs, against the
// earlier plan's experiments or its single run.
type QueueShift struct {
	// Lines say it of each experiment.
	Lines []string
	// Running is how many experiments of the new plan have a RayJob (jobs.NAME.enabled is not
	// false): the stack still trains when one is deleted.
	Running int
	// SingleLeft is the earlier plan's single run's checkpoint directory when no experiment of
	// jobs continues it: that run stops for good.
	SingleLeft string
}

// CompareQueue says what an update does to each experiment of a stack with jobs (the
// `experiments` output): which are the same (their checkpoints in the same directory), which
// are new, which stop (enabled=false) or start again, which leave, and whether one continues the
// earlier single run. Nil when neither plan has jobs.
func CompareQueue(before *EarlierPlan, after *offline.Result) *QueueShift {
	was, is := experimentsOf(before.Outputs), experimentsOf(after.Outputs)
	single, _ := before.Outputs["checkpointDir"].(string)
	if len(was) == 0 && len(is) == 0 {
		return nil
	}
	q := &QueueShift{}
	add := func(format string, args ...any) { q.Lines = append(q.Lines, fmt.Sprintf(format, args...)) }
	settings := settingsJSON(after)
	continued := false
	for _, name := range slices.Sorted(maps.Keys(is)) {
		x, prev := is[name], was[name]
		if !x.stopped {
			q.Running++
		}
		switch {
		case x.stopped && prev.dir == x.dir && !prev.stopped:
			add("Experiment %s: stops (jobs.%s.enabled=false): its RayJob is deleted (a running one stops), its checkpoints stay in %s and it resumes from them when enabled again.", name, name, x.dir)
		case x.stopped:
			add("Experiment %s: stopped (jobs.%s.enabled=false): it has no RayJob; its checkpoints, if any, are in %s.", name, name, x.dir)
		case prev.dir == x.dir && prev.stopped:
			add("Experiment %s (queue): enabled again; it goes back in the queue and resumes from its newest checkpoint in %s when admitted.", name, x.dir)
		case prev.dir == x.dir:
			changes := changedSettings(before.Settings[name], settings[name])
			if prev.priority != x.priority {
				changes = append(changes, fmt.Sprintf("priority %d → %d (jobs.%s.priority)", prev.priority, x.priority, name))
			}
			// A finished experiment's replaced RayJob stays suspended and out of the queue: its
			// launch (workloads.LaunchJob) reads the finished run's record.
			line := fmt.Sprintf("Experiment %s (queue): the same one; a replaced RayJob goes back in the queue and resumes from its newest checkpoint in %s (a finished one stays out of the queue, suspended with no Ray cluster and no GPU node, unless its maxSteps or epochs grew: its launch Job reads what the finished run recorded).%s", name, x.dir, changesText(changes))
			if len(changes) > 0 {
				line += givesWay(name, is)
			}
			add("%s", line)
		case prev.dir != "" && !prev.stopped:
			add("Experiment %s (queue): a new one under the same name, since what it trains changed (the framework or its release, the model, the datasets, their revisions, NeMo RL's recipe or verl's GPU count): its RayJob is replaced (a running one stops), and it starts from step 0 in %s when the queue admits it; the earlier one's checkpoints stay in %s.%s%s", name, x.dir, prev.dir,
				changesText(changedSettings(before.Settings[name], settings[name])), givesWay(name, is))
		case single == x.dir:
			continued = true
			add("Experiment %s (queue): the stack's run until now, with its checkpoints in %s: it goes in the queue and resumes from its newest.", name, x.dir)
		default:
			add("Experiment %s (queue): a new one; it starts from step 0 in %s when the queue admits it.", name, x.dir)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(was)) {
		if _, ok := is[name]; !ok {
			add("Experiment %s: leaves the queue; its RayJob is deleted (a running one stops), its checkpoints stay in %s.", name, was[name].dir)
		}
	}
	if single != "" && len(is) > 0 && !continued {
		q.SingleLeft = single
		add("Experiment %s: the stack's run until now, which no experiment of jobs continues; its checkpoints stay in %s.", path.Base(single), single)
	}
	return q
}

// queuedExperiment is an experiment of a plan's `experiments` output.
type queuedExperiment struct {
	dir      string
	stopped  bool
	waits    bool
	priority int
}

// givesWay says what replacing a running experiment's RayJob does while others wait: pulumi
// deletes it before it creates the new one (deleteBeforeReplace, the same name), so Kueue admits
// the first waiting experiment in the queue's order (priority, then name) in the GPUs it freed,
// and that one runs to its end: the queue never preempts (workloads/queue, preemption Never).
// "" when none waits.
func givesWay(name string, is map[string]queuedExperiment) string {
	var waiting []string
	for n, x := range is {
		if n != name && x.waits {
			waiting = append(waiting, n)
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	slices.SortFunc(waiting, func(a, b string) int {
		if is[a].priority != is[b].priority {
			return is[b].priority - is[a].priority
		}
		return strings.Compare(a, b)
	})
	first := waiting[0]
	return fmt.Sprintf(" If it is running when `pulumi up` replaces its RayJob, it gives its GPUs away: the queue admits the first waiting experiment that fits them (%s, priority %d, first in order), which runs to its end (the queue never preempts), and %s waits behind it. To keep them, change it between runs, or stop the waiting ones first (jobs.<name>.enabled=false).",
		first, is[first].priority, name)
}

// experimentsOf are the experiments of a plan's `experiments` output, by name.
func experimentsOf(outputs map[string]any) map[string]queuedExperiment {
	out := map[string]queuedExperiment{}
	xs, _ := outputs["experiments"].(map[string]any)
	for name, v := range xs {
		about, _ := v.(map[string]any)
		dir, ok := about["checkpointDir"].(string)
		if !ok {
			continue
		}
		start, _ := about["start"].(string)
		priority, _ := about["priority"].(float64)
		if p, ok := about["priority"].(int); ok {
			priority = float64(p)
		}
		out[name] = queuedExperiment{dir: dir, stopped: start == string(infra.NotStarted), waits: start == string(infra.Waits), priority: int(priority)}
	}
	return out
}
