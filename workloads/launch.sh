#!/usr/bin/env bash
set -euo pipefail
# An experiment's launch, on a CPU node, once its RayJob exists: the RayJob is created suspended
# and outside the queue, and this puts it in the queue (the LocalQueue's label, with which Kueue
# makes its workload and admits it when its GPUs fit), unless the experiment finished before with
# a budget at least BUDGET. A finished one stays suspended and out of the queue: KubeRay creates
# no Ray cluster for a suspended RayJob, so a change common to every experiment (an image, a
# release of this program) brings up no GPU node for it. The RayJob is annotated with what was
# decided either way.
#
# Environment: EXPERIMENT (its name, in every line this script logs), CHECKPOINT_DIR and BUDGET
# (trained.sh), NAMESPACE and RAYJOB (the RayJob), QUEUE_LABEL and QUEUE (the label Kueue reads
# and the LocalQueue), DECISION_ANNOTATION (where the decision is written), and the pod's API
# access: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (set by the kubelet), the service
# account's token and CA in SERVICE_ACCOUNT_DIR (the kubelet's mount unless set).

log() { echo "gke-rl launch $EXPERIMENT: $*"; }

if already_trained; then
  decision="finished before (maxSteps and epochs $(<"$(trained_record)"), now $BUDGET): not queued, it holds no GPU"
  label_value=
else
  decision="queued in $QUEUE (budget $BUDGET)"
  label_value=$QUEUE
fi

# One merge patch of the RayJob's metadata: the label only when it is queued. The pod's account
# may patch only the stack's queued RayJobs (queue.LauncherRole).
DECISION=$decision LABEL_VALUE=$label_value python3 - <<'PY'
import json, os, ssl, sys, urllib.error, urllib.request

sa = os.environ.get("SERVICE_ACCOUNT_DIR") or "/var/run/secrets/kubernetes.io/serviceaccount"
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
if ":" in host:
    host = "[" + host + "]"
with open(os.path.join(sa, "token")) as f:
    token = f.read().strip()
metadata = {"annotations": {os.environ["DECISION_ANNOTATION"]: os.environ["DECISION"]}}
if os.environ["LABEL_VALUE"]:
    metadata["labels"] = {os.environ["QUEUE_LABEL"]: os.environ["LABEL_VALUE"]}
url = "https://%s:%s/apis/ray.io/v1/namespaces/%s/rayjobs/%s?fieldManager=gke-rl-launch" % (
    host, port, os.environ["NAMESPACE"], os.environ["RAYJOB"])
request = urllib.request.Request(url, method="PATCH", data=json.dumps({"metadata": metadata}).encode(),
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": "application/merge-patch+json"})
context = ssl.create_default_context(cafile=os.path.join(sa, "ca.crt"))
try:
    urllib.request.urlopen(request, context=context, timeout=30).close()
except urllib.error.HTTPError as e:
    sys.exit("the API server refused the RayJob's patch: %s %s" % (e.code, e.read().decode(errors="replace")[:2000]))
except OSError as e:
    sys.exit("the API server is unreachable: %s" % e)
PY
log "$decision"
