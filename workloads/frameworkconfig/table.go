// Package frameworkconfig holds the configuration of each framework at its pinned tag, as tables
// generated from the framework's own files (see gen/): every key with its default. The program
// checks every override it emits or passes through against them, and evaluates the framework's
// startup checks on the effective values, so that a command the framework would reject fails the
// plan instead of the job.
package frameworkconfig

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

//go:embed data/*.json
var data embed.FS

// Table is one framework configuration: its keys, flattened to dotted paths, with their defaults.
type Table struct {
	Framework string `json:"framework"`
	Tag       string `json:"tag"`
	// Source is the file the table was composed from, in the framework's repository at Tag.
	Source string         `json:"source"`
	Keys   map[string]any `json:"keys"`
}

// Load returns the table of a framework's config file at a tag.
func Load(framework, tag, source string) (*Table, error) {
	name := fmt.Sprintf("data/%s-%s-%s.json", framework, tag, strings.TrimSuffix(path.Base(source), ".yaml"))
	b, err := data.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("no table for %s %s %s", framework, tag, source)
	}
	var t Table
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if t.Source != source {
		return nil, fmt.Errorf("%s holds %s, not %s", name, t.Source, source)
	}
	return &t, nil
}

// Sources lists the config files a framework has tables for at a tag.
func Sources(framework, tag string) []string {
	entries, _ := data.ReadDir("data")
	var out []string
	prefix := framework + "-" + tag + "-"
	for _, e := range entries {
		if t, err := readTable(e.Name()); err == nil && strings.HasPrefix(e.Name(), prefix) {
			out = append(out, t.Source)
		}
	}
	slices.Sort(out)
	return out
}

func readTable(name string) (*Table, error) {
	b, err := data.ReadFile("data/" + name)
	if err != nil {
		return nil, err
	}
	var t Table
	return &t, json.Unmarshal(b, &t)
}

// Has reports whether key is a key of the config: a value, or a section that holds values.
func (t *Table) Has(key string) bool {
	if _, ok := t.Keys[key]; ok {
		return true
	}
	for k := range t.Keys {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// Sections are the top-level sections of the config, sorted.
func (t *Table) Sections() []string {
	seen := map[string]bool{}
	for k := range t.Keys {
		top, _, _ := strings.Cut(k, ".")
		seen[top] = true
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
