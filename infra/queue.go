package infra

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

// A stack with `jobs` runs several experiments on its GPUs through a queue (Kueue): each entry
// is an experiment, named by its key, that trains as `job` would in a RayJob of its own with
// its own checkpoints, and takes from `job` every key it does not set. The queue admits the
// experiments that fit its quota, the GPU pool's gpu.maxNodes nodes, highest priority first, and
// holds the others suspended, with no pod and no GPU node, until one ends.

// Queued reports whether the stack's runs go through the queue (`jobs` is set).
func (c *Config) Queued() bool { return len(c.Jobs) > 0 }

// ForExperiment is the configuration as one experiment of `jobs` sees it: its job as `job`, its
// node count as gpu.nodes, its keys as the ones the stack sets.
func (c *Config) ForExperiment(j JobConfig) *Config {
	e := *c
	e.Job = j
	e.GPU.Nodes = j.Nodes
	e.explicit = maps.Clone(c.explicit)
	for k := range e.explicit {
		if strings.HasPrefix(k, "job.") {
			delete(e.explicit, k)
		}
	}
	maps.Copy(e.explicit, j.explicit)
	return &e
}

// decodeJobs decodes `jobs`, each entry over `job` (mergeJob), in name order.
func decodeJobs(raw string, base rawJob, errs *Errors) []namedJobEntry {
	var entries map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		errs.Add(KeyJobs, "%s is not an object: set an experiment's keys with `pulumi config set --path jobs.<name>.<key> <value>`", quote(raw))
		return nil
	}
	if len(entries) == 0 {
		errs.Add(KeyJobs, "is empty; allowed: one entry per experiment (`pulumi config set --path jobs.<name>.model <model>`), or remove jobs (`pulumi config rm jobs`) to train job alone")
		return nil
	}
	var out []namedJobEntry
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		key := KeyJobs + "." + name
		e := namedJobEntry{name: name}
		if string(entries[name]) == "null" {
			entries[name] = json.RawMessage("{}")
		}
		decodeObject(key, string(entries[name]), &e.rawJobEntry, errs)
		if e.Name != nil {
			errs.Add(key+".name", "an experiment of jobs is named by its key (%s); remove the name (`pulumi config rm --path %s.name`)", quote(name), key)
		}
		e.own = map[string]bool{}
		for _, k := range setKeys(reflect.ValueOf(e.rawJob)) {
			e.own["job."+k] = true
		}
		mergeJob(&e.rawJob, base)
		out = append(out, e)
	}
	return out
}

// mergeJob fills what an entry of `jobs` does not set from `job`: a key it sets wins, and its
// revisions are added to job's (keyed by repository, a pin stays with its repository). job.name
// is `job`'s own and is not taken.
func mergeJob(entry *rawJob, base rawJob) {
	base.Name = nil
	revisions := maps.Clone(base.Revisions)
	if revisions != nil || entry.Revisions != nil {
		if revisions == nil {
			revisions = map[string]string{}
		}
		maps.Copy(revisions, entry.Revisions)
	}
	fillUnset(reflect.ValueOf(entry).Elem(), reflect.ValueOf(base))
	entry.Revisions = revisions
}

// fillUnset sets every nil field of dst (pointers, slices, maps, and those of embedded structs)
// to src's.
func fillUnset(dst, src reflect.Value) {
	for i := 0; i < dst.NumField(); i++ {
		d, s := dst.Field(i), src.Field(i)
		switch d.Kind() {
		case reflect.Struct:
			fillUnset(d, s)
		case reflect.Pointer, reflect.Slice, reflect.Map:
			if d.IsNil() {
				d.Set(s)
			}
		}
	}
}

// validateJobs checks `jobs` besides what each experiment's own configuration must pass
// (Resolve checks those under jobs.<name>): the names, the priorities, and that each fits the
// queue.
func validateJobs(c *Config, spec GPUSpec, errs *Errors) {
	if !c.Queued() {
		return
	}
	if c.Job.Name != "" {
		errs.Add("job.name", "%s names the one experiment of a stack without jobs; with jobs, each entry's key names its experiment: remove job.name (`pulumi config rm --path job.name`)", quote(c.Job.Name))
	}
	for _, j := range c.Jobs {
		key := KeyJobs + "." + j.Name
		if j.Priority < 0 || j.Priority > queue.MaxPriority {
			errs.Add(key+".priority", "%d is out of range; allowed: 0 to %d (higher runs first)", j.Priority, queue.MaxPriority)
		}
		nodesKey := "gpu.nodes"
		if j.own["jobs.nodes"] {
			nodesKey = key + ".nodes"
		}
		// Fewer than one node is the experiment's own gpu.nodes problem (perExperiment).
		if j.Nodes > c.GPU.MaxNodes {
			errs.Add(nodesKey, "experiment %s takes %d nodes (%d GPUs), more than the queue's quota of %d (gpu.maxNodes %d × %d GPUs), so it would wait forever; allowed: 1 to %d, or a larger gpu.maxNodes",
				j.Name, j.Nodes, j.Nodes*spec.GPUsPerNode, c.GPU.MaxNodes*spec.GPUsPerNode, c.GPU.MaxNodes, spec.GPUsPerNode, c.GPU.MaxNodes)
		}
	}
}

