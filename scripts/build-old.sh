#!/usr/bin/env bash
# The build of an older commit beside this one, for the bench's --against (docs/bench.md, "Against the code before"):
#
#   bash scripts/build-old.sh REV [DIR]      from the project's root; DIR defaults to .old
#
# Writes the tree of REV (git archive: tracked files only) into DIR, links DIR/node_modules to this checkout's
# node_modules (the same dependencies: a REV whose package-lock.json differs is refused), and builds DIR/dist/ with
# this checkout's TypeScript. DIR is left out of git (.gitignore) and is carried to the GPU machine with the run
# (the device tool's `carry: [".old"]`). Exit 0 built; 1 a step failed; 2 bad usage. An existing DIR is replaced.
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 || "$1" == -* ]]; then
  echo "usage: bash scripts/build-old.sh REV [DIR]" >&2
  exit 2
fi
rev=$1
dir=${2:-.old}
root=$(git rev-parse --show-toplevel)
cd "$root"
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || { echo "build-old: $rev is not a commit here" >&2; exit 2; }
if ! git diff --quiet "$rev" HEAD -- package-lock.json; then
  echo "build-old: $rev's package-lock.json differs from this checkout's: its node_modules would not be these" >&2
  exit 1
fi
rm -rf "$dir"
mkdir -p "$dir"
git archive "$rev" | tar -x -C "$dir"
ln -s "$(realpath --relative-to="$dir" "$root/node_modules")" "$dir/node_modules"
(cd "$dir" && node scripts/prepare.mjs)
echo "build-old: $rev built in $dir (node $dir/dist/cli/main.js; npm run bench -- --against $dir)"
