package infra

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// decodeObject decodes one structured config value (the JSON that Pulumi stores for
// `pulumi config set --path gpu.nodes 8`) into target, a pointer to a struct whose fields carry
// `json` tags. Decoding is strict: a key that target does not declare is an error, and every
// problem is reported under its full config path (`gpu.nodes`), so that a typo never silently
// falls back to a default.
//
// Numbers and booleans are also accepted as strings ("8", "true"), because that is what
// `pulumi config set --path` stores unless `--type` is given.
func decodeObject(prefix, raw string, target any, errs *Errors) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &fields); err != nil {
		errs.Add(prefix, "%s is not an object: set its keys with `pulumi config set --path %s.<key> <value>`", quote(raw), prefix)
		return
	}
	v := reflect.ValueOf(target).Elem()
	known := map[string][]int{}
	collectFields(v.Type(), nil, known)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := prefix + "." + k
		i, ok := known[k]
		if !ok {
			errs.Add(path, "unknown key; %s takes %s", prefix, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
			continue
		}
		if err := decodeValue(fields[k], v.FieldByIndex(i)); err != nil {
			errs.Add(path, "%s %v", quote(rawText(fields[k])), err)
		}
	}
}

// collectFields maps each json tag of a struct to its field, the fields of embedded structs
// (workloads.Tuning inside job) at the same level.
func collectFields(t reflect.Type, prefix []int, known map[string][]int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		index := append(slices.Clone(prefix), i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, index, known)
			continue
		}
		if tag := strings.Split(f.Tag.Get("json"), ",")[0]; tag != "" && tag != "-" {
			known[tag] = index
		}
	}
}

// decodeValue decodes one JSON value into a pointer-to-scalar, a string-slice or a string-map
// field.
func decodeValue(raw json.RawMessage, field reflect.Value) error {
	if string(raw) == "null" {
		return nil
	}
	switch field.Interface().(type) {
	case *string:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			var n json.Number
			if json.Unmarshal(raw, &n) != nil {
				return fmt.Errorf("is not a string")
			}
			s = n.String()
		}
		field.Set(reflect.ValueOf(&s))
	case *int:
		n, err := decodeInt(raw)
		if err != nil {
			return err
		}
		field.Set(reflect.ValueOf(&n))
	case *float64:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return fmt.Errorf("is not a number")
			}
			n = json.Number(strings.TrimSpace(s))
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("is not a number")
		}
		field.Set(reflect.ValueOf(&f))
	case *bool:
		b, err := decodeBool(raw)
		if err != nil {
			return err
		}
		field.Set(reflect.ValueOf(&b))
	case []string:
		list, err := decodeStrings(raw)
		if err != nil {
			return err
		}
		field.Set(reflect.ValueOf(list))
	case map[string]string:
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("is not a map of names to strings; set one entry with `pulumi config set --path '<key>[\"<name>\"]' <value>`")
		}
		field.Set(reflect.ValueOf(m))
	default:
		return fmt.Errorf("has an unsupported type %s", field.Type())
	}
	return nil
}

func decodeInt(raw json.RawMessage) (int, error) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, fmt.Errorf("is not an integer")
		}
		n = json.Number(strings.TrimSpace(s))
	}
	i, err := strconv.Atoi(n.String())
	if err != nil {
		return 0, fmt.Errorf("is not an integer")
	}
	return i, nil
}

func decodeBool(raw json.RawMessage) (bool, error) {
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return b, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("is not a boolean (true or false)")
}

func decodeStrings(raw json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	// A list set as one string holding JSON (`pulumi config set cluster.authorizedNetworks '["a"]'`).
	var s string
	if json.Unmarshal(raw, &s) == nil && json.Unmarshal([]byte(s), &list) == nil {
		return list, nil
	}
	return nil, fmt.Errorf("is not a list of strings")
}

// quote renders a config value for an error message, short enough for one line.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strconv.Quote(s)
}

// rawText is a JSON value as the user typed it: a string without its JSON quotes.
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
