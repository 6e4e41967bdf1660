#!/usr/bin/env bash
set -euo pipefail
# Installs Kueue's release ($KUEUE_MANIFEST, the program's gzipped copy of version
# $KUEUE_VERSION's manifest, held to $KUEUE_MANIFEST_SHA256) unless the cluster runs a Kueue
# already, narrows its webhooks to the queue's namespaces, runs its manager on
# $KUEUE_REPLICAS replicas and waits until it serves. A Kueue of someone else's is used as it is,
# once it is known to serve what the queue needs: the kueue.x-k8s.io/v1beta2 API and the RayJob
# integration. The release's own is applied again when the program's version changes.
crd=clusterqueues.kueue.x-k8s.io
ns=$KUEUE_NAMESPACE
deploy=$KUEUE_DEPLOYMENT
installed_by=gke-rl/installed-by
label_key=${NAMESPACE_LABEL%%=*}
label_value=${NAMESPACE_LABEL#*=}

# narrow_webhooks: the release's webhooks for pods and jobs (every kind but Kueue's own) select
# the namespaces labelled $NAMESPACE_LABEL instead of all but two. They fail closed: as the
# release ships them, a Kueue manager that is down refuses every pod and Job of the cluster. A
# JSON patch by index, each index's name tested, so that a list that changed in between fails
# the patch instead of narrowing another webhook.
# With "check", an identity that cannot read them is told so and the step goes on: the install
# that an administrator ran narrowed them.
narrow_webhooks() {
  local kind config lines name selected groups patch i
  for kind in mutating validating; do
    config=kueue-$kind-webhook-configuration
    if ! lines=$(kubectl get "${kind}webhookconfiguration" "$config" \
      -o "jsonpath={range .webhooks[*]}{.name}{\"|\"}{.namespaceSelector.matchLabels.$label_key}{\"|\"}{.rules[*].apiGroups[*]}{\"\\n\"}{end}" 2>&1); then
      if [ "${1:-}" = check ]; then
        echo "cannot read ${kind}webhookconfiguration $config ($lines): whether Kueue's webhooks still select only the namespaces labelled $NAMESPACE_LABEL is not checked; an administrator's pulumi up checks it" >&2
        return 0
      fi
      echo "cannot read ${kind}webhookconfiguration $config: $lines" >&2
      return 1
    fi
    patch='' i=0
    while IFS='|' read -r name selected groups; do
      [ -n "$name" ] || continue
      if [[ " $groups " != *" kueue.x-k8s.io "* && "$selected" != "$label_value" ]]; then
        patch+="${patch:+,}{\"op\":\"test\",\"path\":\"/webhooks/$i/name\",\"value\":\"$name\"}"
        patch+=",{\"op\":\"add\",\"path\":\"/webhooks/$i/namespaceSelector\",\"value\":{\"matchLabels\":{\"$label_key\":\"$label_value\"}}}"
      fi
      i=$((i + 1))
    done <<<"$lines"
    if [ -n "$patch" ]; then
      kubectl patch "${kind}webhookconfiguration" "$config" --type=json -p "[$patch]" >/dev/null
      echo "Kueue's $kind webhooks for pods and jobs select only the namespaces labelled $NAMESPACE_LABEL"
    fi
  done
}

# spread_manager: $KUEUE_REPLICAS replicas serve the webhooks, under a disruption budget of one,
# so that a drained node or a crashed pod leaves them served.
spread_manager() {
  local selector
  kubectl -n "$ns" scale deployment "$deploy" --replicas="$KUEUE_REPLICAS" >/dev/null
  selector=$(kubectl -n "$ns" get deployment "$deploy" -o 'jsonpath={.spec.selector.matchLabels}')
  printf '{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "kueue-manager-pdb", "namespace": "%s"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": %s}}}\n' "$ns" "$selector" |
    kubectl apply --server-side -f - >/dev/null
}

# sha256 prints the SHA-256 of its input: coreutils' sha256sum, or macOS's shasum.
sha256() {
  if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi | cut -d' ' -f1
}

# The manifest is checked before anything else: a step that cannot apply what the program was
# built with changes nothing, whatever the cluster runs. The path is the repository's (pulumi up
# runs its commands in the program's directory).
if [ ! -r "$KUEUE_MANIFEST" ]; then
  echo "cannot read Kueue's manifest $KUEUE_MANIFEST in $(pwd): run pulumi up in the repository's root, where Pulumi.yaml is" >&2
  exit 1
fi
sum=$(sha256 <"$KUEUE_MANIFEST")
if [ "$sum" != "$KUEUE_MANIFEST_SHA256" ]; then
  echo "Kueue's manifest $KUEUE_MANIFEST has SHA-256 $sum, not $KUEUE_MANIFEST_SHA256, the one this program was built with: nothing is installed; restore the file (git checkout -- $KUEUE_MANIFEST)" >&2
  exit 1
fi

# The manifest is read once, into a file of the step's own: what is applied, and what a failed
# install removes, is that one copy.
manifest=$(mktemp)
# created lists the objects a first install made (kind/name, all of them absent before it).
created=()
fresh=false

# A first install that fails is removed, webhooks first: left behind, its webhooks would refuse
# the queue's pods and jobs with no manager to answer them. Only what it created goes: an object
# of the manifest that existed before (a namespace kueue-system of someone's, say) stays. The next
# `pulumi up` installs again.
remove_failed_install() {
  local status=$? name
  if [ "$status" -ne 0 ] && [ "$fresh" = true ] && [ "${#created[@]}" -gt 0 ]; then
    echo "the install of Kueue $KUEUE_VERSION failed: removing what it created (the next pulumi up installs it again)" >&2
    for name in "${created[@]}"; do
      if [[ $name == *webhookconfiguration* ]]; then
        kubectl delete "$name" --ignore-not-found >&2 || true
      fi
    done
    for name in "${created[@]}"; do
      if [[ $name != *webhookconfiguration* ]]; then
        kubectl -n "$ns" delete "$name" --ignore-not-found --wait=false >&2 || true
      fi
    done
  fi
  # This trap replaces the kubeconfig preamble's: its file goes here too.
  rm -f "$manifest" "$KUBECONFIG"
  exit "$status"
}
trap remove_failed_install EXIT

# unreadable WHAT OUTPUT fails the step: what it cannot read, it cannot judge. (Taking an
# unreadable Kueue for someone else's would skip an upgrade and report success.)
unreadable() {
  echo "cannot read $1 ($2): the install step cannot tell whether the cluster's Kueue is this program's, to upgrade, or another's, to check; give the identity that runs pulumi up read access to namespace $ns (docs/ci.md)" >&2
  exit 1
}

# --ignore-not-found: no CRD prints nothing and succeeds; any other failure (a refusal, an
# unreachable server) fails the step instead of passing for a cluster without Kueue.
found=$(kubectl get crd "$crd" --ignore-not-found -o name 2>&1) || unreadable "customresourcedefinition $crd" "$found"
if [ -n "$found" ]; then
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
    # A list item of its own, not the text anywhere (a comment names it too).
    if [ -n "$config" ] && ! grep -qE '^[[:space:]]*-[[:space:]]*"?ray\.io/rayjob"?[[:space:]]*$' <<<"$config"; then
      echo "the cluster's Kueue ($ns/kueue-manager-config) does not manage RayJobs: add \"ray.io/rayjob\" to integrations.frameworks and restart its manager" >&2
      exit 1
    fi
    echo "the cluster runs a Kueue already (API $versions): using it"
    exit 0
  fi
  running=$(kubectl -n "$ns" get deployment "$deploy" -o 'jsonpath={.spec.template.spec.containers[?(@.name=="manager")].image}')
  if [ "$running" = "$KUEUE_IMAGE" ]; then
    echo "Kueue $KUEUE_VERSION is installed ($owner)"
    # Webhooks widened since (by hand, or by an apply of the release) are narrowed again.
    narrow_webhooks check
    exit 0
  fi
else
  fresh=true
fi

echo "installing Kueue $KUEUE_VERSION from $KUEUE_MANIFEST"
gzip -dc "$KUEUE_MANIFEST" >"$manifest"
if [ "$fresh" = true ]; then
  mapfile -t all < <(kubectl create --dry-run=client -o name -f "$manifest")
  existing=$(kubectl -n "$ns" get -f "$manifest" --ignore-not-found -o name 2>&1) ||
    unreadable "the objects of Kueue's manifest" "$existing"
  for name in "${all[@]}"; do
    # -o name of get and of create name a kind by its resource and group alike.
    grep -qxF "$name" <<<"$existing" || created+=("$name")
  done
fi
# Server-side: the CRDs are larger than client-side apply's annotation allows.
kubectl apply --server-side --force-conflicts -f "$manifest"
kubectl -n "$ns" annotate --overwrite deployment "$deploy" "$installed_by=$STACK_NAMESPACE"
# Before the manager is waited for: the apply gave its webhooks the release's reach.
narrow_webhooks
spread_manager
# The manager is ready once its webhooks serve (cmd/kueue/main.go's readiness check): until
# then the API server refuses the queue's objects.
kubectl -n "$ns" rollout status "deployment/$deploy" --timeout="${ROLLOUT_TIMEOUT:-600s}"
running=$(kubectl -n "$ns" get deployment "$deploy" -o 'jsonpath={.spec.template.spec.containers[?(@.name=="manager")].image}')
if [ "$running" != "$KUEUE_IMAGE" ]; then
  echo "the manifest at $KUEUE_MANIFEST runs $running, not $KUEUE_IMAGE" >&2
  exit 1
fi
