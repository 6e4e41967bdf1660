#!/usr/bin/env bash
set -euo pipefail
# The RayJob's submitter: it submits the run once and returns only when Ray reports it finished.
#
# KubeRay's own submitter follows the job's log once (`ray job logs --follow`) and exits when
# that stream ends; 30 s later KubeRay marks a job that still runs as failed and, with
# backoffLimit, deletes its cluster to retry (ray-operator v1.5.0 rayjob_controller.go,
# DefaultSubmitterFinishedTimeout; kuberay #4921). A stream can end early (a dashboard restart, a
# dropped connection) on a run that lasts days. This one follows the log again while the job
# runs, and exits 0 once it has finished, however it finished: KubeRay then reads the outcome
# from Ray. It exits 1 only when Ray's job API stays silent for UNREACHABLE_SECONDS, so that
# KubeRay counts a failed submission.
#
# Environment: RAY_DASHBOARD_ADDRESS and RAY_JOB_SUBMISSION_ID (set by KubeRay,
# rayjob_controller.go configureSubmitterContainer); ENTRYPOINT and RUNTIME_ENV_JSON (the
# RayJob's entrypoint and runtime environment); UNREACHABLE_SECONDS; POLL_SECONDS; with verl,
# VERIFY_DIR and VERIFY_TREE: the package on the shared volume that the job ships to every node
# (a py_modules entry of RUNTIME_ENV_JSON) is copied off the volume, and the copy, which is what
# is shipped, must hold exactly the files of that git tree (verified_copy, treehash.sh, which
# precedes this script), or nothing is submitted.
address=http://${RAY_DASHBOARD_ADDRESS#http://}
id=$RAY_JOB_SUBMISSION_ID

log() { echo "gke-rl submitter: $*"; }

if [[ -n ${VERIFY_DIR:-} ]]; then
  # The code the job ships to every node is checked by its content, not by the volume's git
  # state: anything that can write the volume could otherwise plant a package that an exclude
  # file hides from `git status`, or a command that git runs (core.fsmonitor). What is checked
  # and shipped is a copy off the volume (verified_copy), which keeps the directory's name (Ray's
  # py_modules makes it the module's name) in place of the runtime environment's entry.
  root=$(mktemp -d)
  log "checking the copy of $VERIFY_DIR that the job ships"
  verified_copy "$root" "$VERIFY_DIR" "$VERIFY_TREE" 2>&1 || exit 1
  checked=${RUNTIME_ENV_JSON//"\"$VERIFY_DIR\""/"\"$root$VERIFY_DIR\""}
  if [[ $checked == "$RUNTIME_ENV_JSON" ]]; then
    echo "the runtime environment does not ship $VERIFY_DIR, the code that was checked: $RUNTIME_ENV_JSON"
    exit 1
  fi
  RUNTIME_ENV_JSON=$checked
fi

# A retried submitter pod finds the job already submitted, as KubeRay's does.
if ! ray job status --address "$address" "$id" >/dev/null 2>&1; then
  # `ray job submit` joins the words after -- with subprocess.list2cmdline, which quotes with
  # double quotes (Ray's dashboard/modules/job/cli.py; shlex.join only since ray-project/ray
  # #63797), and the job's driver runs the line with /bin/sh: a `$`, a backtick or a backslash of
  # the entrypoint (an OmegaConf ${...} interpolation in job.args) would be expanded there before
  # bash reads it. The entrypoint travels base64-encoded instead (letters, digits, +, / and =,
  # which neither joining nor sh changes) and bash reads the decoded text as its script from a
  # pipe of its own, keeping the job's stdin: the framework gets exactly the planned words,
  # whichever way Ray joins them.
  encoded=$(printf '%s' "$ENTRYPOINT" | base64 -w0)
  log "submitting: $ENTRYPOINT"
  ray job submit --address "$address" --submission-id "$id" --no-wait \
    --runtime-env-json "$RUNTIME_ENV_JSON" -- bash -c "bash <(base64 -d <<<$encoded)"
fi

# running_status starts the line Ray's CLI prints for a job that runs (cli.py, _log_job_status),
# after `ray job status` and at the end of a `ray job logs --follow` stream.
running_status="Status for job '$id': "

# job_state prints succeeded, failed, stopped, running or unknown, from the line `ray job status`
# prints.
job_state() {
  local out
  if ! out=$(ray job status --address "$address" "$id" 2>&1); then
    echo unknown
    return
  fi
  case $out in
  *"Job '$id' succeeded"*) echo succeeded ;;
  *"Job '$id' failed"*) echo failed ;;
  *"Job '$id' was stopped"*) echo stopped ;;
  *"$running_status"*) echo running ;;
  *) echo unknown ;;
  esac
}

# follow_log prints the job's log from the line after the first $printed, and sets printed to the
# lines of log the stream held. `ray job logs --follow` prints the log from its start, then the
# job's status (cli.py, _tail_logs then _log_job_status: for a running job, a line `Status for
# job '<id>': RUNNING` and its message): a stream followed again skips what the last one printed,
# so that the log the alerts read holds each line once.
printed=0
follow_log() {
  local line n=0 status_at=0
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    if ((n > printed)); then
      printf '%s\n' "$line"
    fi
    if ((status_at == 0)) && [[ $line == "$running_status"* ]]; then
      status_at=$n
    fi
  done < <(ray job logs --address "$address" --follow "$id" || true)
  if ((status_at > 0)); then
    printed=$((status_at - 1))
  elif ((n > printed)); then
    printed=$n
  fi
}

answered=$SECONDS
while :; do
  follow_log
  state=$(job_state)
  case $state in
  succeeded | failed | stopped)
    exit 0
    ;;
  running)
    answered=$SECONDS
    log "the log stream ended while the job runs; following it again in ${POLL_SECONDS}s from line $((printed + 1))"
    ;;
  *)
    if ((SECONDS - answered >= UNREACHABLE_SECONDS)); then
      log "Ray's job API has not answered for ${UNREACHABLE_SECONDS}s; giving up"
      exit 1
    fi
    log "Ray's job API does not answer; trying again in ${POLL_SECONDS}s"
    ;;
  esac
  sleep "$POLL_SECONDS"
done
