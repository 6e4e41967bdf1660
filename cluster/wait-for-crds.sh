#!/usr/bin/env bash
set -euo pipefail
# Waits until each custom resource definition in $CRDS exists and is established. GKE installs
# them asynchronously after the cluster is created, and pulumi-kubernetes gives up on "no matches
# for kind" after a few retries (pulumi-kubernetes #1446). Each CRD gets ATTEMPTS (90) tries,
# RETRY_SECONDS (10) apart, to appear, then 300 s to be established. kubectl's other errors are
# printed and retried too (the new cluster's endpoint may still settle), except those no retry
# cures (no credentials, no permission), which fail the step at once.
#
# Then each field in $CRD_FIELDS (`<crd>/<version>:<path>`, e.g.
# `rayjobs.ray.io/v1:spec.backoffLimit`), a field the program sets, must be in that version's
# schema: GKE's Ray add-on runs its own KubeRay, and an older one would drop the field silently
# (the API server prunes unknown fields) instead of failing.
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

for field in ${CRD_FIELDS:-}; do
  crd=${field%%/*}
  rest=${field#*/}
  version=${rest%%:*}
  path=${rest#*:}
  jsonpath="{.spec.versions[?(@.name==\"$version\")].schema.openAPIV3Schema"
  IFS=. read -ra segments <<<"$path"
  for segment in "${segments[@]}"; do
    jsonpath+=".properties.$segment"
  done
  jsonpath+=".type}"
  type=$(kubectl get crd "$crd" -o jsonpath="$jsonpath")
  if [[ -z $type ]]; then
    echo "the cluster's $crd $version has no $path, which this program sets: the Ray add-on of this GKE version runs an older KubeRay than the program is built for (v1.5.0), and would drop the field; upgrade the cluster to a newer GKE version" >&2
    exit 1
  fi
  echo "$crd $version has $path ($type)"
done
