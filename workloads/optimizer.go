package workloads

import (
	"slices"
	"strings"

	"gke-rl/internal/kinds"
)

// A checkpoint holds the optimizer's and the LR scheduler's state beside the weights, and a
// resume restores them: verl v0.6.0 loads the optimizer's state dict (its param_groups carry
// the learning rate) and the scheduler's (its base_lrs) whenever checkpoint.load_contents names
// them, which by default it does (verl/utils/checkpoint/fsdp_checkpoint_manager.py,
// load_checkpoint); NeMo RL v0.5.0 always hands the checkpoint's policy/optimizer to the policy,
// which loads optimizer and scheduler from it (nemo_rl/algorithms/grpo.py, setup: optimizer_path;
// nemo_rl/utils/native_checkpoint.py, load_checkpoint). So a new learning rate on an experiment
// that has saved would never apply: the old one comes back with the state. run.sh records the
// optimizer's settings beside the checkpoints and, when they change, resumes verl's weights
// with a fresh optimizer and scheduler (load_contents=[model]) and refuses NeMo RL's resume,
// which has no such switch, naming the two ways on.

// optimizerStatePrefixes are the framework keys whose values live in a checkpoint's optimizer
// or LR scheduler state.
var optimizerStatePrefixes = map[kinds.Framework][]string{
	kinds.Verl:   {"actor_rollout_ref.actor.optim."},
	kinds.NeMoRL: {"policy.optimizer", "policy.scheduler", "policy.megatron_cfg.optimizer.", "policy.megatron_cfg.scheduler."},
}

// VerlFreshOptimizer is the override run.sh adds to resume verl's weights alone: the optimizer
// and the LR scheduler (in "extra", with the RNG state) start fresh with the run's settings.
const VerlFreshOptimizer = "actor_rollout_ref.actor.checkpoint.load_contents=[model]"

// OptimizerStateKey reports whether a framework key's value is restored with a checkpoint's
// optimizer or scheduler state, and of which framework.
func OptimizerStateKey(key string) (kinds.Framework, bool) {
	for _, f := range []kinds.Framework{kinds.Verl, kinds.NeMoRL} {
		if slices.ContainsFunc(optimizerStatePrefixes[f], func(p string) bool { return strings.HasPrefix(key, p) }) {
			return f, true
		}
	}
	return "", false
}

// OptimizerSettings are a run's overrides that a checkpoint's optimizer state holds, as
// `key=value` words sorted by key: what run.sh records beside the checkpoints (OPTIMIZER).
func OptimizerSettings(f kinds.Framework, overrides []Override) string {
	last := map[string]string{}
	for _, o := range overrides {
		if of, ok := OptimizerStateKey(o.Key); ok && of == f {
			last[o.Key] = o.Key + "=" + o.Value
		}
	}
	keys := make([]string, 0, len(last))
	for k := range last {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	words := make([]string, len(keys))
	for i, k := range keys {
		words[i] = last[k]
	}
	return strings.Join(words, " ")
}

// SettingChangeEffect says what a change of a framework key does to an experiment that has
// saved, when it resumes: "" for a key the framework reads anew on every start.
func SettingChangeEffect(key string) string {
	f, ok := OptimizerStateKey(key)
	switch {
	case !ok:
		return ""
	case f == kinds.Verl:
		return "applies: the run resumes the weights with a fresh optimizer and LR scheduler at the new value (run.sh, load_contents=[model]), dropping their earlier state"
	default:
		return "refused when the run resumes: NeMo RL (v0.5.0, v0.7.0) restores the checkpoint's optimizer and scheduler, so the old value would stay (allowed: a new experiment, another job.name, or the old value)"
	}
}
