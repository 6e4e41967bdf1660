package kube

import (
	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// kubeconfigPreamble writes $KUBECONFIG_DATA to a temporary file, $kubeconfig, removed on exit.
const kubeconfigPreamble = `set -eu
kubeconfig=$(mktemp); trap 'rm -f "$kubeconfig"' EXIT
printf '%s' "$KUBECONFIG_DATA" > "$kubeconfig"
`

// KubectlScript is body run with `kubectl --kubeconfig "$kubeconfig"` reaching the cluster: the
// kubeconfig comes from $KUBECONFIG_DATA (it holds no credential: gke-gcloud-auth-plugin
// authenticates), so the user's ~/.kube/config is neither read nor changed.
func KubectlScript(body string) string { return kubeconfigPreamble + body }

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
	}, opts...)
}
