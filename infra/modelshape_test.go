package infra_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/test/plantest"
)

// A model outside the program's table of shapes is refused rather than given a guessed one: its
// vocabulary (Gemma 3's is 1.7 times Qwen's) drives the log-prob peak. job.modelShape takes
// its config.json's values instead. DeepSeek-R1-Distill-Qwen-1.5B is outside: its base,
// Qwen2.5-Math-1.5B, has no record (testdata/models/SOURCES.md).
func TestAModelWithoutAKnownShapeIsRefused(t *testing.T) {
	distill := []string{"job.model=deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"}
	assertRefused(t, []refusal{
		{"a model outside the table is refused with the keys that give its shape", "smoke", distill,
			"job.model", `"deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B" is not in the program's table of model shapes (qwen2.5-0.5b, `},
		{"an experiment's model is refused under its own key", "smoke",
			[]string{"gpu.maxNodes=1", "jobs.a.model=deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"},
			"jobs.a.model", "job.modelShape from the model's config.json (https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B/blob/main/config.json)"},
		{"a pinned model links its config.json at the pin", "smoke",
			append([]string{`job.revisions["deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"]=` + strings.Repeat("a", 40)}, distill...),
			"job.model", "(https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B/blob/" + strings.Repeat("a", 40) + "/config.json)"},
		{"a shape needs all three fields", "smoke", append(distill, "job.modelShape.hiddenSize=1536"),
			"job.modelShape", "lacks numHiddenLayers"},
		{"a shape's field must be a whole number", "smoke", append(distill, "job.modelShape.hiddenSize=wide", "job.modelShape.numHiddenLayers=28", "job.modelShape.vocabSize=151936"),
			"job.modelShape", "field hiddenSize"},
		{"a field config.json does not have in a shape is refused", "smoke", append(plantest.Shape(1536, 28, 151936), append(distill, "job.modelShape.heads=12")...),
			"job.modelShape", `unknown field "heads"`},
	})
}

// Each bound of job.modelShape at its limit, one under and one over: 64 to 65,536 hidden, 1 to
// 1,024 layers, 1,000 to 1,048,576 vocabulary entries.
func TestModelShapeBounds(t *testing.T) {
	base := []string{"job.model=deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"}
	for _, tc := range []struct {
		hidden, layers, vocab int
		refused               string // the key refused, "" for none
	}{
		{64, 1, 1000, ""},
		{65536, 1024, 1048576, ""},
		{63, 28, 151936, "job.modelShape.hiddenSize"},
		{65537, 28, 151936, "job.modelShape.hiddenSize"},
		{1536, 0, 151936, "job.modelShape.numHiddenLayers"},
		{1536, 1025, 151936, "job.modelShape.numHiddenLayers"},
		{1536, 28, 999, "job.modelShape.vocabSize"},
		{1536, 28, 1048577, "job.modelShape.vocabSize"},
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

// Gemma 3 and Llama 3.2 plan with their own shapes from the table: the estimate is the one their
// config.json's values give through job.modelShape, and Gemma 3 1B's 262,144-entry vocabulary
// makes its log-prob peak larger than Qwen2.5-0.5B's 64 GB. Llama 3.2 1B's card count (1.24B)
// is a size job.modelSize takes, though its name says 1B.
func TestTheTableGivesGemmaAndLlamaTheirOwnShapes(t *testing.T) {
	for _, tc := range []struct {
		model, size         string
		hidden, layers, voc int
	}{
		{"google/gemma-3-1b-it", "1B", 1152, 26, 262144},
		{"meta-llama/Llama-3.2-1B-Instruct", "1.24B", 2048, 16, 128256},
	} {
		base := []string{"job.model=" + tc.model, "job.modelSize=" + tc.size, "tokens.huggingFace=true", "job.maxResponseLength=8192"}
		fromTable := plantest.Resolve(t, "smoke", base...)
		given := plantest.Resolve(t, "smoke", append(plantest.Shape(tc.hidden, tc.layers, tc.voc), base...)...)
		assert.Equal(t, given.Run.MemoryEstimate, fromTable.Run.MemoryEstimate, "%s: the table's shape is its config.json's", tc.model)
	}
	qwen := plantest.Resolve(t, "smoke", "job.maxResponseLength=8192")
	gemma := plantest.Resolve(t, "smoke", "job.model=google/gemma-3-1b-it", "job.maxResponseLength=8192")
	assert.Contains(t, qwen.Run.MemoryEstimate, "log-prob ≈ 64 GB")
	assert.Regexp(t, `log-prob ≈ 1[01]\d GB`, gemma.Run.MemoryEstimate, "Gemma 3 1B's vocabulary, 1.725 times Qwen's")
}
