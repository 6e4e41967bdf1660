#!/usr/bin/env bash
set -euo pipefail
# The RayJob's entrypoint, on the Ray head: runs the framework's command (the arguments) in
# WORKDIR, in attempts.
#
# Before each attempt it clears what an attempt cut short (a spot preemption, a failed node)
# left on the shared volume that the framework would otherwise trust, so that every attempt
# starts from a state the framework accepts. Each change is logged.
#
# A failed attempt is retried here, up to ATTEMPTS attempts in all, once the Ray cluster has its
# GPUS again: that is how a run on the long-lived cluster of reservation or on-demand capacity
# survives a GPU error, an auto-repair or host maintenance. (KubeRay cannot retry such a run: a
# RayJob's retry deletes its cluster, and that cluster is shared, ray-operator v1.5.0
# rayjob_controller.go, the Retrying state's deleteClusterResources.) A run with a cluster of its
# own (spot, flex-start) has ATTEMPTS=1: KubeRay retries it on a new cluster.
#
# Environment: EXPERIMENT (job.name, in every line this script logs), FRAMEWORK (nemo-rl or
# verl), CHECKPOINT_DIR (the experiment's checkpoints); with verl, RESUME_FROM (job.resumeFrom's
# checkpoint directory, or empty): while CHECKPOINT_DIR holds no checkpoint, the attempt starts
# from RESUME_FROM's newest instead of step 0;
# KEEP_CHECKPOINTS (job.keepCheckpoints); MODEL_SOURCE (the data preparation's download) and
# MODEL_DIR (the copy the framework loads, which this script makes and checks: promote_model);
# with NeMo RL, CONVERTED_DIR (where it converts the Hugging Face weights to Megatron's format on
# its first attempt, in CHECKPOINT_DIR); WORKDIR; ATTEMPTS; GPUS (the
# run's GPUs); GPU_WAIT_SECONDS (how long a retry waits for them); PAUSE_SECONDS (before a retry
# looks, so that Ray has noticed the lost node); POLL_SECONDS (between looks);
# BUDGET ("<job.maxSteps> <job.epochs>", 0 for the framework's own) is what the run trains to:
# a run that succeeds records it in CHECKPOINT_DIR, and a later one of the same experiment (a
# RayJob replaced by a change common to every experiment, an upgrade, a label) trains nothing
# unless the budget grew, and then continues from the newest checkpoint to the new one;
# RUN_DEADLINE_SECONDS (0: none) bounds the run from this script's start, its attempts included:
# no attempt starts after it, and the attempt running then is stopped (SIGTERM, then SIGKILL a
# minute later), which ends the Ray job. On the long-lived cluster this is the run's only
# deadline: KubeRay's activeDeadlineSeconds would mark the RayJob Failed and stop nothing
# (ray-operator v1.5.0 rayjob_controller.go: the Failed state deletes nothing for a RayJob with
# clusterSelector, and the Ray job is stopped only when the RayJob is deleted).
shopt -s nullglob

log() { echo "gke-rl run $EXPERIMENT: $*"; }

# now prints the time in seconds. The deadlines below read date(1), not bash's SECONDS, so that a
# test can hold the clock and move it at the events it stages, whatever the machine's load.
now() { date +%s; }
started=$(now)

# Exit status of a run whose job.resumeFrom holds no checkpoint to start from.
no_resume_status=25
# Exit status of a verl run whose tracker names a save that is gone, with no earlier one.
lost_status=27

# step_number prints the number at the end of a checkpoint directory's name.
step_number() { echo "${1##*_}"; }

