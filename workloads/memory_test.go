package workloads_test

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/workloads"
)

// measurement is one line of testdata/recorded/gpu-memory/h200-2026-12-05.jsonl.
type measurement struct {
	Model         string  `json:"model"`
	Params        float64 `json:"params"`
	Checkpointing bool    `json:"checkpointing"`
	Tokens        float64 `json:"tokens"`
	PeakGiB       float64 `json:"peak_gib"`
	OOM           bool    `json:"oom"`
}

func recordedMeasurements(t *testing.T) []measurement {
	t.Helper()
	f, err := os.Open("../testdata/recorded/gpu-memory/h200-2026-12-05.jsonl")
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var out []measurement
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		var m measurement
		require.NoError(t, json.Unmarshal(lines.Bytes(), &m))
		out = append(out, m)
	}
	require.NoError(t, lines.Err())
	return out
}

// The update's estimate (16 bytes a parameter of state, and UpdateActivationBytesPerToken for
// each token of the micro batch) against every peak measured on a real H200: within 15 %, never
// more than 15 % below; and every update that ran out of memory there is estimated above the
// GPU's memory less the reserve, so the plan would have refused it.
func TestUpdateEstimateHoldsTheRecordedPeaks(t *testing.T) {
	const gib = 1 << 30
	params := map[string]float64{}
	// The H200 as PyTorch saw it during the measurements (testdata/recorded/SOURCES.md), which the
	// hardware catalog and these tests take.
	gpuGB := 139.8 * gib / 1e9
	assert.InDelta(t, a3Ultra.GPUGB, gpuGB, 0.05)
	checked, refused, worst := 0, 0, 0.0
	for _, m := range recordedMeasurements(t) {
		switch {
		case m.Params > 0:
			params[m.Model] = m.Params
			continue
		}
		p, ok := params[m.Model]
		require.True(t, ok, "the state line of %s comes first", m.Model)
		shape := workloads.ModelShape("Qwen/"+strings.Replace(m.Model, "qwen", "Qwen", 1)+"-Instruct", p/1e9)
		require.True(t, strings.HasPrefix(shape.Source, "config.json"), shape.Source)
		estimate := 16*p + m.Tokens*workloads.UpdateActivationBytesPerToken(shape, m.Checkpointing)
		if m.OOM {
			assert.Greater(t, estimate/1e9, gpuGB-workloads.GPUReserveGB, "%s, %.0f tokens ran out of memory", m.Model, m.Tokens)
			refused++
			continue
		}
		peak := m.PeakGiB * gib
		ratio := estimate / peak
		t.Logf("%s checkpointing=%v %6.0f tokens: measured %6.1f GiB, estimated %6.1f GiB (%+.1f %%)", m.Model, m.Checkpointing, m.Tokens, m.PeakGiB, estimate/gib, (ratio-1)*100)
		assert.LessOrEqual(t, math.Abs(ratio-1), 0.15, "%s, %.0f tokens", m.Model, m.Tokens)
		// The plan counts the update UpdateUnderEstimate larger: that covers every peak.
		assert.GreaterOrEqual(t, estimate*(1+workloads.UpdateUnderEstimate), peak, "%s, %.0f tokens: the calibrated update under the measured peak", m.Model, m.Tokens)
		worst = max(worst, 1-ratio)
		checked++
	}
	assert.Equal(t, 38, checked)
	// The margin is the worst under-estimate measured (8.2 %, Qwen2.5-7B, 1,536 tokens), rounded up
	// to the next whole percent, not more.
	assert.InDelta(t, 0.082, worst, 0.001)
	assert.Equal(t, math.Ceil(worst*100)/100, workloads.UpdateUnderEstimate)
	assert.Equal(t, 7, refused)
}

// The shapes the activations follow: config.json's for the models the program knows (a 7B is not
// a 72B), an estimate from the nearest known size for the others.
func TestModelShape(t *testing.T) {
	assert.Equal(t, workloads.Shape{Hidden: 3584, Layers: 28, Vocab: 152064, Source: "config.json of Qwen/Qwen2.5-7B-Instruct"}, workloads.ModelShape("Qwen/Qwen2.5-7B-Instruct", 7))
	assert.Equal(t, 8192, workloads.ModelShape("Qwen/Qwen2.5-72B-Instruct", 72).Hidden)
	assert.Equal(t, 64, workloads.ModelShape("Qwen/Qwen2.5-32B", 32).Layers)
	assert.Equal(t, 128256, workloads.ModelShape("meta-llama/Llama-3.3-70B-Instruct", 70).Vocab)
	other := workloads.ModelShape("example/private-model", 16)
	assert.Equal(t, 5120, other.Hidden, "the nearest known size, Qwen2.5-14B")
	assert.Equal(t, 52, other.Layers, "its 48 layers scaled to 16B")
	assert.Equal(t, 152064, other.Vocab)
	assert.Contains(t, other.Source, "estimated from qwen2.5-14b's")
	// The vocabulary is the nearest model's or a Qwen's, whichever is larger: a Llama's 128,256
	// would under-count a Qwen-sized vocabulary; a Gemma's 262,144 stays.
	nearLlama := workloads.ModelShape("example/private-1b-model", 1.24)
	assert.Contains(t, nearLlama.Source, "estimated from llama-3.2-1b's")
	assert.Equal(t, 152064, nearLlama.Vocab)
	// An unknown size is taken as 8B: Llama 3.1 8B (8.03B) is the nearest, 32 layers.
	unsized := workloads.ModelShape("example/private-model", 0)
	assert.Contains(t, unsized.Source, "estimated from llama-3.1-8b's")
	assert.Equal(t, 32, unsized.Layers)
	nearGemma := workloads.ModelShape("example/private-model", 1.0)
	assert.Contains(t, nearGemma.Source, "estimated from gemma-3-1b's")
	assert.Equal(t, 262144, nearGemma.Vocab)
}
