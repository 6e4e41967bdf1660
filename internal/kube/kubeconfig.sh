#!/usr/bin/env bash
set -euo pipefail
# The start of every kubectl step of `pulumi up`: it writes $KUBECONFIG_DATA to a temporary file
# (removed on exit) and exports KUBECONFIG, so that the step's kubectl reaches the stack's cluster
# and the user's ~/.kube/config is neither read nor changed. The kubeconfig holds no credential:
# gke-gcloud-auth-plugin authenticates.
KUBECONFIG=$(mktemp)
export KUBECONFIG
trap 'rm -f "$KUBECONFIG"' EXIT
printf '%s' "$KUBECONFIG_DATA" >"$KUBECONFIG"
