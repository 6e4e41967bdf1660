package workloads

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/workloads/frameworkconfig"
)

// effective is a configuration of the given keys, with overrides applied.
func effective(keys map[string]any, overrides ...string) *frameworkconfig.Effective {
	var os []frameworkconfig.Override
	for _, o := range overrides {
		os = append(os, frameworkconfig.ParseOverride(o, "job.args"))
	}
	e, _ := (&frameworkconfig.Table{Framework: "test", Tag: "v0", Keys: keys}).Apply(os)
	return e
}

// A micro batch holds micro × seq tokens over the sequence parallel ranks, unless dynamic
// batching is on with a token budget above 0: then the budget.
func TestAMicroBatchsTokens(t *testing.T) {
	keys := map[string]any{"dynamic": false, "budget": 0, "micro": 4}
	fixed := tokensOf(effective(keys), "dynamic", "budget", "micro", "job.microBatchSize", 1000, 2)
	assert.False(t, fixed.dynamic)
	assert.InDelta(t, 2000, fixed.perGPU, 0, "4 × 1000 / 2")
	assert.Equal(t, "4 sequences of up to 1000 tokens (micro) over 2 sequence parallel ranks", fixed.String())

	budget := tokensOf(effective(keys, "dynamic=true", "budget=6000"), "dynamic", "budget", "micro", "job.microBatchSize", 1000, 2)
	assert.True(t, budget.dynamic)
	assert.InDelta(t, 6000, budget.perGPU, 0)
	assert.Equal(t, "a token budget of 6000 (budget)", budget.String())

	// Dynamic batching with no budget (0), or a framework with no dynamic key: the micro batch.
	for name, tokens := range map[string]batchTokens{
		"a budget of 0":  tokensOf(effective(keys, "dynamic=true"), "dynamic", "budget", "micro", "job.microBatchSize", 1000, 1),
		"no dynamic key": tokensOf(effective(keys, "dynamic=true", "budget=6000"), "", "budget", "micro", "job.microBatchSize", 1000, 1),
	} {
		assert.False(t, tokens.dynamic, name)
		assert.InDelta(t, 4000, tokens.perGPU, 0, name)
	}
	one := tokensOf(effective(keys, "micro=1"), "dynamic", "budget", "micro", "job.microBatchSize", 1000, 1)
	assert.Equal(t, "1 sequence of up to 1000 tokens (micro)", one.String())
}

// The remedy of a phase that does not fit, at each limit: room is what the state leaves, each
// token takes perToken bytes. Here 10 GB of room, 1 MB a token.
func TestARemedyAtEachLimit(t *testing.T) {
	tokens := batchTokens{micro: 4, seq: 1000, split: 1, microSetting: "job.microBatchSize"}
	const perToken = 1e6
	// No room at all, exactly: the state itself is too large.
	remedy, why := tokens.remedy(50, perToken, 50, 100)
	assert.Equal(t, stateTooLarge, why)
	assert.Empty(t, remedy)

	// 10e9 / (1000 × 1e6) = 10 sequences; over 2 ranks, 20; exactly 1.
	remedy, why = tokens.remedy(40, perToken, 50, 100)
	assert.Equal(t, batchTooLarge, why)
	assert.Equal(t, "set job.microBatchSize to at most 10", remedy)
	split := tokens
	split.split = 2
	remedy, _ = split.remedy(40, perToken, 50, 100)
	assert.Equal(t, "set job.microBatchSize to at most 20", remedy)
	long := tokens
	long.seq = 10000 // 10e9 / (10,000 × 1e6) = 1 sequence
	remedy, _ = long.remedy(40, perToken, 50, 100)
	assert.Equal(t, "set job.microBatchSize to at most 1", remedy)

	// Under one sequence: 10,000 tokens fit, less the prompt's 100, a response of 9,900.
	longer := tokens
	longer.seq = 10001
	remedy, _ = longer.remedy(40, perToken, 50, 100)
	assert.Equal(t, "one sequence a micro batch does not fit either: set job.microBatchSize to 1 and job.maxResponseLength to at most 9900", remedy)
	longer.micro = 1
	remedy, _ = longer.remedy(40, perToken, 50, 100)
	assert.Equal(t, "set job.maxResponseLength to at most 9900", remedy)

	// A response of exactly 256 tokens, the shortest offered, is a remedy; 255 is not.
	remedy, why = longer.remedy(40, perToken, 50, 10000-256)
	assert.Equal(t, batchTooLarge, why)
	assert.Equal(t, "set job.maxResponseLength to at most 256", remedy)
	remedy, why = longer.remedy(40, perToken, 50, 10000-255)
	assert.Equal(t, sequenceTooLong, why)
	assert.Equal(t, "even one sequence a micro batch does not fit: at most 10000 tokens of prompt and response together fit beside the state (job.maxPromptLength and job.maxResponseLength; now up to 10001)", remedy)

	// Dynamic batching: the budget goes down to what the room holds, 10e9 / 1e6.
	dynamic := batchTokens{dynamic: true, budgetKey: "budget", perGPU: 20000}
	remedy, why = dynamic.remedy(40, perToken, 50, 100)
	assert.Equal(t, batchTooLarge, why)
	assert.Equal(t, "lower budget to at most 10000 tokens (job.args)", remedy)
}

// A check names the first of its keys that a stack key set, past the program's fixed values
// ("framework"), else job.args; every such key once, in order.
func TestACheckNamesTheKeysTheStackSet(t *testing.T) {
	e, _ := (&frameworkconfig.Table{Framework: "test", Tag: "v0", Keys: map[string]any{"a": 1, "b": 2, "c": 3, "d": 4}}).Apply([]frameworkconfig.Override{
		{Key: "a", Value: "1", Origin: "framework"}, {Key: "b", Value: "2", Origin: "job.maxSteps"}, {Key: "c", Value: "3", Origin: "job.maxSteps"},
	})
	assert.Equal(t, "job.maxSteps", origin(e, "a", "b"))
	assert.Equal(t, "job.args", origin(e, "a", "d"), "fixed or unset: job.args")
	assert.Equal(t, []string{"job.maxSteps"}, origins(e, "d", "a", "b", "c"))
	assert.Empty(t, origins(e, "a", "d"))
}
