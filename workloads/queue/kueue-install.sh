#!/usr/bin/env bash
set -euo pipefail
# Installs Kueue's release ($KUEUE_MANIFEST, version $KUEUE_VERSION) unless the cluster runs a
# Kueue already, and waits until its manager serves. A Kueue of someone else's is used as it is,
# once it is known to serve what the queue needs: the kueue.x-k8s.io/v1beta2 API and the RayJob
# integration. The release's own is applied again when the program's version changes.
crd=clusterqueues.kueue.x-k8s.io
ns=$KUEUE_NAMESPACE
deploy=$KUEUE_DEPLOYMENT
installed_by=gke-rl/installed-by

# unreadable WHAT OUTPUT fails the step: what it cannot read, it cannot judge. (Taking an
# unreadable Kueue for someone else's would skip an upgrade and report success.)
unreadable() {
  echo "cannot read $1 ($2): the install step cannot tell whether the cluster's Kueue is this program's, to upgrade, or another's, to check; give the identity that runs pulumi up read access to namespace $ns (docs/ci.md)" >&2
  exit 1
}

if kubectl get crd "$crd" -o name >/dev/null 2>&1; then
  # --ignore-not-found: no deployment prints nothing and succeeds; a refusal fails.
  owner=$(kubectl -n "$ns" get deployment "$deploy" --ignore-not-found -o "jsonpath={.metadata.annotations.gke-rl/installed-by}" 2>&1) ||
    unreadable "deployment $ns/$deploy" "$owner"
  if [ -z "$owner" ]; then
    versions=$(kubectl get crd "$crd" -o 'jsonpath={.spec.versions[?(@.served==true)].name}')
    if ! grep -qw v1beta2 <<<"$versions"; then
      echo "the cluster runs a Kueue whose API serves $versions, not kueue.x-k8s.io/v1beta2, which the queue's objects use: upgrade it to $KUEUE_VERSION or later, or remove it and run pulumi up again to install $KUEUE_VERSION" >&2
      exit 1
    fi
    config=$(kubectl -n "$ns" get configmap kueue-manager-config --ignore-not-found -o 'jsonpath={.data.controller_manager_config\.yaml}' 2>&1) ||
      unreadable "configmap $ns/kueue-manager-config" "$config"
    if [ -n "$config" ] && ! grep -q 'ray.io/rayjob' <<<"$config"; then
      echo "the cluster's Kueue ($ns/kueue-manager-config) does not manage RayJobs: add \"ray.io/rayjob\" to integrations.frameworks and restart its manager" >&2
      exit 1
    fi
    echo "the cluster runs a Kueue already (API $versions): using it"
    exit 0
  fi
  running=$(kubectl -n "$ns" get deployment "$deploy" -o 'jsonpath={.spec.template.spec.containers[?(@.name=="manager")].image}')
  if [ "$running" = "$KUEUE_IMAGE" ]; then
    echo "Kueue $KUEUE_VERSION is installed ($owner)"
    exit 0
  fi
fi

echo "installing Kueue $KUEUE_VERSION from $KUEUE_MANIFEST"
# Server-side: the CRDs are larger than client-side apply's annotation allows.
kubectl apply --server-side --force-conflicts -f "$KUEUE_MANIFEST"
kubectl -n "$ns" annotate --overwrite deployment "$deploy" "$installed_by=$STACK_NAMESPACE"
# The manager is ready once its webhooks serve (cmd/kueue/main.go's readiness check): until
# then the API server refuses the queue's objects.
kubectl -n "$ns" rollout status "deployment/$deploy" --timeout="${ROLLOUT_TIMEOUT:-600s}"
running=$(kubectl -n "$ns" get deployment "$deploy" -o 'jsonpath={.spec.template.spec.containers[?(@.name=="manager")].image}')
if [ "$running" != "$KUEUE_IMAGE" ]; then
  echo "the manifest at $KUEUE_MANIFEST runs $running, not $KUEUE_IMAGE" >&2
  exit 1
fi
