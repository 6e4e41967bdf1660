package workloads_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/workloads"
)

// recordedModels is where the records of the table's shapes are (SOURCES.md there).
var recordedModels = filepath.Join("..", "testdata", "models")

// pythonClass is a dataclass of a provider file: its parent and its own fields' values.
type pythonClass struct {
	Parent string
	Fields map[string]string
}

// pythonClasses reads the dataclasses of a recorded Megatron-Bridge provider file: each class's
// parent and its fields (`name: type = value`, the class body's own, before its methods).
func pythonClasses(t *testing.T, file string) map[string]pythonClass {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(recordedModels, file))
	require.NoError(t, err)
	classes := map[string]pythonClass{}
	header := regexp.MustCompile(`^class (\w+)\((\w+)\):`)
	field := regexp.MustCompile(`^    (\w+): [^=]+= (.+?)(\s+#.*)?$`)
	current := ""
	for _, line := range strings.Split(string(body), "\n") {
		if m := header.FindStringSubmatch(line); m != nil {
			current = m[1]
			classes[current] = pythonClass{m[2], map[string]string{}}
			continue
		}
		if strings.HasPrefix(line, "    def ") || strings.HasPrefix(line, "# --- ") {
			current = ""
		}
		if m := field.FindStringSubmatch(line); m != nil && current != "" {
			classes[current].Fields[m[1]] = m[2]
		}
	}
	require.NotEmpty(t, classes, file)
	return classes
}

// pythonInt reads a Python integer literal (262_144).
func pythonInt(t *testing.T, what, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
	require.NoError(t, err, "%s: %q", what, s)
	return n
}

// providerShape is a provider class's shape: its fields, else its parents' in the same file.
func providerShape(t *testing.T, file, class string) workloads.Shape {
	t.Helper()
	classes := pythonClasses(t, file)
	get := func(name string) int {
		for c := class; c != ""; {
			k, ok := classes[c]
			require.True(t, ok, "%s has class %s (or its parent)", file, c)
			if v, ok := k.Fields[name]; ok {
				return pythonInt(t, file+" "+c+"."+name, v)
			}
			c = k.Parent
			if _, ok := classes[c]; !ok {
				break
			}
		}
		t.Fatalf("%s: %s has no %s", file, class, name)
		return 0
	}
	return workloads.Shape{Hidden: get("hidden_size"), Layers: get("num_layers"), Vocab: get("vocab_size")}
}

// llamaShape is a model's arch_args in Meta's recorded model list.
func llamaShape(t *testing.T, file, repo string) workloads.Shape {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(recordedModels, file))
	require.NoError(t, err)
	text := string(body)
	vocab := regexp.MustCompile(`(?m)^LLAMA3_VOCAB_SIZE = (\d+)$`).FindStringSubmatch(text)
	require.NotNil(t, vocab, "%s has the Llama 3 vocabulary", file)
	at := strings.Index(text, `huggingface_repo="`+repo+`"`)
	require.GreaterOrEqual(t, at, 0, "%s has %s", file, repo)
	block, _, found := strings.Cut(text[at:], "},")
	require.True(t, found, "%s: %s's arch_args end", file, repo)
	arg := func(name string) string {
		m := regexp.MustCompile(`"` + name + `": (\w+),`).FindStringSubmatch(block)
		require.NotNil(t, m, "%s: %s has %s", file, repo, name)
		if m[1] == "LLAMA3_VOCAB_SIZE" {
			return vocab[1]
		}
		return m[1]
	}
	return workloads.Shape{Hidden: pythonInt(t, repo, arg("dim")), Layers: pythonInt(t, repo, arg("n_layers")), Vocab: pythonInt(t, repo, arg("vocab_size"))}
}

// distillBase is the Hub ID of the base model DeepSeek's table names for a distilled model.
func distillBase(t *testing.T, file, model string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(recordedModels, file))
	require.NoError(t, err)
	row := regexp.MustCompile(`\|\s*` + regexp.QuoteMeta(model) + `\s*\|\s*\[[^\]]+\]\(https://huggingface\.co/([^)]+)\)`).FindStringSubmatch(string(body))
	require.NotNil(t, row, "%s has a row for %s", file, model)
	return row[1]
}

// Every shape of the table is its record's: the Megatron-Bridge provider that converts the
// model's checkpoint (whose config.json it must match to load it), Meta's model list, or, for a
// distilled model, its base's shape, which the table must hold the same.
func TestKnownShapesAreTheRecordedOnes(t *testing.T) {
	models := workloads.KnownModels()
	require.GreaterOrEqual(t, len(models), 25)
	for _, k := range models {
		file, key := k.Recorded.File, k.Recorded.Key
		var want workloads.Shape
		switch {
		case strings.HasPrefix(file, "megatron-bridge-"):
			want = providerShape(t, file, key)
		case strings.HasPrefix(file, "llama-models-"):
			want = llamaShape(t, file, key)
			assert.True(t, strings.HasPrefix(strings.ToLower(filepath.Base(key)), k.Name), "%s is recorded under its own Hub name, %s", k.Name, key)
		case strings.HasPrefix(file, "deepseek-r1-"):
			assert.Equal(t, strings.ToLower(key), k.Name, "a distilled model is recorded under its own name")
			base := distillBase(t, file, key)
			shape, known := workloads.KnownShape(base)
			require.True(t, known, "the base of %s, %s, is in the table", key, base)
			want = shape
		default:
			t.Fatalf("%s: no record %q", k.Name, k.Recorded)
		}
		got := k.Shape
		got.Source, want.Source = "", ""
		assert.Equal(t, want, got, "%s: the table's shape against %s", k.Name, k.Recorded)
	}
}

// A model's name finds its own entry, not a longer or shorter size's, and its variants find it.
func TestKnownShapeMatchesTheNameOnly(t *testing.T) {
	for model, want := range map[string]int{
		"google/gemma-3-1b-it":                      1152,
		"google/gemma-3-12b-it":                     3840,
		"google/gemma-3-27b-pt":                     5376,
		"Qwen/Qwen3-4B-Instruct-2507":               2560,
		"Qwen/Qwen3-14B":                            5120,
		"meta-llama/Llama-3.2-1B-Instruct":          2048,
		"mistralai/Mistral-7B-Instruct-v0.3":        4096,
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-14B":  5120,
		"deepseek-ai/DeepSeek-R1-Distill-Llama-70B": 8192,
	} {
		s, ok := workloads.KnownShape(model)
		if assert.True(t, ok, model) {
			assert.Equal(t, want, s.Hidden, model)
			assert.Equal(t, "config.json of "+model, s.Source)
		}
	}
	for _, model := range []string{
		"mistralai/Mistral-7B-v0.1",                 // a vocabulary of 32,000, not v0.3's
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", // Qwen2.5-Math's shape, not recorded
		"Qwen/Qwen3-30B-A3B",                        // a mixture of experts
		"google/gemma-3-270m",                       // not the 27B
		"Qwen/Qwen2.5-Math-7B",
		// A version that goes on in digits is another version: v0.30 and v0.39 are not v0.3.
		"mistralai/Mistral-7B-v0.30",
		"mistralai/Mistral-7B-v0.39",
	} {
		_, ok := workloads.KnownShape(model)
		assert.False(t, ok, model)
	}
}
