// Package recorder is an in-process Pulumi engine that records what a program registers: the
// Pulumi SDK's mock monitor, answering with the inputs plus deterministic placeholders where the
// cloud would compute a value. The offline planner and every component test run on it.
package recorder

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Placeholders that the recording engine returns where the cloud would compute a value. They
// are deterministic, so that plans and golden files are identical from run to run, and
// obviously fake (documentation address ranges, a made-up project number).
const (
	FakeProjectNumber = "123456789012"
	FakeEndpoint      = "203.0.113.10"
	FakeLustreIP      = "192.0.2.10"
	// CommandOutputPlaceholder stands for what a command prints when it runs.
	CommandOutputPlaceholder = "[printed when the command runs]"
)

// fakeProjectNumberInt is FakeProjectNumber as the number resources report.
const fakeProjectNumberInt = 123456789012

// FakeCACertificate is the base64 cluster CA that the engine returns for GKE clusters.
var FakeCACertificate = base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nOFFLINE-PLAN-PLACEHOLDER\n-----END CERTIFICATE-----\n"))

// Resource is one registered resource as the engine saw it.
type Resource struct {
	URN    string
	Type   string
	Name   string
	Parent string
	Custom bool
	ID     string
	// Dependencies are the URNs this resource waits for: explicit DependsOn and every resource
	// whose outputs feed its inputs.
	Dependencies []string
	Inputs       resource.PropertyMap
	Options      Options
}

// Options are the resource options that matter to a reviewer.
type Options struct {
	Protect        bool     `json:"protect"`
	RetainOnDelete bool     `json:"retainOnDelete"`
	IgnoreChanges  []string `json:"ignoreChanges"`
	DeletedWith    string   `json:"deletedWith"`
	Provider       string   `json:"provider"`
	// Aliases are the URNs the resource had before (same resource, other name).
	Aliases []string `json:"aliases,omitempty"`
	// CustomTimeouts are the resource's own create, update and delete timeouts.
	CustomTimeouts *Timeouts `json:"customTimeouts,omitempty"`
	// Import is the ID of an existing resource the stack adopts, if any.
	Import string `json:"import,omitempty"`
	// ReplaceOnChanges are the input paths whose change replaces the resource; with
	// DeleteBeforeReplace, the old one is deleted first.
	ReplaceOnChanges    []string `json:"replaceOnChanges,omitempty"`
	DeleteBeforeReplace bool     `json:"deleteBeforeReplace,omitempty"`
}

// Timeouts are custom timeouts as Go durations (`90m`); empty means the provider's default.
type Timeouts struct {
	Create string `json:"create,omitempty"`
	Update string `json:"update,omitempty"`
	Delete string `json:"delete,omitempty"`
}

// Recording is what one run of a program registered.
type Recording struct {
	// Resources are sorted by URN.
	Resources []*Resource
	// Exports are the stack outputs the program exported (ctx.Export).
	Exports map[string]pulumi.Input
}

// Find returns the resource with the given type and logical name, or nil.
func (r *Recording) Find(typ, name string) *Resource {
	for _, res := range r.Resources {
		if res.Type == typ && res.Name == name {
			return res
		}
	}
	return nil
}

// OfType returns the resources of a type, sorted by URN.
func (r *Recording) OfType(typ string) []*Resource {
	var out []*Resource
	for _, res := range r.Resources {
		if res.Type == typ {
			out = append(out, res)
		}
	}
	return out
}

// ByURN returns the resource with the given URN, or nil.
func (r *Recording) ByURN(urn string) *Resource {
	for _, res := range r.Resources {
		if res.URN == urn {
			return res
		}
	}
	return nil
}

// DependencyClosure returns every URN that res waits for, directly or through other resources.
func (r *Recording) DependencyClosure(res *Resource) map[string]bool {
	seen := map[string]bool{}
	var visit func(urn string)
	visit = func(urn string) {
		if seen[urn] {
			return
		}
		seen[urn] = true
		if dep := r.ByURN(urn); dep != nil {
			for _, d := range dep.Dependencies {
				visit(d)
			}
		}
	}
	for _, d := range res.Dependencies {
		visit(d)
	}
	return seen
}

// Config is the stack configuration a run sees, as the engine passes it to a program.
type Config struct {
	Project, Stack string
	// Values maps full keys (`gke-rl:gpu`) to their values; structured keys hold JSON.
	Values map[string]string
	// SecretKeys are the keys whose values are secrets.
	SecretKeys []string
}

// NewContext is a Pulumi context for cfg whose registrations rec records, as in a preview.
func (rec *Recorder) NewContext(cfg Config) (*pulumi.Context, error) {
	return pulumi.NewContext(context.Background(), pulumi.RunInfo{
		Project:          cfg.Project,
		Stack:            cfg.Stack,
		Config:           cfg.Values,
		ConfigSecretKeys: cfg.SecretKeys,
		Mocks:            rec,
		DryRun:           true,
	})
}

