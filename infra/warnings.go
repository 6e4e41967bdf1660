package infra

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"gke-rl/cluster"
	"gke-rl/internal/kinds"
	"gke-rl/internal/words"
	"gke-rl/workloads"
)

// warnings are the problems worth a look that do not stop the plan, `key: message` like errors.
func warnings(c *Config, e *CheckpointEstimate, d *RunDeadline, now time.Time) Errors {
	var warns Errors
	if c.Job.Enabled && !c.explicit["job.activeDeadlineSeconds"] && d == nil {
		warns.Add("job.activeDeadlineSeconds", "the run has no deadline: its length is unknown (job.epochs %d on %s, whose size the planner does not know); a run that hangs holds its GPUs until someone stops it: set job.maxSteps or job.activeDeadlineSeconds",
			c.Job.Epochs, quote(c.Job.Dataset))
	}
	warnZone(c, &warns)
	warnUnpinned(c, &warns)
	warnExclusion(c, now, &warns)
	warnInapplicable(c, &warns)
	warnCappedEpochs(c, &warns)
	warnRecipeSize(c, &warns)
	warnImageDigest(c, &warns)
	warnSingleRunLeft(c, &warns)
	if c.Storage.Adopt {
		warns.Add("storage.adopt", "is on: the next `pulumi up` imports the kept storage; once it has, turn it off (`pulumi config set --path storage.adopt false`): "+
			"while it is on, Pulumi refuses any change that would replace an imported resource (\"previously-imported resources that still specify an ID may not be replaced\")")
	}
	switch {
	case e == nil:
		// The same unknown size leaves the memory check out and the deadline a guess: one warning,
		// naming what each needs.
		deadline := ""
		if c.Job.Enabled && !c.explicit["job.activeDeadlineSeconds"] && d != nil && d.SizeUnknown {
			deadline = fmt.Sprintf(", and the derived deadline (%s) guesses %s a step, which neither the size's allowance nor the step's work bounds: set job.modelSize, or job.activeDeadlineSeconds to what the run may take",
				hours(time.Duration(d.Seconds)*time.Second), minutes(d.Step))
		}
		warns.Add("job.modelSize", "the parameter count of %s is not in its name; set job.modelSize (e.g. 8B) to get a checkpoint time estimate and a memory check%s", quote(c.Job.Model), deadline)
	case e.Seconds > float64(c.Storage.CheckpointBudgetSeconds):
		advice := "raise storage.throughput or storage.capacityGib, or checkpoint less often (job.checkpointPeriod)"
		if c.Storage.Type == kinds.GCSFuse {
			advice = "writes go at GCS FUSE speed; storage.type=lustre suits frequent checkpoints, or checkpoint less often (job.checkpointPeriod)"
		}
		warns.Add("storage.checkpointBudgetSeconds", "one checkpoint of %s takes about %.0f s (%.0f GB at %.0f MB/s), over the %d s budget; %s",
			c.Job.Model, math.Ceil(e.Seconds), e.GB, e.WriteMBps, c.Storage.CheckpointBudgetSeconds, advice)
	}
	return warns
}

// warnSingleRunLeft says what adding jobs does to the run the stack trained until then: job.*
// become the experiments' defaults, each experiment trains under its own key, and none continues
// that run unless one starts from it (jobs.<name>.resumeFrom). The plan cannot know whether the
// stack ran it (plan --compare can): the warning names the run `job` would train, and how to keep
// it, until an experiment resumes from it.
func warnSingleRunLeft(c *Config, warns *Errors) {
	if !c.Queued() || c.Job.Name != "" {
		return
	}
	single := DefaultExperimentName(c)
	for _, j := range c.Jobs {
		if j.ResumeFrom == single {
			return
		}
	}
	warns.Add(KeyJobs, "with jobs, job.* are the experiments' defaults and no experiment continues the stack's own run (%s, checkpoints in %s): if the stack trained it, `pulumi up` stops it for good and its checkpoints stay; %s",
		single, workloads.Layout{Root: c.Storage.MountPath, Run: single}.Checkpoints(), continueRun(c, single))
}

// warnRecipeSize says when job.recipe was written for a model of a smaller size class than
// job.model: its parallelism, offloading and batch sizes are a smaller model's. CheckFit
// refuses what cannot fit; this names what fits but was not meant for the model.
func warnRecipeSize(c *Config, warns *Errors) {
	if c.Framework != kinds.NeMoRL || !c.explicit["job.recipe"] {
		return
	}
	model, ok := modelParameters(c)
	written := workloads.NeMoRLRecipeModel(c.Job.Recipe)
	recipe, known := nameParameters(written)
	if !ok || !known || workloads.NeMoRLSizeClass(model/1e9) <= workloads.NeMoRLSizeClass(recipe/1e9) {
		return
	}
	warns.Add("job.recipe", "%s was written for %s, a smaller model than %s (%s parameters): its parallelism and batch sizes are the smaller model's; the recipe for this size is %s (`pulumi config rm --path job.recipe` takes it)",
		c.Job.Recipe, written, c.Job.Model, formatParams(model), workloads.NeMoRLRecipeFor(model/1e9))
}

