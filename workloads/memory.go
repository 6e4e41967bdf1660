package workloads

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
)

// Shape is what sizes a model's activations: its hidden size, its layers and its vocabulary
// (config.json's hidden_size, num_hidden_layers, vocab_size).
type Shape struct {
	Hidden, Layers, Vocab int
	// Source says where the numbers come from.
	Source string
}

// KnownModel is one model of the table: the start of its repository's name (lower case; an
// -Instruct or dated variant has its base's shape), its parameter count (the model card's, which
// only the estimate for a model outside the table reads), its shape, and where the shape is
// recorded, which TestKnownShapesAreTheRecordedOnes holds the numbers to.
type KnownModel struct {
	Name     string
	Billions float64
	Shape
	Recorded Record
}

// Record names where a row's shape is recorded: a file of testdata/models (SOURCES.md there says
// why each is the model's own) and the class or Hub repository in it.
type Record struct{ File, Key string }

// The records the table's shapes come from: Megatron-Bridge's model providers, which convert the
// Hub's checkpoints and must match their config.json to load them; Meta's model list for Llama
// 3; DeepSeek's table of the bases its distilled models keep the shape of.
func fromQwen(class string) Record    { return Record{"megatron-bridge-qwen_provider.py", class} }
func fromGemma3(class string) Record  { return Record{"megatron-bridge-gemma3_provider.py", class} }
func fromMistral(class string) Record { return Record{"megatron-bridge-mistral_provider.py", class} }
func fromLlama(repo string) Record    { return Record{"llama-models-sku_list.py", repo} }
func fromR1(model string) Record      { return Record{"deepseek-r1-distill-bases.md", model} }