// experimentError is an experiment's problem under the key that sets it: `job.x` is
// jobs.<name>.x when the entry sets it, and job.x when it inherits it from `job`; its message
// names the experiment.
func experimentError(j JobConfig, e FieldError) FieldError {
	key := e.Key
	if field, ok := strings.CutPrefix(key, "job."); ok && j.own["job."+topField(field)] {
		key = KeyJobs + "." + j.Name + "." + field
	}
	if key == "job.name" {
		// The entry's key is the experiment's name.
		key = KeyJobs + "." + j.Name
	}
	if key == "gpu.nodes" && j.own["jobs.nodes"] {
		key = KeyJobs + "." + j.Name + ".nodes"
	}
	return FieldError{Key: key, Message: "experiment " + j.Name + ": " + e.Message}
}

// topField is a key path's first field: `args` of `args[2]`, `revisions` of `revisions["x"]`.
func topField(field string) string {
	if i := strings.IndexAny(field, ".["); i >= 0 {
		return field[:i]
	}
	return field
}

// queueMode is the run mode of a queued experiment: its own Ray cluster, whatever the capacity.
// Kueue queues a RayJob that brings its cluster; one on a long-lived cluster it leaves unmanaged
// (sigs.k8s.io/kueue v0.17.0 pkg/controller/jobs/rayjob/rayjob_webhook.go, validateCreate), and
// such a cluster would hold the GPUs the queue hands out.
func queueMode(c *Config) kinds.RunMode {
	if c.Queued() && c.Job.Enabled {
		return kinds.OwnCluster
	}
	return kinds.RunModeOf(c.Job.Enabled, c.GPU.Provisioning)
}

// perExperiment runs check on the stack's configuration and on each experiment's, and returns
// the stack's problems (any key but job's) once, and each experiment's own (job's keys, and
// gpu.nodes, which is its node count) under the keys that set them (experimentError).
func perExperiment(c *Config, check func(*Config, *Errors)) Errors {
	var out Errors
	var stack Errors
	check(c, &stack)
	for _, fe := range stack {
		if !experimentKey(fe.Key) {
			out = append(out, fe)
		}
	}
	seen := map[FieldError]bool{}
	for _, j := range c.Jobs {
		var errs Errors
		check(c.ForExperiment(j), &errs)
		for _, fe := range errs {
			if !experimentKey(fe.Key) {
				continue
			}
			fe = experimentError(j, fe)
			if !seen[fe] {
				seen[fe] = true
				out = append(out, fe)
			}
		}
	}
	return out
}

// experimentKey reports whether a problem's key is an experiment's own.
func experimentKey(key string) bool {
	return strings.HasPrefix(key, "job.") || key == "job" || key == "gpu.nodes"
}

// derivedDeadline is a run's derived deadline (`job`'s or an experiment's), nil when it sets its
// own, trains nothing or its length is unknown.
func derivedDeadline(e *Config) *RunDeadline {
	if !e.Job.Enabled || e.explicit["job.activeDeadlineSeconds"] {
		return nil
	}
	return deriveDeadline(e)
}

// prepJobName is the data preparation Job's name: the stack's, or each experiment's own in a
// queued stack, whose experiments prepare different models and datasets.
func prepJobName(c *Config, l workloads.Layout) string {
	if c.Queued() {
		return l.Run + "-data-prep"
	}
	return c.Cluster.Name + "-data-prep"
}

