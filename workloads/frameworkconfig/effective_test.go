package frameworkconfig_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/workloads/frameworkconfig"
)

// table is a small config in the shape the generator writes: dotted keys with their defaults,
// OmegaConf interpolations as the framework's YAML has them.
func table() *frameworkconfig.Table {
	return &frameworkconfig.Table{Framework: "nemo-rl", Tag: "v0.5.0", Source: "examples/configs/x.yaml", Keys: map[string]any{
		"policy.model_name":                        "Qwen/Qwen2.5-1.5B",
		"policy.max_total_sequence_length":         float64(512),
		"policy.make_sequence_length_divisible_by": "${policy.max_total_sequence_length}",
		"policy.megatron_cfg.enabled":              false,
		"policy.generation.vllm_cfg.max_model_len": "${policy.max_total_sequence_length}",
		"policy.generation.stop_token_ids":         nil,
		"grpo.seed":                                "${oc.select:seed,42}",
		"grpo.loop":                                "${grpo.loop}",
		"grpo.select_loop":                         "${oc.select:grpo.select_loop,3}",
		"logger.dir":                               "${now:%Y-%m-%d}",
		"cluster.num_nodes":                        float64(1),
	}}
}

func TestParseOverrideSplitsHydrasPrefixes(t *testing.T) {
	for _, tc := range []struct {
		arg                string
		prefix, key, value string
	}{
		{"policy.model_name=Qwen/Qwen2.5-7B", "", "policy.model_name", "Qwen/Qwen2.5-7B"},
		{"+grpo.new=1", "+", "grpo.new", "1"},
		{"++grpo.seed=7", "++", "grpo.seed", "7"},
		{"~policy.generation.stop_token_ids", "~", "policy.generation.stop_token_ids", ""},
		{"checkpointing.metric_name=val:accuracy=1", "", "checkpointing.metric_name", "val:accuracy=1"},
	} {
		o := frameworkconfig.ParseOverride(tc.arg, "job.args[0]")
		assert.Equal(t, frameworkconfig.Override{Prefix: tc.prefix, Key: tc.key, Value: tc.value, Origin: "job.args[0]"}, o, tc.arg)
	}
}

// Struct mode, as the frameworks compose their configs: a key must exist unless added, and `+`
// must not add one that exists; `++` adds or sets.
func TestApplyRefusesWhatStructModeRefuses(t *testing.T) {
	parse := func(args ...string) []frameworkconfig.Override {
		var out []frameworkconfig.Override
		for _, a := range args {
			out = append(out, frameworkconfig.ParseOverride(a, "job.args"))
		}
		return out
	}
	_, problems := table().Apply(parse("policy.model_name=x", "++grpo.seed=1", "+grpo.new=1", "++grpo.other=2", "~policy.generation.stop_token_ids", "policy=null"))
	assert.Empty(t, problems, "a value, ++ on a key and a new one, + on a new one, ~, a section")
	_, problems = table().Apply(parse("polic.model_name=x", "+grpo.seed=1", "pol=1"))
	assert.Equal(t, []frameworkconfig.Problem{
		{Origin: "job.args", Message: "polic.model_name is not a key of nemo-rl v0.5.0's config (examples/configs/x.yaml)"},
		{Origin: "job.args", Message: "+grpo.seed adds a key that nemo-rl v0.5.0's config already has; set it without the +"},
		{Origin: "job.args", Message: "pol is not a key of nemo-rl v0.5.0's config (examples/configs/x.yaml)"},
	}, problems, "a section is a whole dotted prefix: pol is not policy")
}

