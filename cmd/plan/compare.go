package plan

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gke-rl/infra/offline"
	"gke-rl/internal/jsonvalue"
	"gke-rl/internal/lifecycle"
	"gke-rl/internal/recorder"
	"gke-rl/internal/termtext"
)

// ChangeKind is what `pulumi up` would do to a resource, as far as the plans can tell.
type ChangeKind string

// The kinds of change, by the symbol the report prints.
const (
	Created  ChangeKind = "+"
	Deleted  ChangeKind = "-"
	Updated  ChangeKind = "~"
	Replaced ChangeKind = "+-"
)

// Change is one resource that differs between an earlier plan and this one.
type Change struct {
	Kind      ChangeKind
	URN, Type string
	Name      string
	// Fields are the changed input paths.
	Fields []string
	// Effect says what the change does to a running run, when it does something.
	Effect      string
	StopsTheRun bool
	// NewStorage is set when the storage that holds the checkpoints is replaced by an empty one.
	NewStorage bool
	// Unknown is set for a Kubernetes object of an earlier plan written before plans carried
	// digests: whether it changes cannot be told.
	Unknown bool
}

// EarlierPlan is the part of a `plan --json` document that Compare reads.
type EarlierPlan struct {
	Stack string `json:"stack"`
	// Outputs are the stack outputs the plan showed (checkpointDir names the experiment's
	// directory in every version's plan).
	Outputs   map[string]any `json:"outputs"`
	Resources []struct {
		URN    string         `json:"urn"`
		Type   string         `json:"type"`
		Name   string         `json:"name"`
		Inputs map[string]any `json:"inputs"`
	} `json:"resources"`
	// Settings are each experiment's framework values that a config key set (plans of this
	// version on; absent from earlier ones, which then compare without them).
	Settings map[string]map[string]jsonSetting `json:"settings"`
	// Costs are the bounds the plan printed (plans of this version on).
	Costs costBounds `json:"costs"`
}

// LoadEarlierPlan reads a `plan --json` document written by this or an earlier version.
func LoadEarlierPlan(path string) (*EarlierPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p EarlierPlan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: not a plan --json document: %w", path, err)
	}
	if p.Stack == "" || len(p.Resources) == 0 {
		return nil, fmt.Errorf("%s: not a plan --json document: no stack or no resources", path)
	}
	// The file may come from anyone (a pull request's artifact): the names it brings reach the
	// terminal without their control characters.
	p.Stack = termtext.Clean(p.Stack)
	for i := range p.Resources {
		r := &p.Resources[i]
		r.URN, r.Type, r.Name = termtext.Clean(r.URN), termtext.Clean(r.Type), termtext.Clean(r.Name)
	}
	for name, v := range p.Outputs {
		p.Outputs[name] = jsonvalue.MapStrings(v, termtext.Clean)
	}
	settings := map[string]map[string]jsonSetting{}
	for x, m := range p.Settings {
		clean := map[string]jsonSetting{}
		for k, v := range m {
			clean[termtext.Clean(k)] = jsonSetting{Value: termtext.Clean(v.Value), From: termtext.Clean(v.From)}
		}
		settings[termtext.Clean(x)] = clean
	}
	p.Settings = settings
	return &p, nil
}

