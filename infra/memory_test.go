package infra_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/test/plantest"
)

// verl runs that pass a state-only check and would run out of memory on the GPU: each is refused
// naming the phase, its estimate, the limit and the smallest change that fits, on the key that
// set the value; a run the old check refused for the GPU's size in the wrong unit plans.
func TestVerlRunsThatWouldRunOutOfMemoryAreRefused(t *testing.T) {
	cases := []struct {
		sentence  string
		stack     string
		overrides []string
		// want are key → parts of one message on that key.
		want map[string][]string
	}{
		{"Qwen2.5-7B with 32k-token responses on one B200 node, micro batches of 4 and 8: the log-prob pass and the update", "smoke",
			[]string{"job.model=Qwen/Qwen2.5-7B-Instruct", "job.maxResponseLength=32768", "job.microBatchSize=4", "job.logProbMicroBatchSize=8"},
			map[string][]string{"job.maxResponseLength": {
				"does not fit the log-prob phase: ≈ 253 GB per GPU", "8 sequences of up to 33280 tokens", "softmax and pd × logits for the entropy",
				"above a B200's 191.5 GB less 3 GB for CUDA and NCCL (188 GB); set job.logProbMicroBatchSize to at most 5",
			}}},
		{"Qwen2.5-72B on one H200 node: the update loads the offloaded state back", "h200-reserved",
			[]string{"job.model=Qwen/Qwen2.5-72B-Instruct", "gpu.nodes=1"},
			map[string][]string{"job.model": {
				// 152 GB of state and activations, and 9 % for the measured under-estimate.
				"does not fit the update phase: ≈ 166 GB per GPU", "(the offloaded state is loaded back for the update)",
				"above a H200's 150.1 GB less 3 GB", "the smallest gpu.nodes that holds it is 2",
			}}},
		{"Qwen2.5-32B on one B200 node with rolloutGpuMemory 0.9: the actor stays beside vLLM", "b200-spot",
			[]string{"framework=verl", "job.dataset=gsm8k", "job.recipe=", "job.args=[]", "job.model=Qwen/Qwen2.5-32B-Instruct", "gpu.nodes=1", "job.rolloutGpuMemory=0.9"},
			map[string][]string{"job.rolloutGpuMemory": {
				"does not fit the rollout phase: ≈ 220 GB per GPU", "the actor's fp32 weights and Adam's two moments (12 bytes per parameter over 8 GPUs)",
				"set job.rolloutGpuMemory to at most 0.73",
			}}},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			cfgErr := problems(t, tc.stack, tc.overrides...)
			for key, parts := range tc.want {
				found := false
				for _, p := range cfgErr.Problems {
					if p.Key == key && strings.Contains(p.Message, parts[0]) {
						found = true
						for _, part := range parts[1:] {
							assert.Contains(t, p.Message, part)
						}
					}
				}
				assert.True(t, found, "no error on %s with %q: %v", key, parts[0], cfgErr.Problems)
			}
		})
	}
	// The update of the first case is refused too, with its own remedy.
	cfgErr := problems(t, "smoke", "job.model=Qwen/Qwen2.5-7B-Instruct", "job.maxResponseLength=32768", "job.microBatchSize=4", "job.logProbMicroBatchSize=8")
	assert.Contains(t, cfgErr.Error(), "does not fit the update phase: ≈ 434 GB per GPU") // 398 GB × 1.09
	assert.Contains(t, cfgErr.Error(), "set job.microBatchSize to at most 1")

	// Left to the program, the micro batches sized from the model are lowered to what fits, and
	// the settings name the length that lowered them.
	bp := plantest.Resolve(t, "smoke", "job.model=Qwen/Qwen2.5-7B-Instruct", "job.maxResponseLength=32768")
	settings := map[string]string{}
	for _, o := range bp.Run.Settings {
		settings[o.Key] = o.Value + " from " + o.Origin
	}
	assert.Equal(t, "1 from job.maxResponseLength", settings["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"])
	assert.Equal(t, "5 from job.maxResponseLength", settings["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"])
	assert.Contains(t, bp.Run.MemoryEstimate, "log-prob ≈ 162 GB, update ≈ 120 GB (up to 188 GB)") // 110 GB × 1.09

	// h200-reserved with vLLM on one GPU at half of it: 64 GB of bf16 weights fit 0.9 × 0.5 ×
	// 150.1 GB, and the reference model (in host memory) is not counted on the GPU.
	bp = plantest.Resolve(t, "h200-reserved", "job.rolloutTensorParallel=1", "job.rolloutGpuMemory=0.5")
	assert.Contains(t, bp.Run.MemoryEstimate, "vLLM with tensor parallel 1: weights ≈ 64 GB per GPU (up to 68 GB)")
}

// Every shipped stack's memory estimate shows each phase's peak and the limit.
func TestTheMemoryEstimateShowsEachPhase(t *testing.T) {
	for _, stack := range plantest.Stacks {
		estimate := plantest.Resolve(t, stack).Run.MemoryEstimate
		for _, part := range []string{"peaks per GPU: rollout ≈ ", ", log-prob ≈ ", ", update ≈ "} {
			assert.Contains(t, estimate, part, stack)
		}
	}
}

// The micro batches the program sizes for verl are ones its own memory check accepts: whatever
// the model and the response length, a refusal never names a smaller micro batch the program
// could have picked itself (the sizing and the check count the update alike, the measured
// under-estimate included).
func TestVerlsOwnMicroBatchesPassItsMemoryCheck(t *testing.T) {
	for _, model := range []string{"Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-14B-Instruct", "Qwen/Qwen2.5-32B-Instruct"} {
		// Every length from 1k to 32k tokens in steps of 1k: the sized micro batch steps down
		// between them, so some land just under the check's limit.
		for n := 1; n <= 32; n++ {
			response := strconv.Itoa(n * 1024)
			_, err := plantest.TryResolve("smoke", "job.model="+model, "job.maxResponseLength="+response)
			if err == nil {
				continue
			}
			assert.NotContains(t, err.Error(), "set job.microBatchSize to at most", "%s, responses of %s tokens", model, response)
			assert.NotContains(t, err.Error(), "set job.logProbMicroBatchSize to at most", "%s, responses of %s tokens", model, response)
		}
	}
}
