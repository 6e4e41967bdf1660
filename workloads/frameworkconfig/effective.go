package frameworkconfig

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Override is one `key=value` given to the framework, with Hydra's prefix (`+` adds a key,
// `++` adds or sets, `~` deletes) and the stack config key it comes from.
type Override struct {
	Prefix, Key, Value string
	// Origin is the config key that produced it (`job.promptsPerStep`, `job.args[2]`), or
	// "framework" for a value the program fixes.
	Origin string
	// Why says why the program fixes the value, when no config key sets it.
	Why string
}

// ParseOverride splits `+key=value`.
func ParseOverride(arg, origin string) Override {
	kv, value, _ := strings.Cut(arg, "=")
	key := strings.TrimLeft(kv, "+~")
	return Override{Prefix: kv[:len(kv)-len(key)], Key: key, Value: value, Origin: origin}
}

// Problem is an override the framework would refuse, about the config key it came from.
type Problem struct {
	Origin, Message string
	// Origins are every config key the check's framework keys come from, Origin first: the
	// plan names the problem under the one the stack (or an experiment's entry) set itself.
	Origins []string
}

// Effective is a table with overrides applied in order; the last value of a key wins, as in
// Hydra 1.3 and NeMo RL's parse_hydra_overrides.
type Effective struct {
	Table *Table
	set   map[string]Override
}

// Apply checks each override against the table as the framework's struct-mode config does (a
// key must exist unless added with `+`/`++`; `+` must not add an existing one) and returns the
// effective config with every problem.
func (t *Table) Apply(overrides []Override) (*Effective, []Problem) {
	e := &Effective{Table: t, set: map[string]Override{}}
	var problems []Problem
	for _, o := range overrides {
		exists := t.Has(o.Key)
		switch {
		case o.Prefix == "" && !exists:
			problems = append(problems, Problem{Origin: o.Origin, Message: fmt.Sprintf("%s is not a key of %s %s's config (%s)", o.Key, t.Framework, t.Tag, t.Source)})
		case o.Prefix == "+" && exists:
			problems = append(problems, Problem{Origin: o.Origin, Message: fmt.Sprintf("+%s adds a key that %s %s's config already has; set it without the +", o.Key, t.Framework, t.Tag)})
		}
		e.set[o.Key] = o
	}
	return e, problems
}

// Value is a key's effective value: the last override, or the table's default, with OmegaConf's
// `${key}` and `${oc.select:key,default}` interpolations resolved, in an override's value too
// (Hydra passes `key=${other}` on as an interpolation).
func (e *Effective) Value(key string) any { return e.valueAt(key, 0) }

// maxInterpolationDepth bounds a chain of interpolations: one that refers back to itself, in a
// table or through an override, stays as written instead of recursing without end.
const maxInterpolationDepth = 8

// valueAt is Value for an interpolation depth links down a chain.
func (e *Effective) valueAt(key string, depth int) any {
	if o, ok := e.set[key]; ok {
		if o.Prefix == "~" {
			return nil
		}
		var v any
		if yaml.Unmarshal([]byte(o.Value), &v) != nil {
			return o.Value
		}
		return e.resolve(normalize(v), depth)
	}
	return e.resolve(e.Table.Keys[key], depth)
}

func (e *Effective) resolve(v any, depth int) any {
	s, ok := v.(string)
	if !ok || depth > maxInterpolationDepth || !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") {
		return v
	}
	inner := s[2 : len(s)-1]
	if rest, ok := strings.CutPrefix(inner, "oc.select:"); ok {
		key, def, _ := strings.Cut(rest, ",")
		if _, set := e.set[key]; set || e.Table.Keys[key] != nil {
			return e.valueAt(key, depth+1)
		}
		var d any
		if yaml.Unmarshal([]byte(def), &d) != nil {
			return def
		}
		return normalize(d)
	}
	if strings.ContainsAny(inner, ":{$") {
		return v // a resolver this table does not evaluate
	}
	return e.valueAt(inner, depth+1)
}

// normalize turns YAML's Python spellings into values: True, False, None.
func normalize(v any) any {
	if s, ok := v.(string); ok {
		switch s {
		case "True", "true":
			return true
		case "False", "false":
			return false
		case "None", "null":
			return nil
		}
	}
	return v
}

// Int is a key's effective value as an integer; ok is false when it is not one.
func (e *Effective) Int(key string) (int, bool) {
	switch v := e.Value(key).(type) {
	case float64:
		return int(v), v == float64(int(v))
	case int:
		return v, true
	case string:
		n, err := strconv.Atoi(v)
		return n, err == nil
	}
	return 0, false
}

// Bool is a key's effective value as a boolean (false when unset).
func (e *Effective) Bool(key string) bool {
	b, _ := e.Value(key).(bool)
	return b
}

// Keys are the effective config's keys, the table's and those the overrides added, sorted.
func (e *Effective) Keys() []string {
	keys := slices.Collect(maps.Keys(e.Table.Keys))
	for k, o := range e.set {
		if _, ok := e.Table.Keys[k]; !ok && o.Prefix != "~" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// IsSet reports whether a key has a non-null effective value.
func (e *Effective) IsSet(key string) bool { return e.Value(key) != nil }

// Origin is the config key that set a framework key last, or the table's source.
func (e *Effective) Origin(key string) string {
	if o, ok := e.set[key]; ok {
		return o.Origin
	}
	return ""
}