// Compare lists what differs between an earlier plan (`plan --json`, from the version that
// deployed the stack) and this one, resource by resource, with what each change does to a
// running run. A resource that moved to a new URN with an alias to its old one is the same
// resource. A cloud resource whose changed input its provider cannot update (forceNew) is
// replaced; for the others `pulumi preview --diff` has the last word.
func Compare(before *EarlierPlan, after *offline.Result) []Change {
	old := map[string]int{}
	for i, r := range before.Resources {
		old[r.URN] = i
	}
	var changes []Change
	matched := map[string]bool{}
	for _, res := range after.Resources {
		i, ok := old[res.URN]
		for _, alias := range res.Options.Aliases {
			if !ok {
				i, ok = old[alias]
			}
		}
		if !ok {
			changes = append(changes, Change{Kind: Created, URN: res.URN, Type: res.Type, Name: res.Name})
			continue
		}
		prev := before.Resources[i]
		matched[prev.URN] = true
		now := currentInputs(res)
		if _, isObject := now["manifest"]; isObject && digestsOf(prev.Inputs) == nil {
			changes = append(changes, Change{Kind: Updated, URN: res.URN, Type: res.Type, Name: res.Name, Unknown: true})
			continue
		}
		fields := slices.DeleteFunc(changedFields(prev.Inputs, now), func(f string) bool {
			// An ignored field changes nothing on `pulumi up`.
			return slices.ContainsFunc(res.Options.IgnoreChanges, func(path string) bool { return matchesPath(f, path) })
		})
		if len(fields) == 0 {
			continue
		}
		c := Change{Kind: Updated, URN: res.URN, Type: res.Type, Name: res.Name, Fields: fields}
		describe(&c, res)
		changes = append(changes, c)
	}
	for _, r := range before.Resources {
		if matched[r.URN] {
			continue
		}
		c := Change{Kind: Deleted, URN: r.URN, Type: r.Type, Name: r.Name}
		if r.Type == lifecycle.RayJobType || r.Type == lifecycle.RayClusterType {
			c.Effect, c.StopsTheRun = "the running attempt stops", true
		}
		changes = append(changes, c)
	}
	return changes
}

// currentInputs are a resource's inputs as a decoded `plan --json` holds them: the same shapes
// as the earlier plan's (JSON numbers, maps of any).
func currentInputs(res *offline.Resource) map[string]any {
	var inputs any = recorder.PlainMap(res.Inputs)
	if m, ok := offline.ManifestOf(res); ok {
		inputs = map[string]any{"manifest": map[string]any{"digests": offline.Digests(m.Object)}}
	}
	var out map[string]any
	data, _ := json.Marshal(inputs)
	_ = json.Unmarshal(data, &out)
	return out
}

// changedFields are the input paths whose values differ: top-level inputs, one level into an
// object (`nodeConfig.diskSizeGb`), and for a Kubernetes object the fields its digests cover.
func changedFields(before, after map[string]any) []string {
	if _, ok := after["manifest"]; ok {
		return changedDigests(digestsOf(before), digestsOf(after))
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(union(before, after))) {
		b, a := before[key], after[key]
		if reflect.DeepEqual(b, a) {
			continue
		}
		bm, bok := b.(map[string]any)
		am, aok := a.(map[string]any)
		if !bok || !aok {
			out = append(out, key)
			continue
		}
		for _, sub := range slices.Sorted(maps.Keys(union(bm, am))) {
			if !reflect.DeepEqual(bm[sub], am[sub]) {
				out = append(out, key+"."+sub)
			}
		}
	}
	return out
}

// digestsOf are the digests of a Kubernetes object's inputs, nil for a plan without them.
func digestsOf(inputs map[string]any) map[string]any {
	m, _ := inputs["manifest"].(map[string]any)
	d, _ := m["digests"].(map[string]any)
	return d
}

// changedDigests lists the finest fields whose digests differ: a spec's fields rather than the
// whole spec, a list's items' fields rather than the whole list.
func changedDigests(before, after map[string]any) []string {
	all := union(before, after)
	var out []string
	for _, key := range slices.Sorted(maps.Keys(all)) {
		if before[key] == after[key] {
			continue
		}
		if parent, finer := parentOf(key); finer && before[parent] != nil && before[key] == nil && !strings.HasPrefix(key, "spec.") {
			continue // an earlier plan without this field's own digest: its parent says it
		}
		if hasFinerChange(before, after, key+".") || hasFinerChange(before, after, key+"[") {
			continue // its parts say more
		}
		out = append(out, key)
	}
	return out
}

// parentOf is the field a digest's field is part of ("metadata" of "metadata.name").
func parentOf(key string) (string, bool) {
	i := strings.IndexAny(key, ".[")
	if i < 0 {
		return "", false
	}
	return key[:i], true
}

// hasFinerChange reports whether a field under prefix changed.
func hasFinerChange(before, after map[string]any, prefix string) bool {
	for k := range union(before, after) {
		if strings.HasPrefix(k, prefix) && before[k] != after[k] {
			return true
		}
	}
	return false
}

