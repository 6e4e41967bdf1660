package infra_test

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/plantest"
)

// experiment is the experiment b200-spot with overrides runs, read from what it names: the RayJob
// and the checkpoint directory must agree.
func experiment(t *testing.T, overrides ...string) string {
	t.Helper()
	bp := plantest.Resolve(t, "b200-spot", overrides...)
	require.Equal(t, bp.Run.RayJob.Name, path.Base(bp.Run.Layout.Checkpoints()), "the RayJob and the checkpoint directory are named by the experiment")
	return bp.Run.RayJob.Name
}

// The default experiment changes with what is trained, so that a new model, dataset, recipe,
// framework or (with verl, whose shards are per rank) GPU count starts from step 0 in a directory
// of its own; it stays with what only tunes or sizes the same run, which then resumes.
func TestTheDefaultExperimentFollowsWhatIsTrained(t *testing.T) {
	verl := []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"}
	nemo := experiment(t)
	assert.Equal(t, "qwen2-5-72b-instruct-deepscaler-251dec", nemo)
	base := experiment(t, verl...)
	assert.Regexp(t, `^qwen2-5-72b-instruct-gsm8k-[0-9a-f]{6}$`, base)

	newExperiment := map[string][]string{
		"another framework": nil, // nemo, above
		"another model":     append(verl[:4:4], "job.model=Qwen/Qwen2.5-32B-Instruct"),
		"another dataset":   append(verl[:4:4], "job.dataset=math"),
		"a pinned model":    append(verl[:4:4], `job.revisions["Qwen/Qwen2.5-72B-Instruct"]=0123456789abcdef0123456789abcdef01234567`),
		"a pinned dataset":  append(verl[:4:4], `job.revisions["openai/gsm8k"]=0123456789abcdef0123456789abcdef01234567`),
		"more verl GPUs":    append(verl[:4:4], "gpu.nodes=16", "gpu.maxNodes=16"),
	}
	seen := map[string]string{base: "the base", nemo: "another framework"}
	for why, overrides := range newExperiment {
		if overrides == nil {
			continue
		}
		name := experiment(t, overrides...)
		assert.NotContains(t, seen, name, "%s: a new experiment", why)
		seen[name] = why
	}
	assert.NotEqual(t, nemo, experiment(t, "job.recipe=examples/configs/grpo_math_70B_megatron_fp8.yaml"), "another NeMo RL recipe")
	assert.Equal(t, nemo, experiment(t, "gpu.nodes=16", "gpu.maxNodes=16"), "NeMo RL's checkpoints load on another GPU count")

	for _, same := range [][]string{
		{"job.learningRate=2e-6"}, {"job.klCoef=0.01"}, {"job.temperature=0.8"}, {"job.maxSteps=40"},
		{"job.checkpointPeriod=4"}, {"job.rolloutGpuMemory=0.5"}, {"job.maxResponseLength=2048"},
	} {
		assert.Equal(t, base, experiment(t, append(verl[:4:4], same...)...), "%v tunes the same experiment, which resumes", same)
	}
	assert.Equal(t, "kl-0-01", experiment(t, append(verl[:4:4], "job.name=kl-0-01")...), "job.name names it")
}

func TestExperimentKeysAreChecked(t *testing.T) {
	verl := []string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]"}
	assertRefused(t, []refusal{
		{"an experiment name with capitals", "h200-reserved", []string{"job.name=KL-Sweep"}, "job.name", "not a DNS label; allowed: lower-case letters, digits and '-'"},
		{"an experiment name longer than a RayJob's", "h200-reserved", []string{"job.name=a-very-long-experiment-name-that-kuberay-would-refuse"}, "job.name", "at most 47 characters"},
		{"an experiment name with a slash", "h200-reserved", []string{"job.name=../other"}, "job.name", "not a DNS label"},
		// At the limit: KubeRay v1.5.0's RayJob names, 53 - 6 = 47 characters
		// (controllers/ray/utils/constant.go, MaxRayJobNameLength); 47 is taken below.
		{"an experiment name of 48 characters", "h200-reserved", []string{"job.name=a" + strings.Repeat("b", 47)}, "job.name", "is 48 characters long; allowed: lower-case letters, digits and '-', starting with a letter, at most 47 characters"},
		{"resuming from a name that cannot be one", "h200-reserved", []string{"job.resumeFrom=Base_line"}, "job.resumeFrom", "not a DNS label"},
		{"resuming from itself", "h200-reserved", []string{"job.name=base", "job.resumeFrom=base"}, "job.resumeFrom", "is this experiment"},
		{"resuming from another experiment with NeMo RL", "b200-spot", []string{"job.resumeFrom=base"}, "job.resumeFrom", "NeMo RL (v0.5.0, v0.7.0) resumes only from its own checkpointing.checkpoint_dir"},
	})
	longest := "a" + strings.Repeat("b", 46)
	assert.Contains(t, plantest.Resolve(t, "h200-reserved", "job.name="+longest).Run.RayJob.Spec.Entrypoint, " EXPERIMENT="+longest+" ", "47 characters: KubeRay's limit itself")
	bp := plantest.Resolve(t, "b200-spot", append(verl, "job.name=kl-0-01", "job.resumeFrom=base")...)
	assert.Contains(t, bp.Run.RayJob.Spec.Entrypoint, " RESUME_FROM=/lustre/checkpoints/base ", "run.sh is told where the other experiment's checkpoints are")
	assert.Contains(t, bp.Run.RayJob.Spec.Entrypoint, " EXPERIMENT=kl-0-01 ")
	assert.NotContains(t, plantest.Resolve(t, "b200-spot", verl...).Run.RayJob.Spec.Entrypoint, "RESUME_FROM=")
}