nemo_rl() {
  # NeMo RL v0.5.0 saves into tmp_step_N and renames it to step_N; when step_N exists it renames
  # that to old_step_N first and deletes it after (nemo_rl/utils/checkpoint.py, finalize_checkpoint).
  local old step tmp
  for old in "$CHECKPOINT_DIR"/old_step_*; do
    step="$CHECKPOINT_DIR/step_$(step_number "$old")"
    if [[ -d $step ]]; then
      rm -rf "$old"
      log "removed $old: its step was saved again"
    else
      mv "$old" "$step"
      log "restored $step from $old: a save was cut short between its two renames"
    fi
  done
  for tmp in "$CHECKPOINT_DIR"/tmp_step_*; do
    rm -rf "$tmp"
    log "removed $tmp: a save cut short"
  done
  # The conversion is skipped whenever iter_0000000 exists in CONVERTED_DIR
  # (megatron_policy_worker.py), complete or not. Until a checkpoint exists nothing shows that
  # the conversion finished: convert again.
  local steps=("$CHECKPOINT_DIR"/step_*)
  if ((${#steps[@]} == 0)) && [[ -e $CONVERTED_DIR ]]; then
    rm -rf "$CONVERTED_DIR"
    log "removed $CONVERTED_DIR: no checkpoint yet, so its conversion may have been cut short; it runs again"
  fi
}

verl() {
  # verl v0.6.0 saves global_step_N, then writes N to latest_checkpointed_iteration.txt, which is
  # what resume_mode=auto reads (verl/trainer/ppo/ray_trainer.py, _save_checkpoint); its rotation
  # (max_actor_ckpt_to_keep) counts only the current attempt's saves.
  local tracker="$CHECKPOINT_DIR/latest_checkpointed_iteration.txt" latest=-1 dir n
  if [[ -f $tracker ]]; then
    latest=$(tr -dc '0-9' <"$tracker")
    if [[ -z $latest ]]; then
      # verl writes the tracker after the save it names is complete, opening it for writing
      # first: an empty one was cut short while naming the newest save, which is complete.
      # Left empty, verl fails every attempt reading it (verl/utils/checkpoint/
      # checkpoint_manager.py, find_latest_ckpt_path: int("")).
      latest=-1
      for dir in "$CHECKPOINT_DIR"/global_step_*; do
        n=$(step_number "$dir")
        if ((n > latest)); then latest=$n; fi
      done
      if ((latest >= 0)); then
        echo "$latest" >"$tracker"
        log "rewrote $tracker, which was empty, with step $latest: the newest save, complete since verl names a save only after it"
      else
        rm -f "$tracker"
        log "removed $tracker, which was empty, with no save to name: the run starts from its first step"
      fi
    fi
  fi
  if ((latest >= 0)) && [[ ! -d $CHECKPOINT_DIR/global_step_$latest ]]; then
    # The tracker names a save that is gone: verl removes its oldest save before it writes the
    # next (fsdp_checkpoint_manager.py, save_checkpoint), and a deleted directory is not put
    # back. verl would then print "Training from scratch" and start from step 0
    # (ray_trainer.py, _load_checkpoint). Name the newest earlier save instead, complete since
    # saves come in order and the tracker names one only once it is; with none, stop.
    local named=$latest
    latest=-1
    for dir in "$CHECKPOINT_DIR"/global_step_*; do
      n=$(step_number "$dir")
      if ((n < named && n > latest)); then latest=$n; fi
    done
    if ((latest < 0)); then
      log "$tracker names step $named, whose directory global_step_$named is gone, and no earlier save remains: refused, so as not to train from step 0 over this experiment; allowed: restore global_step_$named, start a new experiment (another job.name), or remove $tracker to start this one over"
      exit "$lost_status"
    fi
    echo "$latest" >"$tracker"
    log "rewrote $tracker, which named step $named, whose directory is gone, with step $latest: the newest complete save before it"
  fi
  local kept=()
  for dir in "$CHECKPOINT_DIR"/global_step_*; do
    n=$(step_number "$dir")
    if ((n > latest)); then
      rm -rf "$dir"
      log "removed $dir: a save cut short (the last complete one is step $latest)"
    else
      kept+=("$n")
    fi
  done
  if ((${#kept[@]} > KEEP_CHECKPOINTS)); then
    mapfile -t kept < <(printf '%s\n' "${kept[@]}" | sort -rn)
    for n in "${kept[@]:KEEP_CHECKPOINTS}"; do
      rm -rf "$CHECKPOINT_DIR/global_step_$n"
      log "removed $CHECKPOINT_DIR/global_step_$n: beyond the newest $KEEP_CHECKPOINTS (job.keepCheckpoints)"
    done
  fi
}

# verl_resume_from sets args to the framework's arguments, with the other experiment's newest
# checkpoint in place of resume_mode=auto while this experiment has none of its own: verl v0.6.0
# loads trainer.resume_from_path (a global_step_N directory) on every start with
# resume_mode=resume_path (verl/trainer/ppo/ray_trainer.py, _load_checkpoint), so it is given
# only until the experiment has saved once; then auto resumes from its own.
verl_resume_from() {
  args=("$@")
  [[ -n ${RESUME_FROM:-} && ! -f $CHECKPOINT_DIR/latest_checkpointed_iteration.txt ]] || return 0
  local step i found=0
  step=$(tr -dc '0-9' <"$RESUME_FROM/latest_checkpointed_iteration.txt" 2>/dev/null) || true
  if [[ -z $step || ! -d $RESUME_FROM/global_step_$step ]]; then
    log "job.resumeFrom: $RESUME_FROM holds no complete checkpoint (latest_checkpointed_iteration.txt names none); allowed: an experiment that has saved one"
    exit "$no_resume_status"
  fi
  for i in "${!args[@]}"; do
    if [[ ${args[i]} == trainer.resume_mode=auto ]]; then
      args[i]=trainer.resume_mode=resume_path
      found=1
    fi
  done
  if ((found == 0)); then
    log "job.resumeFrom: the command has no trainer.resume_mode=auto to replace"
    exit "$no_resume_status"
  fi
  args+=("trainer.resume_from_path=$RESUME_FROM/global_step_$step")
  log "starts from $RESUME_FROM/global_step_$step (job.resumeFrom): $CHECKPOINT_DIR has no checkpoint yet"
}

# Exit status of a NeMo RL run whose optimizer settings changed since its newest checkpoint.
changed_status=28

# optimizer_record is where the experiment records OPTIMIZER, the settings its checkpoints'
# optimizer and LR scheduler state hold (line 1), and the step up to which its checkpoints were
# made with other settings (line 2; -1: none). Only the training pods write CHECKPOINT_DIR.
optimizer_record=$CHECKPOINT_DIR/.gke-rl-optimizer
# verl_fresh_optimizer resumes verl's weights alone (workloads.VerlFreshOptimizer).
verl_fresh_optimizer='actor_rollout_ref.actor.checkpoint.load_contents=[model]'

# newest_step prints the experiment's newest complete checkpoint's step, -1 without one (after
# resume_prep, which leaves only complete ones).
newest_step() {
  local latest=-1 n dir
  if [[ $FRAMEWORK == verl ]]; then
    n=$(tr -dc '0-9' <"$CHECKPOINT_DIR/latest_checkpointed_iteration.txt" 2>/dev/null) || true
    if [[ -n $n && -d $CHECKPOINT_DIR/global_step_$n ]]; then latest=$n; fi
  else
    for dir in "$CHECKPOINT_DIR"/step_*; do
      n=$(step_number "$dir")
      if ((n > latest)); then latest=$n; fi
    done
  fi
  echo "$latest"
}

# optimizer_settings applies a change of OPTIMIZER to the checkpoint the attempt resumes from:
# a resume restores the optimizer's and scheduler's state, the old learning rate with it
# (workloads/optimizer.go cites both frameworks). verl then loads the weights alone
# (load_contents=[model]) until the experiment has saved with the new settings; NeMo RL, which
# has no such switch, is refused. It appends to args.
optimizer_settings() {
  [[ -v OPTIMIZER ]] || return 0 # an entrypoint older than this script
  local latest recorded="" since=-1 source_record
  latest=$(newest_step)
  if [[ -f $optimizer_record ]]; then
    { IFS= read -r recorded && read -r since; } <"$optimizer_record" || true
    [[ $since =~ ^-?[0-9]+$ ]] || since=-1
  fi
  if ((latest < 0)); then
    printf '%s\n-1\n' "$OPTIMIZER" >"$optimizer_record"
    source_record=${RESUME_FROM:-}/.gke-rl-optimizer
    if [[ " ${args[*]} " == *" trainer.resume_mode=resume_path "* && -f $source_record && $(head -n 1 "$source_record") != "$OPTIMIZER" ]]; then
      args+=("$verl_fresh_optimizer")
      log "starts from $RESUME_FROM's weights with a fresh optimizer and LR scheduler: its optimizer settings were '$(head -n 1 "$source_record")', this experiment's are '$OPTIMIZER'"
    fi
    return 0
  fi
  if [[ ! -f $optimizer_record ]]; then
    printf '%s\n-1\n' "$OPTIMIZER" >"$optimizer_record"
    log "no record of the optimizer settings of step $latest (saved before gke-rl recorded them): resumes its optimizer and scheduler as saved; the settings are recorded from now on"
    return 0
  fi
  if [[ $recorded != "$OPTIMIZER" ]]; then
    if [[ $FRAMEWORK != verl ]]; then
      log "the optimizer settings changed since step $latest (were '$recorded', now '$OPTIMIZER'), and NeMo RL restores the checkpoint's optimizer and scheduler, so the new values would not apply: refused; allowed: a new experiment (another job.name) from step 0, or the old values back"
      exit "$changed_status"
    fi
    since=$latest
    printf '%s\n%s\n' "$OPTIMIZER" "$since" >"$optimizer_record"
    log "the optimizer settings changed since step $latest (were '$recorded', now '$OPTIMIZER')"
  fi
  if ((since >= 0 && latest <= since)); then
    args+=("$verl_fresh_optimizer")
    log "resumes the weights of step $latest with a fresh optimizer and LR scheduler at the new settings (its own were made with the old ones)"
  fi
}

# Exit status of a run whose model or checkpoint path is refused.
refused_status=26

# own_path PATH ends the run unless PATH, whether it exists yet or not, is not a symbolic link
# and is reached through none. Everything under the checkpoints' tree is written by the training pods
# alone; a link there (GCS FUSE shows an object with gcsfuse_symlink_target metadata as one)
# would send the checkpoints, or the model the run loads, where other pods write.
own_path() {
  if [[ -L $1 ]] || [[ $(realpath -m -- "$1") != "$1" ]]; then
    log "$1 is a symbolic link, or is reached through one: refused (the training pods alone write it); remove the link on the volume"
    exit "$refused_status"
  fi
}

# The files of a Hugging Face model that the frameworks load: weights in safetensors (no pickle),
# the configurations, the tokenizer's files and chat templates. No Python, no pickle.
model_files=('*.safetensors' '*.json' '*.txt' '*.model' '*.tiktoken' '*.jinja')

# check_model DIR fails, naming what it found, unless DIR holds only directories and plain
# files of model_files, safetensors weights among them, and JSON files without an auto_map (which
# would make transformers import Python from DIR: NeMo RL loads every model with
# trust_remote_code=True).
check_model() {
  local dir=$1 odd found pattern not=()
  odd=$(find "$dir" -mindepth 1 ! -type f ! -type d -print -quit)
  if [[ -n $odd ]]; then
    log "$odd is not a plain file: refused (a model holds plain files)"
    return 1
  fi
  for pattern in "${model_files[@]}"; do
    not+=(! -name "$pattern")
  done
  odd=$(find "$dir" -type f "${not[@]}" -print -quit)
  if [[ -n $odd ]]; then
    log "$odd is not a model file: refused (allowed: ${model_files[*]})"
    return 1
  fi
  found=$(find "$dir" -type f -name '*.safetensors' -print -quit)
  if [[ -z $found ]]; then
    log "$MODEL_SOURCE has no safetensors weights: refused (the run loads no pickled weights); allowed: a model whose repository has .safetensors files"
    return 1
  fi
  # JSON's own parser, not a pattern: a key can be written with escapes ("\u0061uto_map").
  found=$(python3 -I -c '
import json, pathlib, sys
def keys(v):
    if isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from keys(x)
    elif isinstance(v, list):
        for x in v:
            yield from keys(x)
for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.json")):
    try:
        doc = json.loads(p.read_text())
    except ValueError:
        print(f"{p} is not JSON")
        break
    if "auto_map" in keys(doc):
        print(f"{p} has an auto_map (code the model brings)")
        break
' "$dir") || found="$dir cannot be read"
  if [[ -n $found ]]; then
    log "$found: refused (the run imports no Python from a model); allowed: a model that transformers supports without remote code"
    return 1
  fi
}

# promote_model makes MODEL_DIR, the model the framework loads, once for every experiment of the
# model: a copy of MODEL_SOURCE's model files (model_files), made beside it under a name of this
# experiment's own, checked (check_model) and renamed into place. The checks hold afterwards:
# only the training pods write under the checkpoints. A copy in place (another experiment's, or
# this one's last attempt) is checked again.
promote_model() {
  local partial="$MODEL_DIR.partial-$EXPERIMENT" name f pattern args=()
  own_path "$MODEL_DIR"
  mkdir -p "$(dirname "$MODEL_DIR")"
  if [[ -e $MODEL_DIR ]]; then
    check_model "$MODEL_DIR" || exit "$refused_status"
    return 0
  fi
  if [[ ! -e $MODEL_SOURCE.gke-rl-complete ]]; then
    log "$MODEL_SOURCE is not complete (no $MODEL_SOURCE.gke-rl-complete): the data preparation has not finished it"
    exit "$refused_status"
  fi
  own_path "$MODEL_SOURCE"
  name=$(find "$MODEL_SOURCE" -mindepth 1 ! -type f ! -type d -print -quit)
  if [[ -n $name ]]; then
    log "$name is not a plain file: refused (a model holds plain files); run the data preparation again"
    exit "$refused_status"
  fi
  rm -rf "$partial"
  mkdir "$partial"
  for pattern in "${model_files[@]}"; do
    args+=(-o -name "$pattern")
  done
  # Plain files only (find does not follow links); cp -P copies a file swapped for a link
  # meanwhile as the link, which check_model then refuses.
  while IFS= read -r -d '' name; do
    f=${name#./}
    mkdir -p "$partial/$(dirname "$f")"
    if ! cp -P -- "$MODEL_SOURCE/$f" "$partial/$f"; then
      log "cannot copy $MODEL_SOURCE/$f; run the data preparation again"
      rm -rf "$partial"
      exit "$refused_status"
    fi
  done < <(cd "$MODEL_SOURCE" && find . -type f \( "${args[@]:1}" \) -print0)
  if ! check_model "$partial"; then
    rm -rf "$partial"
    exit "$refused_status"
  fi
  # Another experiment of the model may have put its copy in place first: then that one is used.
  if mv -T "$partial" "$MODEL_DIR" 2>/dev/null; then
    log "copied the model files of $MODEL_SOURCE to $MODEL_DIR, which the run loads, and checked them"
  else
    rm -rf "$partial"
    own_path "$MODEL_DIR"
    check_model "$MODEL_DIR" || exit "$refused_status"
  fi
}

resume_prep() {
  mkdir -p "$CHECKPOINT_DIR"
  case $FRAMEWORK in
  nemo-rl) nemo_rl ;;
  verl) verl ;;
  *)
    echo "gke-rl run: unknown framework $FRAMEWORK" >&2
    exit 1
    ;;
  esac
}

# cluster_gpus prints the GPUs of the Ray cluster's alive nodes: the total of `ray status`'s
# "used/total GPU" line (0 when Ray does not answer). While a placement group holds GPUs (a
# failed attempt's, until Ray frees it) Ray ends that line with "(U used of R reserved in placement
# groups)" (ray-project/ray python/ray/autoscaler/_private/util.py, format_resource_usage_summary):
# the total still counts every GPU, so the line is read up to "GPU" whatever follows.
cluster_gpus() {
  local line n
  line=$(ray status 2>/dev/null | grep -Eo '^ *[0-9.]+/[0-9.]+ GPU( |$)' | head -n 1) || true
  line=${line% }
  n=${line#*/}
  n=${n%%.*}
  [[ $n =~ ^[0-9]+$ ]] || n=0
  echo "$n"
}

# wait_for_gpus returns once the cluster has GPUS GPUs, or fails after GPU_WAIT_SECONDS.
wait_for_gpus() {
  local deadline=$(($(now) + GPU_WAIT_SECONDS)) have
  sleep "$PAUSE_SECONDS"
  while :; do
    have=$(cluster_gpus)
    if ((have >= GPUS)); then
      log "the Ray cluster has its $GPUS GPUs"
      return 0
    fi
    if (($(time_left) <= 0)); then
      log "the Ray cluster has $have of its $GPUS GPUs and the run's deadline of ${RUN_DEADLINE_SECONDS}s has passed; giving up"
      return 1
    fi
    if (($(now) >= deadline)); then
      log "the Ray cluster has $have of its $GPUS GPUs after ${GPU_WAIT_SECONDS}s; giving up"
      return 1
    fi
    log "waiting for the Ray cluster's $GPUS GPUs ($have now)"
    sleep "$POLL_SECONDS"
  done
}

# time_left prints the seconds left before the run's deadline (a large number without one).
time_left() {
  if ((RUN_DEADLINE_SECONDS > 0)); then
    echo $((RUN_DEADLINE_SECONDS - ($(now) - started)))
  else
    echo 999999999
  fi
}

# Exit status of a run stopped by its deadline, as timeout(1) reports one.
deadline_status=124

# trained (trained.sh) is where a run that succeeded records its BUDGET. Only the training pods
# write CHECKPOINT_DIR.
trained=$(trained_record)

# Before anything reads or writes the checkpoints.
own_path "$CHECKPOINT_DIR"
mkdir -p "$CHECKPOINT_DIR"
if already_trained; then
  log "finished before (maxSteps and epochs $(<"$trained"), now $BUDGET): this RayJob trains nothing more"
  exit 0
fi
if [[ -f $trained ]]; then
  log "finished before (maxSteps and epochs $(<"$trained")); trains on to $BUDGET from the newest checkpoint"
fi
promote_model

attempt=1
while :; do
  left=$(time_left)
  if ((left <= 0)); then
    log "the run's deadline of ${RUN_DEADLINE_SECONDS}s has passed; no attempt starts"
    exit "$deadline_status"
  fi
  resume_prep
  args=("$@")
  if [[ $FRAMEWORK == verl ]]; then verl_resume_from "$@"; fi
  optimizer_settings
  log "attempt $attempt of $ATTEMPTS"
  status=0
  (cd "$WORKDIR" && exec timeout --kill-after=60 "$left" "${args[@]}") || status=$?
  if ((status == 0)); then
    echo "$BUDGET" >"$trained"
    exit 0
  fi
  if (($(time_left) <= 0)); then
    log "attempt $attempt stopped (exit $status): the run's deadline of ${RUN_DEADLINE_SECONDS}s has passed"
    exit "$deadline_status"
  fi
  if ((attempt >= ATTEMPTS)); then
    log "attempt $attempt failed (exit $status); no attempt left"
    exit "$status"
  fi
  log "attempt $attempt failed (exit $status); the next starts once the cluster has its GPUs"
  wait_for_gpus || exit "$status"
  attempt=$((attempt + 1))
done