// Run runs program on a context from NewContext and returns what it registered and exported;
// when the program fails, what it had registered by then, with the error.
func (rec *Recorder) Run(ctx *pulumi.Context, program pulumi.RunFunc) (*Recording, error) {
	err := pulumi.RunWithContext(ctx, program)
	return &Recording{Resources: rec.snapshot(), Exports: ctx.GetCurrentExportMap()}, err
}

// Run records program on a stack named test of project gke-rl with no config: what component
// tests use.
func Run(program pulumi.RunFunc) (*Recording, error) {
	rec := New("gke-rl", "test")
	ctx, err := rec.NewContext(Config{Project: "gke-rl", Stack: "test"})
	if err != nil {
		return nil, err
	}
	return rec.Run(ctx, program)
}

// Recorder is a pulumi.MockResourceMonitor that records every registration and answers with
// the inputs plus deterministic placeholders for computed outputs.
type Recorder struct {
	project, stack string

	mu        sync.Mutex
	resources map[string]*Resource
}

// New is a Recorder for a project's stack.
func New(project, stack string) *Recorder {
	return &Recorder{project: project, stack: stack, resources: map[string]*Resource{}}
}

// NewResource implements pulumi.MockResourceMonitor.
func (r *Recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	rpc := args.RegisterRPC
	parent := rpc.GetParent()
	urn := r.urn(parent, args.TypeToken, args.Name)
	var aliases []string
	for _, a := range rpc.GetAliases() {
		if spec := a.GetSpec(); spec != nil && spec.GetName() != "" {
			aliases = append(aliases, r.urn(parent, args.TypeToken, spec.GetName()))
		}
	}
	aliases = append(aliases, rpc.GetAliasURNs()...)
	var timeouts *Timeouts
	if t := rpc.GetCustomTimeouts(); t != nil && (t.GetCreate() != "" || t.GetUpdate() != "" || t.GetDelete() != "") {
		timeouts = &Timeouts{Create: t.GetCreate(), Update: t.GetUpdate(), Delete: t.GetDelete()}
	}

	deps := map[string]bool{}
	for _, d := range rpc.GetDependencies() {
		deps[d] = true
	}
	for _, pd := range rpc.GetPropertyDependencies() {
		for _, d := range pd.GetUrns() {
			deps[d] = true
		}
	}
	id, state := fakeState(args.TypeToken, args.Name, args.Inputs, args.Custom)
	res := &Resource{
		URN:          urn,
		Type:         args.TypeToken,
		Name:         args.Name,
		Parent:       parent,
		Custom:       args.Custom,
		ID:           id,
		Dependencies: slices.Sorted(maps.Keys(deps)),
		Inputs:       args.Inputs,
		Options: Options{
			Protect:             rpc.GetProtect(),
			RetainOnDelete:      rpc.GetRetainOnDelete(),
			IgnoreChanges:       rpc.GetIgnoreChanges(),
			DeletedWith:         rpc.GetDeletedWith(),
			Provider:            args.Provider,
			Aliases:             aliases,
			CustomTimeouts:      timeouts,
			Import:              rpc.GetImportId(),
			ReplaceOnChanges:    rpc.GetReplaceOnChanges(),
			DeleteBeforeReplace: rpc.GetDeleteBeforeReplace(),
		},
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.resources[urn]; dup {
		return "", nil, fmt.Errorf("duplicate resource URN %s", urn)
	}
	r.resources[urn] = res
	return id, state, nil
}

// Call implements pulumi.MockResourceMonitor. The program makes no invoke: a preview then needs
// no permission beyond reading what the stack manages, and works without Google access. Any
// invoke fails the recording.
func (r *Recorder) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return nil, fmt.Errorf("the program makes no invoke, but called %s", args.Token)
}

// urn mirrors the mock monitor's URN scheme so that parents and dependencies resolve.
func (r *Recorder) urn(parent, typ, name string) string {
	parentType := ""
	if parent != "" {
		if pt := string(resource.URN(parent).QualifiedType()); pt != string(resource.RootStackType) {
			parentType = pt + "$"
		}
	}
	return fmt.Sprintf("urn:pulumi:%s::%s::%s%s::%s", r.stack, r.project, parentType, typ, name)
}

// snapshot returns the recorded resources sorted by URN.
func (r *Recorder) snapshot() []*Resource {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Resource, 0, len(r.resources))
	for _, res := range r.resources {
		out = append(out, res)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URN < out[j].URN })
	return out
}

