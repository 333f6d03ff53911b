#!/usr/bin/env bash
# The gate's false-alarm rate on a real GPU (issue 37, docs/gate.md "A decision with its noise"): quiet runs of the
# same driver one after another, then `compare` of every ordered pair of them (40 runs: 1,560 pairs), each a false
# regression when it says the driver regressed; then the same against a baseline of the first 10 runs (compare
# --also-old) for each later run; then a driver whose registered copies take 1.25 x as long (cuda-shim.c,
# MAPPED_REG_SHIM_SLOW_REGISTERED=1.25, built here with cc), which `run --baseline` and `compare` must catch. On the
# GPU machine, from the project's root:
#   bash .device/run.sh bash scripts/h200/quiet-pairs.sh "$OUT"
# It writes quiet-pairs.txt (the runs' figures, the counts and the summary line) and quiet-pairs.tgz (every run's
# results and log, every comparison's JSON) into the folder given, and exits 1 when there was a false regression or
# the slower driver was not caught. MAPPED_REG_QUIET_RUNS=N makes N quiet runs (default 40; at least 11);
# MAPPED_REG_SHIM_REAL=<a CUDA library> runs everything against that library instead of libcuda.so.1 (the tests use
# the driver double); arguments after the folder go to every run (e.g. --size 8). Wall time on the H200: about 40 x
# a run (some 3 s) and the comparisons, 16 at a time (some 0.3 s each): 3 to 4 minutes.
set -uo pipefail
out=${1:?usage: quiet-pairs.sh OUT-FOLDER [run options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${MAPPED_REG_QUIET_RUNS:-40}
[[ $n =~ ^[0-9]+$ && $n -ge 11 ]] || { echo "quiet-pairs.sh: MAPPED_REG_QUIET_RUNS must be a whole number of at least 11 (10 runs of baseline and one more), not '$n'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/runs" "$work/pairs" "$work/scratch"
source "$here/shim.sh"
main=(node "$root/dist/cli/main.js")
txt=$out/quiet-pairs.txt
: > "$txt"
say() { echo "$*" | tee -a "$txt"; }

# one line of a run's figures: exit, registered GB/s, page-locked, registered / page-locked, rounds (extra), wall ms
figures() {
  node -e '
    const [file, code, ms] = process.argv.slice(1);
    let d;
    try { d = require(file).devices.find((x) => x.id === "cuda:0"); } catch {}
    const t = d && d.timing;
    const f = (x, k) => (typeof x === "number" ? x.toFixed(k) : "-");
    console.log([code, f(t && t.registeredGBps, 2), f(t && t.pageLockedGBps, 2), f(t && t.pageLockedRatio, 4), t ? `${t.runs}${t.extraRounds ? ` (+${t.extraRounds.rounds})` : ""}` : "-", ms].join("\t"));
  ' "$@"
}

say "quiet runs: $n, one after another ($(date -u +%FT%TZ)); options: ${*:-(none)}"
printf 'run\texit\tregistered\tpage-locked\tratio\trounds\twall ms\n' | tee -a "$txt"
quiet_failed=0
for i in $(seq 1 "$n"); do
  t0=$(date +%s%N)
  env "${driver[@]}" "${main[@]}" --scratch-dir "$work/scratch" --json "$work/runs/run-$i.json" "$@" > "$work/runs/run-$i.log" 2>&1
  code=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [[ $code == 0 ]] || quiet_failed=$((quiet_failed + 1))
  printf 'run-%s\t%s\n' "$i" "$(figures "$work/runs/run-$i.json" "$code" "$ms")" | tee -a "$txt"
done

# compare of every ordered pair, as many at a time as there are cores: "OLD NEW EXIT KINDS..." per pair
pairs=$work/pairs.txt
for i in $(seq 1 "$n"); do for j in $(seq 1 "$n"); do [[ $i != "$j" ]] && echo "$i $j"; done; done |
  xargs -P "$(nproc)" -n 2 bash -c '
    node "$0" compare --json "$1/runs/run-$2.json" "$1/runs/run-$3.json" > "$1/pairs/$2-$3.json" 2> "$1/pairs/$2-$3.err"
    code=$?
    kinds=$(node -e "try { console.log(require(process.argv[1]).regressions.map((r) => r.kind).join(\",\") || \"-\") } catch { console.log(\"unreadable\") }" "$1/pairs/$2-$3.json")
    echo "$2 $3 $code $kinds"
  ' "$root/dist/cli/main.js" "$work" > "$pairs"
total=$(wc -l < "$pairs")
# the driver's: any failing kind but the host's (noisy, busy, error)
driver_false=$(awk '$3 != 0 && $4 ~ /registration|bandwidth|verdict|status|missing|unexpected-pass|unreadable/' "$pairs" | wc -l)
host_noisy=$(awk '$3 != 0 && $4 !~ /registration|bandwidth|verdict|status|missing|unexpected-pass|unreadable/' "$pairs" | wc -l)
bad_exit=$(awk '$3 != 0 && $3 != 1' "$pairs" | wc -l)
say "compare of every ordered pair: $total pairs, $driver_false false regressions (the driver's), $host_noisy the host's (too noisy or busy), $bad_exit with an exit status other than 0 or 1"
awk '$3 != 0 {print "  " $1 " -> " $2 ": exit " $3 ", " $4}' "$pairs" | head -n 40 | tee -a "$txt"

# against a baseline of the first 10 runs: each later run, compare with --also-old
several=0
several_false=0
several_host=0
also=()
for k in $(seq 2 10); do also+=(--also-old "$work/runs/run-$k.json"); done
for j in $(seq 11 "$n"); do
  "${main[@]}" compare --json "$work/runs/run-1.json" "$work/runs/run-$j.json" "${also[@]}" > "$work/pairs/base10-$j.json" 2>&1
  code=$?
  several=$((several + 1))
  kinds=$(node -e 'try { console.log(require(process.argv[1]).regressions.map((r) => r.kind).join(",")) } catch { console.log("unreadable") }' "$work/pairs/base10-$j.json")
  if [[ $code != 0 ]]; then
    if [[ $kinds =~ registration|bandwidth|verdict|status|missing|unexpected-pass|unreadable ]]; then several_false=$((several_false + 1)); else several_host=$((several_host + 1)); fi
    echo "  base10 -> run-$j: exit $code, $kinds" | tee -a "$txt"
  fi
done
say "against a baseline of 10 runs (compare --also-old): $several comparisons, $several_false false regressions (the driver's), $several_host the host's"

# the slower driver: registered copies 1.25 x as long (a 20% slower registration), against run-1 and the 10 runs
baseline_args=()
for k in $(seq 1 10); do baseline_args+=(--baseline "$work/runs/run-$k.json"); done
caught=0
slow() {
  local name=$1
  shift
  env "${shim[@]}" MAPPED_REG_SHIM_SLOW_REGISTERED=1.25 "${main[@]}" --scratch-dir "$work/scratch" --json "$work/runs/$name.json" "$@" > "$work/runs/$name.log" 2>&1
  local code=$?
  local kinds
  kinds=$(node -e 'try { const g = require(process.argv[1]).gate; console.log(g.reasons.map((r) => r.kind).join(",") || "-") } catch { console.log("unreadable") }' "$work/runs/$name.json")
  say "$name: exit $code, gate reasons $kinds; $(tail -n 1 "$work/runs/$name.log")"
  [[ $code == 1 && $kinds =~ registration ]] && caught=$((caught + 1))
}
slow slower-vs-run-1 "$@" --baseline "$work/runs/run-1.json"
slow slower-vs-10-runs "$@" "${baseline_args[@]}"
for against in 1; do
  "${main[@]}" compare --json "$work/runs/run-$against.json" "$work/runs/slower-vs-run-1.json" > "$work/pairs/slower-compare.json" 2>&1
  code=$?
  kinds=$(node -e 'try { console.log(require(process.argv[1]).regressions.map((r) => r.kind).join(",") || "-") } catch { console.log("unreadable") }' "$work/pairs/slower-compare.json")
  say "compare run-$against slower: exit $code, $kinds"
  [[ $code == 1 && $kinds =~ registration ]] && caught=$((caught + 1))
done
"${main[@]}" compare --json "$work/runs/run-1.json" "$work/runs/slower-vs-run-1.json" "${also[@]}" > "$work/pairs/slower-compare-10.json" 2>&1
code=$?
kinds=$(node -e 'try { console.log(require(process.argv[1]).regressions.map((r) => r.kind).join(",") || "-") } catch { console.log("unreadable") }' "$work/pairs/slower-compare-10.json")
say "compare (10 runs) slower: exit $code, $kinds"
[[ $code == 1 && $kinds =~ registration ]] && caught=$((caught + 1))

tar -C "$work" -czf "$out/quiet-pairs.tgz" runs pairs pairs.txt
ok=yes
[[ $driver_false == 0 && $several_false == 0 && $caught == 4 && $quiet_failed == 0 ]] || ok=no
say "quiet-pairs: $n quiet runs ($quiet_failed did not exit 0); $total ordered pairs: $driver_false false regressions, $host_noisy the host's; 10-run baseline: $several_false of $several false, $several_host the host's; a 20% slower registration caught $caught of 4 (run --baseline one run, ten runs; compare one run, ten runs): $ok"
[[ $ok == yes ]]