// matchesPath reports whether a changed field is at or under a replaceOnChanges path, whose
// `[*]` stands for any index.
func matchesPath(field, path string) bool {
	pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(path), `\[\*\]`, `\[\d+\]`) + `($|\.|\[)`
	return regexp.MustCompile(pattern).MatchString(field)
}

func union(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, b)
	return out
}

// forceNewJSON lists, for each cloud resource type the program creates, the top-level arguments
// whose change makes the provider replace the resource (ForceNew), read from the pinned provider's
// schemas: terraform-provider-google-beta at 6a9e0f0b (pulumi-gcp v8.41.1), the file of each type
// named in it; IAM members from tpgiamresource/resource_iam_member.go. Arguments whose schema a
// function builds are listed for a node pool's nodeConfig (services/container/node_config.go,
// schemaNodeConfig, under "nodeConfig", by their paths), not for a cluster's: for those the
// report says update, and `pulumi preview --diff` has the last word.
//
//go:embed forcenew.json
var forceNewJSON []byte

// forceNew is forceNewJSON by type.
var forceNew = func() map[string][]string {
	var doc struct {
		Resources map[string]struct {
			ForceNew   []string `json:"forceNew"`
			NodeConfig struct {
				ForceNew []string `json:"forceNew"`
			} `json:"nodeConfig"`
		} `json:"resources"`
	}
	out := map[string][]string{}
	if err := json.Unmarshal(forceNewJSON, &doc); err != nil {
		return out // embedded: TestForceNewCoversEveryCloudResourceType fails on an empty table
	}
	for typ, r := range doc.Resources {
		out[typ] = append(r.ForceNew, r.NodeConfig.ForceNew...)
	}
	return out
}()

// HasForceNewTable reports whether forcenew.json lists a cloud resource type.
func HasForceNewTable(typ string) bool {
	_, ok := forceNew[typ]
	return ok
}

// replacedBy are the changed fields of a cloud resource that its provider replaces it for.
func replacedBy(typ string, fields []string) []string {
	var out []string
	for _, f := range fields {
		top, _, _ := strings.Cut(f, ".")
		if slices.ContainsFunc(forceNew[typ], func(arg string) bool { return arg == top || arg == f || strings.HasPrefix(f, arg+".") }) {
			out = append(out, f)
		}
	}
	return out
}

