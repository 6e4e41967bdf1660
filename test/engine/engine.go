package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"gke-rl/infra/offline"
	"gke-rl/test/clitest"
	"gke-rl/test/kubetest"
)

// ProviderBinary is the pulumi-kubernetes provider .ci/kube/build puts beside the control plane.
const ProviderBinary = "pulumi-resource-kubernetes"

// Stack is a stack of the program's project, in a local backend of the test's own, whose
// program is a Replay.
type Stack struct {
	t          testing.TB
	stack      auto.Stack
	kubeconfig string
	// Log receives the engine's output of every operation, for a failure message.
	Log strings.Builder
}

// NewStack is an empty stack named as plan's (so that its URNs are the program's), on a local
// backend in a directory of the test, whose Kubernetes objects go to kubeconfig. It needs the
// Pulumi CLI on PATH and the provider in $GKE_RL_KUBE_BIN: without them the test is skipped, or
// fails under GKE_RL_REQUIRE_TOOLS.
func NewStack(t *testing.T, plan *offline.Result, kubeconfig string) *Stack {
	t.Helper()
	clitest.Tool(t, "pulumi")
	bin := os.Getenv(kubetest.BinEnv)
	provider := filepath.Join(bin, ProviderBinary)
	if _, err := os.Stat(provider); bin == "" || err != nil {
		msg := fmt.Sprintf("%s is not in $%s: .ci/kube/build DIR builds it", ProviderBinary, kubetest.BinEnv)
		if os.Getenv(clitest.RequireEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	pulumiPath, err := exec.LookPath("pulumi")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	backend := filepath.Join(dir, "backend")
	if err := os.MkdirAll(backend, 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		// The provider on PATH is the one the engine runs (an "ambient" plugin): nothing is
		// downloaded.
		"PATH":                     bin + string(os.PathListSeparator) + filepath.Dir(pulumiPath) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PULUMI_HOME":              filepath.Join(dir, "home"),
		"PULUMI_CONFIG_PASSPHRASE": "engine-test",
		"PULUMI_SKIP_UPDATE_CHECK": "true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
	}
	ctx := context.Background()
	project := workspace.Project{
		Name:    tokens.PackageName(plan.Project),
		Runtime: workspace.NewProjectRuntimeInfo("go", nil),
		Backend: &workspace.ProjectBackend{URL: "file://" + backend},
	}
	s, err := auto.UpsertStackInlineSource(ctx, plan.Stack, string(project.Name), Replay(plan, kubeconfig),
		auto.Project(project), auto.EnvVars(env), auto.WorkDir(dir), auto.SecretsProvider("passphrase"))
	if err != nil {
		t.Fatalf("a stack on the local backend: %v", err)
	}
	return &Stack{t: t, stack: s, kubeconfig: kubeconfig}
}

// Steps are what an operation did or would do to each resource (by URN) that it did not leave
// as it was: create, update, replace, delete, ...
type Steps map[string]apitype.OpType

// Changing are the steps other than refreshes and reads: what `up` changes.
func (s Steps) Changing() Steps {
	out := Steps{}
	for urn, op := range s {
		switch op {
		case apitype.OpSame, apitype.OpRefresh, apitype.OpRead:
			continue
		}
		out[urn] = op
	}
	return out
}

// Of is the step of the resource of type typ and name, or "" when it stays as it is.
func (s Steps) Of(typ, name string) apitype.OpType {
	for urn, op := range s.Changing() {
		if t, n := TypeAndName(urn); t == typ && n == name {
			return op
		}
	}
	return ""
}

func (s Steps) String() string {
	var lines []string
	for urn, op := range s {
		lines = append(lines, fmt.Sprintf("%s %s", op, urn))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// collect gathers the steps from an operation's engine events. A replacement shows as
// replace, create-replacement and delete-replaced steps of one URN: all three count as replace.
func collect(ch <-chan events.EngineEvent, into Steps, done chan<- struct{}) {
	for e := range ch {
		if e.ResourcePreEvent == nil {
			continue
		}
		m := e.ResourcePreEvent.Metadata
		switch {
		case m.Op == apitype.OpCreateReplacement || m.Op == apitype.OpDeleteReplaced || m.Op == apitype.OpReplace:
			into[m.URN] = apitype.OpReplace
		case into[m.URN] != apitype.OpReplace:
			into[m.URN] = m.Op
		}
	}
	close(done)
}

// Use replaces the stack's program with the in-cluster resources of another plan of it.
func (s *Stack) Use(plan *offline.Result) {
	s.stack.Workspace().SetProgram(Replay(plan, s.kubeconfig))
}

// Up runs `pulumi up` (with --refresh when refresh is set) and returns its steps; an error is
// the engine's, with its output in Log.
func (s *Stack) Up(refresh bool) (Steps, error) {
	return s.operation(fmt.Sprintf("up (refresh %v)", refresh), func(ctx context.Context, ch chan<- events.EngineEvent) error {
		opts := []optup.Option{optup.EventStreams(ch), optup.ProgressStreams(&s.Log)}
		if refresh {
			opts = append(opts, optup.Refresh())
		}
		_, err := s.stack.Up(ctx, opts...)
		return err
	})
}

// Preview runs `pulumi preview` (with --refresh when refresh is set) and returns the steps it
// proposes.
func (s *Stack) Preview(refresh bool) (Steps, error) {
	return s.operation(fmt.Sprintf("preview (refresh %v)", refresh), func(ctx context.Context, ch chan<- events.EngineEvent) error {
		opts := []optpreview.Option{optpreview.EventStreams(ch), optpreview.ProgressStreams(&s.Log), optpreview.Diff()}
		if refresh {
			opts = append(opts, optpreview.Refresh())
		}
		_, err := s.stack.Preview(ctx, opts...)
		return err
	})
}

// Destroy runs `pulumi destroy`.
func (s *Stack) Destroy() error {
	_, err := s.operation("destroy", func(ctx context.Context, ch chan<- events.EngineEvent) error {
		_, err := s.stack.Destroy(ctx, optdestroy.EventStreams(ch), optdestroy.ProgressStreams(&s.Log))
		return err
	})
	return err
}

// operation runs one engine operation with its events gathered into steps, within five
// minutes, and logs how long it took and what it changed.
func (s *Stack) operation(what string, run func(context.Context, chan<- events.EngineEvent) error) (Steps, error) {
	ch := make(chan events.EngineEvent)
	steps, done := Steps{}, make(chan struct{})
	go collect(ch, steps, done)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	err := run(ctx, ch)
	<-done
	s.t.Logf("pulumi %s: %s\n%s", what, time.Since(start).Round(time.Second), steps.Changing())
	if err != nil {
		return steps, fmt.Errorf("pulumi %s: %w", what, err)
	}
	return steps, nil
}

// Inputs are the inputs the stack's state holds for the resource of type typ and name: what
// the engine created or last updated it with (after a refresh, what it read back).
func (s *Stack) Inputs(typ, name string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dep, err := s.stack.Export(ctx)
	if err != nil {
		return nil, err
	}
	var state struct {
		Resources []struct {
			URN    string         `json:"urn"`
			Type   string         `json:"type"`
			Inputs map[string]any `json:"inputs"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(dep.Deployment, &state); err != nil {
		return nil, err
	}
	for _, r := range state.Resources {
		if t, n := TypeAndName(r.URN); t == typ && n == name {
			return r.Inputs, nil
		}
	}
	return nil, fmt.Errorf("no %s %s in the stack's state", typ, name)
}

// TypeAndName are a URN's resource type and logical name.
func TypeAndName(urn string) (typ, name string) {
	parts := strings.Split(urn, "::")
	if len(parts) < 4 {
		return "", urn
	}
	types := strings.Split(parts[2], "$")
	return types[len(types)-1], parts[len(parts)-1]
}
