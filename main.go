// Command gke-rl is the Pulumi program that builds a GRPO post-training setup on GKE.
// `go run . plan --stack NAME` plans a stack offline; anything else runs the program under the
// Pulumi engine (`pulumi up`).
package main

import (
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/infra"
	"gke-rl/infra/plan"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "plan" {
		os.Exit(plan.Main(os.Args[2:], ".", os.Stdout, os.Stderr))
	}
	pulumi.Run(infra.Program)
}
