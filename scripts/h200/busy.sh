#!/usr/bin/env bash
# The gate on a busy machine, on a real GPU: does it tell a slower driver from a busy host? A baseline run on a
# quiet machine, then runs against it (each with --quiet-wait 10):
#   quiet-1..3            nothing else running                                   exit 0
#   host-hog              hog-host (16 threads copying host memory) running      exit 1, the host blamed (every gate
#                                                                                reason host: true, one of kind busy,
#                                                                                none of kind bandwidth/registration)
#   link-hog              hog-link (another process copying to the GPU)          exit 1, the host blamed, a busy reason
#                                                                                naming the hog's pid and hog-link
#   both-hogs             both                                                   exit 1, the host blamed
#   shim-slow-registered  cuda-shim, MAPPED_REG_SHIM_SLOW_REGISTERED=1.25         exit 1, a registration reason, none
#                                                                                with host: true
#   shim-slow-all         cuda-shim, MAPPED_REG_SHIM_SLOW_ALL=1.25                exit 1, a bandwidth reason "every
#                                                                                host-to-device copy got slower", none
#                                                                                with host: true
#   lock-held             hog-lock (another process holding the command's timing  exit 1 after about --quiet-wait plus
#                         lock for longer than the run), no baseline, --timeout 5  the run's own time, every reason the
#                         --quiet-wait 20                                        host's, probe.verdict `error` (never
#                                                                                timeout) naming the hog's pid
# Each hog is started, waited for until it says it is running (its first line), the command runs, then the hog is
# stopped (SIGTERM: it prints its own GB/s). The shim and the hogs are built here with cc, in a temporary folder
# removed at exit; at exit, whatever the reason, a hog still running is killed and a run still going is ended. On the GPU machine, from the
# project's root:
#   bash scripts/h200/busy.sh "$OUT" [run options...]
# It writes busy.txt (the table it prints: registered and page-locked GB/s, their ratio, the host copy, whether the
# machine was seen busy, whether the expectations held, the gate's headline) and busy.tgz (every run's JSON and log,
# every hog's output) into OUT, and exits 1 when an expectation failed. Arguments after OUT go to every run.
# Environment (all optional): MAPPED_REG_SHIM_REAL=<a CUDA library> runs the command and the shim against it instead
# of libcuda.so.1, and MAPPED_REG_HOG_CUDA_LIBRARY the link hog (the tests use the driver double);
# MAPPED_REG_BUSY_HOST_THREADS (default 16) and MAPPED_REG_BUSY_HOG_MIB (default 256) size the hogs.
set -uo pipefail
out=${1:?usage: busy.sh OUT-FOLDER [run options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
threads=${MAPPED_REG_BUSY_HOST_THREADS:-16}
mib=${MAPPED_REG_BUSY_HOG_MIB:-256}
hog_seconds=3600 # longer than any run: the script stops each hog itself

work=$(mktemp -d "${TMPDIR:-/tmp}/mapped-reg-busy.XXXXXX") || { echo "busy.sh: no temporary folder" >&2; exit 1; }
hogs=()
command_pid=
cleanup() {
  local p
  if [[ -n $command_pid ]]; then
    kill -TERM "$command_pid" 2> /dev/null # the command cleans up its own scratch files on SIGTERM
    wait "$command_pid" 2> /dev/null
  fi
  for p in ${hogs[@]+"${hogs[@]}"}; do
    kill -KILL "$p" 2> /dev/null
    wait "$p" 2> /dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir -p "$out" "$work/runs" "$work/scratch" || exit 1
cc -shared -fPIC -O2 -o "$work/cuda-shim.so" "$here/cuda-shim.c" -ldl || { echo "busy.sh: the shim did not build" >&2; exit 1; }
cc -O2 -pthread -o "$work/hog-host" "$here/hog-host.c" || { echo "busy.sh: hog-host did not build" >&2; exit 1; }
cc -O2 -o "$work/hog-link" "$here/hog-link.c" -ldl || { echo "busy.sh: hog-link did not build" >&2; exit 1; }
# hog-lock: holds an exclusive flock on the file argv[2] (made when missing) for argv[3] s, writing nothing into
# it, as `flock(1)` or a hung run would; koffi (the command's own dependency) calls libc's flock
cat > "$work/hog-lock.cjs" << 'EOF'
const [koffiPath, file, seconds] = process.argv.slice(2);
const flock = require(koffiPath).load('libc.so.6').func('int flock(int fd, int operation)');
if (flock(require('node:fs').openSync(file, 'a'), 2) !== 0) process.exit(1);
const t0 = Date.now();
console.log(`hog-lock: pid ${process.pid} running: holding ${file}`);
const done = () => { console.log(`hog-lock: released after ${((Date.now() - t0) / 1000).toFixed(1)} s`); process.exit(0); };
process.on('SIGTERM', done);
setTimeout(done, Number(seconds) * 1000);
EOF
# the command's timing lock: where it takes it (os.tmpdir() is TMPDIR's, one file per user)
lock_file=$(node -e 'console.log(require("node:path").join(require("node:os").tmpdir(), `mapped-reg-conformance-timing-${process.getuid()}.lock`))')

real=${MAPPED_REG_SHIM_REAL:-}
main=(node "$root/dist/cli/main.js" "$@")
driver=()
[[ -n $real ]] && driver=(MAPPED_REG_CUDA_LIBRARY="$real")
shim=(MAPPED_REG_CUDA_LIBRARY="$work/cuda-shim.so" ${real:+MAPPED_REG_SHIM_REAL="$real"})

# Reads a run's JSON: prints the table's figures (registered, page-locked, ratio, host copy, busy) and the gate's
# headline, tab-separated, then on a second line what of the scenario's expectation did not hold ("" when all did).
# argv: json, expectation (quiet|host|link|lock|registration|bandwidth), exit, expected exit, the pid of the hog to be
# named (the link hog's, the lock hog's)
cat > "$work/judge.cjs" << 'EOF'
const [file, want, code, wantCode, hogPid] = process.argv.slice(2);
let r = null;
try { r = JSON.parse(require('node:fs').readFileSync(file, 'utf8')); } catch { r = null; }
const devices = (r && Array.isArray(r.devices)) ? r.devices : [];
const d = devices.find((x) => x && x.timing && String(x.id).startsWith('cuda')) || devices.find((x) => x && x.timing) || null;
const t = (d && d.timing) || {};
const fixed = (v, n) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(n) : '-');
const busy = devices.some((x) => x && x.load && x.load.busy === true) ? 'yes' : devices.some((x) => x && x.load && x.load.busy === false) ? 'no' : '-';
const gate = (r && r.gate) || null;
const reasons = (gate && Array.isArray(gate.reasons)) ? gate.reasons : [];
const headline = (gate && typeof gate.headline === 'string') ? gate.headline.replace(/\s+/g, ' ') : '-';
const failed = [];
if (code !== wantCode) failed.push(`exit ${code}, expected ${wantCode}`);
if (!r) failed.push('no results JSON');
else if (want !== 'quiet' && !gate) failed.push('no gate in the JSON');
const hostOnly = () => {
  if (reasons.length === 0) failed.push('no gate reason');
  if (!reasons.every((x) => x.host === true)) failed.push(`a reason not given to the host: ${reasons.filter((x) => x.host !== true).map((x) => x.kind).join(', ')}`);
  if (!reasons.some((x) => x.kind === 'busy')) failed.push('no reason of kind busy');
  const driver = reasons.filter((x) => x.kind === 'bandwidth' || x.kind === 'registration');
  if (driver.length) failed.push(`blamed on the driver: ${driver.map((x) => x.kind).join(', ')}`);
};
if (r && gate) {
  if (want === 'host') hostOnly();
  if (want === 'link') {
    hostOnly();
    const named = reasons.some((x) => x.kind === 'busy' && String(x.text).includes(hogPid) && String(x.text).includes('hog-link'));
    if (!named) failed.push(`no busy reason naming hog-link and its pid ${hogPid}`);
  }
  if (want === 'lock') {
    // the lock held past its wait: the host's error on the self-test, the holder named, never a timeout
    const checks = devices.flatMap((x) => (x && Array.isArray(x.checks) ? x.checks : []));
    const probe = checks.find((c) => c && c.id === 'probe.verdict');
    if (!probe || probe.status !== 'error') failed.push(`probe.verdict ${probe ? probe.status : 'missing'}, expected error`);
    else if (!String(probe.message).includes('timing lock') || !String(probe.message).includes(`pid ${hogPid} `)) failed.push(`probe.verdict does not name the lock's holder, pid ${hogPid}: ${probe.message}`);
    if (checks.some((c) => c && c.status === 'timeout')) failed.push('a check timed out');
    if (reasons.length === 0 || !reasons.every((x) => x.host === true)) failed.push('a reason not given to the host');
  }
  if (want === 'registration' || want === 'bandwidth') {
    const hit = reasons.some((x) => x.kind === want && (want !== 'bandwidth' || String(x.text).includes('every host-to-device copy got slower')));
    if (!hit) failed.push(want === 'bandwidth' ? 'no bandwidth reason "every host-to-device copy got slower"' : 'no registration reason');
    if (reasons.some((x) => x.host === true)) failed.push('a reason given to the host');
  }
}
console.log([fixed(t.registeredGBps, 2), fixed(t.pageLockedGBps, 2), fixed(t.pageLockedRatio, 3), fixed(t.hostCopyGBps, 2), busy, headline].join('\t'));
console.log(failed.join('; '));
EOF

failures=0
notes=()
row() { printf '%-21s %-8s %-4s %-8s %-8s %-7s %-8s %-4s %-4s %s\n' "$@" | tee -a "$out/busy.txt"; }
: > "$out/busy.txt"
row scenario expected exit 'reg' 'locked' 'ratio' 'host' busy held 'the gate'

# start_hog NAME COMMAND...: starts a hog, its output in runs/NAME.log; waits for its first line. Sets hog_pid.
hog_pid=
start_hog() {
  local name=$1
  shift
  local log=$work/runs/$name.log
  "$@" > "$log" 2>&1 &
  hog_pid=$!
  hogs+=("$hog_pid")
  local waited=0
  until grep -q 'running:' "$log" 2> /dev/null; do
    if ! kill -0 "$hog_pid" 2> /dev/null || ((waited > 1200)); then
      echo "busy.sh: $name did not start: $(cat "$log")" >&2
      return 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
}

# stop_hogs: SIGTERM to each hog started (each prints its GB/s and releases what it took), then waits for it
stop_hogs() {
  local p
  for p in ${hogs[@]+"${hogs[@]}"}; do kill -TERM "$p" 2> /dev/null; done
  for p in ${hogs[@]+"${hogs[@]}"}; do wait "$p" 2> /dev/null; done
  hogs=()
}

# run NAME EXPECTED-EXIT EXPECTATION HOGS [VAR=VALUE...] -- [options]: one run of the command with HOGS (none, host,
# link or both) running, its log and results kept, a row in the table
run() {
  local name=$1 want=$2 expect=$3 with=$4
  shift 4
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  local json=$work/runs/$name.json log=$work/runs/$name.log named_pid=- started=yes lock_made=no
  if [[ $with == host || $with == both ]]; then
    start_hog "$name.hog-host" "$work/hog-host" "$threads" "$hog_seconds" "$mib" || started=no
  fi
  if [[ $started == yes && ($with == link || $with == both) ]]; then
    if start_hog "$name.hog-link" "$work/hog-link" "$hog_seconds" "$mib"; then named_pid=$hog_pid; else started=no; fi
  fi
  if [[ $with == lock ]]; then
    [[ -e $lock_file ]] || lock_made=yes
    if start_hog "$name.hog-lock" node "$work/hog-lock.cjs" "$root/node_modules/koffi" "$lock_file" "$hog_seconds"; then named_pid=$hog_pid; else started=no; fi
  fi
  local code=-
  if [[ $started == yes ]]; then
    local t0
    t0=$(date +%s%N)
    # in the background, waited for: a signal to this script is handled at once (the traps), not after the run
    env ${env[@]+"${env[@]}"} "${main[@]}" --scratch-dir "$work/scratch" --json "$json" "$@" > "$log" 2>&1 &
    command_pid=$!
    wait "$command_pid"
    code=$?
    command_pid=
    echo "wall $((($(date +%s%N) - t0) / 1000000)) ms" >> "$log"
  fi
  stop_hogs
  [[ $lock_made == yes ]] && rm -f "$lock_file" # the lock hog's file, made by it: nothing left in TMPDIR
  local judged figures held
  judged=$(node "$work/judge.cjs" "$json" "$expect" "$code" "$want" "$named_pid")
  figures=$(head -n 1 <<< "$judged")
  held=$(sed -n 2p <<< "$judged")
  [[ $started == yes ]] || held="a hog did not start${held:+; $held}"
  local reg locked ratio host busy headline
  IFS=$'\t' read -r reg locked ratio host busy headline <<< "$figures"
  row "$name" "$want" "$code" "$reg" "$locked" "$ratio" "$host" "$busy" "$([[ -z $held ]] && echo yes || echo no)" "$headline"
  if [[ -n $held ]]; then
    failures=$((failures + 1))
    notes+=("$name: $held")
  fi
}

wait_quiet=(--quiet-wait 10)
run baseline 0 quiet none ${driver[@]+"${driver[@]}"} --
cp "$work/runs/baseline.json" "$work/baseline.json" 2> /dev/null
base=(--baseline "$work/baseline.json" "${wait_quiet[@]}")
for i in 1 2 3; do run "quiet-$i" 0 quiet none ${driver[@]+"${driver[@]}"} -- "${base[@]}"; done
run host-hog 1 host host ${driver[@]+"${driver[@]}"} -- "${base[@]}"
run link-hog 1 link link ${driver[@]+"${driver[@]}"} -- "${base[@]}"
run both-hogs 1 host both ${driver[@]+"${driver[@]}"} -- "${base[@]}"
run shim-slow-registered 1 registration none "${shim[@]}" MAPPED_REG_SHIM_SLOW_REGISTERED=1.25 -- "${base[@]}"
run shim-slow-all 1 bandwidth none "${shim[@]}" MAPPED_REG_SHIM_SLOW_ALL=1.25 -- "${base[@]}"
run lock-held 1 lock lock ${driver[@]+"${driver[@]}"} -- --timeout 5 --quiet-wait 20

for n in ${notes[@]+"${notes[@]}"}; do echo "$n" | tee -a "$out/busy.txt"; done
tar -C "$work" -czf "$out/busy.tgz" runs $([[ -f $work/baseline.json ]] && echo baseline.json)
echo "$failures scenario(s) whose expectations did not hold" | tee -a "$out/busy.txt"
[[ $failures == 0 ]]
