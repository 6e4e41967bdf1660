// Command gen writes the framework configuration tables under ../data from a checkout of the
// framework's repository at its pinned tag: every key of the composed configuration with its
// default value, flattened to dotted paths. It composes NeMo RL recipes the way
// nemo_rl/utils/config.py load_config_with_inheritance does (`defaults:` parents first, the
// child merged over them, a null replacing a whole section).
//
//	go run ./workloads/frameworkconfig/gen verl v0.6.0 <verl checkout> verl/trainer/config/_generated_ppo_trainer.yaml
//	go run ./workloads/frameworkconfig/gen nemo-rl v0.5.0 <NeMo RL checkout> examples/configs/grpo_math_8B.yaml ...
//
// One run a release: each release's tables come from its own tree (v0.7.0's: `git archive v0.7.0
// verl/trainer/config`, `git archive v0.7.0 examples/configs`, the same files as v0.6.0's and
// v0.5.0's).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"gke-rl/workloads/frameworkconfig"
)

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: gen FRAMEWORK TAG CHECKOUT CONFIG.yaml...")
		os.Exit(2)
	}
	framework, tag, checkout := os.Args[1], os.Args[2], os.Args[3]
	for _, rel := range os.Args[4:] {
		composed, err := compose(filepath.Join(checkout, rel))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		table := frameworkconfig.Table{Framework: framework, Tag: tag, Source: rel, Keys: map[string]any{}}
		flatten("", composed, table.Keys)
		out, err := json.MarshalIndent(table, "", "  ")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		name := filepath.Join("workloads", "frameworkconfig", "data", framework+"-"+tag+"-"+strings.TrimSuffix(filepath.Base(rel), ".yaml")+".json")
		if err := os.WriteFile(name, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("wrote", name, len(table.Keys), "keys")
	}
}

// compose loads a YAML config and merges it over its `defaults:` parents.
func compose(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	parents, ok := cfg["defaults"]
	delete(cfg, "defaults")
	if !ok {
		return cfg, nil
	}
	var list []string
	switch p := parents.(type) {
	case string:
		list = []string{p}
	case []any:
		for _, e := range p {
			list = append(list, fmt.Sprint(e))
		}
	}
	base := map[string]any{}
	for _, parent := range list {
		pc, err := compose(filepath.Join(filepath.Dir(path), parent))
		if err != nil {
			return nil, err
		}
		merge(base, pc)
	}
	merge(base, cfg)
	return base, nil
}

// merge merges src over dst as OmegaConf.merge does for plain data.
func merge(dst, src map[string]any) {
	for k, v := range src {
		sm, sIsMap := v.(map[string]any)
		dm, dIsMap := dst[k].(map[string]any)
		if sIsMap && dIsMap {
			merge(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// flatten records every leaf by its dotted path; an empty section is a leaf.
func flatten(prefix string, v any, out map[string]any) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		out[prefix] = v
		return
	}
	for k, e := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		flatten(p, e, out)
	}
}
