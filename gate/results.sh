#!/usr/bin/env bash
set -euo pipefail
# Prints the result lines (those that start with $PREFIX) of every pod of the Jobs in $JOBS, in
# $NAMESPACE, for the stack output gateResults. A kubectl that fails fails the step; a pod
# without such a line adds nothing.
for job in $JOBS; do
  logs=$(kubectl -n "$NAMESPACE" logs -l "batch.kubernetes.io/job-name=$job" --tail=-1)
  grep "^$PREFIX" <<<"$logs" || true
done
