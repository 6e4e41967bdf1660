// Package plan is the offline planner: it runs the real program against an in-process
// recording engine (the Pulumi SDK's mock monitor) and prints what `pulumi up` would create,
// without a cloud account. The same engine backs the tests.
package plan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/infra"
)

// Result is one planned stack: every resource and the stack outputs.
type Result struct {
	Stack     string
	Project   string
	Resources []*Resource
	// Outputs are the stack outputs, resolved; secret ones hold SecretPlaceholder.
	Outputs map[string]any
	// Warnings are what `pulumi up` logs as warnings: worth a look, not fatal.
	Warnings []infra.FieldError
}

// SecretPlaceholder stands for a secret value wherever the plan prints one.
const SecretPlaceholder = "[secret]"

// Find returns the resource with the given type and logical name, or nil.
func (r *Result) Find(typ, name string) *Resource {
	for _, res := range r.Resources {
		if res.Type == typ && res.Name == name {
			return res
		}
	}
	return nil
}

// OfType returns the resources of a type, sorted by URN.
func (r *Result) OfType(typ string) []*Resource {
	var out []*Resource
	for _, res := range r.Resources {
		if res.Type == typ {
			out = append(out, res)
		}
	}
	return out
}

// ByURN returns the resource with the given URN, or nil.
func (r *Result) ByURN(urn string) *Resource {
	for _, res := range r.Resources {
		if res.URN == urn {
			return res
		}
	}
	return nil
}

// DependencyClosure returns every URN that res waits for, directly or through other resources
// (a component stands for its children, as Pulumi expands it).
func (r *Result) DependencyClosure(res *Resource) map[string]bool {
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

// ConfigError is returned when the stack configuration is invalid: nothing was registered.
type ConfigError struct {
	Problems infra.Errors
}

func (e *ConfigError) Error() string { return e.Problems.Error() }

// Run plans a stack from its configuration.
func Run(sc *StackConfig, stack string) (*Result, error) {
	rec := newRecorder(sc.Project, stack)
	ctx, err := pulumi.NewContext(context.Background(), pulumi.RunInfo{
		Project:          sc.Project,
		Stack:            stack,
		Config:           sc.Values,
		ConfigSecretKeys: sc.SecretKeys,
		Mocks:            rec,
		DryRun:           true,
	})
	if err != nil {
		return nil, err
	}
	cfg, err := infra.LoadConfig(ctx, slices.Sorted(maps.Keys(sc.Values)))
	if err != nil {
		var problems infra.Errors
		if errors.As(err, &problems) {
			return nil, &ConfigError{Problems: problems}
		}
		return nil, err
	}

	outputs := map[string]any{}
	err = pulumi.RunWithContext(ctx, func(ctx *pulumi.Context) error {
		outs, err := infra.Deploy(ctx, cfg)
		if err != nil {
			return err
		}
		return collectOutputs(outs, outputs)
	})
	if err != nil {
		return nil, err
	}
	return &Result{Stack: stack, Project: sc.Project, Resources: rec.snapshot(), Outputs: outputs, Warnings: infra.Warnings(cfg)}, nil
}

// outputWait bounds how long the planner waits for the stack outputs to resolve; on the
// recording engine they resolve in milliseconds, so reaching it means an output failed.
const outputWait = time.Minute

// collectOutputs resolves every stack output into into, secrets replaced by SecretPlaceholder.
// Outputs of plain values are not tracked by the run, so it waits for each one itself.
func collectOutputs(outs pulumi.Map, into map[string]any) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for key, value := range outs {
		out := pulumi.ToOutput(value)
		secret := pulumi.IsSecret(out)
		wg.Add(1)
		out.ApplyT(func(v any) any {
			defer wg.Done()
			if secret {
				v = SecretPlaceholder
			}
			mu.Lock()
			into[key] = v
			mu.Unlock()
			return nil
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(outputWait):
		return fmt.Errorf("stack outputs did not resolve within %s", outputWait)
	}
}
