// Package plan is `go run . plan`: it plans a stack offline (infra/offline) and prints what
// `pulumi up` would create as a tree, JSON or Kubernetes manifests, what `pulumi destroy` would
// do (--destroy), what an update changes against an earlier plan (--compare), and the bill,
// priced from the shipped table and a user's price file (--prices).
package plan

import (
	"flag"
	"fmt"

	"gke-rl/cmd"
	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/cost"
)

// Main is `go run . plan ...`: it plans the stack whose files are in env.Dir as of env.Now and
// prints the result. It returns the process exit status.
func Main(args []string, env cmd.Env) int {
	stdout, stderr := env.Stdout, env.Stderr
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sa cmd.StackArgs
	sa.Register(fs)
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	manifests := fs.String("manifests", "", "write every Kubernetes object as YAML into the directory `DIR`")
	// A back-quoted word of a usage text names the flag's value in the help (`-compare FILE`);
	// a boolean flag's usage has none, or the help would show it taking a value.
	destroy := fs.Bool("destroy", false, "print what pulumi destroy would do: the order, and what stays")
	compare := fs.String("compare", "", "compare with `FILE`, an earlier plan --json of the stack (from the version that deployed it): what changes, and what that does to a running run")
	prices := fs.String("prices", "", "add the prices of the price file `FILE` (JSON: date, source, prices) to the shipped table, or replace its own")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run . plan --stack NAME (or -s NAME) [--config PATH=VALUE]... [--json] [--manifests DIR] [--destroy] [--prices FILE] [--compare FILE]")
		fs.PrintDefaults()
	}
	if code, done := sa.Parse(fs, args, stdout); done {
		return code
	}

	sc, err := offline.LoadStackConfig(env.Dir, sa.Name, sa.Overrides)
	if err == nil {
		sc.Siblings = infra.ReadSiblings(env.Dir, sa.Name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return cmd.ExitUsage
	}
	if *compare != "" && (*asJSON || *destroy) {
		fmt.Fprintln(stderr, "error: --compare prints its own report: not with --json or --destroy")
		return cmd.ExitUsage
	}
	var earlier *EarlierPlan
	if *compare != "" {
		if earlier, err = LoadEarlierPlan(*compare); err != nil {
			fmt.Fprintf(stderr, "error: --compare: %v\n", err)
			return cmd.ExitUsage
		}
		if earlier.Stack != sa.Name {
			fmt.Fprintf(stderr, "error: --compare: %s is a plan of stack %s, not %s\n", *compare, earlier.Stack, sa.Name)
			return cmd.ExitUsage
		}
	}
	var extra cost.Table
	if *prices != "" {
		if extra, err = cost.LoadFile(*prices); err != nil {
			fmt.Fprintf(stderr, "error: --prices: %v\n", err)
			return cmd.ExitUsage
		}
	}
	result, err := offline.Run(sc, sa.Name, env.Now())
	if err != nil {
		if cmd.ReportRunError(stderr, err) {
			return cmd.ExitInvalidConfig
		}
		return cmd.ExitInternal
	}

	if *prices != "" {
		for _, m := range result.Price(extra) {
			fmt.Fprintf(stderr, "warning: --prices %s: %s\n", *prices, m)
		}
		for _, m := range result.Blueprint.Bill.Implausible(extra) {
			fmt.Fprintf(stderr, "warning: --prices %s: %s\n", *prices, m)
		}
	}
	for _, p := range result.Placeholders {
		fmt.Fprintf(stderr, "placeholder: %s: %s\n", p.Key, p.Message)
	}
	if len(result.Placeholders) > 0 {
		fmt.Fprintf(stderr, "placeholder: `pulumi preview` and `pulumi up` refuse a stack with placeholders; this plan shows it with them\n")
	}
	for _, w := range result.Warnings {
		fmt.Fprintf(stderr, "warning: %s: %s\n", w.Key, w.Message)
	}
	if *manifests != "" {
		files, err := offline.WriteManifests(*manifests, result)
		if err != nil {
			fmt.Fprintf(stderr, "error: writing manifests (not a problem with your configuration): %v\n", err)
			return cmd.ExitOutput
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "wrote %d Kubernetes manifests to %s\n", len(files), *manifests)
		}
	}
	if earlier != nil {
		q := CompareQueue(earlier, result)
		notes := append(NamespaceShift(earlier, result), CostShift(earlier, result)...)
		if err := WriteComparison(stdout, *compare, Compare(earlier, result), notes, CompareExperiment(earlier, result), q); err != nil {
			fmt.Fprintf(stderr, "error: writing the comparison (not a problem with your configuration): %v\n", err)
			return cmd.ExitOutput
		}
		if q != nil {
			for _, line := range q.Lines {
				fmt.Fprintln(stdout, line)
			}
		}
		if v := CompareVolume(earlier, result); v != nil && v.Line() != "" {
			fmt.Fprintln(stdout, v.Line())
			if v.Overflows() {
				fmt.Fprintf(stderr, "error: storage.capacityGib: the Lustre instance would need %.0f GB, with the checkpoints the earlier plan's experiments leave on it, and holds %.0f GB\n", v.NeedGB(), v.CapacityGB)
				return cmd.ExitInvalidConfig
			}
		}
		return cmd.ExitOK
	}
	if *destroy {
		write := WriteDestroy
		if *asJSON {
			write = WriteDestroyJSON
		}
		if err := write(stdout, Destroy(result)); err != nil {
			fmt.Fprintf(stderr, "error: writing the destroy plan (not a problem with your configuration): %v\n", err)
			return cmd.ExitOutput
		}
		return cmd.ExitOK
	}
	if *asJSON {
		if err := WriteJSON(stdout, result); err != nil {
			fmt.Fprintf(stderr, "error: writing the plan (not a problem with your configuration): %v\n", err)
			return cmd.ExitOutput
		}
		return cmd.ExitOK
	}
	if err := WriteTree(stdout, result); err != nil {
		fmt.Fprintf(stderr, "error: writing the plan (not a problem with your configuration): %v\n", err)
		return cmd.ExitOutput
	}
	return cmd.ExitOK
}