// warnImageDigest names an image of the user's pinned by tag only: a tag can be moved to other
// content, which every node would then run. The framework's default is not warned about on every
// plan, which the user could act on only with a registry client: the program ships it by tag
// because no digest of it is published where it can be checked (NVIDIA's catalog and Docker Hub
// show digests to a registry client, not in a document), and docs/configuration.md (ray.image)
// says how to pin its digest.
func warnImageDigest(c *Config, warns *Errors) {
	img := c.Ray.Image
	if img == "" || strings.Contains(img, "@sha256:") {
		return
	}
	warns.Add("ray.image", "%s is pinned by tag only, and a tag can be moved to other content; pin its digest: `pulumi config set --path ray.image '%s@sha256:<digest>'` (`docker buildx imagetools inspect %s` shows it)",
		quote(img), img, img)
}

// warnZone says what the zone tables cannot decide (zoneVerdict); validate refuses what they can.
func warnZone(c *Config, warns *Errors) {
	if spec, ok := LookupGPU(c.GPU.Type); ok {
		if warning := zoneVerdict(c, spec).Warning; warning != "" {
			warns.Add(KeyZone, "%s", warning)
		}
	}
}

// inapplicableKeys are keys that act only in one cluster mode or with one storage type: set
// elsewhere, they do nothing, which the plan says (a warning, so that switching a stack's mode
// or storage with one --config does not also require removing its other keys).
var inapplicableKeys = []struct {
	key, appliesTo string
	applies        func(c *Config) bool
}{
	{"cluster.cpuMachineType", "cluster.mode=standard (Autopilot has no CPU pool; it picks the head's nodes itself)",
		func(c *Config) bool { return c.Cluster.Mode != kinds.Autopilot }},
	{"storage.capacityGib", "storage.type=lustre", func(c *Config) bool { return c.Storage.Type == kinds.Lustre }},
	{"storage.throughput", "storage.type=lustre", func(c *Config) bool { return c.Storage.Type == kinds.Lustre }},
	{"storage.filesystem", "storage.type=lustre", func(c *Config) bool { return c.Storage.Type == kinds.Lustre }},
	{"storage.gkeSupport", "storage.type=lustre", func(c *Config) bool { return c.Storage.Type == kinds.Lustre }},
	{"storage.bucket", "storage.type=gcsfuse", func(c *Config) bool { return c.Storage.Type == kinds.GCSFuse }},
	{"gpu.minNodes", "cluster.mode=standard (Autopilot sizes its GPU nodes to the pods)", func(c *Config) bool { return c.Cluster.Mode != kinds.Autopilot }},
	{"gpu.maxNodes", "cluster.mode=standard (Autopilot sizes its GPU nodes to the pods)", func(c *Config) bool { return c.Cluster.Mode != kinds.Autopilot }},
	{"gate.minBusBandwidthGBps", "gate.enabled=true", func(c *Config) bool { return c.Gate.Enabled }},
	{"gate.storageGib", "gate.enabled=true", func(c *Config) bool { return c.Gate.Enabled }},
	{"gate.runId", "gate.enabled=true", func(c *Config) bool { return c.Gate.Enabled }},
	{"gate.capacityWaitMinutes", "gate.enabled=true", func(c *Config) bool { return c.Gate.Enabled }},
	{"ray.mirror", "an image of Docker Hub or nvcr.io (ray.image names another registry)", func(c *Config) bool { return imageMirror(c) != nil }},
}

// jobKeys describe the run: with job.enabled=false there is none.
var jobKeys = []string{"job.model", "job.dataset", "job.maxSteps", "job.epochs", "job.promptsPerStep", "job.generationsPerPrompt",
	"job.checkpointPeriod", "job.keepCheckpoints", "job.backoffLimit", "job.activeDeadlineSeconds", "job.args"}

// warnInapplicable warns about each key set where it does nothing, naming where it applies; the
// run's keys with job.enabled=false in one warning.
func warnInapplicable(c *Config, warns *Errors) {
	// A stopped experiment of jobs (jobs.<name>.enabled=false) keeps its keys for when it runs
	// again, and the stack's other experiments run: nothing to warn about.
	if !c.Job.Enabled && !c.Queued() {
		var set []string
		for _, key := range jobKeys {
			if c.explicit[key] {
				set = append(set, key)
			}
		}
		if len(set) > 0 {
			warns.Add("job.enabled", "is false, so %s do nothing: the stack runs no job, only the Ray cluster", strings.Join(set, ", "))
		}
	}
	for _, k := range inapplicableKeys {
		if c.explicit[k.key] && !k.applies(c) {
			warns.Add(k.key, "is set but does nothing here; it applies with %s: remove it (`pulumi config rm --path %s`)", k.appliesTo, k.key)
		}
	}
}

