package plan

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"gke-rl/internal/cost"
)

// Exit statuses of `plan`. Only ExitInvalidConfig and ExitUsage are the user's to fix in the
// stack or the command line; ExitOutput and ExitInternal are failures of the machine or of the
// program, and say so.
const (
	ExitOK            = 0
	ExitInvalidConfig = 1
	ExitUsage         = 2
	// ExitOutput: the plan could not be written (a full disk, a directory that is not one).
	ExitOutput = 3
	// ExitInternal: the program failed on a configuration it had accepted: a bug to report.
	ExitInternal = 4
)

// ReportRunError prints why Run failed: each problem of a refused configuration as
// "error: KEY: MESSAGE", or an internal error as one; it returns whether the configuration was
// refused.
func ReportRunError(stderr io.Writer, err error) (refused bool) {
	var cfgErr *ConfigError
	if errors.As(err, &cfgErr) {
		for _, p := range cfgErr.Problems {
			fmt.Fprintf(stderr, "error: %s: %s\n", p.Key, p.Message)
		}
		return true
	}
	fmt.Fprintf(stderr, "internal error (not a problem with your configuration; please report it): %v\n", err)
	return false
}

// Overrides is the repeatable `--config PATH=VALUE` flag of plan and preflight.
type Overrides []string

func (r *Overrides) String() string     { return strings.Join(*r, ",") }
func (r *Overrides) Set(v string) error { *r = append(*r, v); return nil }

// StackArgs pick a stack and override its configuration, as plan and preflight take them:
// --stack NAME (or -s NAME) and --config PATH=VALUE, repeatable.
type StackArgs struct {
	Name      string
	Overrides Overrides
}

// Register adds the flags to fs.
func (a *StackArgs) Register(fs *flag.FlagSet) {
	fs.StringVar(&a.Name, "stack", "", "the stack `NAME`: reads Pulumi.<NAME>.yaml (required)")
	// -s, as pulumi itself takes it.
	fs.StringVar(&a.Name, "s", "", "the stack `NAME`, as --stack")
	fs.Var(&a.Overrides, "config", "override a config value, `PATH=VALUE` in Pulumi path syntax (repeatable)")
}

// Args are the arguments again, for a command that prints the next command to run.
func (a StackArgs) Args() []string {
	args := []string{"--stack", a.Name}
	for _, o := range a.Overrides {
		args = append(args, "--config", o)
	}
	return args
}

// Parse parses the arguments of a command on one stack (plan, preflight), whose flags include
// a's (Register): help asked for (-h, --help) is an answer on stdout, not a usage error; --stack
// is required and nothing else is taken. done is true when the command ends here, with the exit
// status code.
func (a *StackArgs) Parse(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, done bool) {
	for _, arg := range args {
		if arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h" {
			fs.SetOutput(stdout)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, true
		}
		return ExitUsage, true
	}
	if a.Name == "" || fs.NArg() > 0 {
		fs.Usage()
		return ExitUsage, true
	}
	return 0, false
}

// Main is `go run . plan ...`: it plans the stack whose files are in dir and prints the result.
// It returns the process exit status.
func Main(args []string, dir string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sa StackArgs
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

	sc, err := LoadStackConfig(dir, sa.Name, sa.Overrides)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitUsage
	}
	if *compare != "" && (*asJSON || *destroy) {
		fmt.Fprintln(stderr, "error: --compare prints its own report: not with --json or --destroy")
		return ExitUsage
	}
	var earlier *EarlierPlan
	if *compare != "" {
		if earlier, err = LoadEarlierPlan(*compare); err != nil {
			fmt.Fprintf(stderr, "error: --compare: %v\n", err)
			return ExitUsage
		}
		if earlier.Stack != sa.Name {
			fmt.Fprintf(stderr, "error: --compare: %s is a plan of stack %s, not %s\n", *compare, earlier.Stack, sa.Name)
			return ExitUsage
		}
	}
	var extra cost.Table
	if *prices != "" {
		if extra, err = cost.LoadFile(*prices); err != nil {
			fmt.Fprintf(stderr, "error: --prices: %v\n", err)
			return ExitUsage
		}
	}
	result, err := Run(sc, sa.Name)
	if err != nil {
		if ReportRunError(stderr, err) {
			return ExitInvalidConfig
		}
		return ExitInternal
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
		files, err := WriteManifests(*manifests, result)
		if err != nil {
			fmt.Fprintf(stderr, "error: writing manifests (not a problem with your configuration): %v\n", err)
			return ExitOutput
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "wrote %d Kubernetes manifests to %s\n", len(files), *manifests)
		}
	}
	if earlier != nil {
		if err := WriteComparison(stdout, *compare, Compare(earlier, result), CompareExperiment(earlier, result)); err != nil {
			fmt.Fprintf(stderr, "error: writing the comparison (not a problem with your configuration): %v\n", err)
			return ExitOutput
		}
		for _, line := range CompareQueue(earlier, result) {
			fmt.Fprintln(stdout, line)
		}
		return ExitOK
	}
	if *destroy {
		write := WriteDestroy
		if *asJSON {
			write = WriteDestroyJSON
		}
		if err := write(stdout, Destroy(result)); err != nil {
			fmt.Fprintf(stderr, "error: writing the destroy plan (not a problem with your configuration): %v\n", err)
			return ExitOutput
		}
		return ExitOK
	}
	if *asJSON {
		if err := WriteJSON(stdout, result); err != nil {
			fmt.Fprintf(stderr, "error: writing the plan (not a problem with your configuration): %v\n", err)
			return ExitOutput
		}
		return ExitOK
	}
	if err := WriteTree(stdout, result); err != nil {
		fmt.Fprintf(stderr, "error: writing the plan (not a problem with your configuration): %v\n", err)
		return ExitOutput
	}
	return ExitOK
}
