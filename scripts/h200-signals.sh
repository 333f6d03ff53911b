#!/usr/bin/env bash
# Signals on the real GPU: the CUDA device's process killed at three moments, and the command stopped by SIGTERM.
#
#   bash scripts/h200-signals.sh OUT                       from the project's root, with dist/ built
#   bash .device/run.sh bash scripts/h200-signals.sh "$OUT"   on the GPU machine (dist/ packed with a Node.js by the device tool)
#
# Scenarios, each a run of `mapped-reg-conformance --device cuda:0` followed by a second, ordinary run right after
# (its verdict shows whether the driver released what the first left):
#   kill-scratch  SIGKILL of the device's process from outside while it writes its scratch file (the file is seen
#                 growing in the scratch folder, whose name carries the process's pid; written on a thread of its
#                 own while the process starts Vitest, so before any check: a kill outside a check)
#   kill-probe    SIGKILL of the device's process from outside during the probe (its scratch file complete and
#                 mapped, seen in /proc/PID/maps)
#   kill-between  SIGKILL between two hazard checks: the runner's first process kills itself right after
#                 hazard.readonly_mapping reported (MAPPED_REG_FORCE_KILL), since no outside observer can hit the
#                 microseconds between two checks
#   term-probe    SIGTERM of the command during the probe (as Kubernetes, Slurm or a CI cancellation sends it)
# Expected: for the kills, every check of the device reported (from its first process or a new one) and exit 0;
# for SIGTERM, exit 143 and the JSON marked incomplete; always no process left, no scratch file left, and a
# second run right after that is Usable.
#
# Writes under OUT: <scenario>.log (the command's output and what the script did), <scenario>.json (its results),
# <scenario>-after.log/.json (the second run), summary.tsv; prints a table. Exit 0 when every scenario met its
# expectation, else 1. Needs bash, coreutils, procps and node; nothing else, no network, no compiler.
#
# Environment (only its own MAPPED_REG_SIGNALS_* variables, so that a MAIN or SIZE of the caller's changes nothing):
# MAPPED_REG_SIGNALS_SIZE (MiB probed, default 256), MAPPED_REG_SIGNALS_SCRATCH (scratch folder, default the
# package's scratch/, as a default run uses), MAPPED_REG_SIGNALS_MAIN (the command, default dist/cli/main.js),
# MAPPED_REG_SIGNALS_ARGS (extra options for every run), MAPPED_REG_SIGNALS_WAIT_S (bound of each wait, default
# 120), MAPPED_REG_SIGNALS_SCENARIOS (default all four); MAPPED_REG_CUDA_LIBRARY and the other MAPPED_REG_*
# variables pass through to the command (the tests point it at the driver double).
set -uo pipefail

out=${1:?usage: bash scripts/h200-signals.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
size=${MAPPED_REG_SIGNALS_SIZE:-256}
main=${MAPPED_REG_SIGNALS_MAIN:-dist/cli/main.js}
wait_s=${MAPPED_REG_SIGNALS_WAIT_S:-120}
read -r -a extra <<< "${MAPPED_REG_SIGNALS_ARGS:-}"
scenarios=${MAPPED_REG_SIGNALS_SCENARIOS:-kill-scratch kill-probe kill-between term-probe}
scratch=${MAPPED_REG_SIGNALS_SCRATCH:-$PWD/scratch}
mkdir -p "$scratch"
[[ -f $main ]] || { echo "h200-signals: $main not found: run from the project's root with dist/ built" >&2; exit 2; }
# the driver's library and the test hooks, as the command sees them
[[ -n ${MAPPED_REG_FORCE_KILL:-} ]] && { echo "h200-signals: MAPPED_REG_FORCE_KILL is set by this script only" >&2; exit 2; }

# A pause without a process (a read that times out on a private pipe nobody writes to): the watch loops must
# not take the CPU the device's process needs, nor fork for every look.
pipe=$(mktemp -u "${TMPDIR:-/tmp}/h200-signals-nap.XXXXXX")
mkfifo "$pipe" && exec 9<>"$pipe" && rm -f "$pipe"
nap() { read -r -t "$1" -u 9 _ || true; }

# The region file of a device process in the scratch folder: sets pid and file (no subshell), or fails.
region() {
  local f name
  for f in "$scratch"/.mapped-reg-*/region.bin; do
    [[ -e $f ]] || continue
    name=${f%/region.bin}
    name=${name##*/.mapped-reg-}
    pid=${name%%-*}
    file=$f
    return 0
  done
  return 1
}

# Whether a process runs (a zombie does not).
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n $state && $state != Z* ]]
}

