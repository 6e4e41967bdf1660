package workloads

import (
	"fmt"

	"gke-rl/internal/kinds"
	"gke-rl/workloads/frameworkconfig"
)

// NodeMemory is the memory one GPU node gives a run.
type NodeMemory struct {
	// GPUGB is one GPU's memory in GB (10^9 bytes) as the device reports it to PyTorch
	// (torch.cuda.get_device_properties(0).total_memory).
	GPUGB float64
	// HostGiB is what the Ray worker of one node may use of the host's memory.
	HostGiB int
	// GPUsPerNode bounds the rollout's tensor parallelism (one vLLM engine within a node).
	GPUsPerNode int
}

// What a run holds per model parameter, in bytes. The estimate counts the state that exists
// whatever the batch: activations, the KV cache beyond its floor, CUDA's context and NCCL's
// buffers are what the shares below leave room for. A run it refuses cannot start; a run it
// passes can still run out of memory with long sequences or large micro batches.
const (
	// fp32MasterState is a parameter trained from fp32 master weights with Adam: the weight and
	// its gradient in fp32 and Adam's two moments in fp32. NeMo RL's DTensor workers load the
	// model in float32 "to keep master weights in float32" (NeMo RL v0.5.0,
	// nemo_rl/models/policy/workers/dtensor_policy_worker_v2.py) and so does verl's FSDP actor
	// (verl v0.6.0 verl/workers/fsdp_workers.py: torch.float32 for the actor when
	// fsdp_config.model_dtype is unset).
	fp32MasterState = 16
	// adamFP32 is the part of it that is the optimizer's: fp32 master weights and two moments
	// in Megatron's distributed optimizer, the two moments under FSDP.
	megatronOptimizerState = 12
	fsdpOptimizerState     = 8
	// bf16 is one parameter in bfloat16: vLLM's weights, verl's reference model, Megatron's
	// model weights.
	bf16 = 2
	// trainingShare is the part of a GPU that the training state may take: the rest holds the
	// activations, CUDA's context and NCCL's buffers.
	trainingShare = 0.8
	// rolloutWeightsShare is the part of vLLM's memory fraction its weights may take: the rest
	// is the KV cache vLLM needs before it starts ("No available memory for the cache blocks").
	rolloutWeightsShare = 0.9
	// hostShare is the part of the Ray worker's memory that offloaded state may take: the rest
	// holds the Ray object store, the data loader and the processes themselves.
	hostShare = 0.8
)

// Fit is the memory a run needs, as estimated from the framework's effective configuration.
type Fit struct {
	// Backend names how the policy trains, as the message says it.
	Backend string
	// TrainGB is one GPU's training state; TrainLimitGB what it may be.
	TrainGB, TrainLimitGB float64
	// TrainBasis says how TrainGB was counted.
	TrainBasis string
	// HostGB is one node's offloaded state; HostLimitGB what it may be.
	HostGB, HostLimitGB float64
	// RolloutGB is one GPU's share of vLLM's weights; RolloutLimitGB what it may be.
	RolloutGB, RolloutLimitGB float64
	RolloutTensorParallel     int
	RolloutMemory             float64
	// Phases are the peaks of a step's phases on one GPU; PhaseLimitGB what each may be.
	Phases       []Phase
	PhaseLimitGB float64
	// rolloutKeys decide the rollout's part; rolloutOrigin is the stack key that set one of
	// them, if any.
	rolloutKeys   []string
	rolloutOrigin string
}

// EstimateFit composes the run's effective configuration and estimates its memory. It reports
// false when the model's size is unknown or the configuration does not compose (CheckRun says
// why).
func EstimateFit(f kinds.Framework, r Run, m NodeMemory) (Fit, bool) {
	if r.ModelBillions <= 0 || m.GPUGB <= 0 {
		return Fit{}, false
	}
	table, err := load(r.release(f), r.Recipe)
	if err != nil {
		return Fit{}, false
	}
	eff, problems := table.Apply(Overrides(f, r))
	if len(problems) > 0 {
		return Fit{}, false
	}
	params := r.ModelBillions * 1e9
	shape := r.ShapeOf()
	var fit Fit
	if f == kinds.Verl {
		fit = verlFit(eff, params)
		fit.Phases = verlPhases(eff, params, shape, m, r.lengthSet())
	} else {
		fit = nemoRLFit(eff, params)
		fit.Phases = nemoRLPhases(eff, fit, shape, m, r.lengthSet())
	}
	fit.PhaseLimitGB = phaseLimitGB(m)
	fit.rolloutOrigin = stackOrigin(eff, fit.rolloutKeys...)
	fit.TrainLimitGB = trainingShare * m.GPUGB
	fit.HostLimitGB = hostShare * float64(m.HostGiB) * (1 << 30) / 1e9
	fit.RolloutLimitGB = rolloutWeightsShare * fit.RolloutMemory * m.GPUGB
	return fit, true
}

