// Command gke-rl is the Pulumi program that builds a GRPO post-training setup on GKE.
// `go run . plan --stack NAME` plans a stack offline; `go run . preflight --stack NAME` asks its
// project, read-only, what `pulumi up` needs; under the Pulumi engine (`pulumi up`,
// `pulumi preview`) it runs the program; anything else prints how to do either.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/cmd/preflight"
	"gke-rl/cmd/repocheck"
	"gke-rl/infra"
	"gke-rl/infra/offline"
)

func main() {
	args := os.Args[1:]
	switch {
	case len(args) > 0 && args[0] == "plan":
		os.Exit(plan.Main(args[1:], cmd.ProcessEnv()))
	case len(args) > 0 && args[0] == "preflight":
		os.Exit(preflight.Main(args[1:], cmd.ProcessEnv()))
	case len(args) > 0 && args[0] == "repo-check":
		os.Exit(repocheck.Main(args[1:], os.Stdout, os.Stderr))
	case os.Getenv(pulumi.EnvMonitor) != "":
		pulumi.Run(infra.Program)
	case len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		usage(os.Stdout, ".")
	default:
		// Started by hand, not by the engine: pulumi.Run would only exit 32 with nothing said.
		if len(args) > 0 {
			fmt.Fprintln(os.Stderr, unknownCommand(args[0]))
		}
		usage(os.Stderr, ".")
		os.Exit(cmd.ExitUsage)
	}
}

// pulumiCommands are the Pulumi CLI's commands a user may type to this program instead.
var pulumiCommands = []string{"preview", "up", "destroy", "refresh", "import", "stack", "config"}

// unknownCommand is the error line for a first argument that names no command of the program.
func unknownCommand(name string) string {
	if slices.Contains(pulumiCommands, name) {
		return fmt.Sprintf("error: %q is a command of the Pulumi CLI, which runs this program: pulumi %s -s NAME", name, name)
	}
	return fmt.Sprintf("error: %q is not a command of gke-rl; allowed: plan, preflight, repo-check, help", name)
}

// usage says what the program does when it is not run by the Pulumi engine.
func usage(w io.Writer, dir string) {
	fmt.Fprintf(w, `gke-rl: a Pulumi program; run it through Pulumi, or plan a stack offline.

  go run . plan --stack NAME       plan a stack without a cloud account (go run . plan --help)
  go run . preflight --stack NAME  ask the stack's project, read-only, what up needs (quota, APIs, ...)
  go run . repo-check --repo O/N   ask GitHub, read-only, for the settings the deploy workflow rests on
  pulumi preview -s NAME           what pulumi up would change (in this directory)
  pulumi up -s NAME                build it

The stacks here: %s
`, stackList(offline.StacksIn(dir)))
}

// stackList names the stacks, or says there is none.
func stackList(stacks []string) string {
	if len(stacks) == 0 {
		return "none (a stack is a Pulumi.NAME.yaml file)"
	}
	return strings.Join(stacks, ", ")
}