// exclusionWarningDays is how long before its end the plan warns about the exclusion.
const exclusionWarningDays = 30

// warnExclusion warns when the maintenance exclusion has ended or ends within 30 days: GKE then
// upgrades nodes again, one at a time, draining GPU nodes in the middle of a run.
func warnExclusion(c *Config, now time.Time, warns *Errors) {
	until, err := time.Parse(time.RFC3339, c.Cluster.NoUpgradesUntil)
	if c.Cluster.NoUpgradesUntil == NoUpgradesNone || err != nil {
		return
	}
	switch left := until.Sub(now); {
	case left <= 0:
		warns.Add("cluster.noUpgradesUntil", "the exclusion of minor and node upgrades ended on %s: GKE upgrades nodes again, one at a time, draining GPU nodes mid-run; "+
			"move it forward (up to %s) or set none", until.Format(time.DateOnly), cluster.LatestSupportEnd().Ends.Format(time.RFC3339))
	case left < exclusionWarningDays*24*time.Hour:
		warns.Add("cluster.noUpgradesUntil", "the exclusion of minor and node upgrades ends in %s (%s): GKE then upgrades nodes again, one at a time, draining GPU nodes mid-run; "+
			"plan the upgrade between runs, or move it forward within the cluster's minor version's support", words.Count(int(math.Ceil(left.Hours()/24)), "day"), until.Format(time.DateOnly))
	}
}

// warnUnpinned names the downloads that are not pinned to a commit (a branch or a tag can be
// moved to other weights or rows, so that two preparations of one stack differ), and the pins
// of repositories the run does not load.
func warnUnpinned(c *Config, warns *Errors) {
	if !c.Job.Enabled {
		return
	}
	loaded := append([]string{c.Job.Model}, workloads.HubDatasets(c.Framework, c.Job.Dataset)...)
	var loose, ids []string
	for _, id := range loaded {
		switch rev := c.Job.Revisions[id]; {
		case rev == "":
			loose, ids = append(loose, id+" (unpinned: its default branch)"), append(ids, id)
		case !workloads.IsCommit(rev):
			loose, ids = append(loose, fmt.Sprintf("%s (%s, a tag or branch)", id, quote(rev))), append(ids, id)
		}
	}
	if len(loose) > 0 {
		warns.Add("job.revisions", "the data preparation fetches %s at a revision that can move (its log records the commit it got); pin each to a commit: `pulumi config set --path 'job.revisions[\"%s\"]' <40-character commit ID>`",
			strings.Join(loose, ", "), ids[0])
	}
	for _, id := range slices.Sorted(maps.Keys(c.Job.Revisions)) {
		if !slices.Contains(loaded, id) {
			warns.Add(revisionKey(id), "pins %s, which the run does not load (it loads %s): the pin does nothing; remove it (`pulumi config rm --path 'job.revisions[\"%s\"]'`)",
				quote(id), strings.Join(loaded, ", "), id)
		}
	}
}

// warnCappedEpochs warns when job.epochs, set, asks for more steps than job.maxSteps lets the
// run take: both frameworks stop at whichever comes first (verl's total_training_steps, NeMo
// RL's max_num_steps), so the epochs set would not be trained.
func warnCappedEpochs(c *Config, warns *Errors) {
	j := c.Job
	rows, known := trainRows[j.Dataset]
	if !j.Enabled || !c.explicit["job.epochs"] || j.MaxSteps <= 0 || !known || j.PromptsPerStep <= 0 {
		return
	}
	// A batch larger than the dataset makes perEpoch 0, and any job.maxSteps covers 0 steps.
	perEpoch := rows / j.PromptsPerStep
	if j.MaxSteps >= j.Epochs*perEpoch {
		return
	}
	warns.Add("job.epochs", "%d epochs are %d steps (%d %s rows / job.promptsPerStep %d = %d per epoch), but job.maxSteps %d stops the run first, in epoch %d; to train the epochs, remove job.maxSteps (`pulumi config rm --path job.maxSteps`), or set job.epochs to what the steps cover",
		j.Epochs, j.Epochs*perEpoch, rows, j.Dataset, j.PromptsPerStep, perEpoch, j.MaxSteps, (j.MaxSteps+perEpoch-1)/perEpoch)
}
