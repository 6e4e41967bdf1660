package workloads

import (
	"fmt"
	"slices"
	"strings"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// VerlConfigFile is the configuration the plan checks a verl run against, composed at the run's
// release; a NeMo RL run's is its recipe at the run's release.
const VerlConfigFile = "verl/trainer/config/_generated_ppo_trainer.yaml"

// NeMoRLDatasets are the dataset names (data.dataset_name; v0.7.0 data.train.dataset_name) of
// NeMo RL's math datasets that the program prepares, each loaded by name at both releases
// (nemo_rl/data/datasets/response_datasets/__init__.py, load_response_dataset: an unknown name
// stops the run; the remaining built-ins are SFT, vision or other tasks' datasets, or need files
// of their own).
var NeMoRLDatasets = []string{"DAPOMath17K", "DeepScaler", "OpenMathInstruct-2"}

// NeMoRLRecipes are the GRPO math recipes of a NeMo RL release that the plan has tables for.
func NeMoRLRecipes(tag string) []string { return frameworkconfig.Sources("nemo-rl", tag) }

// Problem is a reason the framework would refuse the run at startup, about the config key to
// change.
type Problem = frameworkconfig.Problem

// CheckArgs checks `job.args` alone against the framework's configuration: each key must exist
// there (or be added with `+`), so that a key of the other framework or a misspelled one fails
// the plan with the config key that holds it.
func CheckArgs(rel Release, recipe string, args []string) []Problem {
	f := rel.Framework
	table, err := load(rel, recipe)
	if err != nil {
		return nil // the recipe's own check reports it
	}
	var overrides []Override
	for i, arg := range args {
		overrides = append(overrides, frameworkconfig.ParseOverride(arg, fmt.Sprintf("job.args[%d]", i)))
	}
	_, problems := table.Apply(overrides)
	for i := range problems {
		problems[i].Message += foreignHint(f, problems[i].Message) + movedHint(rel, problems[i].Message)
	}
	return problems
}

func load(rel Release, recipe string) (*frameworkconfig.Table, error) {
	if rel.Framework == kinds.Verl {
		return frameworkconfig.Load("verl", rel.Tag, VerlConfigFile)
	}
	return frameworkconfig.Load("nemo-rl", rel.Tag, recipe)
}

// CheckRun composes the command a run would execute against its framework's configuration at the
// pinned tag and runs the framework's own startup checks on the effective values. It returns
// every problem, each naming the config key to change and the upstream rule.
func CheckRun(f kinds.Framework, r Run) []Problem {
	return check(r.release(f), r.Recipe, Overrides(f, r))
}

// CheckCommand runs the same checks on the overrides of a command line (`key=value` words after
// the trainer's module or the recipe), whoever wrote it.
func CheckCommand(rel Release, recipe string, args []string) []Problem {
	return check(rel, recipe, parseArgs(args))
}

// parseArgs reads `key=value` words as overrides, each named by its position.
func parseArgs(args []string) []Override {
	overrides := make([]Override, len(args))
	for i, arg := range args {
		overrides[i] = frameworkconfig.ParseOverride(arg, fmt.Sprintf("argument %d", i+1))
	}
	return overrides
}

func check(rel Release, recipe string, overrides []Override) []Problem {
	f := rel.Framework
	table, err := load(rel, recipe)
	if err != nil {
		return []Problem{{Origin: "job.recipe", Message: err.Error()}}
	}
	eff, problems := table.Apply(overrides)
	for i := range problems {
		problems[i].Message += foreignHint(f, problems[i].Message) + movedHint(rel, problems[i].Message)
	}
	problems = append(problems, modelSourceChecks(f, eff)...)
	if f == kinds.Verl {
		return append(problems, verlChecks(eff, rel)...)
	}
	return append(problems, nemoRLChecks(eff, rel)...)
}

// movedHint says when an unknown key is one the release removed or moved.
func movedHint(rel Release, message string) string {
	key, _, _ := strings.Cut(message, " ")
	if why, ok := rel.Removed[strings.TrimPrefix(key, "+")]; ok {
		return fmt.Sprintf("; %s %s it: %s", rel.Name(), map[bool]string{true: "moved", false: "removed"}[strings.HasPrefix(why, "now ")], why)
	}
	return ""
}

// foreignHint says when an unknown key belongs to the other framework.
func foreignHint(f kinds.Framework, message string) string {
	key, _, _ := strings.Cut(message, " ")
	key = strings.TrimPrefix(key, "+")
	other, file := kinds.Verl, VerlConfigFile
	if f == kinds.Verl {
		other, file = kinds.NeMoRL, DefaultNeMoRLRecipe
	}
	// Any release's key: a stack written for an earlier one is as foreign.
	for _, tag := range ReleaseTags(other) {
		if t, err := frameworkconfig.Load(string(other), tag, file); err == nil && t.Has(key) {
			return fmt.Sprintf("; it is a %s key: remove it with framework %s", other, f)
		}
	}
	return ""
}

func intOf(e *frameworkconfig.Effective, key string) int {
	n, _ := e.Int(key)
	return n
}

// origin is the config key to name for a check on framework keys: the first that the stack set.
func origin(e *frameworkconfig.Effective, keys ...string) string {
	for _, k := range keys {
		if o := e.Origin(k); o != "" && o != "framework" {
			return o
		}
	}
	return "job.args"
}

// origins are the config keys that set keys, in order, each once, the framework's fixed values
// left out.
func origins(e *frameworkconfig.Effective, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if o := e.Origin(k); o != "" && o != "framework" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// verlMaxNodes bounds the node counts a refusal lists as fitting the batches.
const verlMaxNodes = 16

// verlChecks are verl's startup checks on the effective config, the same at v0.6.0 and v0.7.0
// (verl/utils/config.py validate_config changed only for the reward model and LoRA between the
// two), and v0.7.0's refusal of the synchronous rollout.
func verlChecks(e *frameworkconfig.Effective, rel Release) []Problem {
	const (
		ar = "actor_rollout_ref."
	)
	var out []Problem
	fail := func(rule string, keys []string, format string, args ...any) {
		out = append(out, Problem{Origin: origin(e, keys...), Origins: origins(e, keys...), Message: fmt.Sprintf(format, args...) + " (verl " + rel.Tag + " " + rule + ")"})
	}
	// verl v0.7.0 retired the synchronous rollout (commit fd893c788): RolloutConfig refuses it
	// (verl/workers/config/rollout.py, __post_init__, v0.7.0).
	if rel.RolloutMode == "async" && e.Value(ar+"rollout.mode") == "sync" {
		fail("verl/workers/config/rollout.py RolloutConfig.__post_init__", []string{ar + "rollout.mode"},
			"actor_rollout_ref.rollout.mode sync was removed in %s; allowed: async", rel.Name())
	}
	nGPUs := intOf(e, "trainer.nnodes") * intOf(e, "trainer.n_gpus_per_node")
	train := intOf(e, "data.train_batch_size")
	n := intOf(e, ar+"rollout.n")
	mini := intOf(e, ar+"actor.ppo_mini_batch_size")
	if e.Bool(ar + "actor.use_dynamic_bsz") {
		return out
	}
	sp := max(1, intOf(e, ar+"actor.ulysses_sequence_parallel_size"))
	micro := intOf(e, ar+"actor.ppo_micro_batch_size_per_gpu")
	// fitsNodes reports whether these batches split over nodes nodes' GPUs by both checks below.
	fitsNodes := func(nodes int) bool {
		g := nodes * intOf(e, "trainer.n_gpus_per_node")
		if g <= 0 || (train*n)%g != 0 || g < sp {
			return false
		}
		perGPU := mini * n / (g / sp)
		return micro <= 0 || (perGPU > 0 && perGPU%micro == 0)
	}
	// nodesThatFit names the node counts, up to verlMaxNodes, that these batches split over.
	nodesThatFit := func() string {
		var fit []string
		for nodes := 1; nodes <= verlMaxNodes; nodes++ {
			if fitsNodes(nodes) {
				fit = append(fit, fmt.Sprint(nodes))
			}
		}
		if len(fit) == 0 {
			return fmt.Sprintf("; no node count up to %d fits these batch sizes", verlMaxNodes)
		}
		return "; node counts these batch sizes fit: trainer.nnodes (gpu.nodes, jobs.<name>.nodes) " + strings.Join(fit, ", ")
	}
	if nGPUs > 0 && e.Value(ar+"actor.strategy") != "megatron" && (train*n)%nGPUs != 0 {
		fail("verl/utils/config.py validate_config", []string{"data.train_batch_size", ar + "rollout.n", "trainer.nnodes"},
			"data.train_batch_size × rollout.n = %d × %d = %d must be divisible by the %d GPUs%s", train, n, train*n, nGPUs, nodesThatFit())
	}
	for _, pair := range [][2]string{
		{ar + "actor.ppo_micro_batch_size", ar + "actor.ppo_micro_batch_size_per_gpu"},
		{ar + "rollout.log_prob_micro_batch_size", ar + "rollout.log_prob_micro_batch_size_per_gpu"},
		{ar + "ref.log_prob_micro_batch_size", ar + "ref.log_prob_micro_batch_size_per_gpu"},
	} {
		if !e.IsSet(pair[0]) && !e.IsSet(pair[1]) {
			fail("verl/utils/config.py and verl/workers/config/actor.py", pair[:], "%s must be set (or the deprecated %s)", pair[1], pair[0])
		}
		if e.IsSet(pair[0]) && e.IsSet(pair[1]) {
			fail("verl/utils/config.py and verl/workers/config/actor.py", pair[:], "%s and the deprecated %s are both set", pair[1], pair[0])
		}
	}
	if train < mini {
		fail("verl/workers/config/actor.py ActorConfig.validate", []string{"data.train_batch_size", ar + "actor.ppo_mini_batch_size"},
			"data.train_batch_size (%d) must be at least actor.ppo_mini_batch_size (%d)", train, mini)
	}
	if nGPUs > 0 && micro > 0 {
		normalized := mini * n / (nGPUs / sp)
		if normalized == 0 || normalized%micro != 0 {
			fail("verl/workers/fsdp_workers.py", []string{ar + "actor.ppo_mini_batch_size", "data.train_batch_size", ar + "actor.ppo_micro_batch_size_per_gpu", "trainer.nnodes"},
				"the mini batch per GPU, ppo_mini_batch_size × rollout.n / GPUs = %d × %d / %d = %d, must be a positive multiple of ppo_micro_batch_size_per_gpu (%d)%s",
				mini, n, nGPUs, normalized, micro, nodesThatFit())
		}
	}
	infer := max(1, intOf(e, ar+"rollout.tensor_model_parallel_size")) * max(1, intOf(e, ar+"rollout.data_parallel_size")) * max(1, intOf(e, ar+"rollout.pipeline_model_parallel_size"))
	if nGPUs > 0 && nGPUs%infer != 0 {
		fail("verl/workers/fsdp_workers.py", []string{ar + "rollout.tensor_model_parallel_size"},
			"the rollout's tensor × data × pipeline parallel size (%d) must divide the %d GPUs", infer, nGPUs)
	}
	return out
}

// nemoRLChecks are NeMo RL's startup checks on the effective config, at v0.5.0 and v0.7.0 (the
// parallelism and batch rules are the same files' at both), and v0.7.0's need of a validation
// set when validation is on.
func nemoRLChecks(e *frameworkconfig.Effective, rel Release) []Problem {
	var out []Problem
	fail := func(rule string, keys []string, format string, args ...any) {
		out = append(out, Problem{Origin: origin(e, keys...), Origins: origins(e, keys...), Message: fmt.Sprintf(format, args...) + " (NeMo RL " + rel.Tag + " " + rule + ")"})
	}
	name, _ := e.Value(rel.DatasetKey).(string)
	if !slices.Contains(NeMoRLDatasets, name) {
		fail("nemo_rl/data/datasets/response_datasets/__init__.py load_response_dataset", []string{rel.DatasetKey},
			"%q is not a dataset that the math GRPO example loads; allowed: %s", name, strings.Join(NeMoRLDatasets, ", "))
	}
	// A dataset of ValidationSets brings no validation set of its own at the release (the others
	// split one off their training data: OpenMathInstruct-2's split_validation_size): with
	// validation on, data.validation must name one.
	validating := intOf(e, "grpo.val_period") > 0 || e.Bool("grpo.val_at_start") || e.Bool("grpo.val_at_end")
	if _, needsSet := rel.ValidationSets[name]; needsSet && validating && e.Value("data.validation") == nil {
		fail("nemo_rl/algorithms/grpo.py setup", []string{"data.validation", "grpo.val_period"},
			"validation is on (grpo.val_period, val_at_start, val_at_end) but %s brings no validation set and data.validation names none; allowed: data.validation={dataset_name:AIME2024}, or job.validationPeriod=0", name)
	}
	if rel.ConversionOverridesRename && e.Bool("policy.megatron_cfg.enabled") {
		for _, k := range e.Keys() {
			if (k == "policy.hf_config_overrides" || strings.HasPrefix(k, "policy.hf_config_overrides.")) && e.Origin(k) != "" {
				fail("nemo_rl/models/megatron/setup.py", []string{k},
					"%s renames the Megatron conversion's directory (<model>__hfovr_<hash>), which run.sh's cleanup of an interrupted conversion does not know: a cut-short conversion would be loaded as whole; allowed: leave policy.hf_config_overrides unset with Megatron", k)
				break
			}
		}
	}
	world := intOf(e, "cluster.num_nodes") * intOf(e, "cluster.gpus_per_node")
	var tp, pp, cp int
	var parallelKeys []string
	if e.Bool("policy.megatron_cfg.enabled") {
		tp, pp, cp = intOf(e, "policy.megatron_cfg.tensor_model_parallel_size"), intOf(e, "policy.megatron_cfg.pipeline_model_parallel_size"), intOf(e, "policy.megatron_cfg.context_parallel_size")
		parallelKeys = []string{"policy.megatron_cfg.tensor_model_parallel_size", "policy.megatron_cfg.pipeline_model_parallel_size", "cluster.num_nodes"}
	} else {
		tp, pp, cp = intOf(e, "policy.dtensor_cfg.tensor_parallel_size"), 1, intOf(e, "policy.dtensor_cfg.context_parallel_size")
		parallelKeys = []string{"policy.dtensor_cfg.tensor_parallel_size", "cluster.num_nodes"}
	}
	model := max(1, tp) * max(1, pp) * max(1, cp)
	if world%model != 0 || world < model {
		fail("nemo_rl/models/policy/lm_policy.py", parallelKeys,
			"the policy's PP × CP × TP (%d) must divide the %d GPUs (num_nodes × gpus_per_node)", model, world)
	} else if gbs, dp := intOf(e, "policy.train_global_batch_size"), world/model; gbs%dp != 0 {
		fail("nemo_rl/distributed/batched_data_dict.py shard_by_batch_size", []string{"policy.train_global_batch_size", "cluster.num_nodes"},
			"policy.train_global_batch_size (%d) must be a multiple of the data-parallel size (%d GPUs / %d = %d)", gbs, world, model, dp)
	}
	if gbs, total := intOf(e, "policy.train_global_batch_size"), intOf(e, "grpo.num_prompts_per_step")*intOf(e, "grpo.num_generations_per_prompt"); gbs == 0 || total%gbs != 0 {
		fail("nemo_rl/distributed/batched_data_dict.py shard_by_batch_size", []string{"policy.train_global_batch_size", "grpo.num_prompts_per_step"},
			"the step's samples (prompts × generations = %d) must be a multiple of policy.train_global_batch_size (%d)", total, gbs)
	}
	vllmChecks(e, world, fail)
	return out
}

// vllmChecks are the checks of NeMo RL's vLLM generation on its parallel sizes, the same at
// v0.5.0 and v0.7.0 (nemo_rl/models/generation/vllm/vllm_generation.py VllmGeneration.__init__):
// a colocated vLLM shares the training's GPUs, which its TP × PP must divide; a pipeline over
// more than one stage needs the asynchronous engine; expert parallelism is data × tensor
// parallelism inside vLLM, which the asynchronous engine does not run.
func vllmChecks(e *frameworkconfig.Effective, world int, fail func(rule string, keys []string, format string, args ...any)) {
	const (
		rule  = "nemo_rl/models/generation/vllm/vllm_generation.py"
		tpKey = "policy.generation.vllm_cfg.tensor_parallel_size"
		ppKey = "policy.generation.vllm_cfg.pipeline_parallel_size"
		epKey = "policy.generation.vllm_cfg.expert_parallel_size"
		async = "policy.generation.vllm_cfg.async_engine"
	)
	if backend, _ := e.Value("policy.generation.backend").(string); backend != "vllm" {
		return // Megatron's or SGLang's generation (v0.7.0, nemo_rl/algorithms/grpo.py) builds no vLLM
	}
	tp, pp, ep := max(1, intOf(e, tpKey)), max(1, intOf(e, ppKey)), max(1, intOf(e, epKey))
	if e.Bool("policy.generation.colocated.enabled") && world%(tp*pp) != 0 {
		fail(rule, []string{tpKey, ppKey, "cluster.num_nodes"},
			"vLLM's TP × PP (%d × %d = %d) must divide the %d GPUs", tp, pp, tp*pp, world)
	}
	if pp > 1 && !e.Bool(async) {
		fail(rule, []string{ppKey, async},
			"%s=%d needs %s=true; allowed: set it, or a pipeline_parallel_size of 1", ppKey, pp, async)
	}
	if ep > 1 && ep%tp != 0 {
		fail(rule, []string{epKey, tpKey},
			"%s (%d) must be a multiple of %s (%d): vLLM's EP is its DP × TP", epKey, ep, tpKey, tp)
	} else if ep > 1 && ep != tp && e.Bool(async) {
		fail(rule, []string{epKey, async},
			"%s (%d) other than %s (%d) runs data parallel inside vLLM, which %s=true does not; allowed: %s=false, or EP equal to TP", epKey, ep, tpKey, tp, async, async)
	}
}

// ConvertsToMegatron reports whether a NeMo RL run of recipe and args trains with Megatron
// (policy.megatron_cfg.enabled in its effective configuration), and so converts the model to
// Megatron's format before it trains: one more copy of the weights, in the experiment's
// checkpoint directory. The program's own overrides leave that key alone. rel is the run's
// release, whose recipe and keys decide.
func ConvertsToMegatron(rel Release, recipe string, args []string) bool {
	if rel.Framework != kinds.NeMoRL {
		return false
	}
	table, err := load(rel, recipe)
	if err != nil {
		return false
	}
	eff, _ := table.Apply(parseArgs(args))
	return eff.Bool("policy.megatron_cfg.enabled")
}
