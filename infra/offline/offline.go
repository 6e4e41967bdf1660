// Package offline runs the program on a stack file without a cloud: it loads the stack's
// configuration with the Pulumi SDK's own workspace loaders and runs infra.Program against an
// in-process recording engine (internal/recorder, on the SDK's mock monitor). `go run . plan`
// prints what it recorded, `preflight` derives what to ask the project from it, and the tests
// (the golden plans, the control plane harness) read the same recording.
package offline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/infra"
	"gke-rl/internal/cost"
	"gke-rl/internal/recorder"
)

// Resource is one registered resource as the engine saw it.
type Resource = recorder.Resource

// Options are the resource options that matter to a reviewer.
type Options = recorder.Options

// Result is one planned stack: every resource and the stack outputs.
type Result struct {
	*recorder.Recording
	Stack   string
	Project string
	// Blueprint is what Resolve derived from the configuration.
	Blueprint *infra.Blueprint
	// Outputs are the stack outputs, resolved; secret ones hold SecretPlaceholder.
	Outputs map[string]any
	// Warnings are what `pulumi up` logs as warnings: worth a look, not fatal.
	Warnings []infra.FieldError
	// Placeholders are the shipped placeholders the stack still holds, which `pulumi preview`
	// and `pulumi up` refuse (infra.PlaceholderError).
	Placeholders []infra.FieldError
	// Costs is the stack's bill priced from the shipped price table (cost.Catalog); Price
	// re-prices it with prices of the user's.
	Costs cost.Estimate
}

// Price prices the stack's bill from the shipped table with extra's prices added, and returns
// extra's entries that price no line of the bill.
func (r *Result) Price(extra cost.Table) []cost.Mismatch {
	r.Costs = r.Blueprint.Bill.Price(cost.Catalog.With(extra))
	return r.Blueprint.Bill.Unmatched(extra)
}

// SecretPlaceholder stands for a secret value wherever the plan prints one.
const SecretPlaceholder = recorder.SecretPlaceholder

// ConfigError is returned when the stack configuration is invalid: nothing was registered.
type ConfigError struct {
	Problems infra.Errors
}

func (e *ConfigError) Error() string { return e.Problems.Error() }

// Resolve loads and resolves a stack's configuration as of now without registering anything.
func Resolve(sc *StackConfig, stack string, now time.Time) (*infra.Blueprint, error) {
	_, bp, err := resolve(recorder.New(sc.Project, stack), sc, stack, now)
	return bp, err
}

func resolve(rec *recorder.Recorder, sc *StackConfig, stack string, now time.Time) (*pulumi.Context, *infra.Blueprint, error) {
	ctx, err := rec.NewContext(recorder.Config{Project: sc.Project, Stack: stack, Values: sc.Values, SecretKeys: sc.SecretKeys})
	if err != nil {
		return nil, nil, err
	}
	cfg, err := infra.LoadConfig(ctx, sc.Keys())
	if err == nil {
		cfg.Siblings = sc.Siblings
		var bp *infra.Blueprint
		if bp, err = infra.Resolve(cfg, now); err == nil {
			return ctx, bp, nil
		}
	}
	var problems infra.Errors
	if errors.As(err, &problems) {
		return nil, nil, &ConfigError{Problems: problems}
	}
	return nil, nil, err
}

// Run plans a stack from its configuration: it resolves the configuration (a rejected one
// registers nothing) and runs the real program, infra.Program, on the recording engine, as of
// now (the moment the warnings about dates compare with).
func Run(sc *StackConfig, stack string, now time.Time) (*Result, error) {
	rec := recorder.New(sc.Project, stack)
	ctx, bp, err := resolve(rec, sc, stack, now)
	if err != nil {
		return nil, err
	}
	recording, err := rec.Run(ctx, infra.ProgramWithKeys(sc.Keys(), sc.Siblings, now))
	if err != nil {
		return nil, err
	}
	outputs, err := collectOutputs(recording.Exports)
	if err != nil {
		return nil, err
	}
	return &Result{
		Recording: recording, Stack: stack, Project: sc.Project, Blueprint: bp, Outputs: outputs, Warnings: bp.Warnings, Placeholders: bp.Placeholders,
		Costs: bp.Bill.Price(cost.Catalog),
	}, nil
}

// outputWait bounds how long the planner waits for the stack outputs to resolve; on the
// recording engine they resolve in milliseconds, so reaching it means an output failed.
const outputWait = time.Minute

// collectOutputs resolves every stack output, secrets replaced by SecretPlaceholder. Outputs of
// plain values are not tracked by the run, so it waits for each one itself.
func collectOutputs(exports map[string]pulumi.Input) (map[string]any, error) {
	into := map[string]any{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, key := range slices.Sorted(maps.Keys(exports)) {
		out := pulumi.ToOutput(exports[key])
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
		return into, nil
	case <-time.After(outputWait):
		return nil, fmt.Errorf("stack outputs did not resolve within %s", outputWait)
	}
}