// describe says what an update does, for the resources whose change touches a running run.
func describe(c *Change, res *offline.Resource) {
	replaced := false
	for _, path := range res.Options.ReplaceOnChanges {
		replaced = replaced || slices.ContainsFunc(c.Fields, func(f string) bool { return matchesPath(f, path) })
	}
	if fixed := replacedBy(res.Type, c.Fields); len(fixed) > 0 {
		c.Kind = Replaced
		switch res.Type {
		case lifecycle.LustreType:
			c.Effect = "a new, empty Lustre instance (" + strings.Join(fixed, ", ") + " is fixed at creation): the checkpoints stay in the old one, which storage.protect keeps from deletion; the run starts from step 0"
			c.StopsTheRun, c.NewStorage = true, true
		case "gcp:storage/bucket:Bucket":
			c.Effect = "a new, empty bucket (" + strings.Join(fixed, ", ") + " is fixed at creation): the run starts from step 0; a protected bucket is kept, an unprotected one is deleted with its objects"
			c.StopsTheRun, c.NewStorage = true, true
		case lifecycle.ClusterType:
			c.Effect = "a new cluster (" + strings.Join(fixed, ", ") + " is fixed at creation): every node, the Ray cluster and the run go with the old one"
			c.StopsTheRun = true
		case lifecycle.NodePoolType:
			// The program's pools are deleted first (lifecycle.DeletedFirst): the new one takes
			// the old one's name.
			c.Effect = "a new node pool (" + strings.Join(fixed, ", ") + " is fixed at creation), the old one deleted first: its nodes, and a run on them, go with it; the run retries from its newest checkpoint on the new nodes"
			if driver, ok := res.Input("nodeConfig.guestAccelerators.0.gpuDriverInstallationConfig.gpuDriverVersion"); ok && slices.Contains(fixed, "nodeConfig.guestAccelerators") {
				// The earlier plan holds a digest of the accelerators: their type, count or
				// driver changed, and the driver is the one a release moves (gpu.driverVersion).
				c.Effect += fmt.Sprintf("; the new nodes get GKE's %v NVIDIA driver (gpu.driverVersion)", driver)
			}
			c.StopsTheRun = true
		default:
			c.Effect = "replaced: " + strings.Join(fixed, ", ") + " is fixed at creation"
		}
		return
	}
	switch {
	case res.Type == lifecycle.RayJobType && replaced:
		c.Kind, c.StopsTheRun = Replaced, true
		c.Effect = "the running attempt stops; the new RayJob resumes from the newest checkpoint (steps after it are done again)"
	case res.Type == lifecycle.RayClusterType && replaced:
		c.Kind, c.StopsTheRun = Replaced, true
		c.Effect = "the long-lived Ray cluster is deleted and created again; the RayJob is replaced with it"
	case replaced:
		c.Kind = Replaced
	case strings.HasPrefix(res.Type, "kubernetes:") && slices.ContainsFunc(c.Fields, func(f string) bool { return f == "metadata.name" || f == "metadata.namespace" }):
		// pulumi-kubernetes cannot rename or move an object: it creates the new one and deletes
		// the old.
		c.Kind = Replaced
		if res.Type == lifecycle.RayJobType || res.Type == lifecycle.RayClusterType {
			c.Effect, c.StopsTheRun = "the running attempt stops; the new one starts where the checkpoint directory says", true
		}
	case strings.HasPrefix(res.Type, "kubernetes:") && slices.Contains(c.Fields, "metadata"):
		// A plan of an earlier version carries one digest of the whole metadata.
		c.Effect = "replaced if its name or namespace changed (each stack has its own namespace since this version: docs/operations.md, Updates); the earlier plan does not say which part of metadata changed"
	case res.Type == lifecycle.JobType && slices.Contains(c.Fields, "spec.template"):
		// A Job's template is immutable: pulumi-kubernetes replaces the Job.
		c.Kind = Replaced
		c.Effect = "the Job runs again"
		if strings.HasSuffix(res.Name, "data-prep") {
			c.Effect += ", skipping the downloads and conversions it finished before"
		}
	case res.Type == lifecycle.NodePoolType && slices.ContainsFunc(c.Fields, func(f string) bool { return strings.HasPrefix(f, "nodeConfig.") }):
		c.Effect = "GKE re-creates the nodes one at a time when the provider updates this in place (`pulumi preview --diff` says whether it replaces the pool instead)"
		if _, gpu := res.Input("nodeConfig.guestAccelerators"); gpu {
			c.Effect += "; each GPU node's re-creation fails the running attempt, retried from the newest checkpoint"
			c.StopsTheRun = true
		}
	case res.Type == lifecycle.LustreType || res.Type == "gcp:storage/bucket:Bucket":
		c.Effect = "the storage: `pulumi preview --diff` says whether this updates it or replaces it (a replacement loses its data; protect refuses it)"
	}
}

// NamespaceShift says that an update moves the stack's workload namespace (this version's
// one-to-one mapping moves every cluster name that does not start with gke-rl), and what that
// does, or nothing when it stays or the earlier plan does not say it.
func NamespaceShift(before *EarlierPlan, after *offline.Result) []string {
	was, _ := before.Outputs["namespace"].(string)
	now, _ := after.Outputs["namespace"].(string)
	if was == "" || now == "" || was == now {
		return nil
	}
	return []string{fmt.Sprintf("The workload namespace moves from %s to %s: Kubernetes cannot move an object, so every one in it is created in %s and deleted from %s (each is listed above as replaced), the bucket's and the secrets' grants go to the new namespace's principals, a running run stops and resumes from its newest checkpoint, and the volume, the bucket and the checkpoints stay where they are. Update between runs, or right after a checkpoint.", was, now, now, was)}
}

