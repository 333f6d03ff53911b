#!/usr/bin/env bash
# The reference checks (docs/reference-checks.md) on a real GPU: one default run of every check (the reference
# checks among them, with what the driver returned), then hazard.register_cycles alone RUNS more times (its cost
# a cycle and the memory figures, run after run). On the GPU machine, from the project's root:
#   bash scripts/h200/reference-checks.sh OUT [run options...]
# It writes into OUT: full.json, full.xml and full.log (the default run), cycles-N.json and cycles-N.log, and
# reference.txt (a line per reference check of the default run: id, status, observed; then a line per cycles run:
# its status, cycles, ms a cycle, free device memory before and after, VmLck and VmPin before and after). Arguments
# after OUT go to every run. Exit: 0 when every reference check of every run passed (a skip counts as passing), 1
# otherwise. Environment: MAPPED_REG_REFERENCE_RUNS (default 5), NODE (default node).
set -uo pipefail
out=${1:?usage: reference-checks.sh OUT-FOLDER [run options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
node=${NODE:-node}
runs=${MAPPED_REG_REFERENCE_RUNS:-5}
main="$root/dist/cli/main.js"
mkdir -p "$out" || exit 1

"$node" "$main" --json "$out/full.json" --junit "$out/full.xml" "$@" >"$out/full.log" 2>&1
echo "full run: exit $?" >"$out/reference.txt"
for i in $(seq 1 "$runs"); do
  "$node" "$main" --backend cuda --backend hip --check hazard.register_cycles --json "$out/cycles-$i.json" "$@" >"$out/cycles-$i.log" 2>&1
  echo "cycles run $i: exit $?" >>"$out/reference.txt"
done

# the table, read from the JSON files (node, already needed for the command)
"$node" - "$out" "$runs" >>"$out/reference.txt" <<'JS'
const { readFileSync } = require('node:fs');
const [out, runs] = process.argv.slice(2);
const ids = new Set(['hazard.host_register_attribute', 'hazard.readonly_register_attribute', 'hazard.host_pointer_attribute', 'hazard.page_tables_attribute', 'hazard.register_cycles', 'hazard.unknown_flags_refused', 'hazard.null_pointer_refused', 'hazard.zero_size_refused', 'hazard.unregister_null_refused', 'hazard.portable_second_context', 'hazard.async_stream_copy', 'hazard.device_pointer', 'hazard.every_gpu_at_once']);
let ok = true;
const read = (f) => { try { return JSON.parse(readFileSync(`${out}/${f}`, 'utf8')); } catch (e) { ok = false; console.log(`${f}: not read (${e.message})`); return { devices: [] }; } };
for (const d of read('full.json').devices) {
  for (const c of d.checks.filter((c) => ids.has(c.id))) {
    if (c.status !== 'pass' && c.status !== 'skip') ok = false;
    console.log(`${d.id}\t${c.id}\t${c.status}\t${c.observed ?? c.message ?? ''}${c.status !== 'pass' && c.message ? `\t(${c.message})` : ''}`);
  }
}
for (let i = 1; i <= Number(runs); i++) {
  for (const d of read(`cycles-${i}.json`).devices) {
    const c = d.checks.find((x) => x.id === 'hazard.register_cycles');
    if (!c || c.status === 'skip') continue;
    if (c.status !== 'pass') ok = false;
    const x = c.data ?? {};
    const l = (m) => (m && 'lockedKiB' in m ? `${m.lockedKiB}/${m.pinnedKiB}` : '?');
    console.log(`cycles ${i}\t${d.id}\t${c.status}\t${x.cycles} cycles\t${x.perCycleUs?.toFixed(1)} us a cycle\tfree ${x.freeBefore} -> ${x.freeAfter}\tVmLck/VmPin kB ${l(x.lockedBefore)} -> ${l(x.lockedAfter)}${c.message ? `\t(${c.message})` : ''}`);
  }
}
console.log(ok ? 'every reference check passed' : 'a reference check did not pass');
process.exitCode = ok ? 0 : 1;
JS
status=$?
cat "$out/reference.txt"
exit $status
