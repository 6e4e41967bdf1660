package plan

import (
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
)

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
}

// recorder is a pulumi.MockResourceMonitor that records every registration and answers with
// the inputs plus deterministic placeholders for computed outputs.
type recorder struct {
	project, stack string

	mu        sync.Mutex
	resources map[string]*Resource
}

func newRecorder(project, stack string) *recorder {
	return &recorder{project: project, stack: stack, resources: map[string]*Resource{}}
}

// NewResource implements pulumi.MockResourceMonitor.
func (r *recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	rpc := args.RegisterRPC
	parent := rpc.GetParent()
	urn := r.urn(parent, args.TypeToken, args.Name)

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
			Protect:        rpc.GetProtect(),
			RetainOnDelete: rpc.GetRetainOnDelete(),
			IgnoreChanges:  rpc.GetIgnoreChanges(),
			DeletedWith:    rpc.GetDeletedWith(),
			Provider:       args.Provider,
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

// Call implements pulumi.MockResourceMonitor for the few invokes the program makes.
func (r *recorder) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	switch args.Token {
	case "gcp:organizations/getProject:getProject":
		project := stringInput(args.Args, "projectId", "offline-project")
		return resource.PropertyMap{
			"projectId": resource.NewProperty(project),
			"number":    resource.NewProperty(FakeProjectNumber),
			"name":      resource.NewProperty(project),
		}, nil
	}
	return nil, fmt.Errorf("the offline plan does not answer invoke %s", args.Token)
}

// urn mirrors the mock monitor's URN scheme so that parents and dependencies resolve.
func (r *recorder) urn(parent, typ, name string) string {
	parentType := ""
	if parent != "" {
		if pt := string(resource.URN(parent).QualifiedType()); pt != string(resource.RootStackType) {
			parentType = pt + "$"
		}
	}
	return fmt.Sprintf("urn:pulumi:%s::%s::%s%s::%s", r.stack, r.project, parentType, typ, name)
}

// snapshot returns the recorded resources sorted by URN.
func (r *recorder) snapshot() []*Resource {
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
	resName := stringInput(inputs, "name", name)
	project := stringInput(inputs, "project", "offline-project")
	region := stringInput(inputs, "region", "offline-region")
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
		return fmt.Sprintf("%s/%s/%s/%s", project, region, stringInput(inputs, "router", "router"), resName), state
	case "gcp:compute/firewall:Firewall":
		return computeLink(fmt.Sprintf("projects/%s/global/firewalls/%s", project, resName)), state
	case "gcp:compute/globalAddress:GlobalAddress":
		set("address", "10.255.0.0")
		return computeLink(fmt.Sprintf("projects/%s/global/addresses/%s", project, resName)), state
	case "gcp:container/cluster:Cluster":
		location := stringInput(inputs, "location", region)
		set("endpoint", FakeEndpoint)
		state["masterAuth"] = resource.NewProperty(resource.PropertyMap{
			"clusterCaCertificate": resource.NewProperty(FakeCACertificate),
		})
		return computeLink(fmt.Sprintf("projects/%s/locations/%s/clusters/%s", project, location, resName)), state
	case "gcp:container/nodePool:NodePool":
		return fmt.Sprintf("projects/%s/locations/%s/clusters/%s/nodePools/%s", project,
			stringInput(inputs, "location", region), stringInput(inputs, "cluster", "cluster"), resName), state
	case "gcp:lustre/instance:Instance":
		location := stringInput(inputs, "location", "offline-zone")
		instance := stringInput(inputs, "instanceId", name)
		set("mountPoint", fmt.Sprintf("%s@tcp:/%s", FakeLustreIP, stringInput(inputs, "filesystem", "lustrefs")))
		set("name", fmt.Sprintf("projects/%s/locations/%s/instances/%s", project, location, instance))
		return fmt.Sprintf("projects/%s/locations/%s/instances/%s", project, location, instance), state
	case "gcp:serviceaccount/account:Account":
		email := fmt.Sprintf("%s@%s.iam.gserviceaccount.com", stringInput(inputs, "accountId", name), project)
		set("email", email)
		set("member", "serviceAccount:"+email)
		return fmt.Sprintf("projects/%s/serviceAccounts/%s", project, email), state
	case "gcp:storage/bucket:Bucket":
		set("url", "gs://"+resName)
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
	name := stringInput(meta.ObjectValue(), "name", fallback)
	if ns := stringInput(meta.ObjectValue(), "namespace", ""); ns != "" {
		return ns + "/" + name
	}
	return name
}

// stringInput reads a plain string property, or fallback when it is absent, secret or computed.
func stringInput(m resource.PropertyMap, key, fallback string) string {
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
