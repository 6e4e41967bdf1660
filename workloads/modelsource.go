package workloads

import (
	"fmt"
	"strings"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// A setting that names a model or a tokenizer is where the framework loads code from: a
// model's or tokenizer's repository can carry Python (auto_map), which transformers runs when it
// is loaded with trust_remote_code. NeMo RL v0.5.0 loads every tokenizer so
// (nemo_rl/algorithms/utils.py, get_tokenizer: AutoTokenizer.from_pretrained(name,
// trust_remote_code=True)) and its models too (nemo_rl/models/policy/workers/*, trust_remote_code
// =True); verl only where the model's trust_remote_code is on (verl/utils/tokenizer.py,
// hf_tokenizer; verl/workers/fsdp_workers.py). A Hub ID there is read from HF_HUB_CACHE on the
// shared volume (the Ray pods are offline), which the data preparation and the support principals
// write: whoever plants a repository under huggingface/hub/models--<org>--<name>/ chooses the
// code. So every such setting must name the model the run checked itself (the copy run.sh
// promotes under the checkpoints' tree, TrainingModelDir), which the model's own key holds.

// modelSource is a framework's model key and the keys that load code from a model repository.
type modelSource struct {
	// model is the key that names the model the run trains (the checked copy).
	model string
	// loaders are the keys that load a repository, each with the key that turns remote code on
	// for it ("" where the framework always trusts it).
	loaders []loader
}

// loader is a key that loads a repository, the key that turns remote code on for it ("" where
// the framework always trusts it), and whether the part of the run that loads it runs at all.
type loader struct {
	key, trust string
	used       bool
}

// modelSources are the code-loading settings of each framework's configuration at the pinned tag.
func modelSources(f kinds.Framework, e *frameworkconfig.Effective) modelSource {
	if f == kinds.Verl {
		// verl v0.6.0 (_generated_ppo_trainer.yaml): the actor's model and tokenizer, the
		// critic's, and the reward model's with its input tokenizer, each group trusting remote
		// code by its own trust_remote_code.
		// The critic runs when critic.enable says so, else with GAE's advantages
		// (verl/trainer/ppo/utils.py, need_critic); the reward model when reward_model.enable.
		ar, c, rm := "actor_rollout_ref.model.", "critic.model.", "reward_model.model."
		critic := e.Bool("critic.enable") || (e.Value("critic.enable") == nil && e.Value("algorithm.adv_estimator") == "gae")
		reward := e.Bool("reward_model.enable")
		return modelSource{model: ar + "path", loaders: []loader{
			{ar + "path", ar + "trust_remote_code", true}, {ar + "tokenizer_path", ar + "trust_remote_code", true},
			{c + "path", c + "trust_remote_code", critic}, {c + "tokenizer_path", c + "trust_remote_code", critic},
			{rm + "path", rm + "trust_remote_code", reward}, {rm + "input_tokenizer", rm + "trust_remote_code", reward},
		}}
	}
	// NeMo RL: every key of the recipe that names a model or a tokenizer (policy.model_name,
	// policy.tokenizer.name, and any other *model_name or *tokenizer.name a recipe has), all
	// loaded with trust_remote_code=True.
	s := modelSource{model: "policy.model_name"}
	for _, k := range e.Keys() {
		if strings.HasSuffix(k, "model_name") || strings.HasSuffix(k, "tokenizer.name") {
			s.loaders = append(s.loaders, loader{key: k, used: true})
		}
	}
	return s
}

// modelSourceChecks refuses a code-loading setting that names anything but the run's checked
// model: a Hub ID, another path, or the model key itself when it is not a path.
func modelSourceChecks(f kinds.Framework, e *frameworkconfig.Effective) []Problem {
	s := modelSources(f, e)
	model, _ := e.Value(s.model).(string)
	var out []Problem
	for _, l := range s.loaders {
		if !l.used || (l.trust != "" && !e.Bool(l.trust)) {
			continue // not loaded, or loaded without running its code (trust_remote_code off)
		}
		v := e.Value(l.key)
		if v == nil {
			continue // unset: the framework falls back to the model's own key
		}
		value := fmt.Sprint(v)
		if strings.HasPrefix(model, "/") && value == model {
			continue
		}
		why := "it names a model repository whose code the framework runs (" + trustRule(f, l) + ")"
		if !strings.HasPrefix(value, "/") {
			why += ", read from the Hugging Face cache on the shared volume, which the data preparation and the support principals may write"
		}
		allowed := "the run's checked copy of job.model, which the program sets"
		if strings.HasPrefix(model, "/") {
			allowed += " (" + model + ")"
		}
		out = append(out, Problem{Origin: origin(e, l.key), Message: fmt.Sprintf("%s=%s: %s; allowed: %s, or unset", l.key, value, why, allowed)})
	}
	return out
}

func trustRule(f kinds.Framework, l loader) string {
	if f == kinds.Verl {
		return l.trust + " is on"
	}
	return "NeMo RL (v0.5.0, v0.7.0) loads it with trust_remote_code=True, nemo_rl/algorithms/utils.py get_tokenizer and the policy workers"
}