# The command's children and theirs, added to the global list `seen`.
declare -a seen=()
note_children() {
  local p c
  for p in "$@"; do
    for c in $(pgrep -P "$p" 2>/dev/null); do
      [[ " ${seen[*]} " == *" $c "* ]] || seen+=("$c")
      note_children "$c"
    done
  done
}

# One line about a results file: checks, by process, statuses, verdict, complete or not.
summarize() {
  node -e '
    const fs = require("fs");
    let r;
    try { r = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); } catch (e) { console.log(["-", "-", "-", "no JSON", "-"].join("\t")); process.exit(0); }
    const d = r.devices.find((x) => x.id === process.argv[2]);
    if (!d) { console.log(["0", "-", "-", "no device", r.incomplete ? "incomplete" : "complete"].join("\t")); process.exit(0); }
    const by = {}, st = {};
    for (const c of d.checks) { by[c.process ?? 1] = (by[c.process ?? 1] ?? 0) + 1; st[c.status] = (st[c.status] ?? 0) + 1; }
    console.log([d.checks.length, Object.entries(by).map(([p, n]) => `p${p}:${n}`).join(" "), Object.entries(st).map(([s, n]) => `${n} ${s}`).join(" "), d.verdict.kind, r.incomplete ? "incomplete" : "complete"].join("\t"));
  ' "$1" cuda:0
}

# Details of a results file for the log: restarts, and the checks that did not pass.
details() {
  node -e '
    const fs = require("fs");
    try {
      const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
      for (const d of r.devices.filter((x) => x.id === "cuda:0")) {
        console.log(`processes: ${d.processes}`);
        for (const s of d.restarts ?? []) console.log(`restart: ${s}`);
        for (const e of d.errors ?? []) console.log(`error: ${e}`);
        for (const c of d.checks.filter((c) => c.status !== "pass")) console.log(`${c.id} ${c.status} (process ${c.process ?? 1}): ${c.message ?? c.observed ?? ""}`);
      }
    } catch (e) { console.log(`no results: ${e.message}`); }
  ' "$1"
}

rows=()
failed=0
printf 'scenario\tmoment\texit\tchecks\tby process\tstatuses\tverdict\tjson\tprocesses left\tscratch left\tsecond run\tok\n' > "$out/summary.tsv"

