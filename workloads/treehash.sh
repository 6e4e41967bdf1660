#!/usr/bin/env bash
set -euo pipefail
# tree_hash DIR prints the git tree hash of DIR's files as they are, every file read as a plain
# file (mode 100644), or nothing when it cannot read them. It works in a repository of its own,
# outside DIR: nothing DIR holds (a .git directory, its config, hooks, excludes, fsmonitor
# command, .gitignore files) is read or run, and every file counts, ignored or not. For a
# directory of a commit whose files are all plain, it is the commit's own tree hash
# (`git rev-parse <commit>:<dir>`), a content hash that git computes the same everywhere.
tree_hash() {
  local dir=$1 tmp hash=""
  tmp=$(mktemp -d)
  # core.fileMode=false: a file new to the index gets mode 100644 whatever its bits (a shared
  # volume may show every file executable, or none).
  hash=$(cd "$dir" && export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME="$tmp" \
    GIT_DIR="$tmp/git" GIT_WORK_TREE=. GIT_TEMPLATE_DIR="" &&
    git init -q && git -c core.fileMode=false add --all --force && git write-tree) || hash=""
  rm -rf "$tmp"
  echo "$hash"
}

# verify_tree DIR TREE fails, naming what it found, unless DIR holds exactly TREE's files.
verify_tree() {
  local dir=$1 want=$2 got
  got=$(tree_hash "$dir")
  if [[ $got != "$want" ]]; then
    echo "$dir is not the code this program pins: its files hash to ${got:-nothing readable}, not $want (git tree hash); run the data preparation again (it fetches the pinned commit)" >&2
    return 1
  fi
  echo "$dir is $want (git tree hash), as pinned"
}

# verified_copy ROOT DIR TREE copies DIR off the volume to ROOT/DIR (its path kept under ROOT, a
# directory of this process's own) and checks the copy against TREE. The code that then runs or
# ships is the copy that was checked: a writer of the volume cannot change it after the check.
# The copy is checked, not DIR: a link that a writer of the volume swaps in while cp reads would
# pass a look at DIR made before, and cp -R copies a link as a link, which would send what runs or
# ships back to the volume. So the copy must hold no link at all (its root included), then hash to
# TREE. A DIR that is or is reached through a link is refused first, for a clear message.
verified_copy() {
  local root=$1 dir=$2 tree=$3 link
  if [[ -L $dir ]] || { [[ -e $dir ]] && [[ $(realpath -e -- "$dir") != "$dir" ]]; }; then
    echo "$dir is a symbolic link, or is reached through one: refused (the code must be a directory of the volume itself); run the data preparation again (it fetches the pinned commit)" >&2
    return 1
  fi
  mkdir -p "$root$(dirname "$dir")"
  # A directory copied already (named twice, or inside one copied before) is checked as it is.
  if [[ ! -e $root$dir && ! -L $root$dir ]] && ! cp -R "$dir" "$root$dir" 2>/dev/null; then
    echo "$dir cannot be read; run the data preparation again (it fetches the pinned commit)" >&2
    return 1
  fi
  link=$(find "$root$dir" -type l -print -quit 2>/dev/null)
  if [[ -n $link ]]; then
    echo "$dir held a symbolic link when it was copied, ${link#"$root"}: refused (a pinned tree holds plain files); run the data preparation again (it fetches the pinned commit)" >&2
    return 1
  fi
  verify_tree "$root$dir" "$tree"
}
