package workloads

import (
	"fmt"
	"math"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// Phase is one phase of a GRPO step as one GPU holds it at its peak: the rollout (vLLM beside
// what stays of the training state), the log-probability pass, and the policy update.
type Phase struct {
	Name string
	// GB is the estimated peak on one GPU; Basis says what it is made of.
	GB    float64
	Basis string
	// Remedy is the smallest change that makes it fit, and Origin the stack key that set the
	// value it changes ("" when the framework's or the model's default did).
	Remedy, Origin string
	// shortfall is why a phase over its limit does not fit: it decides which key a refusal
	// names and whether more GPUs are searched for.
	shortfall shortfall
}

// shortfall is why a phase does not fit its GPU.
type shortfall int

const (
	// batchTooLarge: a smaller batch, a shorter response or a smaller rollout share fits; Remedy
	// says which.
	batchTooLarge shortfall = iota
	// stateTooLarge: the phase's state alone, before any activation, is above the limit; no
	// batch change fits, more GPUs (or a larger one) may.
	stateTooLarge
	// sequenceTooLong: the state leaves room, but not for one sequence; Remedy says how long one
	// may be, and more GPUs may shard the state thin enough for it.
	sequenceTooLong
)

// needsMoreGPUs is whether no batch change makes the phase fit.
func (s shortfall) needsMoreGPUs() bool { return s != batchTooLarge }

// phaseLimitGB is what a phase may take of one GPU.
func phaseLimitGB(m NodeMemory) float64 { return m.GPUGB - GPUReserveGB }

// batchTokens are the tokens one GPU holds in a micro batch: the framework's token budget with
// dynamic batching, else micro sequences of seq tokens, split over sequence parallel ranks.
type batchTokens struct {
	dynamic      bool
	budgetKey    string // the token budget's key, with dynamic batching
	micro, seq   int
	split        int
	perGPU       float64
	microKey     string // the key that sizes the micro batch
	microSetting string // the job.* key that sets it
}

func tokensOf(e *frameworkconfig.Effective, dynamicKey, budgetKey, microKey, microSetting string, seq, split int) batchTokens {
	t := batchTokens{budgetKey: budgetKey, microKey: microKey, microSetting: microSetting, seq: seq, split: max(1, split)}
	if dynamicKey != "" && e.Bool(dynamicKey) {
		if budget, ok := e.Int(budgetKey); ok && budget > 0 {
			t.dynamic, t.perGPU = true, float64(budget)
			return t
		}
	}
	t.micro = max(1, intOf(e, microKey))
	t.perGPU = float64(t.micro*seq) / float64(t.split)
	return t
}

func (t batchTokens) String() string {
	if t.dynamic {
		return fmt.Sprintf("a token budget of %.0f (%s)", t.perGPU, t.budgetKey)
	}
	noun := "sequences"
	if t.micro == 1 {
		noun = "sequence"
	}
	s := fmt.Sprintf("%d %s of up to %d tokens (%s)", t.micro, noun, t.seq, t.microKey)
	if t.split > 1 {
		s += fmt.Sprintf(" over %d sequence parallel ranks", t.split)
	}
	return s
}

// minResponseTokens is the shortest response length the plan offers as a remedy.
const minResponseTokens = 256

// remedy is the smallest change to the micro batch that brings a phase of residentGB plus
// perToken bytes a token within limitGB, given the prompt's part of each sequence, and why the
// phase falls short.
func (t batchTokens) remedy(residentGB, perToken, limitGB float64, prompt int) (string, shortfall) {
	room := (limitGB - residentGB) * 1e9
	if room <= 0 {
		return "", stateTooLarge
	}
	if t.dynamic {
		return fmt.Sprintf("lower %s to at most %.0f tokens (job.args)", t.budgetKey, math.Floor(room/perToken)), batchTooLarge
	}
	if micro := int(room * float64(t.split) / (float64(t.seq) * perToken)); micro >= 1 {
		return fmt.Sprintf("set %s to at most %d", t.microSetting, micro), batchTooLarge
	}
	longest := int(room * float64(t.split) / perToken)
	if response := longest - prompt; response >= minResponseTokens {
		if t.micro == 1 {
			// Already one sequence a micro batch: only the response can shorten.
			return fmt.Sprintf("set job.maxResponseLength to at most %d", response), batchTooLarge
		}
		return fmt.Sprintf("one sequence a micro batch does not fit either: set %s to 1 and job.maxResponseLength to at most %d", t.microSetting, response), batchTooLarge
	}
	// The state leaves room, but not for one sequence with a response worth training on: no
	// micro batch change fits, more GPUs may (the caller's), else the sequence must be shorter.
	// (A prompt as long as the room is no remedy: say how long a sequence fits.)
	return fmt.Sprintf("even one sequence a micro batch does not fit: at most %d tokens of prompt and response together fit beside the state (job.maxPromptLength and job.maxResponseLength; now up to %d)", longest, t.seq), sequenceTooLong
}

// verlPhases estimate verl v0.6.0's hybrid engine, per GPU. The actor is trained with FSDP from
// fp32 master weights; the reference model, when a KL term needs it, is FSDP with CPU offload
// whatever its config says (verl/workers/fsdp_workers.py, _build_model_optimizer: `cpu_offload =
// None if role == "actor" else CPUOffload(offload_params=True)`), so it holds one layer at a time.
// lengthSet is whether the stack set the prompt or response length, which a refusal then names.
func verlPhases(e *frameworkconfig.Effective, params float64, shape Shape, m NodeMemory, lengthSet bool) []Phase {
	const ar = "actor_rollout_ref."
	world := max(1, intOf(e, "trainer.nnodes")) * max(1, intOf(e, "trainer.n_gpus_per_node"))
	perGPU := params / float64(world)
	prompt, response := intOf(e, "data.max_prompt_length"), intOf(e, "data.max_response_length")
	seq := prompt + response
	sp := max(1, intOf(e, ar+"actor.ulysses_sequence_parallel_size"))
	paramOffload, optimizerOffload := e.Bool(ar+"actor.fsdp_config.param_offload"), e.Bool(ar+"actor.fsdp_config.optimizer_offload")
	limit := phaseLimitGB(m)
	util := floatOf(e, ar+"rollout.gpu_memory_utilization")
	vllm := util * m.GPUGB
	// With free_cache_engine (the default) vLLM sleeps outside the rollout, its weights and KV
	// cache released; without it they stay beside every other phase.
	asleep := e.Bool(ar + "rollout.free_cache_engine")
	lengthOrigin := ""
	if lengthSet {
		lengthOrigin = stackOrigin(e, "data.max_response_length", "data.max_prompt_length")
	}

	// The rollout: vLLM's fraction of the GPU, beside what of the actor stays on it. The
	// gradients are freed after each step; the fp32 weights (4 bytes) and Adam's moments (8)
	// stay unless offloaded (rollout_mode offloads the weights only with param_offload).
	resident, parts := 0.0, ""
	if !paramOffload {
		resident += 4
		parts = "the actor's fp32 weights"
	}
	if !optimizerOffload {
		resident += fsdpOptimizerState
		parts = joinParts(parts, "Adam's two moments")
	}
	rolloutBasis := fmt.Sprintf("vLLM's %.2g of the GPU's %.1f GB", util, m.GPUGB)
	if parts != "" {
		rolloutBasis += fmt.Sprintf(", beside %s (%.0f bytes per parameter over %d GPUs), which stay on the GPU", parts, resident, world)
	}
	rollout := Phase{Name: "rollout", GB: gb(perGPU*resident) + vllm, Basis: rolloutBasis,
		Origin: stackOrigin(e, ar+"rollout.gpu_memory_utilization")}
	if rollout.GB > limit {
		if most := math.Floor((limit-gb(perGPU*resident))/m.GPUGB*100) / 100; most >= 0.1 {
			rollout.Remedy = fmt.Sprintf("set job.rolloutGpuMemory to at most %.2f", most)
		} else {
			rollout.shortfall = stateTooLarge
		}
	}

	// The log-probabilities of the rollouts under the actor (fsdp_workers.py compute_log_prob
	// loads offloaded weights back, then dp_actor.compute_log_prob(calculate_entropy=True)): the
	// bf16 logits of the micro batch's tokens, softmax(logits) and pd * logits beside them
	// (verl/utils/torch_functional.py entropy_from_logits; its chunked variant is off by
	// default): 3 × 2 bytes per vocabulary entry a token.
	lpResident := verlLogProbResident(optimizerOffload)
	lp := tokensOf(e, ar+"rollout.log_prob_use_dynamic_bsz", ar+"rollout.log_prob_max_token_len_per_gpu",
		ar+"rollout.log_prob_micro_batch_size_per_gpu", "job.logProbMicroBatchSize", seq, sp)
	lpPerToken := verlLogProbBytesPerToken(shape)
	logProb := Phase{Name: "log-prob", GB: gb(perGPU*lpResident + lp.perGPU*lpPerToken),
		Basis: fmt.Sprintf("the actor's fp32 weights%s over %d GPUs, and %s × %.1f MB a token (bf16 logits, softmax and pd × logits for the entropy over %d vocabulary entries)",
			map[bool]string{true: "", false: " and Adam's moments"}[optimizerOffload], world, lp, lpPerToken/1e6, shape.Vocab),
		Origin: firstOf(lengthOrigin, stackOrigin(e, lp.microKey))}
	logProb.settleVerl(asleep, vllm, limit, lp, lpPerToken, prompt)

	// The update: update_actor loads offloaded weights and Adam's moments back
	// (fsdp_workers.py, load_fsdp_model_to_gpu, load_fsdp_optimizer), so the whole fp32 state is
	// on the GPU, with the micro batch's activations.
	checkpointing := e.Bool(ar + "model.enable_gradient_checkpointing")
	up := tokensOf(e, ar+"actor.use_dynamic_bsz", ar+"actor.ppo_max_token_len_per_gpu",
		ar+"actor.ppo_micro_batch_size_per_gpu", "job.microBatchSize", seq, sp)
	upPerToken := updateCalibrated(UpdateActivationBytesPerToken(shape, checkpointing))
	state := updateCalibrated(gb(perGPU * fp32MasterState))
	update := Phase{Name: "update", GB: state + up.perGPU*upPerToken/1e9,
		Basis: fmt.Sprintf("%d bytes per parameter over %d GPUs%s, and %s × %.1f MB a token of activations%s%s",
			fp32MasterState, world, map[bool]string{true: " (the offloaded state is loaded back for the update)", false: ""}[paramOffload || optimizerOffload],
			up, upPerToken/1e6, checkpointingText(checkpointing), updateCalibrationText),
		Origin: firstOf(lengthOrigin, stackOrigin(e, up.microKey))}
	update.settleVerl(asleep, vllm, limit, up, upPerToken, prompt)
	return []Phase{rollout, logProb, update}
}

// nemoRLPhases estimate NeMo RL v0.5.0's colocated policy and vLLM, per GPU. Before the rollout
// the policy moves its weights and optimizer state to the host (offload_before_refit), so vLLM
// has the GPU; the log-probability pass and the update have the training state back.
func nemoRLPhases(e *frameworkconfig.Effective, fit Fit, shape Shape, m NodeMemory, lengthSet bool) []Phase {
	limit := phaseLimitGB(m)
	util := floatOf(e, "policy.generation.vllm_cfg.gpu_memory_utilization")
	rollout := Phase{Name: "rollout", GB: util * m.GPUGB,
		Basis:  fmt.Sprintf("vLLM's %.2g of the GPU's %.1f GB; the policy's state waits in host memory (offload_before_refit)", util, m.GPUGB),
		Origin: stackOrigin(e, "policy.generation.vllm_cfg.gpu_memory_utilization")}
	// The model parallelism that splits the activations: tensor parallel with sequence
	// parallelism splits every layer's, and the vocabulary-parallel logits; context parallel
	// splits the sequence.
	var split int
	var checkpointing bool
	if e.Bool("policy.megatron_cfg.enabled") {
		split = max(1, intOf(e, "policy.megatron_cfg.tensor_model_parallel_size")) * max(1, intOf(e, "policy.megatron_cfg.context_parallel_size"))
		checkpointing = e.Bool("policy.megatron_cfg.activation_checkpointing")
	} else {
		split = max(1, intOf(e, "policy.dtensor_cfg.tensor_parallel_size")) * max(1, intOf(e, "policy.dtensor_cfg.context_parallel_size"))
		checkpointing = e.Bool("policy.dtensor_cfg.activation_checkpointing")
	}
	seq := intOf(e, "policy.max_total_sequence_length")
	prompt := intOf(e, "data.max_input_seq_length")
	packed := "policy.sequence_packing"
	if e.Bool("policy.dynamic_batching.enabled") {
		packed = "policy.dynamic_batching"
	}
	lengthOrigin := ""
	if lengthSet {
		lengthOrigin = stackOrigin(e, "policy.max_total_sequence_length")
	}

	// The log-probabilities: bf16 logits, their fp32 copy and log_softmax (dtensor_policy_worker_v2.py
	// get_logprobs: logits.to(torch.float32), log_softmax): 10 bytes per vocabulary entry a token.
	lp := tokensOf(e, packed+".enabled", packed+".logprob_mb_tokens", "policy.logprob_batch_size", "job.logProbMicroBatchSize", seq, split)
	lpPerToken := 10 * float64(shape.Vocab)
	logProb := Phase{Name: "log-prob", GB: fit.TrainGB + lp.perGPU*lpPerToken/1e9,
		Basis:  fmt.Sprintf("the training state (%s GB), and %s × %.1f MB a token (bf16 logits, their fp32 copy and log_softmax over %d vocabulary entries)", gbText(fit.TrainGB), lp, lpPerToken/1e6, shape.Vocab),
		Origin: firstOf(lengthOrigin, stackOrigin(e, lp.microKey))}
	if logProb.GB > limit {
		logProb.Remedy, logProb.shortfall = lp.remedy(fit.TrainGB, lpPerToken, limit, prompt)
	}
	up := tokensOf(e, packed+".enabled", packed+".train_mb_tokens", "policy.train_micro_batch_size", "job.microBatchSize", seq, split)
	upPerToken := updateCalibrated(UpdateActivationBytesPerToken(shape, checkpointing))
	state := updateCalibrated(fit.TrainGB)
	update := Phase{Name: "update", GB: state + up.perGPU*upPerToken/1e9,
		Basis: fmt.Sprintf("the training state (%s GB), and %s × %.1f MB a token of activations%s%s",
			gbText(fit.TrainGB), up, upPerToken/1e6, checkpointingText(checkpointing), updateCalibrationText),
		Origin: firstOf(lengthOrigin, stackOrigin(e, up.microKey))}
	if update.GB > limit {
		update.Remedy, update.shortfall = up.remedy(state, upPerToken, limit, prompt)
	}
	return []Phase{rollout, logProb, update}
}

// verlLogProbResident is what stays on a GPU of the actor, per parameter over the GPUs, while verl
// computes log-probabilities: its fp32 weights, loaded back if offloaded, and Adam's moments
// unless offloaded.
func verlLogProbResident(optimizerOffload bool) float64 {
	if optimizerOffload {
		return 4
	}
	return 4 + fsdpOptimizerState
}

// verlLogProbBytesPerToken is what one token of verl's log-probability micro batch adds: its bf16
// logits, softmax(logits) and pd * logits (verl/utils/torch_functional.py, entropy_from_logits).
func verlLogProbBytesPerToken(s Shape) float64 { return 3 * bf16 * float64(s.Vocab) }

func checkpointingText(on bool) string {
	if on {
		return ", with gradient checkpointing"
	}
	return ", without gradient checkpointing"
}

// settleVerl completes a verl training phase whose tokens t take perToken bytes each: vLLM's
// memory stays beside it unless the rollout frees its cache engine (asleep), and a phase over
// the limit gets the smallest change that fits, its resident part being all but the tokens.
func (p *Phase) settleVerl(asleep bool, vllm, limit float64, t batchTokens, perToken float64, prompt int) {
	if !asleep {
		p.GB += vllm
		p.Basis += ", beside vLLM (rollout.free_cache_engine is off)"
	}
	if p.GB > limit {
		p.Remedy, p.shortfall = t.remedy(p.GB-t.perGPU*perToken/1e9, perToken, limit, prompt)
	}
}

func joinParts(a, b string) string {
	if a == "" {
		return b
	}
	return a + " and " + b
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// StepSequenceTokens is the longest sequence of the run's steps, prompt and response together,
// as the framework's effective configuration bounds it (verl's data.max_prompt_length and
// data.max_response_length, NeMo RL's policy.max_total_sequence_length); false when the
// configuration does not compose or does not say.
func StepSequenceTokens(f kinds.Framework, r Run) (int, bool) {
	table, err := load(r.release(f), r.Recipe)
	if err != nil {
		return 0, false
	}
	eff, problems := table.Apply(Overrides(f, r))
	if len(problems) > 0 {
		return 0, false
	}
	n := intOf(eff, "policy.max_total_sequence_length")
	if f == kinds.Verl {
		n = intOf(eff, "data.max_prompt_length") + intOf(eff, "data.max_response_length")
	}
	return n, n > 0
}