// resolveQueuedRun builds each experiment of `jobs` as resolveRun builds `job`'s run, queued
// (queue.Queued), and the queue's objects, whose GPU quota is the GPU pool at gpu.maxNodes.
func resolveQueuedRun(c *Config, bp *Blueprint) (RunPlan, error) {
	plan := RunPlan{
		Mode: kinds.OwnCluster, Framework: c.Framework, Release: frameworkRelease(c),
		Layout: workloads.Layout{Root: c.Storage.MountPath},
	}
	if c.Gate.Enabled {
		plan.Gate = resolveGate(c, bp)
	}
	args := queue.Args{Name: bp.Namespace, Namespace: bp.Namespace, GPUs: c.GPU.MaxNodes * bp.Hardware.GPUsPerNode, Priorities: map[string]int{}}
	var errs Errors
	for _, j := range c.Jobs {
		e := c.ForExperiment(j)
		x := ExperimentPlan{Name: j.Name, Priority: j.Priority, Nodes: j.Nodes, GPUs: j.Nodes * bp.Hardware.GPUsPerNode,
			Layout: workloads.Layout{Root: c.Storage.MountPath, Run: j.Name}}
		if !j.Enabled {
			x.Stopped, x.Start = true, NotStarted
			plan.Experiments = append(plan.Experiments, x)
			continue
		}
		// The gate runs once for the stack, before every experiment.
		e.Gate.Enabled = false
		ebp := *bp
		ebp.Deadline = derivedDeadline(e)
		run, err := resolveRun(e, &ebp)
		if err != nil {
			var fe Errors
			if errors.As(err, &fe) {
				for _, e := range fe {
					errs = append(errs, experimentError(j, e))
				}
				continue
			}
			return RunPlan{}, err
		}
		x.RayJob = queue.Queued(run.RayJob, bp.Namespace, j.Priority)
		if n := queue.PodSets(x.RayJob); n > queue.MaxPodSets {
			errs.Add(KeyJobs+"."+j.Name, "the RayJob has %d pod sets, more than Kueue's %d (its head, worker groups and submitter each count); allowed: at most %d worker groups", n, queue.MaxPodSets, queue.MaxPodSets-2)
		}
		x.Prep, x.MemoryEstimate, x.Hub, x.Deadline = run.Prep, run.MemoryEstimate, run.Hub, ebp.Deadline
		args.Jobs = append(args.Jobs, x.RayJob)
		args.Priorities[x.RayJob.Name] = j.Priority
		plan.Experiments = append(plan.Experiments, x)
	}
	if err := errs.Err(); err != nil {
		return RunPlan{}, err
	}
	order(plan.Experiments, args.GPUs)
	plan.Queue = &QueuePlan{Name: args.Name, Objects: queue.Objects(args), GPUs: args.GPUs, InstallEnv: queue.InstallEnv(bp.Namespace)}
	return plan, nil
}

// order says which experiments run as soon as the stack is applied and which wait, as Kueue
// admits them from an empty queue: highest priority first, then in creation order (Pulumi
// creates them in name order), each that fits the GPUs left; BestEffortFIFO lets a smaller
// one past a larger one that does not fit.
func order(xs []ExperimentPlan, gpus int) {
	idx := make([]int, 0, len(xs))
	for i := range xs {
		if !xs[i].Stopped {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return xs[b].Priority - xs[a].Priority })
	free := gpus
	for _, i := range idx {
		if xs[i].GPUs <= free {
			xs[i].Start = StartsAtOnce
			free -= xs[i].GPUs
		} else {
			xs[i].Start = Waits
		}
	}
}

// anyRayJob is the run's RayJob, or the first experiment's: they set the same fields.
func (r RunPlan) anyRayJob() *rayv1.RayJob {
	if r.RayJob != nil {
		return r.RayJob
	}
	for _, x := range r.Experiments {
		if x.RayJob != nil {
			return x.RayJob
		}
	}
	return nil
}

// RunningAtOnce is how many GPU nodes the experiments that run as soon as the stack is applied
// take, and their names.
func (r RunPlan) RunningAtOnce() (int, string) {
	nodes, names := 0, []string{}
	for _, x := range r.Experiments {
		if x.Start == StartsAtOnce {
			nodes += x.Nodes
			names = append(names, x.Name)
		}
	}
	if len(names) == 0 {
		return 0, "none runs"
	}
	return nodes, strings.Join(names, ", ") + " at once"
}

// setKeys are the json keys of a raw config struct's fields that are set (not nil), those of
// embedded structs included.
func setKeys(v reflect.Value) []string {
	var keys []string
	for i := 0; i < v.NumField(); i++ {
		f, field := v.Field(i), v.Type().Field(i)
		switch {
		case field.Anonymous && f.Kind() == reflect.Struct:
			keys = append(keys, setKeys(f)...)
		case (f.Kind() == reflect.Pointer || f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && !f.IsNil():
			keys = append(keys, strings.Split(field.Tag.Get("json"), ",")[0])
		}
	}
	return keys
}