for scenario in $scenarios; do
  log=$out/$scenario.log
  json=$out/$scenario.json
  seen=()
  moment=-
  env_hook=()
  [[ $scenario == kill-between ]] && env_hook=(MAPPED_REG_FORCE_KILL=cuda:0/hazard.readonly_mapping)
  echo "== $scenario: node $main --device cuda:0 --size $size --scratch-dir $scratch --json $json ${extra[*]}" > "$log"
  env "${env_hook[@]}" node "$main" --device cuda:0 --size "$size" --scratch-dir "$scratch" --json "$json" "${extra[@]}" >> "$log" 2>&1 &
  cmd=$!
  deadline=$(( SECONDS + wait_s ))
  # the watch loops use bash builtins only between samples of the command's children, to see short moments
  i=0
  case $scenario in
    kill-scratch)
      # the region file exists and is still being written
      while kill -0 "$cmd" 2>/dev/null && (( SECONDS < deadline )); do
        (( i++ % 40 == 0 )) && note_children "$cmd"
        if region; then
          bytes=$(stat -c %s "$file" 2>/dev/null || echo 0)
          if kill -KILL "$pid" 2>/dev/null; then
            (( bytes < size * 1048576 )) && moment="region.bin at $(( bytes / 1048576 )) of $size MiB" || moment="region.bin complete ($size MiB)"
          fi
          echo "-- $(date +%T.%N) SIGKILL to the device's process $pid: $moment" >> "$log"
          break
        fi
        nap 0.002
      done
      ;;
    kill-probe | term-probe)
      # the region file complete and mapped: the probe is registering and copying it
      while kill -0 "$cmd" 2>/dev/null && (( SECONDS < deadline )); do
        (( i++ % 40 == 0 )) && note_children "$cmd"
        if region; then
          maps=$(cat "/proc/$pid/maps" 2>/dev/null)
          if [[ $maps == *"$file"* ]]; then
            if [[ $scenario == kill-probe ]]; then
              kill -KILL "$pid" 2>/dev/null && moment="probe: region mapped"
              echo "-- $(date +%T.%N) SIGKILL to the device's process $pid: $moment" >> "$log"
            else
              kill -TERM "$cmd" 2>/dev/null && moment="probe: region mapped"
              echo "-- $(date +%T.%N) SIGTERM to the command $cmd: $moment" >> "$log"
            fi
            break
          fi
        fi
        nap 0.002
      done
      ;;
    kill-between)
      moment="after hazard.readonly_mapping (hook)"
      while kill -0 "$cmd" 2>/dev/null && (( SECONDS < deadline )); do note_children "$cmd"; nap 0.02; done
      ;;
  esac
  note_children "$cmd"
  [[ $moment == - ]] && echo "-- the moment was not seen within $wait_s s" >> "$log"
  # the command's end, bounded
  while alive "$cmd" && (( SECONDS < deadline + wait_s )); do note_children "$cmd"; nap 0.05; done
  if alive "$cmd"; then
    echo "-- the command did not end: SIGKILL" >> "$log"
    kill -KILL "$cmd" 2>/dev/null
  fi
  wait "$cmd"
  status=$?
  echo "-- exit status $status" >> "$log"
  # what is left: the processes seen (given a moment to be reaped), the scratch folders here and in /dev/shm
  for _ in $(seq 50); do
    left=0
    for p in "${seen[@]}"; do alive "$p" && left=$(( left + 1 )); done
    (( left == 0 )) && break
    nap 0.1
  done
  for p in "${seen[@]}"; do alive "$p" && echo "-- left running: $(ps -o pid=,args= -p "$p")" >> "$log"; done
  scratch_left=0
  for f in "$scratch"/.mapped-reg-* /dev/shm/.mapped-reg-*; do
    [[ -e $f ]] || continue
    for p in "${seen[@]}"; do
      if [[ $f == */.mapped-reg-"$p"-* || $f == */.mapped-reg-new-"$p"-* ]]; then scratch_left=$(( scratch_left + 1 )); echo "-- scratch left: $f" >> "$log"; fi
    done
  done
  details "$json" >> "$log"
  # the second run, right after
  after=$out/$scenario-after.json
  node "$main" --device cuda:0 --size "$size" --scratch-dir "$scratch" --json "$after" "${extra[@]}" > "$out/$scenario-after.log" 2>&1
  after_status=$?
  IFS=$'\t' read -r n_checks by_process statuses verdict complete < <(summarize "$json")
  IFS=$'\t' read -r after_checks _ _ after_verdict _ < <(summarize "$after")
  # the expectation
  ok=yes
  if [[ $scenario == term-probe ]]; then
    [[ $status == 143 && $complete == incomplete ]] || ok=no
  else
    [[ $status == 0 && $n_checks == "$after_checks" ]] || ok=no
  fi
  [[ $left == 0 && $scratch_left == 0 && $after_verdict == Usable && $after_status == 0 ]] || ok=no
  [[ $ok == yes ]] || failed=1
  row="$scenario	$moment	$status	$n_checks	$by_process	$statuses	$verdict	$complete	$left	$scratch_left	$after_verdict (exit $after_status, $after_checks checks)	$ok"
  rows+=("$row")
  echo "$row" >> "$out/summary.tsv"
done

printf '%-13s %-40s %-5s %-7s %-12s %-28s %-9s %-11s %-6s %-8s %-34s %s\n' scenario moment exit checks 'by process' statuses verdict json 'procs' 'scratch' 'second run' ok
for row in "${rows[@]}"; do
  IFS=$'\t' read -r a b c d e f g h i j k l <<< "$row"
  printf '%-13s %-40s %-5s %-7s %-12s %-28s %-9s %-11s %-6s %-8s %-34s %s\n' "$a" "$b" "$c" "$d" "$e" "$f" "$g" "$h" "$i" "$j" "$k" "$l"
done
exit $failed
