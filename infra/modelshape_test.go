package infra_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/plantest"
)

// A model outside the program's table of shapes is refused rather than given Qwen's: its
// vocabulary (Gemma 3's is 1.7 times Qwen's) drives the log-prob peak. job.modelShape takes
// its config.json's values instead.
func TestAModelWithoutAKnownShapeIsRefused(t *testing.T) {
	gemma := []string{"job.model=google/gemma-3-1b-it", "job.modelSize=1B"}
	assertRefused(t, []refusal{
		{"a model outside the table is refused with the keys that give its shape", "smoke", gemma,
			"job.model", `"google/gemma-3-1b-it" is not in the program's table of model shapes (qwen2.5-0.5b, `},
		{"an experiment's model is refused under its own key", "smoke",
			[]string{"gpu.maxNodes=1", "jobs.a.model=google/gemma-3-1b-it", "jobs.a.modelSize=1B"},
			"jobs.a.model", "job.modelShape from the model's config.json"},
		{"a shape needs all three fields", "smoke", append(gemma, "job.modelShape.hiddenSize=1152"),
			"job.modelShape", "lacks numHiddenLayers"},
		{"a shape's field must be a whole number", "smoke", append(gemma, "job.modelShape.hiddenSize=wide", "job.modelShape.numHiddenLayers=26", "job.modelShape.vocabSize=262144"),
			"job.modelShape", "field hiddenSize"},
		{"a field config.json does not have in a shape is refused", "smoke", append(plantest.Shape(1152, 26, 262144), append(gemma, "job.modelShape.heads=4")...),
			"job.modelShape", `unknown field "heads"`},
	})
}

// Each bound of job.modelShape at its limit, one under and one over: 64 to 65,536 hidden, 1 to
// 1,024 layers, 1,000 to 1,048,576 vocabulary entries.
func TestModelShapeBounds(t *testing.T) {
	base := []string{"job.model=google/gemma-3-1b-it", "job.modelSize=1B"}
	for _, tc := range []struct {
		hidden, layers, vocab int
		refused               string // the key refused, "" for none
	}{
		{64, 1, 1000, ""},
		{65536, 1024, 1048576, ""},
		{63, 26, 262144, "job.modelShape.hiddenSize"},
		{65537, 26, 262144, "job.modelShape.hiddenSize"},
		{1152, 0, 262144, "job.modelShape.numHiddenLayers"},
		{1152, 1025, 262144, "job.modelShape.numHiddenLayers"},
		{1152, 26, 999, "job.modelShape.vocabSize"},
		{1152, 26, 1048577, "job.modelShape.vocabSize"},
	} {
		_, err := plantest.TryResolve("smoke", append(plantest.Shape(tc.hidden, tc.layers, tc.vocab), base...)...)
		var shapeErrs []string
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.Contains(line, "job.modelShape") || strings.Contains(line, "table of model shapes") {
					shapeErrs = append(shapeErrs, line)
				}
			}
		}
		if tc.refused == "" {
			assert.Empty(t, shapeErrs, "%d/%d/%d is a shape", tc.hidden, tc.layers, tc.vocab)
			continue
		}
		require.Len(t, shapeErrs, 1, "%d/%d/%d", tc.hidden, tc.layers, tc.vocab)
		assert.Contains(t, shapeErrs[0], tc.refused+": ")
		assert.Contains(t, shapeErrs[0], "is not a value of config.json for any model; allowed: ")
	}
}

// The memory estimate takes the given shape: a vocabulary of 262,144 makes the log-prob peak,
// nearly all of it the logits' per-token term, 262,144/151,936 = 1.725 times Qwen2.5-0.5B's
// (same hidden size, layers and size): 64 GB × 1.725 ≈ 110 GB with 8,192-token responses.
func TestTheGivenShapeSizesTheMemoryEstimate(t *testing.T) {
	qwen := plantest.Resolve(t, "smoke", "job.maxResponseLength=8192")
	wide := plantest.Resolve(t, "smoke", append(plantest.Shape(896, 24, 262144),
		"job.model=example/wide-vocabulary-model", "job.modelSize=0.49B", "job.maxResponseLength=8192")...)
	assert.Contains(t, qwen.Run.MemoryEstimate, "log-prob ≈ 64 GB")
	assert.Contains(t, wide.Run.MemoryEstimate, "log-prob ≈ 110 GB")
}
