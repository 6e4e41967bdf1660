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

	"gke-rl/workloads"
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
			keys := slices.Sorted(maps.Keys(known))
			errs.Add(path, "unknown key;%s %s takes %s", didYouMean(prefix, k, keys), prefix, strings.Join(keys, ", "))
			continue
		}
		if err := decodeValue(fields[k], v.FieldByIndex(i)); err != nil {
			errs.Add(path, "%s %v%s", quote(rawText(fields[k])), err, allowedSuffix(path))
		}
	}
}

// numberKeys say what a numeric key allows, for a value that is no number at all (`gpu.nodes=two`):
// the ranges themselves are checked by validate, which says them again on a number out of range.
var numberKeys = map[string]string{
	"gpu.nodes":                 fmt.Sprintf("a whole number of nodes from 1 to %d", MaxGPUNodes),
	"gpu.minNodes":              "a whole number from 0 to gpu.nodes",
	"gpu.maxNodes":              fmt.Sprintf("a whole number from gpu.nodes to %d", MaxGPUNodes),
	"job.maxSteps":              "a whole number of steps, 1 or more",
	"job.epochs":                "a whole number of epochs, 1 or more",
	"job.promptsPerStep":        "a whole number of prompts, 1 or more",
	"job.generationsPerPrompt":  "a whole number, 2 or more",
	"job.checkpointPeriod":      "a whole number of steps, 1 or more",
	"job.keepCheckpoints":       "a whole number of checkpoints, 1 or more",
	"job.backoffLimit":          fmt.Sprintf("a whole number of retries from 0 to %d", MaxBackoffLimit),
	"job.activeDeadlineSeconds": fmt.Sprintf("0 (no deadline) or a whole number of seconds from %d", MinActiveDeadlineSeconds),
	"job.priority":              "a whole number (higher runs first)",
	"job.nodes":                 "a whole number of nodes, 1 to gpu.maxNodes",
}

// allowedSuffix is "; allowed: ..." for a key whose allowed values the program can say, else "".
// An experiment's key (jobs.a.maxSteps) allows what job's does.
func allowedSuffix(path string) string {
	key := path
	if rest, ok := strings.CutPrefix(path, KeyJobs+"."); ok {
		if _, field, ok := strings.Cut(rest, "."); ok {
			key = "job." + field
		}
	}
	for _, k := range workloads.Knobs {
		if k.Key == key {
			return "; allowed: " + k.Allowed
		}
	}
	if allowed, ok := numberKeys[key]; ok {
		return "; allowed: " + allowed
	}
	return ""
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
	case *ModelShape:
		shape, err := decodeModelShape(raw)
		if err != nil {
			return err
		}
		field.Set(reflect.ValueOf(shape))
	default:
		return fmt.Errorf("has an unsupported type %s", field.Type())
	}
	return nil
}

// decodeModelShape decodes job.modelShape: an object of its three whole numbers, each required
// (a shape is read from one config.json; half of one is a mistake).
func decodeModelShape(raw json.RawMessage) (*ModelShape, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("is not an object; set each field with `pulumi config set --path job.modelShape.hiddenSize <hidden_size>` (numHiddenLayers, vocabSize the same way)")
	}
	shape := &ModelShape{}
	targets := map[string]*int{"hiddenSize": &shape.HiddenSize, "numHiddenLayers": &shape.NumHiddenLayers, "vocabSize": &shape.VocabSize}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		target, ok := targets[name]
		if !ok {
			return nil, fmt.Errorf("has an unknown field %s; allowed: hiddenSize, numHiddenLayers, vocabSize (config.json's hidden_size, num_hidden_layers, vocab_size)", quote(name))
		}
		n, err := decodeInt(fields[name])
		if err != nil {
			return nil, fmt.Errorf("field %s %w", name, err)
		}
		*target = n
	}
	for _, name := range []string{"hiddenSize", "numHiddenLayers", "vocabSize"} {
		if _, ok := fields[name]; !ok {
			return nil, fmt.Errorf("lacks %s; allowed: all three of hiddenSize, numHiddenLayers, vocabSize, from the model's config.json", name)
		}
	}
	return shape, nil
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

// decodeJobs decodes `jobs`, each entry over `job` (mergeJob), in name order.
func decodeJobs(raw string, base rawJob, errs *Errors) []namedJobEntry {
	var entries map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		errs.Add(KeyJobs, "%s is not an object: set an experiment's keys with `pulumi config set --path jobs.<name>.<key> <value>`", quote(raw))
		return nil
	}
	if len(entries) == 0 {
		errs.Add(KeyJobs, "is empty; allowed: one entry per experiment (`pulumi config set --path jobs.<name>.model <model>`), or remove jobs (`pulumi config rm jobs`) to train job alone")
		return nil
	}
	var out []namedJobEntry
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		key := KeyJobs + "." + name
		e := namedJobEntry{name: name}
		if string(entries[name]) == "null" {
			entries[name] = json.RawMessage("{}")
		}
		decodeObject(key, string(entries[name]), &e.rawJobEntry, errs)
		if e.Name != nil {
			errs.Add(key+".name", "an experiment of jobs is named by its key (%s); remove the name (`pulumi config rm --path %s.name`)", quote(name), key)
		}
		e.own = map[string]bool{}
		for _, k := range setKeys(reflect.ValueOf(e.rawJob)) {
			e.own["job."+k] = true
		}
		mergeJob(&e.rawJob, base)
		out = append(out, e)
	}
	return out
}

// mergeJob fills what an entry of `jobs` does not set from `job`: a key it sets wins, and its
// revisions are added to job's (keyed by repository, a pin stays with its repository). job.name
// is `job`'s own and is not taken.
func mergeJob(entry *rawJob, base rawJob) {
	base.Name = nil
	revisions := maps.Clone(base.Revisions)
	if revisions != nil || entry.Revisions != nil {
		if revisions == nil {
			revisions = map[string]string{}
		}
		maps.Copy(revisions, entry.Revisions)
	}
	fillUnset(reflect.ValueOf(entry).Elem(), reflect.ValueOf(base))
	entry.Revisions = revisions
}

// fillUnset sets every nil field of dst (pointers, slices, maps, and those of embedded structs)
// to src's.
func fillUnset(dst, src reflect.Value) {
	for i := 0; i < dst.NumField(); i++ {
		d, s := dst.Field(i), src.Field(i)
		switch d.Kind() {
		case reflect.Struct:
			fillUnset(d, s)
		case reflect.Pointer, reflect.Slice, reflect.Map:
			if d.IsNil() {
				d.Set(s)
			}
		}
	}
}

// setKeys are the json keys of a raw config struct's fields that are set (not nil), those of
// embedded structs included.
func setKeys(v reflect.Value) []string {
	var keys []string
	for i := 0; i < v.NumField(); i++ {
		f, field := v.Field(i), v.Type().Field(i)
		switch {
		case field.Anonymous && f.Kind() == reflect.Struct:
			keys = append(keys, setKeys(f)...)
		case (f.Kind() == reflect.Pointer || f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && !f.IsNil():
			keys = append(keys, strings.Split(field.Tag.Get("json"), ",")[0])
		}
	}
	return keys
}
