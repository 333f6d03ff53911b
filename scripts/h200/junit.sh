#!/usr/bin/env bash
# The JUnit report of real GPU runs as CI systems read it (docs/ci.md, "How JUnit tells it"): a plain run, then
# against it as baseline a driver that fails to start (cuInit 999) and a registered copy throttled by 20%, played
# by the CUDA shim (cuda-shim.c, built here with cc) in front of the real driver. Each run's report is read by
# junit-read.mjs through two XML readers and checked against the command's totals line. On the GPU machine, from
# the project's root:
#   bash .device/run.sh bash scripts/h200/junit.sh "$OUT"
# It writes junit.txt (a line a run) and junit.tgz (every run's log, JSON and JUnit) into the folder given, and exits
# 1 when a run's exit status was not the one expected or a report disagreed with its log. MAPPED_REG_SHIM_REAL=<a
# CUDA library> runs it against that library instead of libcuda.so.1; arguments after the folder go to every run.
set -uo pipefail
out=${1:?usage: junit.sh OUT-FOLDER [run options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/runs" "$work/scratch"
source "$here/shim.sh"
: > "$out/junit.txt"
failures=0
# run NAME EXPECTED-EXIT [VAR=VALUE...] -- [options]
run() {
  local name=$1 want=$2
  shift 2
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  env "${env[@]}" node "$root/dist/cli/main.js" --scratch-dir "$work/scratch" --json "$work/runs/$name.json" --junit "$work/runs/$name.xml" "$@" > "$work/runs/$name.log" 2>&1
  local code=$?
  local read
  read=$(node "$here/junit-read.mjs" "$work/runs/$name.xml" "$work/runs/$name.log")
  local ok=$?
  echo "$name: exit $code (expected $want); $read" | tee -a "$out/junit.txt"
  [[ $code == "$want" && $ok == 0 ]] || failures=$((failures + 1))
}
run plain 0 "${driver[@]}" -- "$@"
cp "$work/runs/plain.json" "$work/baseline.json"
run driver-start-999 1 "${shim[@]}" MAPPED_REG_SHIM_CUINIT=999 -- --baseline "$work/baseline.json" "$@"
run registered-20pct 1 "${shim[@]}" MAPPED_REG_SHIM_SLOW_REGISTERED=1.25 -- --baseline "$work/baseline.json" "$@"
tar -C "$work" -czf "$out/junit.tgz" runs baseline.json
echo "$failures run(s) with an unexpected exit status or a report that disagreed with its log" | tee -a "$out/junit.txt"
[[ $failures == 0 ]]
