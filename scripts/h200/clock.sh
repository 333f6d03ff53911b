#!/usr/bin/env bash
# The device's clock against the host's on a real GPU (docs/measurement.md, "The device's clock"): a few runs of the
# self-test alone, each followed by the native reference (bench/native/staged.c, built here with cc) on a file of the
# probe's window size. Per run it prints the registered and page-locked GB/s as the results give them (read on the
# device's clock: timing.clock), the same copies on the host's clock (the best of timing.samples.hostRegisteredMs /
# hostPageLockedMs: performance.now around each timed call, the events' calls included), and the native reference's
# registered and page-locked GB/s (clock_gettime around each copy), with registered / native registered for both
# clocks (the acceptance elsewhere: registered >= 0.99 of the native reference in the same run). On the GPU machine,
# from the project's root:
#   bash .device/run.sh bash scripts/h200/clock.sh "$OUT"
# It writes clock.txt (the table it prints) and clock.tgz (every run's results and log, the native outputs) into the
# folder given; exit 1 when a run or the native reference failed, or a run's timing was not on the device's clock.
# MAPPED_REG_CLOCK_RUNS=N runs N times (default 3); arguments after the folder go to every run (default --size 256:
# 128 MiB windows). About 4 s a run and 2 s a native reference on the H200: some 20 s in all.
set -uo pipefail
out=${1:?usage: clock.sh OUT-FOLDER [run options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${MAPPED_REG_CLOCK_RUNS:-3}
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--size 256)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/runs" "$work/scratch"

cc -O2 -o "$work/staged" "$root/bench/native/staged.c" -ldl || { echo "clock.sh: the native reference did not build" >&2; exit 1; }

failures=0
row() { printf '%-5s %-7s %-22s %-22s %-22s %-14s %s\n' "$@" | tee -a "$out/clock.txt"; }
: > "$out/clock.txt"
row run clock 'registered dev/host' 'page-locked dev/host' 'native reg/page-locked' 'reg/native' 'dev/host'
for i in $(seq 1 "$runs"); do
  json=$work/runs/run-$i.json
  node "$root/dist/cli/main.js" --backend cuda --check probe.verdict --scratch-dir "$work/scratch" --json "$json" "${args[@]}" > "$work/runs/run-$i.log" 2>&1 || failures=$((failures + 1))
  # the native reference on a file of the probe's window, right after the run
  bytes=$(node -e 'try { const r = require(process.argv[1]); console.log(r.devices.find((x) => x.id === "cuda:0").timing.bytes) } catch { console.log(0) }' "$json")
  native=$work/runs/native-$i.json
  if [[ $bytes -gt 0 ]]; then
    mib=$(( bytes / 1048576 ))
    dd if=/dev/urandom of="$work/scratch/native.bin" bs=1M count="$mib" status=none
    "$work/staged" --json "$work/scratch/native.bin" "$mib" 7 > "$native" 2> "$work/runs/native-$i.err" || failures=$((failures + 1))
    rm -f "$work/scratch/native.bin"
  else
    echo '{}' > "$native"
    failures=$((failures + 1))
  fi
  line=$(node -e '
    const [json, native] = process.argv.slice(1);
    const f = (x) => (x === undefined || x === null || !Number.isFinite(x) ? "-" : x.toFixed(2));
    try {
      const t = require(json).devices.find((x) => x.id === "cuda:0").timing;
      const best = (xs) => (xs && xs.length ? Math.min(...xs.filter((x) => x !== null)) : undefined);
      const gbps = (ms) => (ms === undefined ? undefined : t.bytes / (ms / 1000) / 1e9);
      const hostReg = t.clock === "device" ? gbps(best(t.samples.hostRegisteredMs)) : t.registeredGBps;
      const hostLocked = t.clock === "device" ? gbps(best(t.samples.hostPageLockedMs)) : t.pageLockedGBps;
      let n = {};
      try { n = JSON.parse(require("fs").readFileSync(native, "utf8")).results || {}; } catch {}
      const nr = n.registered && n.registered.gbps, nl = n.pageLocked && n.pageLocked.gbps;
      const ratio = (a) => (a !== undefined && nr ? (a / nr).toFixed(3) : "-");
      console.log([t.clock || "host", `${f(t.registeredGBps)}/${f(hostReg)}`, `${f(t.pageLockedGBps)}/${f(hostLocked)}`, `${f(nr)}/${f(nl)}`, `${ratio(t.registeredGBps)}/${ratio(hostReg)}`, hostReg ? (t.registeredGBps / hostReg).toFixed(3) : "-"].join("\t"));
    } catch (e) { console.log(["-", "-", "-", "-", "-", String(e.message || e)].join("\t")); }
  ' "$json" "$native")
  IFS=$'\t' read -r clock reg locked nat ratio devhost <<< "$line"
  [[ $clock == device ]] || failures=$((failures + 1))
  row "$i" "$clock" "$reg" "$locked" "$nat" "$ratio" "$devhost"
done
echo "$failures problem(s): a run or the native reference that failed, or a timing not on the device's clock" | tee -a "$out/clock.txt"
tar -C "$work" -czf "$out/clock.tgz" runs
[[ $failures == 0 ]]
