package infra

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strings"

	rayutils "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"k8s.io/apimachinery/pkg/util/validation"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// An experiment is what one line of checkpoints trains: job.name names its checkpoint and log
// directories, its RayJob, its W&B run and run.sh's log lines. The same experiment resumes from
// its newest checkpoint; a new one starts from step 0 and leaves the others' where they are.

// MaxExperimentNameLength is KubeRay's limit on a RayJob's name, which the experiment's is
// (ray-operator v1.5.0 controllers/ray/utils/constant.go, MaxRayJobNameLength: the RayCluster
// it creates adds a suffix within the cluster name's limit).
const MaxExperimentNameLength = rayutils.MaxRayJobNameLength

// ExperimentName is the run's experiment: job.name, or the default derived from what is trained.
func ExperimentName(c *Config) string {
	if c.Job.Name != "" {
		return c.Job.Name
	}
	return DefaultExperimentName(c)
}

// DefaultExperimentName names an experiment after what it trains: the model and the dataset,
// readable, and a hash of everything that makes its checkpoints another run's — the framework,
// the model and its pinned revision, the dataset and its pinned revision, NeMo RL's recipe, and
// for verl the GPU count (verl v0.6.0 saves one shard per rank, named by the world size:
// verl/utils/checkpoint/fsdp_checkpoint_manager.py, model_world_size_{W}_rank_{r}.pt, which
// another GPU count cannot load). Change any of them and the default changes, so that the new
// run starts from step 0 in its own directory instead of loading a checkpoint it cannot use.
func DefaultExperimentName(c *Config) string {
	sum := identityHash(c)
	model := slug(path.Base(c.Job.Model), 24)
	dataset := slug(c.Job.Dataset, 12)
	name := strings.Trim(model+"-"+dataset, "-") + "-" + sum
	if name[0] < 'a' || name[0] > 'z' {
		name = "x" + name
	}
	return name
}

// identityHashLength is how many hex digits of its identity's hash an experiment's name carries.
const identityHashLength = 6

// identityHash is the hash of what makes an experiment's checkpoints another's
// (experimentIdentity), in identityHashLength hex digits.
func identityHash(c *Config) string {
	h := sha256.New()
	for _, part := range experimentIdentity(c) {
		fmt.Fprintf(h, "%s\x00", part)
	}
	return hex.EncodeToString(h.Sum(nil))[:identityHashLength]
}

// MaxQueuedNameLength bounds the key of an experiment of jobs, which its run's name extends
// with "-" and its identity's hash (QueuedRunName).
const MaxQueuedNameLength = MaxExperimentNameLength - 1 - identityHashLength

// QueuedRunName is the run of an experiment of jobs: its key and the hash of its identity. Its
// checkpoints, logs, RayJob and W&B run are named by it, as the single run's default name is,
// so that a change of what it trains under the same key (the framework, the model, the datasets,
// their revisions, NeMo RL's recipe, verl's GPU count) starts a new experiment in a directory of
// its own, instead of resuming checkpoints it cannot load or should not continue; the earlier
// one's stay. e is the experiment's configuration (Config.ForExperiment), e.Job.Name its key.
func QueuedRunName(e *Config) string { return e.Job.Name + "-" + identityHash(e) }

