#!/usr/bin/env bash
# The runtimes side by side on a real GPU (issue 33, docs/runtimes.md): one command over the system's libcuda and
# the compat driver of CUDA 13.0 (/usr/local/cuda-13.0/compat/libcuda.so.1, a user-space driver of another release
# than the kernel module). What it must show:
#   - the system's runtime: a row per GPU, Usable, every check passed;
#   - the compat runtime: a row that did not start, saying 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH and why (its
#     release against the kernel module's);
#   - exit 1, the compat runtime named as the candidate that regressed;
#   - valid JUnit (xmllint against test/fixtures/junit-10.xsd where xmllint is there; else well-formed by node).
# On the GPU machine, from the project's root:
#   bash .device/run.sh bash scripts/h200/runtimes.sh "$OUT" [run options...]
# It writes into OUT: runtimes.log (the command's output), runtimes.txt (each expectation and whether it held),
# runtimes.xml (JUnit), runtimes.html, and runs/ (each runtime's results and log, runtime-matrix.json); and exits 1
# when an expectation failed. Environment (optional, for the tests over the driver double):
# MAPPED_REG_RUNTIMES_COMPAT (the compat library; default /usr/local/cuda-13.0/compat/libcuda.so.1) and
# MAPPED_REG_RUNTIMES_ROOT (--runtime-root; default /). Arguments after OUT go to the command (e.g. --size 64).
set -uo pipefail
out=${1:?usage: runtimes.sh OUT-FOLDER [run options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
compat=${MAPPED_REG_RUNTIMES_COMPAT:-/usr/local/cuda-13.0/compat/libcuda.so.1}
tree=${MAPPED_REG_RUNTIMES_ROOT:-/}
mkdir -p "$out"
rm -rf "$out/runs"

node "$root/dist/cli/main.js" runtimes --backend cuda --runtime-root "$tree" --runtime "$compat" \
  --out "$out/runs" --junit "$out/runtimes.xml" --html "$out/runtimes.html" "$@" 2>&1 | tee "$out/runtimes.log"
code=${PIPESTATUS[0]}

failures=0
: > "$out/runtimes.txt"
expect() { # expect WHAT OK: one line of runtimes.txt
  local mark=held
  if [ "$2" != ok ]; then mark=FAILED; failures=$((failures + 1)); fi
  printf '%-7s %s\n' "$mark" "$1" | tee -a "$out/runtimes.txt"
}
[ "$code" = 1 ] && expect "exit 1 (was $code)" ok || expect "exit 1 (was $code)" no

# the matrix, read by node: each expectation one word (ok or what it saw)
check() {
  node -e '
    const fs = require("fs");
    const [dir, what, compat] = process.argv.slice(1);
    let m;
    try { m = JSON.parse(fs.readFileSync(dir + "/runtime-matrix.json", "utf8")); } catch (e) { console.log("no matrix: " + e.message); process.exit(0); }
    const sys = m.rows.filter((r) => r.runtime === "system");
    const other = m.rows.filter((r) => r.runtime !== "system");
    if (what === "system") {
      if (sys.length === 0 || sys.some((r) => r.kind !== "device")) { console.log("no device row for the system runtime"); process.exit(0); }
      const run = JSON.parse(fs.readFileSync(dir + "/" + m.runs.find((x) => x.runtime === "system").file, "utf8"));
      const bad = sys.filter((r) => !/^Usable/.test(r.verdict) || r.notPassed.length > 0);
      const counts = run.devices.map((d) => d.id + " " + d.checks.length + " checks").join(", ");
      console.log(bad.length ? "not Usable with every check passed: " + JSON.stringify(bad) : "ok " + counts);
    } else if (what === "compat") {
      const row = other.find((r) => r.path === compat || r.runtime.endsWith("compat"));
      if (!row) { console.log("no row for " + compat); process.exit(0); }
      console.log(row.kind === "not-started" && /803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH/.test(row.reason) ? "ok " + row.reason : "row " + JSON.stringify(row));
    } else if (what === "regressed") {
      const names = m.regressed;
      console.log(names.length === 1 && names[0] !== "system" && m.rows.some((r) => r.runtime === names[0] && r.kind === "not-started") ? "ok " + names.join(", ") : "regressed: " + JSON.stringify(names));
    }
  ' "$out/runs" "$1" "$compat"
}
for what in system compat regressed; do
  said=$(check "$what")
  case "$said" in
    ok*) expect "$what: ${said#ok }" ok ;;
    *) expect "$what: $said" no ;;
  esac
done
grep -q "^FAIL: 1 candidate runtime regressed against the baseline: " "$out/runtimes.log" && expect "the last line names the compat runtime" ok || expect "the last line names the compat runtime" no

if command -v xmllint >/dev/null 2>&1; then
  if xmllint --noout --schema "$root/test/fixtures/junit-10.xsd" "$out/runtimes.xml" 2>"$out/xmllint.txt"; then expect "JUnit valid (junit-10.xsd)" ok; else expect "JUnit valid (junit-10.xsd): $(head -3 "$out/xmllint.txt" | tr '\n' ' ')" no; fi
else
  node -e 'const x = require("fs").readFileSync(process.argv[1], "utf8"); if (!/^<\?xml[^>]*>\s*<testsuites[\s>]/.test(x) || !/<\/testsuites>\s*$/.test(x)) process.exit(1)' "$out/runtimes.xml" \
    && expect "JUnit present (no xmllint here to validate it)" ok || expect "JUnit present" no
fi
grep -q 'testsuite name="runtime cuda-13.0-compat\|testsuite name="runtime [^"]*compat' "$out/runtimes.xml" && expect "JUnit: a testsuite of the compat runtime" ok || expect "JUnit: a testsuite of the compat runtime" no

echo "$failures expectation(s) failed" | tee -a "$out/runtimes.txt"
[ "$failures" = 0 ]
