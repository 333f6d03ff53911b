#!/usr/bin/env bash
# Every H200 run the open issues' acceptance asks for, in one call of the device tool (about 9 minutes), each step
# bounded and its output kept as it ends, so that a call cut short still brings back the steps before:
#   default            a default run (JSON, JUnit)
#   bench-ab           the bench, 5 runs against the build in .old (the code before issue 32: docs/bench.md says how
#                      to build it), alternating: the run's time, its phases, the peak PSS (issue 32)
#   signals            scripts/h200-signals.sh: kills inside and before a check, SIGTERM (issue 32)
#   reference          scripts/h200/reference.sh, reference-checks.sh: the reference checks and the shim's lies (36)
#   busy               scripts/h200/busy.sh: a slower driver told from a busy machine, the lock held (37)
#   quiet-pairs        scripts/h200/quiet-pairs.sh: 40 quiet runs, every ordered pair compared (37)
#   scale              the bench over the CUDA double with 8 devices: 1, 2, 4 and 8 at once, at the rates that
#                      give the timed copies the H200's share of the run (registered 2 GB/s: docs/bench.md) (32)
#   scale-h200-rates   the same at the H200's GB/s (registered 50): the orchestration's cost alone (32)
#   profile            a default run with every Node.js process's CPU profile (scripts/h200/cpu-profile.mjs), and
#                      what profile-summary.mjs reads in them: where the main threads spend their time (32)
#   exit-time          scripts/h200/exit-time.mjs: how long a process holding a CUDA context takes to end, its
#                      context alive, released, reset, or by _exit (32)
#   lock-contention    scripts/lock-contention.mjs: eight devices' use of the timing lock, played with sleeps, on
#                      a host of 16 cores (32)
# On the GPU machine, from the project's root, with .device/ packed (dist, .old and test/double/build):
#   bash .device/run.sh bash scripts/h200/acceptance.sh "$OUT" [STEP...]
# With no STEP, every step in the order above (some 11 minutes: more than one call of the device tool may take);
# else only those named, in the order above. Two calls that fit 10 minutes each:
#   bash .device/run.sh bash scripts/h200/acceptance.sh "$OUT" default bench-ab signals reference reference-checks scale scale-h200-rates profile
#   bash .device/run.sh bash scripts/h200/acceptance.sh "$OUT" busy quiet-pairs
# It writes all.tgz (every step's output folder and log) and steps.txt (each step's exit and seconds) into OUT.
set -u
out=${1:?usage: acceptance.sh OUT-FOLDER [STEP...]}
shift
all=(default bench-ab signals reference reference-checks busy quiet-pairs scale scale-h200-rates profile profile-summary exit-time lock-contention)
for s in "$@"; do
  [[ " ${all[*]} " == *" $s "* ]] || { echo "acceptance.sh: no step '$s' (steps: ${all[*]})" >&2; exit 2; }
done
selected=("$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/mapped-reg-acceptance.XXXXXX") || exit 1
mkdir -p "$out" || exit 1
step() {
  local name=$1 limit=$2
  shift 2
  # profile-summary goes with profile
  if [[ ${#selected[@]} -gt 0 && " ${selected[*]} " != *" ${name%-summary} "* ]]; then return 0; fi
  local started
  started=$(date +%s)
  timeout "$limit" "$@" > "$work/$name.txt" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - started )) s" | tee -a "$work/steps.txt"
  cp "$work/steps.txt" "$out/steps.txt"
  tar -C "$work" -czf "$out/all.tgz" .
}
B=$PWD/test/double/build
step default 40 node dist/cli/main.js --json "$work/default.json" --junit "$work/default.xml"
step bench-ab 120 npm run bench -- --repeat 5 --against .old --json "$work/bench-ab.json"
step signals 150 bash scripts/h200-signals.sh "$work/signals"
step reference 60 bash scripts/h200/reference.sh "$work/reference"
step reference-checks 60 bash scripts/h200/reference-checks.sh "$work/reference-checks"
step busy 200 bash scripts/h200/busy.sh "$work/busy"
step quiet-pairs 300 bash scripts/h200/quiet-pairs.sh "$work/quiet"
step scale 120 env MAPPED_REG_CUDA_LIBRARY="$B/libcuda_double.so" MAPPED_REG_NVML_LIBRARY="$B/libnvidia-ml_double.so" \
  MAPPED_REG_DOUBLE_DEVICES=8 MAPPED_REG_DOUBLE_RATES=registered=2,pinned=2,pageable=0.5 \
  npm run bench -- --device cuda:0 --size 16 --scale 1,2,4,8 --json "$work/scale.json"
step scale-h200-rates 120 env MAPPED_REG_CUDA_LIBRARY="$B/libcuda_double.so" MAPPED_REG_NVML_LIBRARY="$B/libnvidia-ml_double.so" \
  MAPPED_REG_DOUBLE_DEVICES=8 MAPPED_REG_DOUBLE_RATES=registered=50,pinned=50,pageable=8 \
  npm run bench -- --device cuda:0 --size 16 --scale 1,2,4,8 --json "$work/scale-h200-rates.json"
mkdir -p "$work/profile"
step profile 60 env MAPPED_REG_CPU_PROFILE_DIR="$work/profile" NODE_OPTIONS="--import=$PWD/scripts/h200/cpu-profile.mjs" \
  node dist/cli/main.js --json "$work/profile.json"
step profile-summary 20 node scripts/h200/profile-summary.mjs "$work/profile" 30
step exit-time 60 node scripts/h200/exit-time.mjs 5
step lock-contention 60 node scripts/lock-contention.mjs 8 5
rm -rf "$work"
