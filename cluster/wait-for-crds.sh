#!/usr/bin/env bash
# Waits until each custom resource definition in $CRDS exists and is established. GKE installs
# them asynchronously after the cluster is created, and pulumi-kubernetes gives up on "no matches
# for kind" after a few retries (pulumi-kubernetes #1446). Each CRD gets ATTEMPTS (90) tries,
# RETRY_SECONDS (10) apart, to appear, then 300 s to be established. kubectl's other errors are
# printed and retried too (the new cluster's endpoint may still settle), except those no retry
# cures (no credentials, no permission), which fail the step at once.
set -euo pipefail
for crd in $CRDS; do
  for ((attempt = 1; ; attempt++)); do
    if out=$(kubectl get crd "$crd" -o name 2>&1); then
      break
    fi
    if grep -qE 'Unauthorized|Forbidden|executable .* not found|getting credentials' <<<"$out"; then
      printf '%s\n' "$out" >&2
      exit 1
    fi
    if ! grep -q 'NotFound' <<<"$out"; then
      printf '%s\n' "$out" >&2
    fi
    if ((attempt >= ${ATTEMPTS:-90})); then
      echo "CRD $crd did not appear after $attempt attempts" >&2
      exit 1
    fi
    echo "waiting for CRD $crd ($attempt)"
    sleep "${RETRY_SECONDS:-10}"
  done
  kubectl wait --for condition=established --timeout=300s "crd/$crd"
done