// knownShapes are the models people post-train with GRPO on this program's GPUs: Qwen2.5 and
// Qwen3, Llama 3.x, Gemma 3, Mistral and DeepSeek-R1's distilled models. Gemma 3's vocabulary
// (262,144; 262,208 from 4B up) is 1.7 times a Qwen's, which the log-prob and update peaks follow.
var knownShapes = []KnownModel{
	{"qwen2.5-0.5b", 0.49, Shape{896, 24, 151936, ""}, fromQwen("Qwen25ModelProvider500M")},
	{"qwen2.5-1.5b", 1.54, Shape{1536, 28, 151936, ""}, fromQwen("Qwen25ModelProvider1P5B")},
	{"qwen2.5-3b", 3.09, Shape{2048, 36, 151936, ""}, fromQwen("Qwen25ModelProvider3B")},
	{"qwen2.5-7b", 7.62, Shape{3584, 28, 152064, ""}, fromQwen("Qwen25ModelProvider7B")},
	{"qwen2.5-14b", 14.8, Shape{5120, 48, 152064, ""}, fromQwen("Qwen25ModelProvider14B")},
	{"qwen2.5-32b", 32.8, Shape{5120, 64, 152064, ""}, fromQwen("Qwen25ModelProvider32B")},
	{"qwen2.5-72b", 72.7, Shape{8192, 80, 152064, ""}, fromQwen("Qwen25ModelProvider72B")},
	{"qwen3-0.6b", 0.6, Shape{1024, 28, 151936, ""}, fromQwen("Qwen3ModelProvider600M")},
	{"qwen3-1.7b", 1.7, Shape{2048, 28, 151936, ""}, fromQwen("Qwen3ModelProvider1P7B")},
	{"qwen3-4b", 4.0, Shape{2560, 36, 151936, ""}, fromQwen("Qwen3ModelProvider4B")},
	{"qwen3-8b", 8.2, Shape{4096, 36, 151936, ""}, fromQwen("Qwen3ModelProvider8B")},
	{"qwen3-14b", 14.8, Shape{5120, 40, 151936, ""}, fromQwen("Qwen3ModelProvider14B")},
	{"qwen3-32b", 32.8, Shape{5120, 64, 151936, ""}, fromQwen("Qwen3ModelProvider32B")},
	{"llama-3.1-8b", 8.03, Shape{4096, 32, 128256, ""}, fromLlama("meta-llama/Llama-3.1-8B")},
	{"llama-3.1-70b", 70.6, Shape{8192, 80, 128256, ""}, fromLlama("meta-llama/Llama-3.1-70B")},
	{"llama-3.2-1b", 1.24, Shape{2048, 16, 128256, ""}, fromLlama("meta-llama/Llama-3.2-1B")},
	{"llama-3.2-3b", 3.21, Shape{3072, 28, 128256, ""}, fromLlama("meta-llama/Llama-3.2-3B")},
	{"llama-3.3-70b", 70.6, Shape{8192, 80, 128256, ""}, fromLlama("meta-llama/Llama-3.3-70B-Instruct")},
	{"gemma-3-1b", 1.0, Shape{1152, 26, 262144, ""}, fromGemma3("Gemma3ModelProvider1B")},
	{"gemma-3-4b", 4.3, Shape{2560, 34, 262208, ""}, fromGemma3("Gemma3ModelProvider4B")},
	{"gemma-3-12b", 12.2, Shape{3840, 48, 262208, ""}, fromGemma3("Gemma3ModelProvider12B")},
	{"gemma-3-27b", 27.4, Shape{5376, 62, 262208, ""}, fromGemma3("Gemma3ModelProvider27B")},
	// Mistral 7B v0.3 only: v0.1 and v0.2 have a vocabulary of 32,000.
	{"mistral-7b-v0.3", 7.25, Shape{4096, 32, 32768, ""}, fromMistral("MistralModelProvider")},
	{"mistral-7b-instruct-v0.3", 7.25, Shape{4096, 32, 32768, ""}, fromMistral("MistralModelProvider")},
	{"mistral-small-24b", 23.6, Shape{5120, 40, 131072, ""}, fromMistral("MistralSmall3ModelProvider24B")},
	// The distilled models whose base the table has; Qwen-1.5B and Qwen-7B are distilled from
	// Qwen2.5-Math, whose shape no record here holds: job.modelShape, from their config.json.
	{"deepseek-r1-distill-qwen-14b", 14.8, Shape{5120, 48, 152064, ""}, fromR1("DeepSeek-R1-Distill-Qwen-14B")},
	{"deepseek-r1-distill-qwen-32b", 32.8, Shape{5120, 64, 152064, ""}, fromR1("DeepSeek-R1-Distill-Qwen-32B")},
	{"deepseek-r1-distill-llama-8b", 8.03, Shape{4096, 32, 128256, ""}, fromR1("DeepSeek-R1-Distill-Llama-8B")},
	{"deepseek-r1-distill-llama-70b", 70.6, Shape{8192, 80, 128256, ""}, fromR1("DeepSeek-R1-Distill-Llama-70B")},
}

// KnownModels are the table's models, for the test that holds them to their records.
func KnownModels() []KnownModel { return slices.Clone(knownShapes) }

// KnownShapeNames are the table's models, as a model ID's name starts (an -Instruct variant has
// its base's shape).
func KnownShapeNames() []string {
	names := make([]string, len(knownShapes))
	for i, k := range knownShapes {
		names[i] = k.Name
	}
	return names
}

// KnownShape is config.json's shape of model (a Hub ID) when knownShapes holds it.
func KnownShape(model string) (Shape, bool) {
	name := strings.ToLower(path.Base(model))
	for _, k := range knownShapes {
		if strings.HasPrefix(name, k.Name) && (len(name) == len(k.Name) || !isDigit(name[len(k.Name)])) {
			s := k.Shape
			s.Source = "config.json of " + model
			return s, true
		}
	}
	return Shape{}, false
}

