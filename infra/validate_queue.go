package infra

import (
	"fmt"
	"slices"
	"strings"

	"gke-rl/internal/kinds"
	"gke-rl/internal/words"
	"gke-rl/workloads"
	"gke-rl/workloads/queue"
)

// The checks of a queue of experiments (jobs), and how each experiment's problems are named.

// validateJobs checks `jobs` besides what each experiment's own configuration must pass
// (Resolve checks those under jobs.<name>): the names, the priorities, and that each fits the
// queue.
func validateJobs(c *Config, spec GPUSpec, errs *Errors) {
	if !c.Queued() {
		return
	}
	if c.Job.Name != "" {
		errs.Add("job.name", "%s names the one experiment of a stack without jobs; with jobs, each entry's key names its experiment: remove job.name (`pulumi config rm --path job.name`); %s", quote(c.Job.Name), continueRun(c, c.Job.Name))
	}
	for _, j := range c.Jobs {
		key := KeyJobs + "." + j.Name
		if len(j.Name) > MaxQueuedNameLength && experimentNameProblem(j.Name) == "" {
			errs.Add(key, "the experiment's name %s is %d characters long; allowed: at most %d, since its RayJob and checkpoint directory add the hash of what it trains (-<%d hex digits>)",
				quote(j.Name), len(j.Name), MaxQueuedNameLength, identityHashLength)
		}
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
	validateQueueCheckpoints(c, errs)
	validateQueueResumes(c, errs)
	validateQueueDatasets(c, errs)
}

// validateQueueResumes checks an experiment that starts from another of the same stack
// (jobs.<name>.resumeFrom): the other must not be able to run at the same time, or the new one
// would load a checkpoint still being written and rotated away; and it must have the same GPU
// count, since verl v0.6.0 saves one shard per rank, named by the world size
// (verl/utils/checkpoint/fsdp_checkpoint_manager.py, model_world_size_{W}_rank_{r}.pt).
func validateQueueResumes(c *Config, errs *Errors) {
	byName := map[string]JobConfig{}
	for _, j := range c.Jobs {
		byName[j.Name] = j
	}
	for _, j := range c.Jobs {
		from, ok := byName[j.ResumeFrom]
		if !ok || !j.Enabled || errs.Has(KeyJobs+"."+j.Name+".resumeFrom") || errs.Has("job.resumeFrom") {
			continue
		}
		if from.Enabled && j.Nodes+from.Nodes <= c.GPU.MaxNodes {
			*errs = append(*errs, experimentError(j, FieldError{Key: "job.resumeFrom", Message: fmt.Sprintf(
				"%s is an experiment of this stack that can run at the same time as %s (%d + %d GPU nodes fit gpu.maxNodes %d): %s would load a checkpoint %s is still writing; "+
					"allowed: stop %s first (jobs.%s.enabled=false), then start %s",
				quote(from.Name), j.Name, from.Nodes, j.Nodes, c.GPU.MaxNodes, j.Name, from.Name, from.Name, from.Name, j.Name)}))
			continue
		}
		if c.Framework == kinds.Verl && from.Nodes != j.Nodes {
			*errs = append(*errs, experimentError(j, FieldError{Key: "job.resumeFrom", Message: fmt.Sprintf(
				"%s trains on %s and %s on %d: verl saves one checkpoint shard per GPU, which another GPU count cannot load; allowed: the same node count as %s (jobs.%s.nodes %d)",
				quote(from.Name), words.Count(from.Nodes, "GPU node"), j.Name, j.Nodes, from.Name, j.Name, from.Nodes)}))
		}
	}
}

// validateQueueDatasets refuses two pins of one NeMo RL dataset in one queue: NeMo RL v0.5.0
// loads its datasets by name (load_dataset) from the one Hugging Face cache of the shared
// volume, offline, so experiments that pin one dataset differently would all train on whichever
// pin a preparation downloaded last.
func validateQueueDatasets(c *Config, errs *Errors) {
	if c.Framework != kinds.NeMoRL {
		return
	}
	first := map[string]JobConfig{}
	for _, j := range c.Jobs {
		if !j.Enabled {
			continue
		}
		for _, repo := range workloads.NeMoRLDatasetSources[j.Dataset] {
			other, seen := first[repo]
			if !seen {
				first[repo] = j
				continue
			}
			if other.Revisions[repo] != j.Revisions[repo] {
				key := KeyJobs + "." + j.Name + ".revisions"
				if !j.own["job.revisions"] {
					key = "job.revisions"
				}
				errs.Add(key, "experiments %s and %s pin the dataset %s differently (%s, %s), but NeMo RL loads a dataset by name from the one Hugging Face cache they share, so both would train on whichever was prepared last; allowed: one pin of %s for every experiment (job.revisions)",
					other.Name, j.Name, repo, pinText(other.Revisions[repo]), pinText(j.Revisions[repo]), repo)
			}
		}
	}
}

// pinText is a revision as a message says it: the default branch when none is pinned.
func pinText(rev string) string {
	if rev == "" {
		return "main (unpinned)"
	}
	return rev
}

// validateQueueCheckpoints checks the experiments' checkpoints together against the one Lustre
// instance they share: each experiment's own fit is checked with it (job.keepCheckpoints), but
// the checkpoints of all of them stay on the volume, a stopped experiment's included, and those
// that run can all be saving at once. Only when each fits alone: that is its own error.
func validateQueueCheckpoints(c *Config, errs *Errors) {
	if c.Storage.Type != kinds.Lustre || errs.Has("storage.capacityGib") ||
		slices.ContainsFunc(*errs, func(e FieldError) bool { return strings.HasSuffix(e.Key, ".keepCheckpoints") }) {
		return
	}
	if u := volumeUse(c); u != nil && u.PeakGB > u.CapacityGB {
		errs.Add(KeyJobs, "the experiments' checkpoints at their peak need %.0f GB together (%s), more than the Lustre instance's %.0f GB (storage.capacityGib %d), which they share; "+
			"allowed: fewer checkpoints kept (job.keepCheckpoints, jobs.<name>.keepCheckpoints), fewer experiments, or a larger storage.capacityGib",
			u.PeakGB, strings.Join(u.Parts, ", "), u.CapacityGB, c.Storage.CapacityGiB)
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
