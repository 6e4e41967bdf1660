#!/usr/bin/env bash
set -euo pipefail
# Removes the Private Service Access peering from $NETWORK in $PROJECT on `pulumi destroy`, after
# the Managed Lustre instance is gone, so that the range and the VPC can be deleted (the
# connection itself is ABANDONed by the provider).
#
# It asks Service Networking to delete the connection, retrying while the producer still holds
# the range (that error clears some minutes after the instance is deleted); any other error fails
# the step at once. When the retries run out, it removes the peering from the VPC's side, but only
# when no Managed Lustre instance is left on the network: removing it under a live instance cuts
# that instance off its clients.
#
# Environment: PROJECT, NETWORK (the VPC's name); ATTEMPTS (40) and RETRY_SECONDS (30) bound the
# retries. Every gcloud failure fails the script: a network that cannot be read is not a network
# without the peering.

peering=servicenetworking-googleapis-com
attempts=${ATTEMPTS:-40}
retry_seconds=${RETRY_SECONDS:-30}

# `peerings list` lists networks with their peerings attached; flattening prints one peering a
# line (the network's own name otherwise).
list_peerings() {
  gcloud compute networks peerings list --project="$PROJECT" --network="$NETWORK" \
    --flatten=peerings --format='value(peerings.name)'
}

# Managed Lustre instances in every zone of the project whose network is $NETWORK.
lustre_on_network() {
  gcloud lustre instances list --project="$PROJECT" --location=- \
    --format='value(name,network)' | awk -v suffix="/networks/$NETWORK" \
    'substr($2, length($2) - length(suffix) + 1) == suffix { print $1 }'
}

for ((attempt = 1; attempt <= attempts; attempt++)); do
  peerings=$(list_peerings)
  if ! grep -qx "$peering" <<<"$peerings"; then
    echo "no $peering peering left on $NETWORK"
    exit 0
  fi
  if out=$(gcloud services vpc-peerings delete --service=servicenetworking.googleapis.com \
    --network="$NETWORK" --project="$PROJECT" --quiet 2>&1); then
    echo "deleted the Private Service Access connection of $NETWORK"
    exit 0
  fi
  if ! grep -q 'still using this connection' <<<"$out"; then
    printf '%s\n' "$out" >&2
    echo "deleting the Private Service Access connection of $NETWORK failed (above); not retrying" >&2
    exit 1
  fi
  echo "attempt $attempt of $attempts: the producer still holds the range; retrying in $retry_seconds s" >&2
  sleep "$retry_seconds"
done

instances=$(lustre_on_network)
if [[ -n $instances ]]; then
  echo "not removing the $peering peering from $NETWORK: Managed Lustre instances still use it:" >&2
  mapfile -t names <<<"$instances"
  printf '  %s\n' "${names[@]}" >&2
  echo "delete them (or keep the network), then run pulumi destroy again" >&2
  exit 1
fi
echo "Service Networking still refuses after $attempts attempts and no Lustre instance is left: removing the peering from $NETWORK's side"
gcloud compute networks peerings delete "$peering" --network="$NETWORK" --project="$PROJECT" --quiet
