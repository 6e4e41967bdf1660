package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/recorder"
)

// jsonResource is one resource in `plan --json`.
type jsonResource struct {
	URN          string          `json:"urn"`
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Parent       string          `json:"parent"`
	Dependencies []string        `json:"dependencies"`
	Inputs       map[string]any  `json:"inputs"`
	Options      offline.Options `json:"options"`
}

// manifestRef stands for a Kubernetes object's inputs in the JSON plan: the object itself is in
// the manifests (`--manifests`, and the golden manifests), so that one pod change shows once.
type manifestRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	File      string `json:"file"`
	// offline.Digests fingerprint the object's fields (offline.Digests), so that `plan --compare` tells which
	// of them a newer plan changes without the manifests.
	Digests map[string]string `json:"digests"`
}

// WriteJSON prints the plan as `{"stack", "resources", "outputs", "costs"}`. A Kubernetes object's
// inputs are a reference to its manifest.
func WriteJSON(w io.Writer, r *offline.Result) error {
	doc := struct {
		Stack     string         `json:"stack"`
		Resources []jsonResource `json:"resources"`
		Outputs   map[string]any `json:"outputs"`
		Costs     jsonCosts      `json:"costs"`
		// Placeholders and Warnings are what the text plan prints before its tree.
		Placeholders []jsonFinding `json:"placeholders"`
		Warnings     []jsonFinding `json:"warnings"`
		// Settings are what each experiment trains with that a config key sets: `--compare`
		// names the values an update changes.
		Settings map[string]map[string]jsonSetting `json:"settings"`
	}{Stack: r.Stack, Resources: []jsonResource{}, Outputs: r.Outputs, Costs: costsJSON(r.Costs, r.Blueprint.Run, r.Blueprint.Deadline),
		Placeholders: findingsJSON(r.Placeholders), Warnings: findingsJSON(r.Warnings), Settings: settingsJSON(r)}
	for _, res := range r.Resources {
		opts := res.Options
		if opts.IgnoreChanges == nil {
			opts.IgnoreChanges = []string{}
		}
		deps := res.Dependencies
		if deps == nil {
			deps = []string{}
		}
		inputs := recorder.PlainMap(res.Inputs)
		if m, ok := offline.ManifestOf(res); ok {
			meta, _ := m.Object["metadata"].(map[string]any)
			ns, _ := meta["namespace"].(string)
			name, _ := meta["name"].(string)
			kind, _ := m.Object["kind"].(string)
			inputs = map[string]any{"manifest": manifestRef{Kind: kind, Namespace: ns, Name: name, File: m.File, Digests: offline.Digests(m.Object)}}
		}
		doc.Resources = append(doc.Resources, jsonResource{
			URN: res.URN, Type: res.Type, Name: res.Name, Parent: res.Parent,
			Dependencies: deps, Inputs: inputs, Options: opts,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// jsonSetting is one framework value an experiment trains with, and the config key that set it.
type jsonSetting struct {
	Value string `json:"value"`
	From  string `json:"from"`
}

// settingsJSON are the settings of each experiment of the plan, by experiment name (the single
// run's is its job.name), those a config key sets: the values the program fixes (paths, names)
// follow the experiment and say nothing of what it trains.
func settingsJSON(r *offline.Result) map[string]map[string]jsonSetting {
	out := map[string]map[string]jsonSetting{}
	if r.Blueprint == nil {
		return out
	}
	for _, x := range r.Blueprint.Run.Experiments {
		if x.Stopped {
			continue
		}
		m := map[string]jsonSetting{}
		for _, st := range x.Settings {
			m[st.Key] = jsonSetting{Value: st.Value, From: st.From}
		}
		out[x.Name] = m
	}
	if name, ok := r.Outputs["experiment"].(string); ok && len(r.Blueprint.Run.Settings) > 0 {
		m := map[string]jsonSetting{}
		for _, o := range r.Blueprint.Run.Settings {
			if o.Origin != "framework" {
				m[o.Key] = jsonSetting{Value: o.Value, From: o.Origin}
			}
		}
		out[name] = m
	}
	return out
}

// jsonFinding is a placeholder or a warning: the key and what to do about it.
type jsonFinding struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

func findingsJSON(list infra.Errors) []jsonFinding {
	out := []jsonFinding{}
	for _, f := range list {
		out = append(out, jsonFinding{Key: f.Key, Message: f.Message})
	}
	return out
}

// summaryKeys are the inputs the tree shows for a resource, in this order, when present.
var summaryKeys = []string{
	"kind", "metadata.name", "name", "secretId", "location", "region", "ipCidrRange", "mtu", "networkProfile",
	"sourceRanges", "nodeConfig.machineType", "nodeConfig.guestAccelerators.0.gpuDriverInstallationConfig.gpuDriverVersion", "nodeCount", "capacityGib", "perUnitStorageThroughput",
	"filesystem", "gkeSupportEnabled", "purpose", "prefixLength", "role", "member",
}

// errWriter keeps the first write error, so that a long run of prints checks it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// WriteTree prints the plan as an indented tree of resources and a closing count.
func WriteTree(out io.Writer, r *offline.Result) error {
	w := &errWriter{w: out}
	children := map[string][]*offline.Resource{}
	var roots []*offline.Resource
	known := map[string]bool{}
	for _, res := range r.Resources {
		known[res.URN] = true
	}
	for _, res := range r.Resources {
		if res.Parent == "" || !known[res.Parent] {
			roots = append(roots, res)
		} else {
			children[res.Parent] = append(children[res.Parent], res)
		}
	}
	fmt.Fprintf(w, "Plan for stack %s/%s (offline; placeholders stand for values the cloud computes)\n", r.Project, r.Stack)
	var walk func(list []*offline.Resource, indent string)
	walk = func(list []*offline.Resource, indent string) {
		for i, res := range list {
			branch, next := "├─ ", "│  "
			if i == len(list)-1 {
				branch, next = "└─ ", "   "
			}
			line := fmt.Sprintf("%s%s%s %s", indent, branch, res.Type, res.Name)
			if s := summary(res); s != "" {
				line += "  " + s
			}
			fmt.Fprintln(w, line)
			walk(children[res.URN], indent+next)
		}
	}
	walk(roots, "")
	writeOutputs(w, r.Outputs)
	writeQueue(w, r)
	writeRunSettings(w, r)
	writeCosts(w, r.Costs, r.Blueprint.Run, r.Blueprint.Deadline)
	custom, components := 0, 0
	for _, res := range r.Resources {
		if res.Custom {
			custom++
		} else {
			components++
		}
	}
	fmt.Fprintf(w, "%d resources to create (%d cloud and Kubernetes resources, %d components)\n", len(r.Resources), custom, components)
	fmt.Fprintln(w, closingSummary(r))
	return w.err
}

// closingSummary is the plan's last lines: what the user must still act on, which printed before
// the tree and has scrolled away (the placeholders and warnings, counted, the first of each in
// full), and what the stack costs.
func closingSummary(r *offline.Result) string {
	count := func(list infra.Errors, one, many, after string) string {
		switch len(list) {
		case 0:
			return "no " + one
		case 1:
			return fmt.Sprintf("1 %s%s: %s: %s", one, after, list[0].Key, list[0].Message)
		}
		return fmt.Sprintf("%d %s%s; the first: %s: %s", len(list), many, after, list[0].Key, list[0].Message)
	}
	return strings.Join([]string{
		"Summary:",
		"  " + count(r.Placeholders, "placeholder", "placeholders", " (`pulumi preview` and `pulumi up` refuse a stack with one)"),
		"  " + count(r.Warnings, "warning", "warnings", ""),
		costLine(r),
	}, "\n")
}

// costLine is the summary's line of what the stack costs, and the most its run or queue can.
func costLine(r *offline.Result) string {
	line := fmt.Sprintf("  per hour while training: %s; per month while idle: %s", r.Costs.TrainingPerHour, r.Costs.IdlePerMonth)
	if most, ok := MostARunCosts(r.Costs, r.Blueprint.Deadline); ok {
		line += "; at most a run: " + most
	}
	if run := r.Blueprint.Run; run.Queue != nil {
		line += "; at most the queue: " + queueMostText(r.Costs, run.Experiments)
	}
	return line
}

// writeOutputs prints the stack outputs that `pulumi up` would set, sorted by name, one a line:
// the commands a user runs next, the checkpoint estimate, the deadline.
func writeOutputs(w io.Writer, outputs map[string]any) {
	if len(outputs) == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(outputs))
	width := 0
	for _, name := range names {
		width = max(width, len(name))
	}
	fmt.Fprintln(w, "Outputs (`pulumi stack output <name>` after `pulumi up`):")
	for _, name := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, name, outputText(outputs[name]))
	}
}

// outputText is an output's value on one line: a list as its items joined by "; ".
func outputText(v any) string {
	switch list := v.(type) {
	case []any:
		items := make([]string, len(list))
		for i, item := range list {
			items[i] = outputText(item)
		}
		return strings.Join(items, "; ")
	case []string:
		return strings.Join(list, "; ")
	case map[string]string:
		items := make([]string, 0, len(list))
		for _, key := range slices.Sorted(maps.Keys(list)) {
			items = append(items, key+"="+list[key])
		}
		return strings.Join(items, "; ")
	case map[string]any:
		// An output of several parts (`experiments`): each as name=value, sorted, a nested
		// one in braces.
		items := make([]string, 0, len(list))
		for _, key := range slices.Sorted(maps.Keys(list)) {
			text := outputText(list[key])
			if _, nested := list[key].(map[string]any); nested {
				text = "{" + text + "}"
			}
			items = append(items, key+"="+text)
		}
		return strings.Join(items, "; ")
	}
	return fmt.Sprint(v)
}

func summary(res *offline.Resource) string {
	inputs := recorder.PlainMap(res.Inputs)
	var parts []string
	for _, key := range summaryKeys {
		v, ok := offline.Lookup(inputs, key)
		if !ok || v == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%s", key[strings.LastIndex(key, ".")+1:], compact(v)))
	}
	var flags []string
	if res.Options.Protect {
		flags = append(flags, "protected")
	}
	if res.Options.RetainOnDelete {
		flags = append(flags, "retained on delete")
	}
	if t := res.Options.CustomTimeouts; t != nil {
		flags = append(flags, "timeouts "+timeoutSummary(t))
	}
	if len(flags) > 0 {
		parts = append(parts, "["+strings.Join(flags, ", ")+"]")
	}
	return strings.Join(parts, " ")
}

func timeoutSummary(t *recorder.Timeouts) string {
	var parts []string
	for _, p := range []struct{ op, d string }{{"create", t.Create}, {"update", t.Update}, {"delete", t.Delete}} {
		if p.d != "" {
			parts = append(parts, p.op+" "+p.d)
		}
	}
	return strings.Join(parts, ", ")
}

func compact(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = compact(e)
		}
		return strings.Join(parts, ",")
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}
