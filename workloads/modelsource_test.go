package workloads_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// The tokenizer door: NeMo RL's 10-40B recipe names its tokenizer by Hub ID at v0.5.0 and v0.7.0
// (recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml, policy.tokenizer.name:
// Qwen/Qwen2.5-32B), loaded with trust_remote_code from the shared volume's Hub cache. Every
// recipe the program can pick at each release, with the program's overrides, loads only the
// checked copy.
func TestEveryRecipeLoadsOnlyTheCheckedModel(t *testing.T) {
	for _, tag := range workloads.ReleaseTags(kinds.NeMoRL) {
		recipes := workloads.NeMoRLRecipes(tag)
		require.Len(t, recipes, 9, tag)
		for _, recipe := range recipes {
			t.Run(tag+" "+recipe, func(t *testing.T) {
				r := run()
				r.Recipe, r.Release = recipe, tag
				var args []string
				for _, o := range workloads.NeMoRLOverrides(r) {
					args = append(args, o.Key+"="+o.Value)
				}
				release := workloads.ReleaseOf(kinds.NeMoRL, tag)
				before := messages(workloads.CheckCommand(release, recipe, []string{"policy.model_name=" + r.TrainingModelDir()}))
				if recipe == "examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml" {
					assert.Contains(t, before, "policy.tokenizer.name=Qwen/Qwen2.5-32B: it names a model repository", "the recipe's own tokenizer, by Hub ID")
				}
				for _, p := range workloads.CheckCommand(release, recipe, args) {
					assert.NotContains(t, p.Message, "names a model repository", "%s: %s", p.Origin, p.Message)
				}
			})
		}
	}
}

func TestAModelOrTokenizerByHubIDIsRefusedWhereCodeLoads(t *testing.T) {
	const recipe32B = "examples/configs/recipes/llm/grpo-qwen2.5-32b-32n8g-fsdp2tp8-actckpt.v3.yaml"
	const checked = "/lustre/checkpoints/.gke-rl/models/Qwen/Qwen2.5-32B@abc"
	nemo := func(args ...string) string {
		return messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.NeMoRL), recipe32B, with([]string{"policy.model_name=" + checked}, args...)))
	}
	// Before the program set it, the recipe's own tokenizer was the Hub's.
	assert.Contains(t, nemo(), "policy.tokenizer.name=Qwen/Qwen2.5-32B: it names a model repository whose code the framework runs (NeMo RL (v0.5.0, v0.7.0) loads it with trust_remote_code=True",
		"the 32B recipe's own tokenizer")
	assert.Contains(t, nemo(), "allowed: the run's checked copy of job.model, which the program sets ("+checked+"), or unset")
	assert.NotContains(t, nemo("policy.tokenizer.name="+checked), "names a model repository", "the checked copy is allowed")
	assert.Contains(t, nemo("policy.tokenizer.name=/lustre/huggingface/hub/x"), "policy.tokenizer.name=/lustre/huggingface/hub/x: it names a model repository", "another path is refused too")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.NeMoRL), recipe32B, []string{"policy.model_name=Qwen/Qwen2.5-32B"})),
		"policy.model_name=Qwen/Qwen2.5-32B: it names a model repository", "the model itself by Hub ID")

	// verl trusts a repository's code only where its trust_remote_code is on: the guide's Hub
	// ID plans (TestVerlStartupChecks), and the same with remote code on does not.
	trusted := with(verlGuideCommand, "actor_rollout_ref.model.trust_remote_code=True")
	got := messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", trusted))
	assert.Contains(t, got, "actor_rollout_ref.model.path=Qwen/Qwen2.5-32B-Instruct: it names a model repository whose code the framework runs (actor_rollout_ref.model.trust_remote_code is on)")
	local := with(without(trusted, "actor_rollout_ref.model.path"), "actor_rollout_ref.model.path="+checked)
	require.NotContains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", local)), "names a model repository", "the checked copy with remote code on")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(local, "actor_rollout_ref.model.tokenizer_path=Qwen/Qwen2.5-32B-Instruct"))),
		"actor_rollout_ref.model.tokenizer_path=Qwen/Qwen2.5-32B-Instruct: it names a model repository")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(local, "reward_model.model.trust_remote_code=True", "reward_model.enable=True"))),
		"reward_model.model.path=~/models/FsfairX-LLaMA3-RM-v0.1", "the reward model's default with remote code on")
	assert.NotContains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(local, "reward_model.model.trust_remote_code=True"))),
		"reward_model.model.path", "a reward model that does not run")
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(local, "critic.model.trust_remote_code=True", "critic.enable=True"))),
		"critic.model.path=~/models/deepseek-llm-7b-chat", "a critic that runs")
	// Without critic.enable, GAE's advantages run the critic (verl v0.6.0
	// verl/trainer/ppo/utils.py, need_critic); critic.enable=False keeps it off even then.
	assert.Contains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(local, "critic.model.trust_remote_code=True", "algorithm.adv_estimator=gae"))),
		"critic.model.path=~/models/deepseek-llm-7b-chat", "GAE's critic")
	assert.NotContains(t, messages(workloads.CheckCommand(workloads.DefaultRelease(kinds.Verl), "", with(local, "critic.model.trust_remote_code=True", "algorithm.adv_estimator=gae", "critic.enable=False"))),
		"critic.model.path", "a critic turned off")
}
