#!/usr/bin/env bash
set -euo pipefail
# The data preparation Job's steps on the shared volume. The Job's script is this file followed
# by one `prep_step` line a step (workloads.PrepScript); each step fills its directory once.

# prep_step NAME DIR MODE SIZE_OF -- COMMAND...
# runs COMMAND unless DIR's completion marker (DIR.gke-rl-complete) exists, which it writes last,
# so that an interrupted step never passes for a finished one. MODE "fresh" empties DIR first (a clone, a
# conversion); "resume" keeps it (Hugging Face downloads skip the files already complete).
# SIZE_OF is the colon-separated paths whose size is reported when the step is done: where the
# step's data went (a download into the Hugging Face cache fills the cache, not DIR); empty
# means DIR.
prep_step() {
  local name=$1 dir=$2 mode=$3 size_of=${4:-$2}
  shift 5
  # Beside DIR, not in it: DIR holds exactly what the step made.
  local marker="$dir.gke-rl-complete"
  if [[ -e $marker ]]; then
    echo "$name: ready, skipped"
    return
  fi
  if [[ $mode == fresh ]]; then
    echo "$name: preparing"
    rm -rf "$dir"
  else
    echo "$name: preparing (resumes what an earlier attempt downloaded)"
  fi
  mkdir -p "$dir"
  "$@"
  touch "$marker"
  echo "$name: done, $(size_of "$size_of")"
}

# size_of PATHS prints the total size of the colon-separated PATHS that exist, following
# symbolic links (a Hugging Face snapshot links into the cache's blobs).
size_of() {
  local paths=() p
  IFS=: read -ra candidates <<<"$1"
  for p in "${candidates[@]}"; do
    if [[ -e $p ]]; then paths+=("$p"); fi
  done
  if ((${#paths[@]} == 0)); then
    echo "nothing at $1"
    return
  fi
  du -shcL -- "${paths[@]}" | tail -n 1 | cut -f 1
}

# checkout_commit DIR REPOSITORY COMMIT fetches exactly COMMIT and checks that it got it (a tag
# can be moved to other code, a commit cannot), in a repository of this process's own outside the
# volume, then copies the commit's files into DIR, without a .git: git reads no configuration and
# runs no hook that a writer of the volume could plant in DIR between two git commands (a
# .git/hooks/post-checkout between init and checkout would run here, as the tokens' reader).
checkout_commit() {
  local dir=$1 repo=$2 commit=$3 tmp head
  tmp=$(mktemp -d)
  mkdir "$tmp/tree"
  if ! own_git "$tmp" init -q || ! own_git "$tmp" fetch -q --depth 1 "$repo" "$commit" ||
    ! own_git "$tmp" checkout -q --detach FETCH_HEAD || ! head=$(own_git "$tmp" rev-parse HEAD); then
    rm -rf "$tmp"
    echo "checkout of $repo at $commit failed" >&2
    return 1
  fi
  if [[ $head != "$commit" ]]; then
    rm -rf "$tmp"
    echo "checkout of $repo: HEAD is $head, not $commit" >&2
    return 1
  fi
  cp -R "$tmp/tree/." "$dir/"
  rm -rf "$tmp"
  echo "checked out $repo at $commit"
}

# own_git TMP ARGS... runs git on the repository TMP/git and the work tree TMP/tree, reading no
# configuration but its own and running no hook.
own_git() {
  local tmp=$1
  shift
  GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME="$tmp" GIT_TEMPLATE_DIR="" \
    GIT_DIR="$tmp/git" GIT_WORK_TREE="$tmp/tree" git -c core.hooksPath=/dev/null "$@"
}

# run_verified DIR TREE [DIR TREE...] -- COMMAND... runs COMMAND only if each DIR holds exactly
# its TREE's files, on copies of them off the volume (verified_copy, treehash.sh, which precedes
# this script), without writing Python's bytecode: code from the shared volume runs here, as the
# reader of the tokens, only once checked (the dataset scripts, and the verl package they import
# through VERIFIED_PYTHONPATH), and a writer of the volume cannot change it while it runs.
# COMMAND's arguments inside a checked DIR name the copies; VERIFIED_PYTHONPATH's entries, each
# of which must hold a checked DIR, go before the command's PYTHONPATH as the copies. The Job's
# own PYTHONPATH names nothing of the volume, so that no other step imports from it.
run_verified() {
  local root dirs=() args=() path=() entries=() arg entry dir
  root=$(mktemp -d)
  while [[ $1 != -- ]]; do
    verified_copy "$root" "$1" "$2" || return 1
    dirs+=("$1")
    shift 2
  done
  shift
  for arg in "$@"; do
    for dir in "${dirs[@]}"; do
      if [[ $arg == "$dir" || $arg == "$dir"/* ]]; then
        arg=$root$arg
        break
      fi
    done
    args+=("$arg")
  done
  IFS=: read -ra entries <<<"${VERIFIED_PYTHONPATH:-}"
  for entry in "${entries[@]}"; do
    local copied=
    for dir in "${dirs[@]}"; do
      if [[ $dir == "$entry" || $dir == "$entry"/* ]]; then
        copied=$root$entry
        break
      fi
    done
    if [[ -z $copied ]]; then
      echo "VERIFIED_PYTHONPATH names $entry, which holds no directory this step checks: refused" >&2
      return 1
    fi
    path+=("$copied")
  done
  if [[ -n ${PYTHONPATH:-} ]]; then
    path+=("$PYTHONPATH")
  fi
  PYTHONPATH=$(IFS=:; echo "${path[*]}") PYTHONDONTWRITEBYTECODE=1 "${args[@]}"
}
