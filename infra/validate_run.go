package infra

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// The checks of the run: its framework, its job and their bounds (retries, deadline, checkpoints).

func validateFramework(c *Config, errs *Errors) {
	if !oneOf(errs, KeyFramework, c.Framework, kinds.Frameworks) {
		return
	}
	if c.Ray.Version != "" && !semverPattern.MatchString(c.Ray.Version) {
		errs.Add("ray.version", "%s is not a Ray version like 2.49.2", quote(c.Ray.Version))
	}
	if img := c.Ray.Image; img != "" {
		switch {
		case !imagePattern.MatchString(img):
			errs.Add("ray.image", "%s is not an image reference like registry/repository:tag", quote(img))
		case !strings.Contains(img[strings.LastIndex(img, "/")+1:], ":") && !strings.Contains(img, "@"):
			errs.Add("ray.image", "%s has no tag; pin a tag or a digest so that every node runs the same code", quote(img))
		case movingTag(img):
			errs.Add("ray.image", "%s uses a moving tag (latest): each node would run the build of the day it pulls; pin a version tag or a digest (image@sha256:...)", quote(img))
		}
	}
	release, ok := workloads.LookupRelease(c.Framework, c.Job.FrameworkRelease)
	if !ok {
		errs.Add("job.frameworkRelease", "%s is not a release of %s that the program runs; allowed: %s", quote(c.Job.FrameworkRelease), c.Framework, strings.Join(workloads.ReleaseTags(c.Framework), ", "))
		return
	}
	validateReleaseImage(c, release, errs)
	if tags := experimentReleases(c); len(tags) > 1 && c.Ray.Image != "" {
		// ray.image is the stack's, one image for every experiment; a release's code needs its own.
		errs.Add("ray.image", "%s is every experiment's image, but the experiments train with %s releases %s; allowed: experiments of one release with ray.image, or ray.image unset (each release's own image)",
			quote(c.Ray.Image), c.Framework, strings.Join(tags, " and "))
	}
}

// validateReleaseImage checks the image a run of release takes: the release's own, or
// `ray.image` with its Ray in `ray.version`. Its problems name job.frameworkRelease, an
// experiment's own key, when the release is what asks for ray.image.
func validateReleaseImage(c *Config, release workloads.Release, errs *Errors) {
	if release.Image == "" {
		// No image of the release stays the same: the stack pins one by digest, and says its Ray.
		if c.Ray.Image == "" || !strings.Contains(c.Ray.Image, "@sha256:") || c.Ray.Version == "" {
			errs.Add("job.frameworkRelease", "%s names no image that stays the same (its docs use a moving tag, built from %s at %s), and this stack pins none; allowed: %s, or set ray.image to that image pinned by digest (`docker buildx imagetools inspect IMAGE` prints it; IMAGE@sha256:...) and ray.version to the Ray inside it (`docker run --rm IMAGE python3 -c 'import ray; print(ray.__version__)'`)",
				release.Name(), release.ImageRecipe, release.Tag, strings.Join(pinnedReleases(c.Framework), ", "))
		}
		return
	}
	// KubeRay reads rayVersion to choose what it asks of the image's Ray: it must be the
	// version inside the image.
	if c.Ray.Version != "" && c.Ray.Image == "" && c.Ray.Version != release.RayVersion {
		errs.Add("ray.version", "%s is not the Ray of %s's image %s (%s); allowed: %s, or set ray.image to an image that carries Ray %s",
			quote(c.Ray.Version), release.Name(), release.Image, release.RayVersion, release.RayVersion, c.Ray.Version)
	}
}

// pinnedReleases are the releases of a framework whose image the program pins.
func pinnedReleases(f kinds.Framework) []string {
	var out []string
	for _, tag := range workloads.ReleaseTags(f) {
		if workloads.ReleaseOf(f, tag).Image != "" {
			out = append(out, tag)
		}
	}
	return out
}

