package kube

import (
	_ "embed"
	"strings"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

//go:embed kubeconfig.sh
var kubeconfigPreamble string

// KubectlScript is a kubectl step's script: the kubeconfig preamble (kubeconfig.sh), then body,
// a script whose kubectl finds the cluster through $KUBECONFIG. The body's own shebang is dropped:
// the preamble has one.
func KubectlScript(body string) string {
	if strings.HasPrefix(body, "#!") {
		_, body, _ = strings.Cut(body, "\n")
	}
	return kubeconfigPreamble + body
}

// KubectlCommandArgs are a kubectl step of `pulumi up`.
type KubectlCommandArgs struct {
	// Script is a KubectlScript.
	Script     string
	Kubeconfig pulumi.StringInput
	// Env is the script's further environment.
	Env pulumi.StringMap
	// Triggers run the step again when they change (nil: only on create).
	Triggers pulumi.Array
}

// NewKubectlCommand registers a local command that runs a KubectlScript with bash on `pulumi up`.
// It needs kubectl and gke-gcloud-auth-plugin where Pulumi runs.
func NewKubectlCommand(ctx *pulumi.Context, name string, args KubectlCommandArgs, opts ...pulumi.ResourceOption) (*local.Command, error) {
	env := pulumi.StringMap{"KUBECONFIG_DATA": args.Kubeconfig}
	for k, v := range args.Env {
		env[k] = v
	}
	return local.NewCommand(ctx, name, &local.CommandArgs{
		Create:      pulumi.String(args.Script),
		Interpreter: pulumi.StringArray{pulumi.String("/bin/bash"), pulumi.String("-c")},
		Environment: env,
		Triggers:    args.Triggers,
		// The steps never read the previous run's output (PULUMI_COMMAND_STDOUT/STDERR). Said
		// explicitly: pulumi-command's SDK sent the default (true) itself up to v1.1.0 and leaves
		// it to the provider from v1.2.x (commit bf349f64), so the input depends on nothing else.
		AddPreviousOutputInEnv: pulumi.Bool(false),
	}, opts...)
}
