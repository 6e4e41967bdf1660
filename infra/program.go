// Package infra is THE PROGRAM, the composition root of gke-rl: it loads the stack
// configuration, resolves it into a Blueprint (every derived value, checked, before anything is
// registered), wires the component packages together and exports the stack outputs. One stage
// a file, so that a key's path reads top to bottom:
//
//	config.go     the typed Config and its keys
//	load.go       LoadConfig: the engine's config, the top-level keys
//	decode.go     strict decoding of each section, and of `jobs` over `job`
//	defaults.go   every default
//	validate.go   the rules, every problem at once (Errors, errors.go), by what they check:
//	              validate_cluster.go, validate_storage.go, validate_run.go, validate_queue.go
//	resolve.go    Resolve: every derived value into the Blueprint (blueprint.go), by what it
//	              resolves: resolve_cluster.go, resolve_run.go, resolve_queue.go; with what it
//	              derives from in its own files: hardware.go, addressplan.go, lustre.go,
//	              checkpoint.go, deadline.go, experiment.go, volume.go, changes.go, bill.go,
//	              warnings.go, placeholders.go
//	deploy.go     Deploy: the components registered from the Blueprint, the stack outputs
//	program.go    Program: LoadConfig → Resolve → warnings → Deploy → exports
package infra

import (
	"maps"
	"slices"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Program is the Pulumi program: LoadConfig → Resolve → warnings → Deploy → exports. It reads
// the names of the stack's config keys from the engine's environment, and refuses a stack that
// still holds the shipped placeholders (PlaceholderError) before registering anything.
func Program(ctx *pulumi.Context) error {
	// The engine runs the program in the project's directory, beside the stack files.
	return program(ctx, EnvConfigKeys(), ReadSiblings(".", ctx.Stack()), true, time.Now())
}

// ProgramWithKeys is Program for a stack whose config keys are known otherwise, as the offline
// planner knows them from the stack file. It plans a stack with placeholders, which its warnings
// name: the plan of a fresh clone's shipped stacks needs no edit. now is the moment it plans at.
// siblings are the other stacks of its directory (ReadSiblings).
func ProgramWithKeys(presentKeys []string, siblings []Sibling, now time.Time) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error { return program(ctx, presentKeys, siblings, false, now) }
}

func program(ctx *pulumi.Context, presentKeys []string, siblings []Sibling, refusePlaceholders bool, now time.Time) error {
	cfg, err := LoadConfig(ctx, presentKeys)
	if err != nil {
		return err
	}
	cfg.Siblings = siblings
	bp, err := Resolve(cfg, now)
	if err != nil {
		return err
	}
	if len(bp.Placeholders) > 0 && refusePlaceholders {
		return &PlaceholderError{Placeholders: bp.Placeholders}
	}
	for _, w := range bp.Warnings {
		if err := ctx.Log.Warn(w.Error(), nil); err != nil {
			return err
		}
	}
	outputs, err := Deploy(ctx, bp)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(outputs)) {
		ctx.Export(key, outputs[key])
	}
	return nil
}
