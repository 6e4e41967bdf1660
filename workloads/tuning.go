package workloads

import (
	"fmt"
	"regexp"
	"strconv"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// Tuning are the GRPO knobs researchers tune first, as typed `job.*` keys. A nil knob leaves the
// value of the program (sized from the model) or of the framework's recipe.
type Tuning struct {
	LearningRate *float64 `json:"learningRate"`
	// KLCoef weighs the KL divergence to the reference policy; 0 turns it off.
	KLCoef *float64 `json:"klCoef"`
	// KLInLoss puts the KL term in the loss (GRPO's form); false makes it a reward penalty.
	KLInLoss    *bool    `json:"klInLoss"`
	EntropyCoef *float64 `json:"entropyCoef"`
	// ClipRatio is ε of the clipped policy ratio, both sides.
	ClipRatio   *float64 `json:"clipRatio"`
	Temperature *float64 `json:"temperature"`
	// MaxPromptLength and MaxResponseLength are in tokens.
	MaxPromptLength       *int     `json:"maxPromptLength"`
	MaxResponseLength     *int     `json:"maxResponseLength"`
	RolloutTensorParallel *int     `json:"rolloutTensorParallel"`
	RolloutGPUMemory      *float64 `json:"rolloutGpuMemory"`
	// MicroBatchSize is the training micro batch per GPU; LogProbMicroBatchSize the log-prob
	// pass's (the policy's and the reference's).
	MicroBatchSize        *int `json:"microBatchSize"`
	LogProbMicroBatchSize *int `json:"logProbMicroBatchSize"`
	// ValidationPeriod is the steps between validations; 0 turns validation off.
	ValidationPeriod *int    `json:"validationPeriod"`
	WandBProject     *string `json:"wandbProject"`
}

// A Knob is one typed key of Tuning: its range and how each framework takes it.
type Knob struct {
	// Key is the stack config key (job.learningRate).
	Key string
	// Allowed says the range, for errors; ok checks it.
	Allowed string
	ok      func(float64) bool
	// set reports whether the stack sets it, and its value as a number (0 for a string).
	set func(Tuning) (float64, bool)
	// Refused says why a framework cannot take the knob (a rule of its pinned release), by
	// framework; a knob absent from it maps to overrides.
	Refused map[kinds.Framework]string
}

func wholeIn(lo, hi float64) func(float64) bool {
	return func(v float64) bool { return v == float64(int(v)) && v >= lo && v <= hi }
}

func floatKnob(get func(Tuning) *float64) func(Tuning) (float64, bool) {
	return func(t Tuning) (float64, bool) {
		if p := get(t); p != nil {
			return *p, true
		}
		return 0, false
	}
}

func intKnob(get func(Tuning) *int) func(Tuning) (float64, bool) {
	return func(t Tuning) (float64, bool) {
		if p := get(t); p != nil {
			return float64(*p), true
		}
		return 0, false
	}
}

// MaxSequenceTokens bounds the length knobs: the longest context of the models the program sizes
// (Qwen2.5 and Llama 3.1 read 128K tokens).
const MaxSequenceTokens = 131072

// NeMo RL v0.5.0's loss has the KL term in the loss alone and no entropy term
// (nemo_rl/algorithms/loss_functions.py, ClippedPGLossFn: reference_policy_kl_penalty is applied
// to the loss when it is not 0; the entropy is only measured, "approx_entropy").
const (
	nemoRLKLOnlyInLoss = "NeMo RL runs keep the KL term in the loss (v0.5.0 has no other place for it, nemo_rl/algorithms/loss_functions.py ClippedPGLossFn; v0.7.0's loss_fn.use_kl_in_reward is not one the program sets); job.klCoef=0 turns it off"
	nemoRLNoEntropy    = "NeMo RL's GRPO loss has no entropy term (v0.5.0 and v0.7.0: ClippedPGLossFn only logs approx_entropy, nemo_rl/algorithms/loss_functions.py, v0.7.0 nemo_rl/algorithms/loss/loss_functions.py)"
)

// Knobs are every key of Tuning, in the order the docs list them.
var Knobs = []Knob{
	{Key: "job.learningRate", Allowed: "a number greater than 0 and at most 0.001", ok: func(v float64) bool { return v > 0 && v <= 1e-3 },
		set: floatKnob(func(t Tuning) *float64 { return t.LearningRate })},
	{Key: "job.klCoef", Allowed: "a number from 0 (no KL term) to 1", ok: func(v float64) bool { return v >= 0 && v <= 1 },
		set: floatKnob(func(t Tuning) *float64 { return t.KLCoef })},
	{Key: "job.klInLoss", Allowed: "true or false", ok: func(float64) bool { return true },
		set: func(t Tuning) (float64, bool) {
			if t.KLInLoss == nil {
				return 0, false
			}
			if *t.KLInLoss {
				return 1, true
			}
			return 0, true
		},
		Refused: map[kinds.Framework]string{kinds.NeMoRL: nemoRLKLOnlyInLoss}},
	{Key: "job.entropyCoef", Allowed: "a number from 0 to 1", ok: func(v float64) bool { return v >= 0 && v <= 1 },
		set:     floatKnob(func(t Tuning) *float64 { return t.EntropyCoef }),
		Refused: map[kinds.Framework]string{kinds.NeMoRL: nemoRLNoEntropy}},
	{Key: "job.clipRatio", Allowed: "a number greater than 0 and less than 1", ok: func(v float64) bool { return v > 0 && v < 1 },
		set: floatKnob(func(t Tuning) *float64 { return t.ClipRatio })},
	{Key: "job.temperature", Allowed: "a number greater than 0 and at most 2", ok: func(v float64) bool { return v > 0 && v <= 2 },
		set: floatKnob(func(t Tuning) *float64 { return t.Temperature })},
	{Key: "job.maxPromptLength", Allowed: fmt.Sprintf("a whole number of tokens from 16 to %d", MaxSequenceTokens), ok: wholeIn(16, MaxSequenceTokens),
		set: intKnob(func(t Tuning) *int { return t.MaxPromptLength })},
	{Key: "job.maxResponseLength", Allowed: fmt.Sprintf("a whole number of tokens from 16 to %d", MaxSequenceTokens), ok: wholeIn(16, MaxSequenceTokens),
		set: intKnob(func(t Tuning) *int { return t.MaxResponseLength })},
	{Key: "job.rolloutTensorParallel", Allowed: "1, 2, 4 or 8 (the GPUs of one node that hold one vLLM engine)", ok: func(v float64) bool { return v == 1 || v == 2 || v == 4 || v == 8 },
		set: intKnob(func(t Tuning) *int { return t.RolloutTensorParallel })},
	{Key: "job.rolloutGpuMemory", Allowed: "a fraction from 0.1 to 0.95 of each GPU's memory", ok: func(v float64) bool { return v >= 0.1 && v <= 0.95 },
		set: floatKnob(func(t Tuning) *float64 { return t.RolloutGPUMemory })},
	{Key: "job.microBatchSize", Allowed: "a whole number from 1 to 256", ok: wholeIn(1, 256),
		set: intKnob(func(t Tuning) *int { return t.MicroBatchSize })},
	{Key: "job.logProbMicroBatchSize", Allowed: "a whole number from 1 to 256", ok: wholeIn(1, 256),
		set: intKnob(func(t Tuning) *int { return t.LogProbMicroBatchSize })},
	{Key: "job.validationPeriod", Allowed: "0 (no validation) or a whole number of steps", ok: wholeIn(0, 1e9),
		set: intKnob(func(t Tuning) *int { return t.ValidationPeriod })},
	{Key: "job.wandbProject", Allowed: "a W&B project name", ok: func(float64) bool { return true },
		set: func(t Tuning) (float64, bool) { return 0, t.WandBProject != nil }},
}

// KnobSet reports whether the knob of config key key is set in t.
func KnobSet(t Tuning, key string) bool {
	for _, k := range Knobs {
		if k.Key == key {
			_, set := k.set(t)
			return set
		}
	}
	return false
}

// CheckTuning returns, by config key, why each knob that is set cannot be taken: out of range,
// or the framework has no such setting.
func CheckTuning(f kinds.Framework, t Tuning) map[string]string {
	out := map[string]string{}
	for _, k := range Knobs {
		v, set := k.set(t)
		if !set {
			continue
		}
		if why, refused := k.Refused[f]; refused {
			out[k.Key] = fmt.Sprintf("framework %s cannot take it: %s", f, why)
			continue
		}
		if !k.ok(v) {
			out[k.Key] = fmt.Sprintf("%s is out of range; allowed: %s", strconv.FormatFloat(v, 'g', -1, 64), k.Allowed)
		}
	}
	if p := t.WandBProject; p != nil && !wandbProjectPattern(*p) {
		out["job.wandbProject"] = fmt.Sprintf("%q is not a W&B project name; allowed: 1 to 128 letters, digits, '.', '_' and '-'", *p)
	}
	return out
}

var wandbProjectName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func wandbProjectPattern(s string) bool { return wandbProjectName.MatchString(s) }

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// nemoRLTuning maps the knobs onto NeMo RL v0.5.0's GRPO recipe keys (every key is one of the
// recipes' tables, which the plan checks). The learning rate is the optimizer's of the recipe's
// training backend: DTensor's torch optimizer or Megatron's.
func nemoRLTuning(r Run) []Override {
	t := r.Tuning
	var o []Override
	if t.LearningRate != nil {
		key := "policy.optimizer.kwargs.lr"
		if nemoRLMegatron(r.Recipe) {
			key = "policy.megatron_cfg.optimizer.lr"
		}
		o = append(o, set(key, num(*t.LearningRate), "job.learningRate"))
	}
	if t.KLCoef != nil {
		o = append(o, set("loss_fn.reference_policy_kl_penalty", num(*t.KLCoef), "job.klCoef"))
	}
	if t.ClipRatio != nil {
		o = append(o,
			set("loss_fn.ratio_clip_min", num(*t.ClipRatio), "job.clipRatio"),
			set("loss_fn.ratio_clip_max", num(*t.ClipRatio), "job.clipRatio"))
	}
	if t.Temperature != nil {
		o = append(o, set("policy.generation.temperature", num(*t.Temperature), "job.temperature"))
	}
	if t.MaxPromptLength != nil || t.MaxResponseLength != nil {
		// The recipes give the prompt and the generation the whole sequence each
		// (data.max_input_seq_length and generation.max_new_tokens are
		// ${policy.max_total_sequence_length}); vLLM's max_model_len follows the total.
		rel := r.release(kinds.NeMoRL)
		prompt, response := recipeInt(rel, r.Recipe, "data.max_input_seq_length"), recipeInt(rel, r.Recipe, "policy.generation.max_new_tokens")
		origin := "job.maxPromptLength"
		if t.MaxPromptLength != nil {
			prompt = *t.MaxPromptLength
		}
		if t.MaxResponseLength != nil {
			response = *t.MaxResponseLength
			if t.MaxPromptLength == nil {
				origin = "job.maxResponseLength"
			}
		}
		o = append(o,
			set("data.max_input_seq_length", fmt.Sprint(prompt), origin),
			set("policy.generation.max_new_tokens", fmt.Sprint(response), origin),
			set("policy.max_total_sequence_length", fmt.Sprint(prompt+response), origin))
	}
	if t.RolloutTensorParallel != nil {
		o = append(o, set("policy.generation.vllm_cfg.tensor_parallel_size", fmt.Sprint(*t.RolloutTensorParallel), "job.rolloutTensorParallel"))
	}
	if t.RolloutGPUMemory != nil {
		o = append(o, set("policy.generation.vllm_cfg.gpu_memory_utilization", num(*t.RolloutGPUMemory), "job.rolloutGpuMemory"))
	}
	if t.MicroBatchSize != nil {
		o = append(o, set("policy.train_micro_batch_size", fmt.Sprint(*t.MicroBatchSize), "job.microBatchSize"))
	}
	if t.LogProbMicroBatchSize != nil {
		o = append(o, set("policy.logprob_batch_size", fmt.Sprint(*t.LogProbMicroBatchSize), "job.logProbMicroBatchSize"))
	}
	if t.ValidationPeriod != nil {
		// grpo.val_period 0 never validates (nemo_rl/algorithms/grpo.py: `val_period > 0 and ...`).
		o = append(o, set("grpo.val_period", fmt.Sprint(*t.ValidationPeriod), "job.validationPeriod"))
	}
	return o
}

// nemoRLMegatron reports whether a NeMo RL recipe trains with Megatron (not DTensor), the same
// at every release the program runs.
func nemoRLMegatron(recipe string) bool {
	t, err := frameworkconfig.Load("nemo-rl", DefaultRelease(kinds.NeMoRL).Tag, recipe)
	if err != nil {
		return false
	}
	eff, _ := t.Apply(nil)
	return eff.Bool("policy.megatron_cfg.enabled")
}

// recipeInt is an integer of a NeMo RL recipe at a release, its interpolations resolved (0 if
// absent).
func recipeInt(rel Release, recipe, key string) int {
	t, err := frameworkconfig.Load("nemo-rl", rel.Tag, recipe)
	if err != nil {
		return 0
	}
	eff, _ := t.Apply(nil)
	n, _ := eff.Int(key)
	return n
}

// VerlPromptTokens are the prompt lengths of verl's own GRPO examples by dataset
// (examples/grpo_trainer/run_qwen2-7b.sh: gsm8k 512; run_qwen2-7b_math.sh: MATH 1024), both with
// prompts longer than that filtered out.
var VerlPromptTokens = map[string]int{"gsm8k": 512, "math": 1024}

// VerlResponseTokens is the response length of those examples.
const VerlResponseTokens = 1024