func gb(bytes float64) float64 { return bytes / 1e9 }

// lengthSet reports whether the stack set the prompt or the response length.
func (r Run) lengthSet() bool {
	return r.Tuning.MaxPromptLength != nil || r.Tuning.MaxResponseLength != nil
}

// nemoRLFit counts NeMo RL v0.5.0's policy and its colocated vLLM.
func nemoRLFit(e *frameworkconfig.Effective, params float64) Fit {
	nodes := max(1, intOf(e, "cluster.num_nodes"))
	world := nodes * max(1, intOf(e, "cluster.gpus_per_node"))
	var fit Fit
	if e.Bool("policy.megatron_cfg.enabled") {
		// Megatron keeps the bf16 weights and their gradients (fp32 when
		// grad_reduce_in_fp32) split over tensor × pipeline parallel ranks; the distributed
		// optimizer splits fp32 master weights and Adam's moments over every GPU.
		tp, pp := max(1, intOf(e, "policy.megatron_cfg.tensor_model_parallel_size")), max(1, intOf(e, "policy.megatron_cfg.pipeline_model_parallel_size"))
		grad := float64(bf16)
		if e.Bool("policy.megatron_cfg.distributed_data_parallel_config.grad_reduce_in_fp32") {
			grad = 4
		}
		optimizerShards := tp * pp
		if e.Bool("policy.megatron_cfg.optimizer.use_distributed_optimizer") {
			optimizerShards = world
		}
		model := params * (bf16 + grad) / float64(tp*pp)
		optimizer := params * megatronOptimizerState / float64(optimizerShards)
		fit.Backend = fmt.Sprintf("Megatron (tensor parallel %d × pipeline parallel %d)", tp, pp)
		fit.TrainBasis = fmt.Sprintf("%.0f bytes per parameter of weights and gradients over TP × PP = %d GPUs, %d of optimizer state over %d", bf16+grad, tp*pp, megatronOptimizerState, optimizerShards)
		if e.Bool("policy.megatron_cfg.optimizer.optimizer_cpu_offload") {
			fit.HostGB = gb(optimizer) * float64(world/nodes)
			optimizer = 0
			fit.TrainBasis += " (offloaded to host memory)"
		}
		fit.TrainGB = gb(model + optimizer)
	} else {
		// DTensor (FSDP2) shards every byte of the fp32 training state over every GPU; with
		// cpu_offload the shards live in host memory.
		state := params * fp32MasterState / float64(world)
		fit.Backend = fmt.Sprintf("DTensor/FSDP2 (tensor parallel %d)", max(1, intOf(e, "policy.dtensor_cfg.tensor_parallel_size")))
		fit.TrainBasis = fmt.Sprintf("%d bytes per parameter (fp32 weights, gradients and Adam's two moments) over %d GPUs", fp32MasterState, world)
		if e.Bool("policy.dtensor_cfg.cpu_offload") {
			fit.HostGB = gb(params * fp32MasterState / float64(nodes))
			state = 0
			fit.TrainBasis += " (offloaded to host memory)"
		}
		fit.TrainGB = gb(state)
	}
	fit.RolloutTensorParallel = max(1, intOf(e, "policy.generation.vllm_cfg.tensor_parallel_size")) * max(1, intOf(e, "policy.generation.vllm_cfg.pipeline_parallel_size"))
	fit.RolloutMemory = floatOf(e, "policy.generation.vllm_cfg.gpu_memory_utilization")
	fit.RolloutGB = gb(params * bf16 / float64(fit.RolloutTensorParallel))
	fit.rolloutKeys = []string{"policy.generation.vllm_cfg.tensor_parallel_size", "policy.generation.vllm_cfg.gpu_memory_utilization"}
	return fit
}