// experimentReleases are the releases the stack's runs train with, sorted: `job`'s, or each
// enabled experiment's of `jobs`.
func experimentReleases(c *Config) []string {
	if !c.Queued() {
		return []string{c.Job.FrameworkRelease}
	}
	seen := map[string]bool{}
	for _, j := range c.Jobs {
		if j.Enabled {
			seen[j.FrameworkRelease] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// movingTag reports whether an image's tag is one its publisher moves to each new build:
// latest, or a line's latest (verlai/verl:vllm012.latest).
func movingTag(image string) bool {
	if strings.Contains(image, "@") {
		return false
	}
	tag := image[strings.LastIndex(image, ":")+1:]
	return tag == "latest" || strings.HasSuffix(tag, ".latest") || strings.HasSuffix(tag, "-latest")
}

func validateJob(c *Config, errs *Errors) {
	j := c.Job
	if !modelPattern.MatchString(j.Model) {
		errs.Add("job.model", "%s is not a Hugging Face model ID like Qwen/Qwen2.5-32B-Instruct", quote(j.Model))
	}
	if size, ok := ParseModelSize(j.ModelSize); j.ModelSize != "" && !ok {
		errs.Add("job.modelSize", "%s is not a parameter count; allowed: a number with B or M, e.g. 72B, 1.5B, 500M", quote(j.ModelSize))
	} else if m := modelSizePattern.FindStringSubmatch(j.Model); ok && m != nil {
		// The size sizes verl's batches and the checkpoint estimate: two sizes far apart cannot
		// both hold. A name rounds its model's count (Llama-3.2-1B has 1.24B parameters,
		// Qwen2.5-7B 7.62B, Qwen2.5-0.5B 0.49B, by their cards), so the card's count is taken
		// within namedSizeSlack of the name's.
		if named, _ := sizeValue(m[1], m[2]); size < named*(1-namedSizeSlack) || size > named*(1+namedSizeSlack) {
			errs.Add("job.modelSize", "%s contradicts job.model %s, whose name says %s%s; allowed: remove job.modelSize (it is read from the name), or the count on the model's card, within %.0f %% of the name's (%s to %s)",
				quote(j.ModelSize), quote(j.Model), m[1], strings.ToUpper(m[2]), namedSizeSlack*100, formatParams(named*(1-namedSizeSlack)), formatParams(named*(1+namedSizeSlack)))
		}
	}
	validateModelShape(j, errs)
	if why, gated := workloads.GatedModels[j.Model]; gated && j.Enabled && !c.Tokens.HuggingFace {
		errs.Add("job.model", "%s is gated on the Hugging Face Hub (%s): its download needs the token of an account granted access, and the data preparation would fail in the cluster; allowed: `pulumi config set --path tokens.huggingFace true` and its value (README, Tokens), or a model that is not gated",
			quote(j.Model), why)
	}
	if strings.TrimSpace(j.Dataset) == "" {
		errs.Add("job.dataset", "is empty; allowed: a dataset name such as DeepScaler (nemo-rl) or gsm8k (verl)")
	}
	validateRevisions(c, errs)
	validateExperiment(c, errs)
	tuning := workloads.CheckTuning(c.Framework, c.Job.Tuning)
	for _, k := range slices.Sorted(maps.Keys(tuning)) {
		errs.Add(k, "%s", tuning[k])
	}
	positive := []struct {
		key   string
		value int
		set   bool
	}{
		{"job.maxSteps", j.MaxSteps, c.explicit["job.maxSteps"]},
		{"job.epochs", j.Epochs, c.explicit["job.epochs"]},
		{"job.promptsPerStep", j.PromptsPerStep, true},
		{"job.generationsPerPrompt", j.GenerationsPerPrompt, true},
		{"job.checkpointPeriod", j.CheckpointPeriod, true},
		{"job.keepCheckpoints", j.KeepCheckpoints, true},
	}
	for _, p := range positive {
		if p.set && p.value <= 0 {
			errs.Add(p.key, "%d is not allowed; allowed: a whole number greater than 0", p.value)
		}
	}
	if c.Framework == kinds.Verl && j.KeepCheckpoints == 1 {
		// verl removes the oldest save before it writes the next (v0.6.0,
		// verl/utils/checkpoint/fsdp_checkpoint_manager.py save_checkpoint: the
		// max_ckpt_to_keep rotation comes first): with one kept, a preemption during a save
		// leaves no complete checkpoint, and the run starts again from step 0.
		errs.Add("job.keepCheckpoints", "1 with verl can lose the run: verl removes its only checkpoint before it writes the next, so a preemption during that save leaves none and the run starts from step 0; allowed: 2 or more")
	}
	if j.GenerationsPerPrompt == 1 {
		// verl v0.6.0 verl/trainer/ppo/core_algos.py compute_grpo_outcome_advantage: a group of
		// one gets mean 0 and std 1, so its advantage is its raw reward.
		errs.Add("job.generationsPerPrompt", "1 leaves GRPO no group to compare a generation with (its advantage becomes the raw reward); allowed: 2 or more")
	}
	validateJobBounds(c, errs)
	managed := workloads.ManagedKeys(c.Framework, c.Job.FrameworkRelease)
	seen := map[string]int{}
	for i, arg := range j.Args {
		key := fmt.Sprintf("job.args[%d]", i)
		switch {
		case !overridePattern.MatchString(arg):
			errs.Add(key, "%s is not a framework override; allowed: key=value, e.g. policy.max_total_sequence_length=4096", quote(arg))
		case managed[workloads.OverrideKey(arg)].Key != "":
			errs.Add(key, "%s sets %s, which the program sets; %s", quote(arg), workloads.OverrideKey(arg), workloads.SetterOf(managed[workloads.OverrideKey(arg)]))
		default:
			k := workloads.OverrideKey(arg)
			if first, dup := seen[k]; dup {
				// Both frameworks apply overrides in order: the first value would be dropped silently.
				errs.Add(key, "%s sets %s again (job.args[%d] sets it first), and only the last value would count; allowed: each key once", quote(arg), k, first)
			} else {
				seen[k] = i
			}
		}
	}
	if release, ok := workloads.LookupRelease(c.Framework, j.FrameworkRelease); ok {
		for _, p := range workloads.CheckArgs(release, j.Recipe, j.Args) {
			if !errs.Has(p.Origin) {
				errs.Add(p.Origin, "%s", p.Message)
			}
		}
	}
	if c.Framework == kinds.NeMoRL && !slices.Contains(workloads.NeMoRLDatasets, j.Dataset) {
		errs.Add("job.dataset", "%s is not a dataset that NeMo RL's math GRPO example loads (load_response_dataset); allowed with framework nemo-rl: %s", quote(j.Dataset), strings.Join(workloads.NeMoRLDatasets, ", "))
	}
	if c.Framework == kinds.Verl {
		if _, ok := workloads.VerlDatasets[j.Dataset]; !ok {
			errs.Add("job.dataset", "%s has no verl preparation script; allowed with framework verl: %s", quote(j.Dataset), strings.Join(slices.Sorted(maps.Keys(workloads.VerlDatasets)), ", "))
		}
	}
	switch {
	case c.Framework == kinds.Verl && c.explicit["job.recipe"]:
		errs.Add("job.recipe", "%s is a NeMo RL recipe, which framework verl does not read; remove it (`pulumi config rm --path job.recipe`) or set framework nemo-rl", quote(j.Recipe))
	case c.Framework == kinds.NeMoRL && !slices.Contains(workloads.NeMoRLRecipes(j.FrameworkRelease), j.Recipe):
		errs.Add("job.recipe", "%s is not a GRPO math recipe of NeMo RL %s; allowed: %s", quote(j.Recipe), j.FrameworkRelease, strings.Join(workloads.NeMoRLRecipes(j.FrameworkRelease), ", "))
	}
}

// validateRevisions checks that every pinned revision can name a Hub revision. A pin of a
// repository the run does not load is inert, and only warned about (warnUnpinned): switching
// job.model or job.dataset with one --config must not also require removing the old pins.
func validateRevisions(c *Config, errs *Errors) {
	for _, id := range slices.Sorted(maps.Keys(c.Job.Revisions)) {
		if why := workloads.CheckRevision(c.Job.Revisions[id]); why != "" {
			errs.Add(revisionKey(id), "%s", why)
		}
	}
}

// revisionKey is the config path of one pin, as `pulumi config set --path` takes it.
func revisionKey(id string) string { return fmt.Sprintf("job.revisions[%q]", id) }

// namedSizeSlack is how far job.modelSize may be from the size a model's name says: names
// round their counts (the largest gap among the common families, Llama-3.2-1B's 1.24B, is
// 24 %), and a size twice or half the name's is still refused.
const namedSizeSlack = 0.35

// Bounds of the run's retry and time keys.
const (
	MaxBackoffLimit = 100
	// MinActiveDeadlineSeconds is the shortest deadline a run could meet: pulling the framework
	// image and starting Ray alone take minutes.
	MinActiveDeadlineSeconds = 600
)

// validateJobBounds checks the run's retries, deadline and checkpoints against each other and
// against the storage.
func validateJobBounds(c *Config, errs *Errors) {
	j := c.Job
	if j.BackoffLimit < 0 || j.BackoffLimit > MaxBackoffLimit {
		errs.Add("job.backoffLimit", "%d is out of range; allowed: 0 to %d retries", j.BackoffLimit, MaxBackoffLimit)
	}
	switch d := j.ActiveDeadlineSeconds; {
	case d < 0:
		errs.Add("job.activeDeadlineSeconds", "%d is not allowed; allowed: 0 (no deadline) or more seconds", d)
	case d > 0 && d < MinActiveDeadlineSeconds:
		errs.Add("job.activeDeadlineSeconds", "%d s is shorter than a run's start (image pull, Ray, model load); allowed: 0 (no deadline) or %d seconds or more", d, MinActiveDeadlineSeconds)
	}
	if steps, basis, ok := runSteps(c); ok && j.CheckpointPeriod > steps && j.CheckpointPeriod > 0 {
		errs.Add("job.checkpointPeriod", "%d steps is longer than the run (%d steps: %s): no checkpoint would be saved, and a preempted run would start over; allowed: 1 to %d", j.CheckpointPeriod, steps, basis, steps)
	}
	// The checkpoints the volume holds at their peak must fit. Only against a valid capacity
	// (validateStorage runs first): a wrong size is its own error.
	if e := estimateCheckpoint(c); e != nil && c.Storage.Type == kinds.Lustre && j.KeepCheckpoints > 0 && !errs.Has("storage.capacityGib") {
		capacityGB := float64(c.Storage.CapacityGiB) * (1 << 30) / 1e9
		// Beside the checkpoints the volume holds the model twice, and with NeMo RL on
		// Megatron its conversion, in the run's checkpoint directory.
		copies := modelCopiesGB(j)
		conversion := conversionGB(c.Framework, j)
		resident := copies + conversion
		fits := func(keep int) bool {
			peak, _ := checkpointsAtPeak(c, keep)
			return float64(peak)*e.GB+resident <= capacityGB
		}
		if !fits(j.KeepCheckpoints) {
			allowed := j.KeepCheckpoints
			for allowed > 0 && !fits(allowed) {
				allowed--
			}
			peak, why := checkpointsAtPeak(c, j.KeepCheckpoints)
			errs.Add("job.keepCheckpoints", "%d checkpoints at the peak (%s) need %.0f GB (%.0f GB each)%s, more than the Lustre instance's %.0f GB (storage.capacityGib %d); allowed: at most %d, or a larger storage.capacityGib",
				peak, why, float64(peak)*e.GB, e.GB, besideModel(float64(peak)*e.GB, copies, conversion), capacityGB, c.Storage.CapacityGiB, allowed)
		}
	}
}

// besideModel says what of the model the volume holds beside the checkpoints (its download and
// checked copy, and a Megatron conversion), and the sum.
func besideModel(checkpointsGB, copies, conversion float64) string {
	switch {
	case copies == 0:
		return ""
	case conversion == 0:
		return fmt.Sprintf(", and the model's download and checked copy %.0f GB more: %.0f GB in all", copies, checkpointsGB+copies)
	}
	return fmt.Sprintf(", and the model's download, checked copy and Megatron conversion %.0f GB more: %.0f GB in all", copies+conversion, checkpointsGB+copies+conversion)
}

// checkpointsAtPeak is how many checkpoints the shared volume holds at most during a run that
// keeps keep, and why. NeMo RL writes the new checkpoint before it removes the oldest
// (nemo_rl/utils/checkpoint.py): keepCheckpoints + 1. verl v0.6.0 removes the oldest first
// (verl/utils/checkpoint/fsdp_checkpoint_manager.py, save_checkpoint): keepCheckpoints. verl
// rotates only the checkpoints its own process saved (checkpoint_manager.py:
// previous_saved_paths starts empty), so in a retried run those of the earlier attempt (run.sh
// leaves keepCheckpoints of them) stay beside the new attempt's keepCheckpoints until the next
// attempt starts: twice keepCheckpoints.
func checkpointsAtPeak(c *Config, keep int) (int, string) {
	switch {
	case c.Framework == kinds.Verl && c.Job.BackoffLimit > 0:
		return 2 * keep, "verl keeps an earlier attempt's checkpoints beside a retry's until the next attempt"
	case c.Framework == kinds.Verl:
		return keep, "verl removes the oldest before it saves the next"
	}
	return keep + 1, "the one being saved beside those kept"
}

// Bounds of job.modelShape: the smallest and largest values of the models people post-train
// with GRPO are far inside them (hidden sizes 896 to 16,384, 24 to 126 layers, vocabularies of
// 32,000 to 262,208); a value outside is a typo or another field of config.json.
const (
	minHiddenSize, maxHiddenSize = 64, 65536
	minLayers, maxLayers         = 1, 1024
	minVocab, maxVocab           = 1000, 1048576
)

// validateModelShape refuses a model the memory estimate has no shape for, rather than guess
// one (a Gemma 3's vocabulary is 1.7 times a Qwen's, and the log-prob peak grows with it), and
// a job.modelShape outside what any model has.
func validateModelShape(j JobConfig, errs *Errors) {
	m := j.ModelShape
	if m == nil {
		if _, known := workloads.KnownShape(j.Model); !known && j.Enabled && modelPattern.MatchString(j.Model) {
			errs.Add("job.model", "%s is not in the program's table of model shapes (%s), which sizes the memory check and verl's batches; allowed: a model of the table, or job.modelShape from the model's config.json (https://huggingface.co/%s/blob/%s/config.json): `pulumi config set --path job.modelShape.hiddenSize <hidden_size>`, and numHiddenLayers (num_hidden_layers) and vocabSize (vocab_size) the same way",
				quote(j.Model), strings.Join(workloads.KnownShapeNames(), ", "), j.Model, revisionOr(j.Revisions[j.Model], "main"))
		}
		return
	}
	for _, f := range []struct {
		key, inConfigJSON string
		value, lo, hi     int
	}{
		{"job.modelShape.hiddenSize", "hidden_size", m.HiddenSize, minHiddenSize, maxHiddenSize},
		{"job.modelShape.numHiddenLayers", "num_hidden_layers", m.NumHiddenLayers, minLayers, maxLayers},
		{"job.modelShape.vocabSize", "vocab_size", m.VocabSize, minVocab, maxVocab},
	} {
		if f.value < f.lo || f.value > f.hi {
			errs.Add(f.key, "%d is not a value of config.json for any model; allowed: %d to %d (config.json's %s)", f.value, f.lo, f.hi, f.inConfigJSON)
		}
	}
}

// revisionOr is a pinned revision, or def for an unpinned repository (its default branch).
func revisionOr(rev, def string) string {
	if rev == "" {
		return def
	}
	return rev
}
