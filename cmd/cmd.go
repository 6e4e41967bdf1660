// Package cmd holds what the subcommands of `go run .` (plan, preflight, repo-check) share:
// picking a stack and overriding its configuration (--stack, --config), the exit statuses, and
// printing a configuration the program refused.
package cmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gke-rl/infra/offline"
)

// Exit statuses of `plan` and `preflight`. Only ExitInvalidConfig and ExitUsage are the user's
// to fix in the stack or the command line; ExitOutput and ExitInternal are failures of the
// machine or of the program, and say so.
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
	var cfgErr *offline.ConfigError
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
	if path, value, ok := spacedConfig(args); ok {
		// `pulumi config set PATH VALUE` takes two words; --config takes one.
		fmt.Fprintf(fs.Output(), "error: --config takes PATH=VALUE, one word: did you mean --config %s=%s?\n", path, value)
		return ExitUsage, true
	}
	if a.Name == "" || fs.NArg() > 0 {
		fs.Usage()
		return ExitUsage, true
	}
	return 0, false
}

// spacedConfig finds `--config PATH VALUE` (the habit of `pulumi config set`): a --config value
// without "=" followed by one more word.
func spacedConfig(args []string) (path, value string, ok bool) {
	for i := 0; i+2 < len(args); i++ {
		if a := args[i]; (a == "--config" || a == "-config") && !strings.Contains(args[i+1], "=") && !strings.HasPrefix(args[i+2], "-") {
			return args[i+1], args[i+2], true
		}
	}
	return "", "", false
}

// Env is what a command runs in: the directory holding Pulumi.yaml and the stack files, where it
// prints, and its clock (the moment a plan is made at, which the warnings about dates compare
// with; the date of a price file). main gives the process's own; tests give a fixed clock, so
// that a plan does not change with the day the tests run on.
type Env struct {
	Dir            string
	Stdout, Stderr io.Writer
	Now            func() time.Time
}

// ProcessEnv is the environment of `go run . <command>`: the working directory, the process's
// streams, the wall clock.
func ProcessEnv() Env {
	return Env{Dir: ".", Stdout: os.Stdout, Stderr: os.Stderr, Now: time.Now}
}