func TestEffectiveValues(t *testing.T) {
	e, problems := table().Apply([]frameworkconfig.Override{
		{Key: "cluster.num_nodes", Value: "2", Origin: "gpu.nodes"},
		{Key: "cluster.num_nodes", Value: "4", Origin: "job.args[3]"},
		{Key: "policy.megatron_cfg.enabled", Value: "True", Origin: "job.args[4]"},
		{Key: "policy.max_total_sequence_length", Value: "1024", Origin: "job.maxResponseLength"},
		{Prefix: "~", Key: "policy.model_name", Origin: "job.args[5]"},
		{Prefix: "+", Key: "grpo.extra", Value: "[a", Origin: "job.args[6]"},
		{Prefix: "+", Key: "grpo.gone", Origin: "job.args[7]"},
		{Prefix: "~", Key: "grpo.gone", Origin: "job.args[8]"},
	})
	require.Empty(t, problems)
	// The last value of a key wins, read as YAML; Python's spellings are values.
	assert.Equal(t, float64(4), e.Value("cluster.num_nodes"))
	assert.Equal(t, "job.args[3]", e.Origin("cluster.num_nodes"))
	assert.Equal(t, "", e.Origin("grpo.seed"), "a table default has no config key")
	assert.Equal(t, true, e.Value("policy.megatron_cfg.enabled"))
	assert.True(t, e.Bool("policy.megatron_cfg.enabled"))
	assert.False(t, e.Bool("cluster.num_nodes"), "a number is not a boolean")
	// ~ deletes; what YAML cannot read stays the text given.
	assert.Nil(t, e.Value("policy.model_name"))
	assert.False(t, e.IsSet("policy.model_name"))
	assert.False(t, e.IsSet("policy.generation.stop_token_ids"), "null in the table")
	assert.Equal(t, "[a", e.Value("grpo.extra"))
	// ${key} follows the override; oc.select takes its default when the key is nowhere; a
	// resolver the table does not evaluate, and a loop, stay as written.
	assert.Equal(t, float64(1024), e.Value("policy.make_sequence_length_divisible_by"))
	assert.Equal(t, float64(1024), e.Value("policy.generation.vllm_cfg.max_model_len"))
	assert.Equal(t, float64(42), e.Value("grpo.seed"))
	assert.Equal(t, "${now:%Y-%m-%d}", e.Value("logger.dir"))
	assert.Equal(t, "${grpo.loop}", e.Value("grpo.loop"))
	assert.Equal(t, "${oc.select:grpo.select_loop,3}", e.Value("grpo.select_loop"))
	// Keys: the table's and those added, not those added and deleted again, sorted.
	assert.Equal(t, []string{
		"cluster.num_nodes", "grpo.extra", "grpo.loop", "grpo.seed", "grpo.select_loop", "logger.dir",
		"policy.generation.stop_token_ids", "policy.generation.vllm_cfg.max_model_len",
		"policy.make_sequence_length_divisible_by", "policy.max_total_sequence_length",
		"policy.megatron_cfg.enabled", "policy.model_name",
	}, e.Keys())

	// oc.select follows a key that is set.
	e, _ = table().Apply([]frameworkconfig.Override{{Prefix: "+", Key: "seed", Value: "7"}})
	assert.Equal(t, float64(7), e.Value("grpo.seed"))

	// An override's value interpolates as the table's do; one that closes a loop with the
	// table's own interpolation stays unresolved after a few links (the bound on the chain did
	// not hold before: a loop made the plan recurse without end).
	e, _ = table().Apply([]frameworkconfig.Override{
		{Key: "cluster.num_nodes", Value: "${policy.max_total_sequence_length}"},
		{Key: "policy.max_total_sequence_length", Value: "${policy.make_sequence_length_divisible_by}"},
	})
	assert.Equal(t, "${policy.make_sequence_length_divisible_by}", e.Value("cluster.num_nodes"))
	e, _ = table().Apply([]frameworkconfig.Override{{Key: "cluster.num_nodes", Value: "${policy.max_total_sequence_length}"}})
	n, ok := e.Int("cluster.num_nodes")
	assert.True(t, ok)
	assert.Equal(t, 512, n)
}

func TestIntReadsWholeNumbersOnly(t *testing.T) {
	e, _ := table().Apply([]frameworkconfig.Override{
		{Prefix: "+", Key: "a", Value: "8"}, {Prefix: "+", Key: "b", Value: "8.5"},
		{Prefix: "+", Key: "c", Value: "'12'"}, {Prefix: "+", Key: "d", Value: "true"}, {Prefix: "+", Key: "e", Value: "'x'"},
	})
	for key, want := range map[string]struct {
		n  int
		ok bool
	}{"a": {8, true}, "b": {8, false}, "c": {12, true}, "d": {0, false}, "e": {0, false}, "missing": {0, false}} {
		n, ok := e.Int(key)
		assert.Equal(t, want.n, n, key)
		assert.Equal(t, want.ok, ok, key)
	}
}

// The embedded tables: each names the file it was composed from, which Load checks.
func TestTheEmbeddedTables(t *testing.T) {
	sources := frameworkconfig.Sources("nemo-rl", "v0.5.0")
	assert.Contains(t, sources, "examples/configs/grpo_math_70B_megatron.yaml")
	assert.Len(t, sources, 9)
	assert.Equal(t, []string{"verl/trainer/config/_generated_ppo_trainer.yaml"}, frameworkconfig.Sources("verl", "v0.7.0"))
	assert.Empty(t, frameworkconfig.Sources("verl", "v0.5.0"))

	tb, err := frameworkconfig.Load("nemo-rl", "v0.5.0", "examples/configs/grpo_math_70B_megatron.yaml")
	require.NoError(t, err)
	assert.Equal(t, float64(8), tb.Keys["cluster.num_nodes"])
	assert.True(t, tb.Has("policy.megatron_cfg"))
	assert.False(t, tb.Has("policy.megatron"))
	assert.Equal(t, []string{"checkpointing", "cluster", "data", "env", "grpo", "logger", "loss_fn", "policy"}, tb.Sections())

	_, err = frameworkconfig.Load("nemo-rl", "v0.5.0", "other/grpo_math_70B_megatron.yaml")
	assert.EqualError(t, err, "data/nemo-rl-v0.5.0-grpo_math_70B_megatron.json holds examples/configs/grpo_math_70B_megatron.yaml, not other/grpo_math_70B_megatron.yaml")
	_, err = frameworkconfig.Load("nemo-rl", "v0.6.0", "examples/configs/grpo_math_70B_megatron.yaml")
	assert.EqualError(t, err, "no table for nemo-rl v0.6.0 examples/configs/grpo_math_70B_megatron.yaml")
}
