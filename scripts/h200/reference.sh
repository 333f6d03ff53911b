#!/usr/bin/env bash
# The reference checks (docs/reference-checks.md) on a real GPU: a default run, then the four checks alone in front
# of the CUDA shim (scripts/h200/cuda-shim.c) with each of its lies about them:
#   honest                   a default run of the command                   exit 0; the four checks pass, save
#                                                                           hazard.every_gpu_at_once: skip on one GPU
#   shim-pointer-still       MAPPED_REG_SHIM_POINTER_STILL_REGISTERED=1      hazard.device_pointer fails, the other
#                                                                           three as in the honest run
#   shim-portable-ignored    MAPPED_REG_SHIM_PORTABLE_IGNORED=1             recorded: hazard.portable_second_context
#                                                                           fails where the driver copies a registration
#                                                                           without PORTABLE as pageable from another
#                                                                           context; a pass says the driver makes every
#                                                                           registration portable (not an error here; the
#                                                                           H200 does: docs/results/h200-reference-probe.txt)
# On the GPU machine, from the project's root:
#   bash scripts/h200/reference.sh "$OUT" [run options...]
# It writes reference.txt (a line a run: its exit, each reference check's status, the portable check's three speeds)
# and reference.tgz (every run's JSON, JUnit and log) into OUT, and exits 1 when an expectation failed. Arguments
# after OUT go to every run. MAPPED_REG_SHIM_REAL=<a CUDA library> puts the shim in front of it instead of
# libcuda.so.1 (the tests use the driver double); MAPPED_REG_CUDA_LIBRARY is the honest run's driver, as always.
set -uo pipefail
out=${1:?usage: reference.sh OUT-FOLDER [run options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mapped-reg-reference.XXXXXX") || { echo "reference.sh: no temporary folder" >&2; exit 1; }
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/runs" "$work/scratch" || exit 1
source "$here/shim.sh"
ids=(hazard.portable_second_context hazard.async_stream_copy hazard.device_pointer hazard.every_gpu_at_once)
checks=()
for id in "${ids[@]}"; do checks+=(--check "$id"); done
failed=0

# run NAME [VAR=VALUE...] -- ARGS...: the command with those variables; its JSON, JUnit and log kept
run() {
  local name=$1
  shift
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  env "${env[@]}" node "$root/dist/cli/main.js" --scratch-dir "$work/scratch" --json "$work/runs/$name.json" --junit "$work/runs/$name.xml" "$@" > "$work/runs/$name.log" 2>&1
  echo $?
}

# line NAME EXIT: the run's exit, each reference check's status on cuda:0, the portable check's speeds
line() {
  node -e '
    const [file, name, exit, ...ids] = process.argv.slice(1);
    let d;
    try { d = JSON.parse(require("node:fs").readFileSync(file, "utf8")).devices.find((x) => x.id === "cuda:0"); } catch { d = undefined; }
    const st = (id) => d?.checks.find((c) => c.id === id)?.status ?? "-";
    const p = d?.checks.find((c) => c.id === "hazard.portable_second_context")?.data ?? {};
    const g = (x) => (typeof x === "number" ? x.toFixed(2) : "-");
    console.log([name, `exit ${exit}`, ...ids.map((id) => `${id.replace("hazard.", "")} ${st(id)}`), `portable GB/s first ${g(p.firstGBps)} second ${g(p.secondGBps)} staged ${g(p.stagedGBps)} ratio ${g(p.ratio)}`].join("\t"));
  ' "$work/runs/$1.json" "$1" "$2" "${ids[@]}"
}

status() { node -e 'const d = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")).devices.find((x) => x.id === "cuda:0"); console.log(d?.checks.find((c) => c.id === process.argv[2])?.status ?? "-")' "$work/runs/$1.json" "$2"; }

{
  e=$(run honest -- "$@")
  line honest "$e"
  [[ $e == 0 ]] || { echo "EXPECTATION FAILED: honest exit $e, not 0"; failed=1; }
  for id in hazard.portable_second_context hazard.async_stream_copy hazard.device_pointer; do
    s=$(status honest "$id")
    [[ $s == pass ]] || { echo "EXPECTATION FAILED: honest $id $s, not pass"; failed=1; }
  done
  every=$(status honest hazard.every_gpu_at_once)

  e=$(run shim-pointer-still "${shim[@]}" MAPPED_REG_SHIM_POINTER_STILL_REGISTERED=1 -- --device cuda:0 "${checks[@]}" "$@")
  line shim-pointer-still "$e"
  [[ $(status shim-pointer-still hazard.device_pointer) == fail ]] || { echo "EXPECTATION FAILED: shim-pointer-still hazard.device_pointer is not fail"; failed=1; }
  for id in hazard.portable_second_context hazard.async_stream_copy; do
    [[ $(status shim-pointer-still "$id") == pass ]] || { echo "EXPECTATION FAILED: shim-pointer-still $id is not pass"; failed=1; }
  done
  [[ $(status shim-pointer-still hazard.every_gpu_at_once) == "$every" ]] || { echo "EXPECTATION FAILED: shim-pointer-still hazard.every_gpu_at_once differs from the honest run"; failed=1; }

  e=$(run shim-portable-ignored "${shim[@]}" MAPPED_REG_SHIM_PORTABLE_IGNORED=1 -- --device cuda:0 "${checks[@]}" "$@")
  line shim-portable-ignored "$e"
  echo "recorded: without PORTABLE, hazard.portable_second_context is $(status shim-portable-ignored hazard.portable_second_context) on this driver"
} | tee "$out/reference.txt"
grep -q '^EXPECTATION FAILED' "$out/reference.txt" && failed=1
tar -czf "$out/reference.tgz" -C "$work" runs || failed=1
exit "$failed"