// experimentIdentity are the values DefaultExperimentName hashes, labelled.
func experimentIdentity(c *Config) []string {
	parts := []string{
		"framework=" + string(c.Framework),
		"model=" + c.Job.Model,
		"modelRevision=" + c.Job.Revisions[c.Job.Model],
		"dataset=" + c.Job.Dataset,
	}
	if src := workloads.VerlDatasetSources[c.Job.Dataset]; c.Framework == kinds.Verl && src != "" {
		parts = append(parts, "datasetRevision="+c.Job.Revisions[src])
	}
	if c.Framework == kinds.NeMoRL {
		parts = append(parts, "recipe="+c.Job.Recipe)
	}
	// A release's checkpoints are not shown to load in another's (the optimizer, the scheduler
	// and the dataloader state they save changed between them), so each release trains its own
	// experiment. The first release the program ran hashes nothing of it: its experiments keep
	// the names they had before releases could be chosen.
	if rel, ok := workloads.LookupRelease(c.Framework, c.Job.FrameworkRelease); ok && !rel.FirstRelease() {
		parts = append(parts, "release="+rel.Tag)
	}
	if c.Framework == kinds.Verl {
		if spec, ok := LookupGPU(c.GPU.Type); ok {
			parts = append(parts, fmt.Sprintf("gpus=%d", c.GPU.Nodes*spec.GPUsPerNode))
		}
	}
	return parts
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug is s in lower case with every other run of characters a single '-', at most n long.
func slug(s string, n int) string {
	s = strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > n {
		s = strings.TrimRight(s[:n], "-")
	}
	return s
}

// validateExperiment checks job.name and job.resumeFrom.
func validateExperiment(c *Config, errs *Errors) {
	for _, k := range []struct{ key, value string }{{"job.name", c.Job.Name}, {"job.resumeFrom", c.Job.ResumeFrom}} {
		if k.value == "" {
			continue
		}
		if why := experimentNameProblem(k.value); why != "" {
			errs.Add(k.key, "%s %s; allowed: lower-case letters, digits and '-', starting with a letter, at most %d characters", quote(k.value), why, MaxExperimentNameLength)
		}
	}
	if errs.Has("job.name") || errs.Has("job.resumeFrom") || c.Job.ResumeFrom == "" {
		return
	}
	if why := workloads.ResumeRefusal(c.Framework); why != "" {
		errs.Add("job.resumeFrom", "%s cannot be continued with framework %s: %s; allowed: remove job.resumeFrom (the experiment starts from step 0)", quote(c.Job.ResumeFrom), c.Framework, why)
		return
	}
	if name := ExperimentName(c); c.Job.ResumeFrom == name {
		errs.Add("job.resumeFrom", "%s is this experiment (job.name): an experiment resumes from its own checkpoints by itself; allowed: another experiment's name, or remove job.resumeFrom", quote(c.Job.ResumeFrom))
	}
}

// continueRun says how a stack with jobs continues the run named name, which none of its
// experiments continues by itself: an experiment that starts from its checkpoints
// (jobs.<name>.resumeFrom), or, with a framework that starts no experiment from another's,
// removing jobs.
func continueRun(c *Config, name string) string {
	if why := workloads.ResumeRefusal(c.Framework); why != "" {
		return fmt.Sprintf("no experiment can continue it (%s: %s); to train it on, remove jobs (`pulumi config rm jobs`)", c.Framework, why)
	}
	return fmt.Sprintf("to continue it as an experiment: `pulumi config set --path jobs.%s.resumeFrom %s`", c.Jobs[0].Name, name)
}

// experimentNameProblem says why a name cannot name an experiment ("" if it can): it is a
// RayJob's name (a DNS-1035 label within KubeRay's limit) and a directory's.
func experimentNameProblem(name string) string {
	if len(name) > MaxExperimentNameLength {
		return fmt.Sprintf("is %d characters long", len(name))
	}
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		return "is not a DNS label"
	}
	return ""
}

// experimentSettings are the overrides of an experiment of jobs that a config key sets, each with
// the key that set its value: the entry's own, job's, or the key's default. The values the
// program fixes (Origin "framework") are left out: no key of the experiment changes them.
func experimentSettings(j JobConfig, e *Config, overrides []workloads.Override) []Setting {
	var out []Setting
	for _, o := range overrides {
		field, ok := strings.CutPrefix(o.Origin, "job.")
		if !ok {
			continue
		}
		top := "job." + topField(field)
		from := "default of " + o.Origin
		switch {
		case j.own[top]:
			from = KeyJobs + "." + j.Name + "." + field
		case e.explicit[top] || workloads.KnobSet(e.Job.Tuning, top):
			// Set by the stack (a knob is set when it has a value: Tuning's pointers).
			from = o.Origin
		}
		out = append(out, Setting{Key: o.Key, Value: o.Value, From: from})
	}
	return out
}