// verlFit counts verl v0.6.0's FSDP actor, its reference model and its vLLM rollout.
func verlFit(e *frameworkconfig.Effective, params float64) Fit {
	const ar = "actor_rollout_ref."
	nodes := max(1, intOf(e, "trainer.nnodes"))
	world := nodes * max(1, intOf(e, "trainer.n_gpus_per_node"))
	onGPU, onHost := 0.0, 0.0
	place := func(bytesPerParam float64, offloaded bool) {
		if offloaded {
			onHost += bytesPerParam
		} else {
			onGPU += bytesPerParam
		}
	}
	// The actor: fp32 weights and gradients (param_offload moves both), Adam's moments
	// (optimizer_offload).
	place(fp32MasterState-fsdpOptimizerState, e.Bool(ar+"actor.fsdp_config.param_offload"))
	place(fsdpOptimizerState, e.Bool(ar+"actor.fsdp_config.optimizer_offload"))
	basis := fmt.Sprintf("%d bytes per parameter for the actor (fp32 weights, gradients and Adam's two moments)", fp32MasterState)
	// The reference model, when a KL term needs it, is not counted: verl keeps it in host memory
	// whatever its config says (verlPhases), and it counts against no GPU budget.
	fit := Fit{
		Backend:    "FSDP",
		TrainGB:    gb(params * onGPU / float64(world)),
		HostGB:     gb(params * onHost / float64(nodes)),
		TrainBasis: fmt.Sprintf("%s, %.0f of them on the GPUs, over %d GPUs", basis, onGPU, world),
	}
	fit.RolloutTensorParallel = max(1, intOf(e, ar+"rollout.tensor_model_parallel_size")) * max(1, intOf(e, ar+"rollout.pipeline_model_parallel_size"))
	fit.RolloutMemory = floatOf(e, ar+"rollout.gpu_memory_utilization")
	fit.RolloutGB = gb(params * bf16 / float64(fit.RolloutTensorParallel))
	fit.rolloutKeys = []string{ar + "rollout.tensor_model_parallel_size", ar + "rollout.gpu_memory_utilization"}
	return fit
}

func floatOf(e *frameworkconfig.Effective, key string) float64 {
	switch v := e.Value(key).(type) {
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	}
	return 0
}

// Summary is the estimate in one line, with the limits it was held to: the plan's
// memoryEstimate output.
func (fit Fit) Summary() string {
	s := fmt.Sprintf("%s: training state ≈ %s GB per GPU (up to %.0f GB)", fit.Backend, gbText(fit.TrainGB), fit.TrainLimitGB)
	if fit.HostGB > 0 {
		s += fmt.Sprintf(", offloaded ≈ %s GB per node (up to %.0f GB)", gbText(fit.HostGB), fit.HostLimitGB)
	}
	s += fmt.Sprintf("; vLLM with tensor parallel %d: weights ≈ %s GB per GPU (up to %.0f GB)", fit.RolloutTensorParallel, gbText(fit.RolloutGB), fit.RolloutLimitGB)
	if len(fit.Phases) > 0 {
		s += "; peaks per GPU:"
		for i, p := range fit.Phases {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(" %s ≈ %s GB", p.Name, gbText(p.GB))
		}
		s += fmt.Sprintf(" (up to %.0f GB)", fit.PhaseLimitGB)
	}
	return s
}