// fakeState returns the ID and output state of a new resource: its inputs plus what the cloud
// would compute, for the types whose computed outputs the program reads.
func fakeState(typ, name string, inputs resource.PropertyMap, custom bool) (string, resource.PropertyMap) {
	state := inputs.Copy()
	if !custom {
		return "", state
	}
	resName := StringInput(inputs, "name", name)
	project := StringInput(inputs, "project", "offline-project")
	region := StringInput(inputs, "region", "offline-region")
	set := func(k, v string) { state[resource.PropertyKey(k)] = resource.NewProperty(v) }
	computeLink := func(path string) string {
		set("selfLink", "https://www.googleapis.com/compute/v1/"+path)
		return path
	}

	switch typ {
	case "gcp:compute/network:Network":
		return computeLink(fmt.Sprintf("projects/%s/global/networks/%s", project, resName)), state
	case "gcp:compute/subnetwork:Subnetwork":
		return computeLink(fmt.Sprintf("projects/%s/regions/%s/subnetworks/%s", project, region, resName)), state
	case "gcp:compute/router:Router":
		return computeLink(fmt.Sprintf("projects/%s/regions/%s/routers/%s", project, region, resName)), state
	case "gcp:compute/routerNat:RouterNat":
		return fmt.Sprintf("%s/%s/%s/%s", project, region, StringInput(inputs, "router", "router"), resName), state
	case "gcp:compute/firewall:Firewall":
		return computeLink(fmt.Sprintf("projects/%s/global/firewalls/%s", project, resName)), state
	case "gcp:compute/globalAddress:GlobalAddress":
		set("address", "10.255.0.0")
		return computeLink(fmt.Sprintf("projects/%s/global/addresses/%s", project, resName)), state
	case "gcp:container/cluster:Cluster":
		location := StringInput(inputs, "location", region)
		set("endpoint", FakeEndpoint)
		state["controlPlaneEndpointsConfig"] = resource.NewProperty(resource.PropertyMap{
			"dnsEndpointConfig": resource.NewProperty(resource.PropertyMap{
				"endpoint":             resource.NewProperty("gke-" + resName + "-offline." + location + ".gke.goog"),
				"allowExternalTraffic": resource.NewProperty(true),
			}),
		})
		state["masterAuth"] = resource.NewProperty(resource.PropertyMap{
			"clusterCaCertificate": resource.NewProperty(FakeCACertificate),
		})
		return computeLink(fmt.Sprintf("projects/%s/locations/%s/clusters/%s", project, location, resName)), state
	case "gcp:container/nodePool:NodePool":
		return fmt.Sprintf("projects/%s/locations/%s/clusters/%s/nodePools/%s", project,
			StringInput(inputs, "location", region), StringInput(inputs, "cluster", "cluster"), resName), state
	case "gcp:lustre/instance:Instance":
		location := StringInput(inputs, "location", "offline-zone")
		instance := StringInput(inputs, "instanceId", name)
		set("mountPoint", fmt.Sprintf("%s@tcp:/%s", FakeLustreIP, StringInput(inputs, "filesystem", "lustrefs")))
		set("name", fmt.Sprintf("projects/%s/locations/%s/instances/%s", project, location, instance))
		return fmt.Sprintf("projects/%s/locations/%s/instances/%s", project, location, instance), state
	case "gcp:serviceaccount/account:Account":
		email := fmt.Sprintf("%s@%s.iam.gserviceaccount.com", StringInput(inputs, "accountId", name), project)
		set("email", email)
		set("member", "serviceAccount:"+email)
		return fmt.Sprintf("projects/%s/serviceAccounts/%s", project, email), state
	case "command:local:Command":
		// What a command prints is known only once it has run.
		set("stdout", CommandOutputPlaceholder)
		return resName, state
	case "gcp:secretmanager/secret:Secret":
		// The API names a secret by project number (workloads.ProjectNumberOf).
		set("name", fmt.Sprintf("projects/%s/secrets/%s", FakeProjectNumber, StringInput(inputs, "secretId", name)))
		return fmt.Sprintf("projects/%s/secrets/%s", project, StringInput(inputs, "secretId", name)), state
	case "gcp:storage/bucket:Bucket":
		set("url", "gs://"+resName)
		state["projectNumber"] = resource.NewProperty(float64(fakeProjectNumberInt))
		set("selfLink", "https://www.googleapis.com/storage/v1/b/"+resName)
		return resName, state
	}
	if strings.HasPrefix(typ, "kubernetes:") && !strings.HasPrefix(typ, "pulumi:providers:") {
		return kubernetesID(inputs, name), state
	}
	if strings.HasPrefix(typ, "pulumi:providers:") {
		return name + "-provider-id", state
	}
	return resName, state
}

// kubernetesID is `namespace/name` (or `name` for cluster-scoped objects), as the provider uses.
func kubernetesID(inputs resource.PropertyMap, fallback string) string {
	meta, ok := inputs["metadata"]
	if !ok || !meta.IsObject() {
		return fallback
	}
	name := StringInput(meta.ObjectValue(), "name", fallback)
	if ns := StringInput(meta.ObjectValue(), "namespace", ""); ns != "" {
		return ns + "/" + name
	}
	return name
}

// StringInput reads a plain string property, or fallback when it is absent, secret or computed.
func StringInput(m resource.PropertyMap, key, fallback string) string {
	v, ok := m[resource.PropertyKey(key)]
	if !ok {
		return fallback
	}
	if v.IsOutput() {
		v = v.OutputValue().Element
	}
	if v.IsString() && v.StringValue() != "" {
		return v.StringValue()
	}
	return fallback
}