// WriteComparison prints the changes, then notes on them (what NamespaceShift and CostShift say:
// the namespace's move, how the most a run or the queue can cost moved), what they do to the experiment (exp, nil when the stack runs
// nothing) or to the queue's experiments (q, nil without jobs), and a closing line on what runs.
func WriteComparison(out io.Writer, file string, changes []Change, notes []string, exp *ExperimentShift, q *QueueShift) error {
	w := &errWriter{w: out}
	fmt.Fprintf(w, "Changes against %s (inputs compared; `pulumi preview --diff` has the provider's word):\n", file)
	stops, unknown, jobDeleted, jobCreated, newStorage := false, 0, false, false, false
	for _, c := range changes {
		newStorage = newStorage || c.NewStorage
	}
	for _, c := range changes {
		jobDeleted = jobDeleted || (c.Kind == Deleted && c.Type == lifecycle.RayJobType)
		jobCreated = jobCreated || (c.Kind == Created && c.Type == lifecycle.RayJobType)
		switch {
		case c.Type == lifecycle.RayJobType && c.Kind == Replaced && q != nil && q.Running > 0 && slices.Contains(c.Fields, "metadata.name"):
			// A queued RayJob is named by its experiment's run: another name is another experiment.
			c.Effect = "a running experiment stops; the new RayJob is a new experiment, which waits in the queue and starts from step 0 when admitted"
		case c.Type == lifecycle.RayJobType && c.Kind == Replaced && q != nil && q.Running > 0:
			c.Effect = "a running experiment stops; the new RayJob goes back in the queue and resumes from its newest checkpoint when admitted"
		case c.Type == lifecycle.RayJobType && c.Kind == Replaced && exp != nil && c.Effect != "":
			c.Effect = "the running attempt stops; " + exp.jobEffect(newStorage)
		}
		if c.Unknown {
			unknown++
			continue
		}
		line := fmt.Sprintf("  %-2s %s %s", c.Kind, c.Type, c.Name)
		if len(c.Fields) > 0 {
			line += ": " + strings.Join(c.Fields, ", ")
		}
		if c.Effect != "" {
			line += "\n       " + c.Effect
		}
		fmt.Fprintln(w, line)
		stops = stops || c.StopsTheRun
	}
	if unknown > 0 {
		fmt.Fprintf(w, "  ?  %d Kubernetes objects not compared: the earlier plan was written before plans carried digests of them\n", unknown)
	}
	for _, line := range notes {
		fmt.Fprintln(w, line)
	}
	if exp != nil && len(changes) > 0 {
		fmt.Fprintln(w, exp.Line(newStorage))
	}
	switch {
	case len(changes) == 0:
		fmt.Fprintln(w, "  none: `pulumi up` with this version proposes no change to the stack's inputs")
	case unknown > 0 && !stops:
		fmt.Fprintln(w, "Whether a running run stops cannot be told from that plan: compare against one written by this version, or read `pulumi preview --diff`.")
	case jobDeleted && !jobCreated && (q == nil || q.Running == 0):
		fmt.Fprintln(w, "A running run stops for good: the stack no longer has a RayJob.")
	case q != nil && q.SingleLeft != "":
		fmt.Fprintf(w, "The stack's run until now stops for good: no experiment of jobs continues it (its checkpoints stay in %s); the queue's experiments start as it admits them.\n", q.SingleLeft)
	case q != nil && stops:
		fmt.Fprintln(w, "Each experiment whose RayJob is deleted stops; one whose RayJob is replaced stops, goes back in the queue and, when admitted, resumes from its newest checkpoint (a new experiment starts from step 0); the others keep running.")
	case newStorage:
		fmt.Fprintln(w, "A running run stops, and the next one starts from step 0: the storage that holds the checkpoints is new and empty (the old checkpoints stay where they were only if the old storage is kept).")
	case exp != nil && exp.New():
		fmt.Fprintln(w, "A running run stops, and the new experiment starts in its own directory: the earlier experiment's checkpoints stay, and it resumes if its job.name comes back.")
	case exp != nil && exp.ShardsLost:
		fmt.Fprintln(w, "A running run stops, and its retries fail: verl cannot load the experiment's checkpoints on the new GPU count.")
	case stops:
		fmt.Fprintln(w, "A running run stops and resumes from its newest checkpoint: update between runs, or after a checkpoint.")
	default:
		fmt.Fprintln(w, "A running run keeps running.")
	}
	return w.err
}