// gbText is a size in GB with one decimal below 10, so that a small model does not read 0.
func gbText(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// trainingShort reports that the training state does not fit the GPUs or the hosts: more
// nodes shard it thinner.
func (fit Fit) trainingShort() bool {
	return fit.TrainGB > fit.TrainLimitGB || fit.HostGB > fit.HostLimitGB
}

// rolloutShort reports that vLLM's weights do not fit: more nodes do not help, a wider
// tensor parallelism or a larger memory fraction does.
func (fit Fit) rolloutShort() bool { return fit.RolloutGB > fit.RolloutLimitGB }

// trainingMessages say what of the training state does not fit, with the numbers.
func (fit Fit) trainingMessages(model string, m NodeMemory, gpuName string) []string {
	var out []string
	if fit.TrainGB > fit.TrainLimitGB {
		out = append(out, fmt.Sprintf(
			"%s does not fit for training with %s: %s ≈ %.0f GB per GPU, above %.0f%% of a %s's %.0f GB (%.0f GB; the rest holds activations)",
			model, fit.Backend, fit.TrainBasis, fit.TrainGB, trainingShare*100, gpuName, m.GPUGB, fit.TrainLimitGB))
	}
	if fit.HostGB > fit.HostLimitGB {
		out = append(out, fmt.Sprintf(
			"%s does not fit in host memory: the state offloaded from the GPUs ≈ %.0f GB per node, above %.0f%% of the Ray worker's %d GiB (%.0f GB)",
			model, fit.HostGB, hostShare*100, m.HostGiB, fit.HostLimitGB))
	}
	return out
}

// rolloutMessage says that vLLM's weights do not fit, and the smallest tensor parallelism that
// holds them.
func (fit Fit) rolloutMessage(model string, m NodeMemory) string {
	return fmt.Sprintf(
		"%s does not fit in vLLM: its bf16 weights over rollout tensor parallel %d ≈ %.0f GB per GPU, above %.0f%% of the rollout's memory fraction %.2g × %.0f GB (%.0f GB; the rest is the KV cache); %s",
		model, fit.RolloutTensorParallel, fit.RolloutGB, rolloutWeightsShare*100, fit.RolloutMemory, m.GPUGB, fit.RolloutLimitGB, fit.rolloutRemedy(m))
}

// rolloutRemedy names the smallest rollout tensor parallelism within one node that holds the
// weights at the run's memory fraction, or says that none does.
func (fit Fit) rolloutRemedy(m NodeMemory) string {
	weights := fit.RolloutGB * float64(fit.RolloutTensorParallel)
	for _, tp := range []int{1, 2, 4, 8} {
		if tp <= m.GPUsPerNode && weights/float64(tp) <= fit.RolloutLimitGB {
			return fmt.Sprintf("set job.rolloutTensorParallel to %d (or raise job.rolloutGpuMemory)", tp)
		}
	}
	return "no tensor parallelism within one node holds it at this memory fraction: raise job.rolloutGpuMemory, or take a larger GPU"
}

// stackOrigin is the first stack key that set one of keys, other than job.model (whose size
// the program's defaults follow), or "" when the framework's values stand.
func stackOrigin(e *frameworkconfig.Effective, keys ...string) string {
	for _, k := range keys {
		if o := e.Origin(k); o != "" && o != "framework" && o != "job.model" {
			return o
		}
	}
	return ""
}

// CheckFit refuses a run whose model cannot fit the GPUs (and, offloaded, the hosts) of its
// nodes, naming the numbers and the key to change; when more nodes would hold the training
// state, it names the smallest gpu.nodes, up to maxNodes, that does. It says nothing when the
// model's size is unknown. modelKey is the key that says the model's size (job.model, or
// job.modelSize).
func CheckFit(f kinds.Framework, r Run, m NodeMemory, modelKey, gpuName string, maxNodes int) []Problem {
	fit, ok := EstimateFit(f, r, m)
	if !ok {
		return nil
	}
	return fit.Problems(f, r, m, modelKey, gpuName, maxNodes)
}

// Problems are CheckFit's refusals of a run whose estimate is fit, for a caller that keeps the
// estimate too.
func (fit Fit) Problems(f kinds.Framework, r Run, m NodeMemory, modelKey, gpuName string, maxNodes int) []Problem {
	var out []Problem
	if fit.trainingShort() {
		hint := fmt.Sprintf("; no gpu.nodes up to %d holds it: take a recipe with more model parallelism (job.recipe), offloading, or a larger GPU", maxNodes)
		for n := r.Nodes + 1; n <= maxNodes; n++ {
			more := r
			more.Nodes = n
			if bigger, ok := EstimateFit(f, more, m); ok && !bigger.trainingShort() {
				hint = fmt.Sprintf("; the smallest gpu.nodes that holds it is %d", n)
				break
			}
		}
		for _, msg := range fit.trainingMessages(r.Model, m, gpuName) {
			out = append(out, Problem{Origin: modelKey, Message: msg + hint})
		}
	}
	if fit.rolloutShort() {
		origin := modelKey
		if fit.rolloutOrigin != "" {
			origin = fit.rolloutOrigin
		}
		out = append(out, Problem{Origin: origin, Message: fit.rolloutMessage(r.Model, m)})
	}
	for i, p := range fit.Phases {
		if p.GB <= fit.PhaseLimitGB {
			continue
		}
		remedy, origin := p.Remedy, firstOf(p.Origin, modelKey)
		switch p.shortfall {
		case stateTooLarge:
			remedy = fmt.Sprintf("the state on each GPU leaves too little room, and no gpu.nodes up to %d shards it thin enough; take a larger GPU, or a smaller model", maxNodes)
			origin = modelKey // the model's state, not a batch, is what does not fit
		case sequenceTooLong:
			// The room is there, though not for one sequence: its length is what to change.
			remedy = fmt.Sprintf("%s, and no gpu.nodes up to %d shards the state thin enough for it", p.Remedy, maxNodes)
		}
		if p.shortfall.needsMoreGPUs() {
			for n := r.Nodes + 1; n <= maxNodes; n++ {
				more := r
				more.Nodes = n
				if bigger, ok := EstimateFit(f, more, m); ok && bigger.Phases[i].GB <= bigger.PhaseLimitGB {
					remedy = fmt.Sprintf("the state on each GPU leaves too little room: the smallest gpu.nodes that holds it is %d", n)
					break
				}
			}
		}
		out = append(out, Problem{Origin: origin, Message: fmt.Sprintf(
			"%s does not fit the %s phase: ≈ %.0f GB per GPU (%s), above a %s's %.1f GB less %d GB for CUDA and NCCL (%.0f GB); %s",
			r.Model, p.Name, p.GB, p.Basis, gpuName, m.GPUGB, GPUReserveGB, fit.PhaseLimitGB, remedy)})
	}
	return out
}
