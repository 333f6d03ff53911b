#!/usr/bin/env bash
# The gate on a real GPU: a baseline run, plain re-runs against it (each must exit 0; together they give the
# run-to-run spread of the registered GB/s), and two ways a driver upgrade breaks a GPU, played by a CUDA shim
# (cuda-shim.c, built here with cc) in front of the real driver: cuInit failing with 999, and the registered
# copy throttled by 20%. Each of those must exit 1. On the GPU machine, from the project's root:
#   bash .device/run.sh bash scripts/h200/gate.sh "$OUT"
# It writes gate.tgz (every run's log and results) and gate.txt (the table it prints) into the folder given, and
# exits 1 when a run's exit status was not the one expected. MAPPED_REG_SHIM_REAL=<a CUDA library> runs it all
# against that library instead of libcuda.so.1 (the tests use the driver double); arguments after the folder go
# to every run (e.g. --size 8).
set -uo pipefail
out=${1:?usage: gate.sh OUT-FOLDER [run options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/runs"
source "$here/shim.sh"
main=(node "$root/dist/cli/main.js" "$@")
scratch=$work/scratch
mkdir -p "$scratch"

# run NAME EXPECTED-EXIT [VAR=VALUE...] -- [options]: one run of the command, its log and results kept
failures=0
row() { printf '%-22s %-8s %-9s %-14s %s\n' "$@" | tee -a "$out/gate.txt"; }
: > "$out/gate.txt"
row scenario expected exit 'cuda:0 GB/s' 'the last line'
run() {
  local name=$1 want=$2
  shift 2
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  local json=$work/runs/$name.json
  local t0=$(date +%s%N)
  env "${env[@]}" "${main[@]}" --scratch-dir "$scratch" --json "$json" "$@" > "$work/runs/$name.log" 2>&1
  local code=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local gbps
  gbps=$(node -e 'try { const r = require(process.argv[1]); const d = r.devices.find((x) => x.id === "cuda:0"); console.log(d && d.timing ? d.timing.registeredGBps.toFixed(2) : "-") } catch { console.log("-") }' "$json")
  local last
  last=$(tail -n 1 "$work/runs/$name.log")
  echo "wall ${ms} ms" >> "$work/runs/$name.log"
  row "$name" "$want" "$code" "$gbps" "$last"
  [[ $code == "$want" ]] || failures=$((failures + 1))
}

base=$work/runs/baseline.json

run baseline 0 "${driver[@]}" --
cp "$base" "$work/baseline.json"
base=$work/baseline.json
for i in 1 2 3 4 5; do run "re-run-$i" 0 "${driver[@]}" -- --baseline "$base"; done
run shim-unchanged 0 "${shim[@]}" -- --baseline "$base"
run shim-cuinit-999 1 "${shim[@]}" MAPPED_REG_SHIM_CUINIT=999 -- --baseline "$base"
run shim-cuinit-999-alone 1 "${shim[@]}" MAPPED_REG_SHIM_CUINIT=999 --
run shim-registered-20pct 1 "${shim[@]}" MAPPED_REG_SHIM_SLOW_REGISTERED=1.25 -- --baseline "$base"

tar -C "$work" -czf "$out/gate.tgz" runs baseline.json
echo "$failures scenario(s) with an unexpected exit status" | tee -a "$out/gate.txt"
[[ $failures == 0 ]]
