#!/usr/bin/env bash
set -euo pipefail
# What a finished experiment leaves and how a later RayJob of it reads that: shared by run.sh,
# which writes the record when a run succeeds and trains nothing more while the budget has not
# grown, and launch.sh, which then leaves the RayJob out of the queue so that it brings up no
# GPU node at all.
#
# Environment: CHECKPOINT_DIR (the experiment's checkpoints), BUDGET ("<job.maxSteps>
# <job.epochs>", 0 for the framework's own).

# trained_record prints where a run that succeeded records its BUDGET.
trained_record() { echo "$CHECKPOINT_DIR/.gke-rl-trained"; }

# not_more reports whether a budget's part asks for no more than the recorded one: the same, or
# a set value at most the recorded one (0 is the framework's own, which only 0 matches).
not_more() { (($1 == $2 || ($1 > 0 && $1 <= $2))); }

# already_trained reports whether the experiment finished before with a budget at least BUDGET.
# A record it cannot read as two numbers is not a finished run: the run goes ahead.
already_trained() {
  local record old_steps old_epochs new_steps new_epochs n
  record=$(trained_record)
  [[ -f $record ]] || return 1
  read -r old_steps old_epochs <"$record" || return 1
  read -r new_steps new_epochs <<<"$BUDGET"
  for n in "$old_steps" "$old_epochs" "$new_steps" "$new_epochs"; do
    [[ $n =~ ^[0-9]+$ ]] || return 1
  done
  not_more "$new_steps" "$old_steps" && not_more "$new_epochs" "$old_epochs"
}