// ShapeOf is the shape a run's estimates use: the run's own (job.modelShape), else the table's
// (KnownShape), else ModelShape's estimate. The program refuses a model outside the table
// without job.modelShape before it gets here; the estimate serves other callers.
func (r Run) ShapeOf() Shape {
	if r.Shape != nil {
		return *r.Shape
	}
	return ModelShape(r.Model, r.ModelBillions)
}

// ModelShape is the shape of model (a Hub ID) of billions parameters: config.json's values for
// the models knownShapes holds; for another, the known model nearest in size, its hidden size
// times layers scaled with the size, and its vocabulary or a Qwen's, whichever is larger (the
// logits dominate the activations: the estimate must not take a Llama's for a Qwen-sized one).
func ModelShape(model string, billions float64) Shape {
	if s, ok := KnownShape(model); ok {
		return s
	}
	if billions <= 0 {
		billions = 8
	}
	nearest := knownShapes[0]
	for _, k := range knownShapes {
		if math.Abs(math.Log(k.Billions/billions)) < math.Abs(math.Log(nearest.Billions/billions)) {
			nearest = k
		}
	}
	s := nearest.Shape
	s.Layers = int(math.Ceil(float64(s.Layers) * billions / nearest.Billions))
	s.Vocab = max(s.Vocab, 152064)
	s.Source = fmt.Sprintf("estimated from %s's (%s is not in the program's table)", nearest.Name, model)
	return s
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// The activations of one micro batch of the policy update, per token of the micro batch,
// calibrated on a real H200 (testdata/recorded/gpu-memory: fp32 master weights, bf16 autocast,
// AdamW, the response tokens' log-probabilities over the whole vocabulary and the entropy,
// unfused): the vocabulary-wide logits and their fp32 companions (the float copy, log_softmax,
// the entropy's exp, their gradients) take about 16 bytes per vocabulary entry, and each layer's
// saved input about 4.5 bytes per hidden unit with gradient checkpointing, 77 without (one
// measured model). memory_test.go holds the estimate within 15 % of every recorded peak. The
// frameworks' fused or chunked paths may need less: this is the bound the plan holds runs to.
const (
	updateBytesPerVocabEntry         = 16
	updateBytesPerHiddenCheckpointed = 4.5
	updateBytesPerHiddenFull         = 77
)

// UpdateActivationBytesPerToken is what one token of an update's micro batch adds to one GPU's
// peak, the whole model on that GPU (divide by the tensor and sequence parallelism that split it).
func UpdateActivationBytesPerToken(s Shape, checkpointing bool) float64 {
	perHidden := float64(updateBytesPerHiddenFull)
	if checkpointing {
		perHidden = updateBytesPerHiddenCheckpointed
	}
	return updateBytesPerVocabEntry*float64(s.Vocab) + perHidden*float64(s.Hidden*s.Layers)
}

// UpdateUnderEstimate is the most the update's estimate (16 bytes a parameter of state, and
// UpdateActivationBytesPerToken a token) fell under a peak measured on an H200
// (testdata/recorded/gpu-memory: 8.2 %, Qwen2.5-7B with one micro batch of 1,536 tokens, where a
// part of the activations that does not grow with the tokens shows most), rounded up: the plan
// counts an update that much larger, so that a run it accepts does not run out of memory where
// the estimate is short. The log-prob and rollout phases were not measured and carry none.
const UpdateUnderEstimate = 0.09

// updateCalibrated is an update's estimate, or a term of it, with the measured under-estimate.
func updateCalibrated(v float64) float64 { return v * (1 + UpdateUnderEstimate) }

// updateCalibrationText is what an update phase's basis says of its calibration.
const updateCalibrationText = "; 9 % added, the most the estimate fell under a peak measured on an H200"

// GPUReserveGB is what a GPU keeps beyond the tensors the estimate counts: CUDA's context, NCCL's
// buffers and the caching allocator's fragmentation. The recorded H200 ran a 141 GB peak of
// allocated tensors on its 150.1 GB.
const GPUReserveGB = 3
