#!/usr/bin/env node
// Applies each named mutation to the model (src/), the checks (suites/checks/, suites/hazards/), the bindings (bindings/) or the
// gate's rules (results/compare.ts, results/gate.ts, history/fleet-compare.ts), one at a time, runs the test files that
// hold that code, and writes which tests failed to docs/mutations.md. The source is restored after each run (and on
// any error). Every pattern must match the source, or the script stops: a stale pattern would make a mutation a
// no-op that "survives" for nothing.
// Usage: node scripts/mutations.mjs [--dry] [--new] [name-substring]   (all mutations when none is given; --dry: only
// check that every pattern matches the sources; --new: only those docs/mutations.md does not list yet, the page's
// rows for the others carried and marked so)
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const probe = 'src/probe.ts';
const fatal = 'src/fatal.ts';
const ops = 'src/ops.ts';
const probeChecks = 'suites/checks/probe.ts';
const timingChecks = 'suites/checks/timing.ts';
const staticChecks = 'suites/checks/static.ts';
const hazardHarness = 'suites/hazards/harness.ts';
const hazardFlags = 'suites/hazards/flags.ts';
const hazardOverlaps = 'suites/hazards/overlaps.ts';
const hazardRelease = 'suites/hazards/release.ts';
const hazardFileChanges = 'suites/hazards/file-changes.ts';
const hazardReset = 'suites/hazards/reset.ts';
const deviceOps = 'bindings/device-ops.ts';
const compareRules = 'results/compare.ts';
const gateRules = 'results/gate.ts';
const historyCompare = 'history/fleet-compare.ts';
const selectChecks = 'cli/select-checks.ts';
const selectDevices = 'cli/select-devices.ts';
const numbers = 'cli/numbers.ts';
const options = 'cli/options.ts';
const usageHints = 'cli/usage-hints.ts';
const librarySearch = 'bindings/library-search.ts';
const discoveringRunners = 'cli/discovering-runners.ts';
const registering = 'bindings/backends/registering.ts';
const benchScaling = 'bench/scaling.ts';
const benchRepeats = 'bench/repeats.ts';
const benchOptions = 'bench/bench-options.ts';
const benchProc = 'bench/proc.ts';
const discoveryThread = 'cli/discovery-thread.ts';
const readAheadFile = 'bindings/read-ahead.ts';
const truncateEarly = 'suites/hazards/truncate-early.ts';
const truncateEarlyThread = 'suites/hazards/truncate-early-thread.ts';
const truncateChild = 'suites/hazards/truncate-child.ts';

/** The test files that hold each part. */
const LIBRARY_SEARCH = ['test/library-search.test.ts'];
const BENCH = ['test/bench.test.ts'];
/** The reference read ahead: its own tests, and the scratch region's reader over it. */
const READ_AHEAD = ['test/read-ahead.test.ts', 'test/scratch.test.ts'];
/** The bench's sampler alone (its tests need no bench run). */
const BENCH_PROC = ['test/bench.test.ts', '-t', 'TreeSampler'];
const MODEL = ['test/probe.test.ts', 'test/static.test.ts', 'test/verdict.test.ts', 'test/ops.test.ts'];
const CHECKS = ['test/checks.test.ts'];
const HAZARDS = ['test/hazards.test.ts'];
const BINDINGS = ['test/cuda.test.ts', 'test/hip.test.ts'];
const GATE = ['test/gate-boundaries.test.ts'];
const SELECTION = ['test/select-checks.test.ts', 'test/select.test.ts'];
const OPTIONS = ['test/options.test.ts'];
const BUSY = ['test/busy.test.ts'];
const PCI = ['test/pci.test.ts', 'test/checks.test.ts'];
const LOCK = ['test/timing-lock.test.ts'];
const LOCK_WAIT = ['test/lock-wait.test.ts'];
const TRUNCATE_EARLY = ['test/truncate-early.test.ts'];
const TRUNCATE_EARLY_COMMAND = ['test/truncate-early-command.test.ts'];
const RUNTIMES = ['test/runtimes.test.ts'];
const runtimeDiscovery = 'cli/runtime-discovery.ts';
const runtimeProbe = 'bindings/runtime-probe.ts';
const runtimeFacts = 'results/runtime.ts';
const runtimeMatrixModel = 'results/runtime-matrix.ts';
const runtimesCommand = 'cli/runtimes.ts';
const runtimeReporters = 'reporters/runtime-matrix.ts';
const storeFiles = 'history/store.ts';
const DECISION = ['test/decision.test.ts'];
const GATE_NOISE = ['test/gate-noise.test.ts'];
const DOUBLE_RATES = ['test/double-rates.test.ts'];
const decision = 'results/decision.ts';
const REFERENCE_COPIES = ['test/reference-checks.test.ts'];
const refCopies = 'suites/hazards/reference-copies.ts';
const refCopiesHarness = 'suites/hazards/reference-copies-harness.ts';

/** Replaces `pattern` once, or throws: a pattern that no longer matches the source would make a mutation a no-op. */
const once = (s, pattern, by) => {
  if (!s.includes(pattern)) throw new Error(`a mutation's pattern is stale: ${JSON.stringify(pattern.slice(0, 80))}`);
  return s.replace(pattern, by);
};
/** A mutation replacing each [pattern, by] of `pairs` once, in order. */
const edits = (...pairs) => (s) => pairs.reduce((t, [pattern, by]) => once(t, pattern, by), s);

const refCheck = `    for (const i of [0, 1] as const) {
      const d = refs.diff(windows[i].bytes, i * w);
      if (d >= 0) return \`the reference differs from the map at offset \${i * w + d}: nothing was registered\`;
    }
`;
const afterRegister = `      run.registered.push(i);
    }
`;
// the same check, made once both windows are registered
const refCheckAfter = `    for (const i of [0, 1] as const) {
      const d = refs.diff(windows[i].bytes, i * windows[0].bytes.length);
      if (d >= 0) {
        run.verdict = Inconclusive(\`the reference differs from the map at offset \${i * windows[0].bytes.length + d}\`);
        return run;
      }
    }
`;
const stagedCopy = 'stageCopy: () => buffer.set(window.bytes),';
const measure = 'suites/measure.ts';
const pci = 'bindings/pci.ts';
const junitReport = 'reporters/junit.ts';
const markdownReport = 'reporters/markdown.ts';
const metricsReport = 'reporters/metrics.ts';
const resultsPage = 'reporters/results-page.ts';
const gateLines = 'reporters/summary.ts';
const historyPage = 'history/history-page.ts';
const historyCommands = 'history/commands.ts';
const historyStore = 'history/store.ts';
/** Whose fault a failure is, in every report; the machine check at its thresholds; the history commands' sides and store versions. */
const ATTRIBUTION = ['test/attribution.test.ts'];
const MACHINE = ['test/machine-check.test.ts'];
const HISTORY_SIDES = ['test/history-sides.test.ts'];
const HISTORY_NOISE = ['test/history-noise.test.ts'];
const timingLock = 'bindings/timing-lock.ts';
const orchestrate = 'cli/orchestrate.ts';
const smallFile = 'bindings/small-file.ts';
const pressure = 'bindings/pressure.ts';
const gpuUsers = 'bindings/gpu-users.ts';
const deviceRunner = 'cli/device-runner.ts';
const outputs = 'cli/outputs.ts';
const writeOutputs = 'cli/write-outputs.ts';
const finite = 'results/finite.ts';
const summary = 'reporters/summary.ts';
const junit = 'reporters/junit.ts';
const junitCases = 'reporters/junit-cases.ts';
const streamText = 'cli/stream-text.ts';
/** JUnit as CI systems read it (issue 35): real consumers, and the reporters' own tests. */
const JUNIT_CONSUMERS = ['test/junit-consumers.test.ts'];
const JUNIT_REPORTS = ['test/junit-consumers.test.ts', 'test/reporters.test.ts'];
const STREAM_TEXT = ['test/stream-text.test.ts'];
const cap = 'reporters/cap.ts';
const MACHINE_READS = ['test/machine-reads.test.ts'];
const OUTPUTS = ['test/outputs.test.ts'];
const OUTPUT_FORMATS = ['test/output-formats.test.ts'];
const CAPS = ['test/machine-caps.test.ts'];
/** The reference checks (docs/reference-checks.md): their files, and the test file that holds them. */
const refAttributes = 'suites/hazards/reference-attributes.ts';
const refRepetition = 'suites/hazards/reference-repetition.ts';
const refNegatives = 'suites/hazards/reference-negatives.ts';
const lockedMemoryFile = 'bindings/locked-memory.ts';
const cudaBinding = 'bindings/cuda.ts';
const REFERENCE = ['test/reference-negatives.test.ts'];
/** The device's clock (docs/measurement.md, "The device's clock"): the events, the probe's use of them, the double's virtual clock. */
const deviceClockFile = 'bindings/device-clock.ts';
const doubleEngine = 'test/double/common.c';
const DEVICE_CLOCK = ['test/device-clock.test.ts'];
const withoutVitest = 'suites/without-vitest.ts';
const WITHOUT_VITEST = ['test/without-vitest.test.ts'];
const SPARE = ['test/spare-runner.test.ts'];

// [name, why (the hole or the promise), file, mutate, test files]: one line a mutation
const mutations = [
  // ---- the spec's constants 
  ['margin 0.8 -> 0.7', 'spec constant', probe, edits(['DEFAULT_MIN_RELATIVE_SPEED = 0.8', 'DEFAULT_MIN_RELATIVE_SPEED = 0.7']), MODEL],
  ['margin 0.8 -> 0.9', 'spec constant', probe, edits(['DEFAULT_MIN_RELATIVE_SPEED = 0.8', 'DEFAULT_MIN_RELATIVE_SPEED = 0.9']), MODEL],
  ['unit 64 KiB -> 32 KiB', 'spec constant', probe, edits(['UNIT = 64 * 1024', 'UNIT = 32 * 1024']), MODEL],
  ['unit 64 KiB -> 128 KiB', 'spec constant', probe, edits(['UNIT = 64 * 1024', 'UNIT = 128 * 1024']), MODEL],
  ['best of 7 -> best of 6', 'spec constant', probe, edits(['DEFAULT_RUNS = 7', 'DEFAULT_RUNS = 6']), MODEL],
  ['best of 7 -> best of 8', 'spec constant', probe, edits(['DEFAULT_RUNS = 7', 'DEFAULT_RUNS = 8']), MODEL],
  ['checked-release tries 3 -> 2', 'spec constant', probe, edits(['  checked: 3,', '  checked: 2,']), MODEL],
  ['checked-release tries 3 -> 4', 'spec constant', probe, edits(['  checked: 3,', '  checked: 4,']), MODEL],
  ['clean-up tries 2 -> 1', 'spec constant', probe, edits(['  cleanup: 2,', '  cleanup: 1,']), MODEL],
  ['clean-up tries 2 -> 3', 'spec constant', probe, edits(['  cleanup: 2,', '  cleanup: 3,']), MODEL],
  ['reference check moved after the registration', 'spec: the reference is checked first', probe, edits([refCheck, '    void w;\n'], [afterRegister, afterRegister + refCheckAfter]), MODEL],

  // ---- the staged copy
  ['staged copy without its memcpy', 'the staged copy', probe, edits([stagedCopy, 'stageCopy: () => void buffer,']), MODEL],
  ['staged memcpy made once, before the timing', 'the staged copy', probe, edits([stagedCopy, 'stageCopy: () => void buffer,'], ['  const time = (rounds = o.runs): CopyTimes =>', '  buffer.set(window.bytes);\n  const time = (rounds = o.runs): CopyTimes =>']), MODEL],
  ['staged memcpy of window 2 instead of window 1', 'the staged copy', probe, edits([stagedCopy, 'stageCopy: () => buffer.set(other.bytes),'], ['function timeCopies(t: Ops, window: Host, pinned: Host, o: SelfTestOptions): CopyTimes {', 'function timeCopies(t: Ops, window: Host, pinned: Host, o: SelfTestOptions, other: Host = window): CopyTimes {'], ['timeCopies(t, windows[0], staging, o)', 'timeCopies(t, windows[0], staging, o, windows[1])']), MODEL],
  // ---- the memory the probe holds (issue 32): round trips in chunks, window 2 released and dropped before the timing
  ['memory: the round trips stop after the first chunk of a window', 'round trips in chunks', probe, edits(['  for (let at = 0; at < w; at += c) {', '  for (let at = 0; at < c; at += c) {']), MODEL],
  ["memory: a chunk's buffer filled with the same window's bytes, not the other's", 'round trips in chunks', probe, edits(['    refs.copy(into.bytes, (1 - i) * w + at);', '    refs.copy(into.bytes, i * w + at);']), MODEL],
  ["memory: a chunk's buffer not filled before its round trip", 'round trips in chunks', probe, edits(['    refs.copy(into.bytes, (1 - i) * w + at);\n', '']), MODEL],
  ["memory: a difference's offset taken within its chunk, not the window", 'round trips in chunks', probe, edits(['    if (d >= 0) return at + d;', '    if (d >= 0) return d;']), MODEL],
  ['memory: window 2 kept registered through the timed copies', "window 2's release", probe, edits(['  releaseSecondWindow(t, windows, result, run, plog, o.dropReleased);\n', '']), MODEL],
  ["memory: window 2's pages dropped although its release failed", "window 2's release", probe, edits(['    run.earlyFailure = e;', '    run.earlyFailure = e;\n    drop?.(windows[1]);']), MODEL],
  ["memory: window 2's later tries start again from the first", "window 2's release", probe, edits(['    for (let k = win.releaseTries + 1; k <= tries; k++) {', '    for (let k = 1; k <= tries; k++) {']), MODEL],
  ["memory: the timing's page-locked buffer allocated before window 2's release", "window 2's release", probe, edits(['  releaseSecondWindow(t, windows, result, run, plog, o.dropReleased);\n', ''], ['  const times = timeCopies(t, windows[0], staging, o);', '  releaseSecondWindow(t, windows, result, run, plog, o.dropReleased);\n  const times = timeCopies(t, windows[0], staging, o);']), MODEL],
  ["memory: the device's probe keeps window 2's pages (no dropReleased)", "window 2's pages dropped", 'suites/context.ts', edits(['        if (!registrations.isPinned(window)) dropPages(window);', '        void window;']), ['test/probe-memory.test.ts']],
  ['memory: dropPages advises MADV_NORMAL (nothing leaves the process)', "window 2's pages dropped", 'bindings/libc.ts', edits(['export const MADV_DONTNEED = 4;', 'export const MADV_DONTNEED = 0;']), ['test/libc.test.ts']],
  ["memory: the bench's anonymous PSS read from Pss_File", 'bench: PSS by kind', benchProc, edits(["  const anon = field('Pss_Anon');", "  const anon = field('Pss_File');"]), BENCH_PROC],
  ['staged copy timed by its median, not its best', 'the staged copy', probe, edits(['const stagedGBps = gbps(bytes, staged.best);', 'const stagedGBps = gbps(bytes, staged.median);']), MODEL],
  // ---- release
  ['Still_registered only when both windows are stuck', 'release', probe, edits(['  if (released.notReleased.length > 0) {', '  if (released.notReleased.length > 1) {']), MODEL],
  // ---- validity of every measured duration
  ['the registered duration not validated', 'durations', probe, edits(["(['registered', 'staged'] as const).filter((k) => !validDuration(times[k].best))", "(['staged'] as const).filter((k) => !validDuration(times[k].best))"]), MODEL],
  ['the staged duration not validated', 'durations', probe, edits(["(['registered', 'staged'] as const).filter((k) => !validDuration(times[k].best))", "(['registered'] as const).filter((k) => !validDuration(times[k].best))"]), MODEL],
  ['a zero duration is valid', 'durations', probe, edits(['Number.isFinite(ms) && ms > 0', 'Number.isFinite(ms) && ms >= 0']), MODEL],
  ['an infinite duration is valid', 'durations', probe, edits(['Number.isFinite(ms) && ms > 0', '!Number.isNaN(ms) && ms > 0']), MODEL],
  // ---- spec deviations
  ['a log that throws in the catch block skips the releases', 'deviation 1', probe, edits(['    plog.say(`probe stopped early: ${errorText(e)}`);', '    plog.log(`probe stopped early: ${errorText(e)}`);']), MODEL],
  ['a log that throws on a failed release stops the releases', 'deviation 1', probe, edits(['        plog.say(`unregister of ${what} failed', '        plog.log(`unregister of ${what} failed']), MODEL],
  ['a fatal error freeing what the ops allocated is swallowed', 'deviation 2', deviceOps, edits([`        if (isFatal(e)) fatal ??= e;\n        say(\`release of`, `        say(\`release of`]), BINDINGS],
  ["a fatal release error replaces the body's own fatal error", 'deviation 2', deviceOps, edits(['      if (!isFatal(error)) throw fatal;', '      throw fatal;']), BINDINGS],
  ['withDeviceOps refuses every device decided statically', 'weak assertion (.not.toThrow)', probe, edits(["if (s.kind === 'Decided' && s.verdict.kind === 'Refused') throw new RegistrationUnreachable", "if (s.kind === 'Decided') throw new RegistrationUnreachable"]), MODEL],
  ['the probe times with a stopped clock when none is given', 'weak assertion (the real clock)', probe, edits(['  const now = o.now ?? (() => performance.now());', '  const now = o.now ?? (() => 0);']), MODEL],
  // ---- each hazard check's own judgement (one fault of the double per promise)
  ['hazard.prot_none_refused: an accepted PROT_NONE mapping passes', 'hazard judgement', hazardFlags, edits(["        status: accepted.length === 0 ? 'pass' : 'fail',", "        status: 'pass',"]), HAZARDS],
  ['hazard.readonly_mapping: a failed release of the flags-0 registration passes', 'hazard judgement', hazardFlags, edits(["return { status: 'fail', expected, observed: `flags 0: register 0, unregister", "return { status: 'pass', expected, observed: `flags 0: register 0, unregister"]), HAZARDS],
  ['servesOrRefuses (tmpfs, memfd, private): wrong bytes pass', 'hazard judgement', hazardHarness, edits(['  const good = t.served?.diff === -1 && succeeded(t.unregister);', '  const good = succeeded(t.unregister);']), HAZARDS],
  ['servesOrRefuses (tmpfs, memfd, private): a failed release passes', 'hazard judgement', hazardHarness, edits(['  const good = t.served?.diff === -1 && succeeded(t.unregister);', '  const good = t.served?.diff === -1;']), HAZARDS],
  ['hazard.double_registration_refused: the same range accepted twice passes', 'hazard judgement', hazardOverlaps, edits(["        status: succeeded(second) ? 'fail' : 'pass',", "        status: 'pass',"]), HAZARDS],
  ['hazard.overlap_refused: an accepted overlap passes', 'hazard judgement', hazardOverlaps, edits(["const status = succeeded(over) ? 'fail' : succeeded(adj) ? 'pass' : 'warn';", "const status = (succeeded(adj) ? 'pass' : 'warn') as 'pass' | 'warn' | 'fail';"]), HAZARDS],
  ['hazard.release_after_double_registration: failed releases pass', 'hazard judgement', hazardOverlaps, edits(['      const good = releases.every(succeeded);', '      const good = n > 0;']), HAZARDS],
  ['hazard.unregister_after_register: a failed first release passes', 'hazard judgement', hazardRelease, edits(["        status: succeeded(un) ? 'pass' : 'fail',", "        status: 'pass',"]), HAZARDS],
  ['hazard.unregister_unknown: any refusal passes, not only 713', 'hazard judgement', hazardRelease, edits(['    const good = un.code === nr.code;', '    const good = un.code !== 0;']), HAZARDS],
  ['hazard.unregister_interior: an interior unregister that succeeds passes', 'hazard judgement', hazardRelease, edits(['      const good = !succeeded(interior) && succeeded(start);', '      const good = succeeded(start);']), HAZARDS],
  ['hazard.coherent_after_write: stale bytes after the write pass', 'hazard judgement', hazardFileChanges, edits(['      const good = before.diff === -1 && after.diff === -1 && succeeded(un);', '      const good = before.diff === -1 && succeeded(un);']), HAZARDS],
  ['hazard.truncate_contained: a file never cut under a registration only warns', 'hazard judgement', hazardFileChanges, edits(["      return { status: timedOut ? 'warn' : 'fail', expected, observed: `the file was not cut", "      return { status: 'warn', expected, observed: `the file was not cut"]), HAZARDS],
  ['hazard.unmap_then_unregister: a failed unregister after munmap passes', 'hazard judgement', hazardRelease, edits(["const status = !succeeded(un) ? 'fail' : same && !succeeded(reg2) ? 'warn' : 'pass';", "const status = (same && !succeeded(reg2) ? 'warn' : 'pass') as 'pass' | 'warn' | 'fail';"]), HAZARDS],
  ['hazard.context_reset: a registration that survived the reset passes', 'hazard judgement', hazardReset, edits(['const good = succeeded(reset) && after.unregister.code === notRegisteredCode && gone && succeeded(after.release);', 'const good = succeeded(reset) && (after.unregister.code === 0 || succeeded(after.release));']), HAZARDS],
  ["hazards' session: a registration left that will not release passes", 'hazard judgement', hazardHarness, edits(["              status: 'fail' as const,\n              message: [o.message, `${failed.length} registration(s) could not be released", "              status: o.status,\n              message: [o.message, `${failed.length} registration(s) could not be released"]), HAZARDS],

  // ---- our own: the checks of suites/checks/
  ['probe.verdict: Too_slow fails instead of warning', 'check: probe.verdict', probeChecks, edits(["if (v.kind === 'Too_slow' || v.kind === 'Inconclusive') return 'warn';", "if (v.kind === 'Inconclusive') return 'warn';"]), CHECKS],
  ['probe.verdict: Still_registered only warns', 'check: probe.verdict', probeChecks, edits(["if (v.kind === 'Too_slow' || v.kind === 'Inconclusive') return 'warn';", "if (v.kind === 'Too_slow' || v.kind === 'Inconclusive' || v.kind === 'Still_registered') return 'warn';"]), CHECKS],
  ['probe.release: one window released at the first try is enough', 'check: probe.release', probeChecks, edits(["registered.every((w) => w.release === 'first')", "registered.some((w) => w.release === 'first')"]), CHECKS],
  ['probe.release: no window registered passes', 'check: probe.release', probeChecks, edits(['const ok = registered.length === 2 && ', 'const ok = ']), CHECKS],
  ['the probe checks apply to a device decided statically', 'check: applies', probeChecks, edits(["return s.kind === 'Self_test_required' ? true : `decided statically: ${verdictName(s.verdict)}`;", 'return true;']), CHECKS],
  ['timing.margin: a ratio equal to the margin fails', 'check: timing.margin', timingChecks, edits(["status: t.ratio >= t.minRelativeSpeed ? 'pass' : 'fail',", "status: t.ratio > t.minRelativeSpeed ? 'pass' : 'fail',"]), CHECKS],
  ['timing.margin: no timing passes', 'check: timing.margin', timingChecks, edits(["if (!t) return { status: 'warn', expected, observed: `no timing:", "if (!t) return { status: 'pass', expected, observed: `no timing:"]), CHECKS],
  ['timing.link: warn below 60% of the link, not 70%', 'check: timing.link', timingChecks, edits(['LINK_WARN_FRACTION = 0.7;', 'LINK_WARN_FRACTION = 0.6;']), CHECKS],
  ['timing.link: warn below 80% of the link, not 70%', 'check: timing.link', timingChecks, edits(['LINK_WARN_FRACTION = 0.7;', 'LINK_WARN_FRACTION = 0.8;']), CHECKS],
  ['timing.link: a share just below the limit passes', 'check: timing.link', timingChecks, edits(["status: share >= LINK_WARN_FRACTION && !link.downtrained ? 'pass' : 'warn',", "status: share >= LINK_WARN_FRACTION - 0.05 && !link.downtrained ? 'pass' : 'warn',"]), CHECKS],
  ['timing.link: a downtrained link passes', 'busy: the link', timingChecks, edits(["status: share >= LINK_WARN_FRACTION && !link.downtrained ? 'pass' : 'warn',", "status: share >= LINK_WARN_FRACTION ? 'pass' : 'warn',"]), BUSY],
  ['linkEncoding: Gen2 (5 GT/s) counted as 128b/130b', 'check: timing.link', pci, edits(['if (gts <= 5) return 8 / 10;', 'if (gts < 5) return 8 / 10;']), PCI],
  ['linkEncoding: Gen5 (32 GT/s) counted as FLIT', 'check: timing.link', pci, edits(['if (gts <= 32) return 128 / 130;', 'if (gts < 32) return 128 / 130;']), PCI],
  ['readLink: GB/s from transfers, not bytes', 'check: timing.link', pci, edits(['  return (gts * width * linkEncoding(gts)) / 8;', '  return gts * width * linkEncoding(gts);']), PCI],
  ['readLink: a link of width 0 is read', 'check: timing.link', pci, edits(['positive(s, (x) => Number.parseInt(x, 10), LINK_LIMITS.width);', '(s === undefined ? null : Number.parseInt(s, 10));']), PCI],
  ['readLink: a link below its maximum width is not downtrained', 'busy: the link', pci, edits(['|| (maxWidth !== null && lanes < maxWidth)', '']), PCI],
  ['static.verdict: ops opened on a refused device pass', 'check: static.verdict', staticChecks, edits(["status: opened === 0 && same ? 'pass' : 'fail',", "status: same ? 'pass' : 'fail',"]), CHECKS],
  ['static.verdict: a probe answering another verdict passes', 'check: static.verdict', staticChecks, edits(["status: opened === 0 && same ? 'pass' : 'fail',", "status: opened === 0 ? 'pass' : 'fail',"]), CHECKS],
  // ---- our own: the model
  ['an interrupt is not fatal', 'spec: Sys.Break re-raised', fatal, edits(['if (e instanceof Interrupted || e instanceof OutOfMemory) return true;', 'if (e instanceof OutOfMemory) return true;']), MODEL],
  ['a failed release is not counted in the table', 'spec: a window that stays registered stays in the table', ops, edits(['        table.noteReleaseFailure(host);\n', '']), MODEL],
  ['a region of exactly two units is too small', 'spec: at least two units of 64 KiB', probe, edits(['if (length < 2 * UNIT)', 'if (length <= 2 * UNIT)']), MODEL],
  ['a map overlapping one live registration is probed', 'spec: map must not overlap a live registration', probe, edits(['  if (live.length > 0) return', '  if (live.length > 1) return']), MODEL],
  ['a buffer freed only on the retry is not reported', 'spec: a buffer could not be freed', probe, edits(['        if (k > 1) unfreed.push(', '        if (k > 2) unfreed.push(']), MODEL],
  ['Wrong_bytes blamed on the device when the map changed', 'spec: Wrong_bytes only while map and reference agree', probe, edits(['      if (d >= 0) return Inconclusive(`the map changed during the probe', '      if (d < -1) return Inconclusive(`the map changed during the probe']), MODEL],
  // ---- our own: the bindings
  ['withCudaOps gives back the context retain while a registration is outstanding', 'bindings: the context retain', 'bindings/cuda.ts', edits(['        return left === 0\n', '        return true\n']), BINDINGS],
  ['deviceOps: an upload larger than the device buffer reaches the driver', 'bindings: sizes', deviceOps, edits(["      enter('upload');\n      fits('upload', host);\n", "      enter('upload');\n"]), BINDINGS],
  // ---- the gate at its boundaries (each rule just inside, at and past its edge)
  ['gate boundary: exceedsDrop as the plain fraction (exactly the limit rounds into a drop)', 'gate: the bandwidth limit', compareRules, edits(['  return (old - neu) / old - maxDrop > 1e-9;', '  return 1 - neu / old > maxDrop;']), GATE],
  ['gate boundary: exceedsDrop counts exactly the limit', 'gate: the bandwidth limit', compareRules, edits(['  return (old - neu) / old - maxDrop > 1e-9;', '  return (old - neu) / old - maxDrop >= -1e-9;']), GATE],
  ['gate boundary: exceedsDrop allows a point more', 'gate: the bandwidth limit', compareRules, edits(['  return (old - neu) / old - maxDrop > 1e-9;', '  return (old - neu) / old - maxDrop > 0.01 + 1e-9;']), GATE],
  ['gate boundary: a rise judged by the plain fraction (exactly the limit rounds into a fix)', 'gate: the bandwidth limit', compareRules, edits(['const beyondRise = (drop: number, maxDrop: number): boolean => beyond(-drop, maxDrop);', 'const beyondRise = (drop: number, maxDrop: number): boolean => -drop > maxDrop;']), GATE],
  ['gate boundary: a listed Usable verdict is no unexpected pass', 'gate: unexpected pass', compareRules, edits([" || (ch.check === VERDICT_CHECK && ch.new === 'Usable')", '']), GATE],
  ['gate boundary: --require cuda:1 met by any cuda device', 'gate: --require', gateRules, edits(["r.kind === 'id' ? !ofBackend.some((d) => d.id === r.id)", "r.kind === 'id' ? ofBackend.length === 0"]), GATE],
  ['gate boundary: a bandwidth drop that could not be re-run is flaky', 'gate: re-runs', gateRules, edits(["  if (judged && shown !== undefined) return { ...flaky(ch, info!, shown),", "  if (!r || (judged && shown !== undefined)) return { ...flaky(ch, info ?? { status: 'pass' }, shown ?? 'none'), ...(judged?.decision ? { decision: judged.decision } : {}) }; if (judged && shown !== undefined) return { ...flaky(ch, info!, shown),"]), GATE],
  ['gate boundary: a registered / page-locked drop is never re-run', 'gate: re-runs', gateRules, edits(['  if (ch.check === BANDWIDTH_CHECK || ch.check === REGISTRATION_CHECK) return rerunFigure;', '  if (ch.check === BANDWIDTH_CHECK) return rerunFigure;']), GATE],
  ["gate boundary: a registered / page-locked re-run judged by the first run's figures", 'gate: re-runs', gateRules, edits(['  if (t.pageLockedRatio != null) timing.pageLockedRatio = t.pageLockedRatio;\n', '']), GATE],
  ['gate boundary: the history prefilter ignores --max-drop', 'history: the SQL prefilter', historyCompare, edits(['CAST(${maxDrop} AS DOUBLE)', 'CAST(0.1 AS DOUBLE)']), GATE],
  ['gate boundary: the history prefilter sees no rise', 'history: the SQL prefilter', historyCompare, edits([" AND NOT ${exceeds('(2 * o.registered - n.registered)')}", '']), GATE],
  ['gate boundary: the history prefilter misses a listed Usable verdict', 'history: the SQL prefilter', historyCompare, edits(["(n.vlabel = 'Usable' AND EXISTS", "(n.vlabel = 'usable' AND EXISTS"]), GATE],
  // ---- which checks and which devices a run takes
  ['selection: --check leaves out what the selected checks need', 'selection: --check', selectChecks, edits(['    const stack = [...(needs.get(id) ?? [])];', '    const stack: string[] = [];']), SELECTION],
  ['selection: a check whose need is skipped still runs', 'selection: needs', selectChecks, edits(['      if (gone !== undefined) {', '      if (gone !== undefined && gone === "") {']), SELECTION],
  ['selection: the last matching skip rule is named, not the first', 'selection: --skip', selectChecks, edits(['if (!skippedBy.has(id)) skippedBy.set(id, told(r));', 'skippedBy.set(id, told(r));']), SELECTION],
  ['selection: a --check glob that matches nothing is accepted', 'selection: --check', selectChecks, edits(['for (const glob of s.checks) if (matches(glob).length === 0) throw', 'for (const glob of s.checks) if (matches(glob).length < 0) throw']), SELECTION],
  ['selection: a comment in the skips file is taken for a glob', 'selection: the skips file', selectChecks, edits([".replace(/#.*$/, '').trim();", '.trim();']), SELECTION],
  ['selection: --device keeps every device', 'selection: --device', selectDevices, edits(['s.devices.length === 0 || s.devices.includes(d.id)', 's.devices.length >= 0 || s.devices.includes(d.id)']), SELECTION],
  ['selection: an unknown --device is accepted', 'selection: --device', selectDevices, edits(['    if (unknown.length > 0) return `unknown device', '    if (unknown.length > 99) return `unknown device']), SELECTION],
  // ---- the options as people type them
  ['options: a number in hex is read (0x10 is 16)', 'options: numbers', numbers, edits(['const DECIMAL = /^(?:\\d+(?:\\.\\d*)?|\\.\\d+)$/;', 'const DECIMAL = /^(?:0x[0-9a-f]+|\\d+(?:\\.\\d*)?|\\.\\d+)$/;']), OPTIONS],
  ['options: the largest value of a range is not checked', 'options: numbers', numbers, edits(['  if (spec.below ? x >= spec.max : x > spec.max) return refuse();\n', '']), OPTIONS],
  ['options: an option of one value given twice takes the last', 'options: repeated', options, edits(['    if (!Array.isArray(v)) return v;\n', '    if (!Array.isArray(v)) return v;\n    if (v.length > 0) return v[v.length - 1]!;\n']), OPTIONS],
  ['options: a repeated output writes only the last file', 'options: repeated', options, edits(['coerce: (v: string | string[]) => [v].flat() }]]', 'coerce: (v: string | string[]) => [v].flat().slice(-1) }]]']), OPTIONS],
  ['options: --max-drop defaults to 20%', 'options: defaults', options, edits(['const maxDropOf = (v: number | undefined): number => v ?? DEFAULT_MAX_DROP;', 'const maxDropOf = (v: number | undefined): number => v ?? 0.2;']), OPTIONS],
  ['usage: an unknown option loses its dashes', 'usage: unknown', usageHints, edits(['    return `unknown option ${as}', '    return `unknown option ${as.replace(/^-+/, \'\')}']), OPTIONS],
  ['gate boundary: --require cuda=N met by more than N', 'gate: --require', gateRules, edits(['ofBackend.length !== r.count', 'ofBackend.length < r.count']), GATE],
  // ---- a slower driver or a busy machine: the control copy, the look at the machine, the lock
  ['the control copy is the staged copy', 'busy: the control copy', probe, edits(['pageLocked: upload(pinned),', 'pageLocked: () => {\n        buffer.set(window.bytes);\n        return upload(pinned)();\n      },']), MODEL],
  ['registered / page-locked never judged', 'busy: the ratio judged', compareRules, edits(['  if (registration) changes.push(withExpectations(registration, p.new, hostname.new, e));\n', '']), BUSY],
  ['registered / page-locked on a machine still busy blamed on the driver', 'busy: the ratio on a busy machine', compareRules, edits(["    ch.kind = 'error';\n    ch.note = busyText(n!);\n    ch.detail = ch.summary;", "    ch.kind = 'regression';\n    ch.note = busyText(n!);"]), BUSY],
  ['absolute figures judged on a busy machine', 'busy: absolute figures only when quiet', compareRules, edits(["falls || noisy ? (n?.load?.busy || noisy ? 'error' : 'regression')", "falls || noisy ? ((n?.load?.busy && false) || noisy ? 'error' : 'regression')"]), BUSY],
  ['every copy slower told as registration alone', 'busy: which copy fell', compareRules, edits(['every host-to-device copy got slower (${lockedText}), on a quiet machine: the driver or the platform${link}', "registered copies alone got slower (${lockedText}): the driver's registration${link}"]), BUSY],
  ['a downtrained link not named', 'busy: the link', compareRules, edits(["      const link = n?.link?.downtrained ? `: the link is ${n.link.text ?? 'trained below its maximum'}` : '';", "      const link = '';"]), BUSY],
  ['no timing lock', 'busy: one device timed at a time', measure, edits(['    lock = takeLock(deviceId, limitMs, shared);', '    lock = { waitedMs: 0, release: () => {} } as ReturnType<typeof takeLock>;']), BUSY],
  ['no waiting for quiet', 'busy: --quiet-wait', measure, edits(['        const left = o.quiet.waitS * 1000 - (performance.now() - started);', '        const left = 0;']), BUSY],
  ['the host copy busy only under half the baseline', 'busy: the host copy', measure, edits(['  hostCopyShare: 0.7,', '  hostCopyShare: 0.5,']), BUSY],
  ['link traffic at the limit is quiet', 'busy: the link', measure, edits(['  if (traffic !== null && traffic >= BUSY_THRESHOLDS.linkMBps)', '  if (traffic !== null && traffic > BUSY_THRESHOLDS.linkMBps)']), BUSY],
  ['a process on the GPU with unreadable traffic is quiet', 'busy: the GPU', measure, edits(['  else if (traffic === null && users.length)', '  else if (false)']), BUSY],
  // ---- the timing lock: its file cannot be turned against the run, its waits and faults are the host's
  ['the lock opened through a symbolic link', 'lock: O_NOFOLLOW', timingLock, edits(['const FLAGS = OPEN_FLAGS.NOFOLLOW | OPEN_FLAGS.CLOEXEC | OPEN_FLAGS.NONBLOCK;', 'const FLAGS = OPEN_FLAGS.CLOEXEC | OPEN_FLAGS.NONBLOCK;']), LOCK],
  ["another user's lock file taken", 'lock: owner check', timingLock, edits(['  if (st.uid !== uid()) return', '  if (false) return']), LOCK],
  ['a hard-linked lock file taken', 'lock: one name', timingLock, edits(['  if (st.nlink > 1) return', '  if (false) return']), LOCK],
  ['a file that is not a lock taken (and truncated)', 'lock: foreign file', timingLock, edits(["  if (text === '' || (text !== undefined && HOLDER_LINE.test(text))) return undefined;", '  return undefined;']), LOCK],
  ['a lock file removed though not made here', 'lock: only unlink what we made', timingLock, edits(['            if (made && stillAt(path, key)) unlinkSync(path);', '            if (stillAt(path, key)) unlinkSync(path);']), LOCK],
  ['a silent holder not named from the kernel', 'lock: the holder named', timingLock, edits(['  const kernel = kernelHolders(fd);', '  const kernel = undefined as KernelHolder[] | undefined;']), LOCK],
  ["a lock fault made the probe's Inconclusive", 'lock: a fault is the host error', measure, edits(['      if (isHostFault(e)) fault = e;\n', '']), LOCK_WAIT],
  ['the wait for the lock counted against --timeout', 'wait: the lock', measure, edits(["start: () => startWait('the timing lock', lockLimitMs),", 'start: () => {},']), LOCK_WAIT],
  ['the lock waited for without a limit', 'wait: the lock bounded', measure, edits(['acquireTimingLock({ timeoutMs: limitMs, label', 'acquireTimingLock({ label']), LOCK_WAIT],
  ['the lock wait not bounded below', 'wait: LOCK_WAIT_MIN_S', measure, edits(['export const LOCK_WAIT_MIN_S = 20;', 'export const LOCK_WAIT_MIN_S = 0;']), LOCK_WAIT],
  ["the portable check's wait for the lock counted against --timeout (the host's wait killed as the driver's timeout)", 'wait: the lock', refCopies, edits([", onWait: (w: HostWait) => writeEvent({ type: 'wait', device: ctx.device.id, ...w }), shared: true };", ', shared: true };']), LOCK_WAIT],
  ['the wait for quiet counted against --timeout', 'wait: quiet', measure, edits(["        startWait('quiet', left + lockLimitMs);\n", '']), BUSY],
  ['the watchdog counts the waits', 'wait: the watchdog', orchestrate, edits(['  return now - u.startedAt - waitedMs(u, now);', '  return now - u.startedAt;']), LOCK_WAIT],
  ['--quiet-wait at most infinity', 'wait: QUIET_WAIT.maxS', measure, edits(['  maxS: 3600,', '  maxS: Infinity,']), LOCK_WAIT],
  ['--quiet-wait without a maximum', 'wait: --quiet-wait at most 3600 s', options, edits(["{ what: `a number of seconds from 0 (no wait) to ${MAX_QUIET_WAIT_S}`, min: 0, max: MAX_QUIET_WAIT_S }", "{ what: `a number of seconds from 0 (no wait) to ${MAX_QUIET_WAIT_S}`, min: 0, max: Number.MAX_VALUE }"]), LOCK_WAIT],
  ['timing.link judged on a busy machine', 'busy: timing.link', timingChecks, edits(["  return load?.busy ? `not judged: the machine was busy during the timed copies (${load.why.join('; ')})` : true;", '  return true;']), BUSY],
  // ---- whose fault it is, in every report (issue 30)
  ['the headline blames the host when any reason is', 'attribution: headline', gateRules, edits(['  if (host === reasons.length) return', '  if (host > 0) return']), ATTRIBUTION],
  ["a mixed headline shows the host's reason first", 'attribution: headline', gateRules, edits(['  const first = reasons.find((r) => !r.host) ?? reasons[0]!;', '  const first = reasons[0]!;']), ATTRIBUTION],
  ['the headline says "more above" again', 'attribution: headline', gateRules, edits(['more)` : \'\'}`;', 'more above)` : \'\'}`;']), ATTRIBUTION],
  ['CPU pressure alone excuses a fall of the ratio', 'attribution: CPU pressure', compareRules, edits(['load.busy && !(load.why.length > 0 && load.why.every((w) => w.startsWith(CPU_PRESSURE_REASON)))', 'load.busy']), [...ATTRIBUTION, ...GATE]],
  ["compare says REGRESSION where only the host failed", 'attribution: compare', compareRules, edits(["  if (c.error > 0) return 'HOST ERROR (the host, not the driver): not judged';", "  if (c.error > 0) return 'REGRESSION';"]), ATTRIBUTION],
  ['JUnit: a busy figure is a <failure>', 'attribution: JUnit', junitCases, edits(["      ? { element: 'error', message: text, type: 'host', body: text }", "      ? { element: 'failure', message: text, type: 'error', body: text }"]), ATTRIBUTION],
  ['JUnit: no gate.registration testcase', 'attribution: JUnit', junitCases, edits(["    if (check === 'registration' && !note && d.timing?.pageLockedRatio === undefined) continue;", "    if (check === 'registration') continue;"]), ATTRIBUTION],
  ["JUnit: the host's gate.decision is a <failure>", 'attribution: JUnit', junitCases, edits(["outcome: { element: hostOnly ? 'error' : 'failure'", "outcome: { element: 'failure'"], ['    const alone = gate.reasons.filter((r) => !covered(r));', '    const alone = gate.reasons;']), ATTRIBUTION],
  ["JUnit: the host's reasons unmarked", 'attribution: JUnit', junitCases, edits(['`- ${r.host ? `[the host', "`- ${r.host && r.text === '' ? `[the host"]), ATTRIBUTION],
  ['step summary: whose fault dropped from the first line', 'attribution: step summary', markdownReport, edits(["**${markdownText(blame)}: ${markdownText(rest)}`", "**: ${markdownText(rest)}`"]), ATTRIBUTION],
  ['step summary: busy not marked', 'attribution: step summary', markdownReport, edits(["r.kind === 'busy' ? '**host busy** ' :", "r.kind === 'busy' ? '' :"]), ATTRIBUTION],
  ["metrics: the host's reasons counted as all", 'attribution: metrics', metricsReport, edits(['r.gate.reasons.filter((x) => x.host).length', 'r.gate.reasons.length']), ATTRIBUTION],
  ['report --html: a busy fall unmarked', 'attribution: HTML', resultsPage, edits(["const busy = [bw, ratio].find((ch) => ch?.kind === 'error');", "const busy = [bw, ratio].find((ch) => ch?.kind === 'regression');"]), ATTRIBUTION],
  ['terminal: HOST BUSY said REGRESSION', 'attribution: terminal', gateLines, edits(["if (r.kind === 'busy') return ['HOST BUSY', 'host'];", "if (r.kind === 'busy') return ['REGRESSION', 'host'];"]), ATTRIBUTION],
  // ---- the machine check at its thresholds
  ['busy: waits for quiet for the ratio on CPU pressure alone', 'busy: CPU pressure', measure, edits(['ratio !== null && excusesRatio(load) && exceedsDrop(', 'ratio !== null && exceedsDrop(']), MACHINE],
  ['busy: the ratio waited for only past 1.2 x --max-drop', 'busy: the ratio', measure, edits(['exceedsDrop(baseline.pageLockedRatio, ratio, o.quiet.maxDrop)', 'exceedsDrop(baseline.pageLockedRatio, ratio, o.quiet.maxDrop * 1.2)']), MACHINE],
  ['busy: the host copy judged only past 64 MiB', 'busy: the host copy', measure, edits(['bytes >= BUSY_THRESHOLDS.hostCopyMinBytes', 'bytes > BUSY_THRESHOLDS.hostCopyMinBytes']), MACHINE],
  ['busy: memory pressure at the limit is quiet', 'busy: pressure', measure, edits(['if (memory >= BUSY_THRESHOLDS.memoryPressure)', 'if (memory > BUSY_THRESHOLDS.memoryPressure)']), MACHINE],
  // ---- the history commands
  ['history: a device only OLD has is not judged', 'history: prefilter', historyCompare, edits(['        WHEN n.run IS NULL THEN true', '        WHEN n.run IS NULL THEN false']), HISTORY_SIDES],
  ["history: a new device's host error is not judged", 'history: prefilter', historyCompare, edits(['WHEN o.run IS NULL THEN n.failing OR n.has_error OR n.dup_checks', 'WHEN o.run IS NULL THEN n.failing OR n.dup_checks']), HISTORY_SIDES],
  ["history report: the host's devices counted as regressed", 'history: report', historyPage, edits(["const driver = failing.filter((f) => f.change.kind !== 'error');", 'const driver = failing;']), HISTORY_SIDES],
  ['history compare says REGRESSION where only the host failed', 'history: compare', historyCommands, edits(["populationRegressed && outcomeWord(h.counts) === 'no regression' ? 'REGRESSION (a population shift)' : outcomeWord(h.counts)}", "populationRegressed && outcomeWord(h.counts) === 'no regression' ? 'REGRESSION (a population shift)' : historyHasRegression(h) ? 'REGRESSION' : 'no regression'}"]), HISTORY_SIDES],
  ['history: a store of version 1 read as 2', 'history: store versions', historyStore, edits(["    if (version === '1' || version === '2') {", "    if (version === 'one' || version === '2') {"]), HISTORY_SIDES],
  // ---- nothing blocks the event loop; what the run writes it can read back; the machine's lines capped (issue 30)
  ['io: a small file opened blocking', 'io: machine reads never block', smallFile, edits(['fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY', 'fsConstants.O_RDONLY | fsConstants.O_NOCTTY']), MACHINE_READS],
  ['io: a named pipe read as a small file', 'io: machine reads never block', smallFile, edits(['    if (!st.isFile()) return st.isDirectory()', '    if (st.isDirectory()) return st.isDirectory()']), MACHINE_READS],
  ['io: a small file read without its bound', 'io: machine reads bounded', smallFile, edits(['      if (got > maxBytes) return { reason: `more than ${maxBytes} bytes` };\n', '']), MACHINE_READS],
  ['io: a pressure figure over 100% taken', 'io: figures finite', pressure, edits(['    if (m && Number(m[2]) <= 100) avg10.set', '    if (m) avg10.set']), MACHINE_READS],
  ['io: a link speed beyond any PCIe link taken', 'io: figures finite', pci, edits(['  return n > 0 && n <= max ? n : null;', '  return n > 0 || n > max ? n : null;']), MACHINE_READS],
  ['io: a link of a million lanes taken', 'io: figures finite', pci, edits(['export const LINK_LIMITS = { gts: 1024, width: 64 } as const;', 'export const LINK_LIMITS = { gts: 1024, width: 1e9 } as const;']), MACHINE_READS],
  ['io: an NVML path that is a named pipe handed to the loader', 'io: machine reads never block', gpuUsers, edits(['    if (st !== undefined && !st.isFile()) return', '    if (st !== undefined && st.isDirectory()) return']), MACHINE_READS],
  ["io: a process's name read from /proc whatever MAPPED_REG_PROC_ROOT says", 'io: machine reads never block', gpuUsers, edits(["processName(pid, process.env.MAPPED_REG_PROC_ROOT || '/proc')", "processName(pid, '/proc')"]), MACHINE_READS],
  ['io: the NVML library loaded inside the probe', 'io: the library off the timed path', deviceRunner, edits(['    loadGpuUsersLibrary(backend);\n', '']), MACHINE_READS],
  ['io: a failed NVML binding tried again', 'io: the library off the timed path', gpuUsers, edits(['  if (loaded.has(key)) return loaded.get(key) as F | { note: string };', "  if (loaded.has(key) && !('note' in (loaded.get(key) as object))) return loaded.get(key) as F | { note: string };"]), MACHINE_READS],
  ['io: an output pipe with no reader told as unwritable', 'io: outputs to a named pipe', outputs, edits(["      if (why(e) === 'ENXIO') throw", "      if (why(e) === 'ENXIO!') throw"]), OUTPUTS],
  ["io: the output check probes another name than the write's temporary one", 'io: the temporary name', outputs, edits(['  const probe = tempNameFor(file);', "  const probe = join(dir, `.p-${randomBytes(6).toString('hex')}.tmp`);"]), OUTPUTS],
  ['io: the JSON results written without being read back', 'io: figures finite', writeOutputs, edits(['  const unreadable = json !== undefined ? unreadableResults(result, json) : undefined;', "  const unreadable = json === '' ? unreadableResults(result, json) : undefined;"]), OUTPUT_FORMATS],
  ['io: a figure that is not finite not named', 'io: figures finite', finite, edits(['Number.isFinite(value) ? undefined', 'typeof value === "number" ? undefined']), OUTPUT_FORMATS],
  ['caps: the machine line names every process', 'caps: the terminal', summary, edits(['on the GPU: ${capList(load.processes.map(', 'on the GPU: ${(load.processes.map(']), CAPS],
  ['caps: the machine line with its reasons whole', 'caps: the terminal', summary, edits(['load.why.map((w) => capText(w, MESSAGE_CAP))', 'load.why.map((w) => w)']), CAPS],
  ["caps: JUnit's load.processes names every process", 'caps: JUnit', junitCases, edits(['capList(d.load.processes.map((p) => `${p.pid} ${p.name}`))', '(d.load.processes.map((p) => `${p.pid} ${p.name}`))']), CAPS],
  ["caps: JUnit's load.why whole", 'caps: JUnit', junitCases, edits(["capText(d.load.why.join(' | '), MESSAGE_CAP)", "d.load.why.join(' | ')"]), CAPS],
  ['caps: a busy reason names every process on the GPU', 'caps: the reasons measure.ts writes', measure, edits(['  const shown = users.slice(0, NAMED_PROCESSES).map(', '  const shown = users.slice(0).map(']), CAPS],
  ["caps: the capped result keeps the load's reasons whole", 'caps: the step summary and JUnit', cap, edits(['    why: l.why.map(message),', '    why: l.why,']), CAPS],
  // ---- JUnit as CI systems read it (issue 35)
  ['junit35: the decision counted again beside the failures it stands for', 'one problem, one failure', junitCases, edits(['    const alone = gate.reasons.filter((r) => !covered(r));', '    const alone = gate.reasons;']), JUNIT_CONSUMERS],
  ["junit35: a driver that failed to start counted again as its devices' absence", 'one problem, one failure', junitCases, edits(['      const explained = failedToStart.has(m.backend);', '      const explained = false;']), JUNIT_CONSUMERS],
  ['junit35: the device left out of the testcase title', 'device in every title', junitCases, edits(['export const caseTitle = (device: string, what: string): string => `${device} > ${what}`;', 'export const caseTitle = (_device: string, what: string): string => what;']), JUNIT_CONSUMERS],
  ["junit35: the host left out of a device's suite name", 'two hosts never merge', junitCases, edits(['[${verdictLabel(d.verdict)}] on ${host}`', '[${verdictLabel(d.verdict)}]`']), JUNIT_CONSUMERS],
  ['junit35: a green gate.verdict with no baseline', 'no bookkeeping pass', junitCases, edits(['    if (!note && !gate.baseline) continue; // no baseline, nothing said: no gate judged this figure\n', '']), JUNIT_CONSUMERS],
  ['junit35: a check the host failed is a <failure>', 'the host is never the driver', junitCases, edits(["  if (c.status === 'error') return { element: 'error', message: checkReason(c), type: 'host', body };", "  if (c.status === 'error') return { element: 'failure', message: checkReason(c), type: 'host', body };"]), JUNIT_CONSUMERS],
  ['junit35: a skipped testcase counted as passed', 'counts that match', junitCases, edits(['passed: cases.length - failures - errors - skipped', 'passed: cases.length - failures - errors']), JUNIT_CONSUMERS],
  ['junit35: the terminal counts errors as failures', 'counts that match', summary, edits(['${t.failures} failed, ${plural(t.errors', '${t.failures + t.errors} failed, ${plural(t.errors']), JUNIT_CONSUMERS],
  ['junit35: no time on <testsuites>', 'time on every suite', junit, edits([", '@_time': n(report.time) };", ' };']), JUNIT_REPORTS],
  ['junit35: no time on a suite', 'time on every suite', junit, edits(["    '@_time': n(s.time),\n", '']), JUNIT_REPORTS],
  ['junit35: text not escaped by the writer', 'text exact', junit, edits(['suppressBooleanAttributes: false, processEntities: true', 'suppressBooleanAttributes: false, processEntities: false']), JUNIT_REPORTS],
  ['junit35: device output decoded chunk by chunk', 'text exact', streamText, edits(["  stream.setEncoding('utf8');\n  stream.on('data', (text: string) => onText(text));", "  stream.on('data', (chunk: Buffer) => onText(chunk.toString()));"]), STREAM_TEXT],
  // ---- the runtimes side by side (issue 33)
  ['runtimes: /opt/rocm, a link, named by itself', 'runtimes: discovery', runtimeDiscovery, edits(["        const dir = realpathSync(join(root, 'opt', d));", "        const dir = join(root, 'opt', d);"]), RUNTIMES],
  ['runtimes: the compat driver looked for in lib64', 'runtimes: discovery', runtimeDiscovery, edits(["d, 'compat', 'libcuda.so.1')", "d, 'lib64', 'libcuda.so.1')"]), RUNTIMES],
  ["runtimes: a HIP runtime's version without its patch", 'runtimes: the version from the library', 'bindings/hip.ts', edits(['return `${v.major}.${v.minor}.${v.patch}`;', 'return `${v.major}.${v.minor}`;']), RUNTIMES],
  ["runtimes: an init's code dropped", 'runtimes: why it did not start', runtimeProbe, edits(['const code = e instanceof DriverError ? { code: e.code, codeName: e.codeName } : {};', 'const code = {};']), RUNTIMES],
  ['runtimes: an older compat driver called newer', 'runtimes: why it did not start', runtimeFacts, edits(['if (order !== undefined && order < 0) return', 'if (order !== undefined && order > 0) return']), RUNTIMES],
  ['runtimes: every candidate passes', 'runtimes: the decision', runtimeMatrixModel, edits(['if (gate) return { ...base, pass: gate.pass,', 'if (gate) return { ...base, pass: true,']), RUNTIMES],
  ['runtimes: a runtime that did not load is a row of no device', 'runtimes: the rows', runtimeMatrixModel, edits(["if (!r.probe.loaded) return { kind: 'not-loaded'", "if (!r.probe.loaded) return { kind: 'no-device'"]), RUNTIMES],
  ['runtimes: exit 0 whatever the candidates', 'runtimes: the exit status', runtimeMatrixModel, edits(['(m.pass ? 0 : 1)', '(m.pass ? 0 : 0)']), RUNTIMES],
  ['runtimes: a candidate run without the baseline', 'runtimes: each candidate gated', runtimesCommand, edits(["...(baselineJson ? ['--baseline', baselineJson] : [])", '...([] as string[])']), RUNTIMES],
  ['runtimes: the results file does not record its runtime', 'runtimes: each run to its file', runtimesCommand, edits(['      result = { ...result, runtime };', '      result = { ...result };']), RUNTIMES],
  ['runtimes: a baseline that does not start accepted', 'runtimes: bad input', runtimesCommand, edits(['    if (!base.probe.started) throw', '    if (!base.probe.started && base.probe.loaded) throw']), RUNTIMES],
  ['runtimes: JUnit suites without the runtime in their name', 'runtimes: JUnit', runtimeReporters, edits(['name: `runtime ${name} ${d.id} ${d.name} [${row.verdict}] on ${hostname}`', 'name: `${d.id} ${d.name} [${row.verdict}] on ${hostname}`']), RUNTIMES],
  ['runtimes: the matrix file walked as a results file', 'runtimes: history add', storeFiles, edits([" && e.name !== MATRIX_FILE) out.push(p);", ') out.push(p);']), RUNTIMES],
  // ---- the run's critical path (issue 32)
  ['speed: a host whose loader cache cannot be read told the library is not there', 'speed: a missing driver answered without a process', librarySearch, edits(['  return bytes === null || bytes.includes(', '  return bytes !== null && bytes.includes(']), LIBRARY_SEARCH],
  ['speed: LD_LIBRARY_PATH not searched', 'speed: a missing driver answered without a process', librarySearch, edits(["...(env.LD_LIBRARY_PATH ?? '').split(':').filter((d) => d !== ''), ", '']), LIBRARY_SEARCH],
  ['speed: a group with a backend that is not missing answered without a process', 'speed: a missing driver answered without a process', selectDevices, edits(['    if (!report) return undefined;', '    if (!report) continue;']), LIBRARY_SEARCH],
  ["speed: the discovering process's crash hook answered without a process", 'speed: a missing driver answered without a process', discoveringRunners, edits(["  if (discoveryHookFor(selection.forceCrash, backends) || discoveryHookFor(selection.forceHang, backends)) return undefined;\n", '']), LIBRARY_SEARCH],
  ['speed h32b: HIP found with no AMD device node loaded anyway', 'speed: a missing driver answered without a process', registering, edits(['if (env[s.libraryEnv] || nodes.length === 0 || nodes.some(', 'if (env[s.libraryEnv] || nodes.length >= 0 || nodes.some(']), LIBRARY_SEARCH],
  ['speed h32b: a library the variable names not loaded for want of a device node', 'speed: a missing driver answered without a process', registering, edits(['if (env[s.libraryEnv] || nodes.length === 0 ||', 'if (nodes.length === 0 ||']), LIBRARY_SEARCH],
  ['speed h32b: every device node needed, not one of them', 'speed: a missing driver answered without a process', registering, edits(['nodes.some((n) => existsSync(join(root, n)))', 'nodes.every((n) => existsSync(join(root, n)))']), LIBRARY_SEARCH],
  ["speed h32b: a group's other GPUs wait for every group's discovery", "speed: each driver's GPUs start when its discovery is in", discoveringRunners, edits(['        if (!g.others.has(d.id)) g.others.set(d.id, runDevice(beside(choice.optionsOf(d)), o));\n', '']), ['test/signals.test.ts']],
  ["speed h32b: the offered GPU started twice by the discovery", "speed: each driver's GPUs start when its discovery is in", selectDevices, edits(["isGpuDriver(d) && d.id !== offer?.id", 'isGpuDriver(d)']), SELECTION],
  ['speed: the scaling runs take no device alone', 'speed: the bench of the GPU count', benchScaling, edits(['  if (most && most.gpus > 1) {', '  if (most && most.gpus > 99) {']), BENCH],
  ['speed: the most GPUs over one turned over', 'speed: the bench of the GPU count', benchScaling, edits(['{ mostOverOne: most.wallMs / one.wallMs }', '{ mostOverOne: one.wallMs / most.wallMs }']), BENCH],
  ['speed: --scale counts that fall taken', 'speed: the bench of the GPU count', benchOptions, edits(['  if (n.some((x, i) => i > 0 && x <= n[i - 1]!)) throw', '  if (n.some((x, i) => i > 0 && x < 0)) throw']), BENCH],
  ["speed: --against runs this build again", 'speed: the bench against another build', benchRepeats, edits(["  const other = against !== undefined ? { ...from, main: against,", "  const other = against !== undefined ? { ...from,"]), BENCH],
  ["speed: the discovery thread discovers every backend, not the runner's", 'speed: discovery on its own thread', discoveryThread, edits(['  const found = discover(backends);', '  const found = discover();']), ['test/discovery-thread.test.ts']],
  ["speed: the libraries the discovery thread loaded not held when it ends", 'speed: discovery on its own thread', discoveryThread, edits(['        for (const b of m.found.backends) if (b.library !== null) holdLibrary(b.library);\n', '']), ['test/discovery-thread.test.ts']],
  ["speed: the discovery thread keeps no context for the offered device", 'speed: the offered GPU\'s context made on the discovery thread', discoveryThread, edits(['  if (offering) port.postMessage({ context: keepOffered(found, offering) } satisfies FromThread);', "  if (offering) port.postMessage({ context: { none: 'mutated' } } satisfies FromThread);"]), ['test/discovery-thread.test.ts']],
  ["speed: the discovery thread keeps the context of the first device found, not the one offered", 'speed: the offered GPU\'s context made on the discovery thread', discoveryThread, edits(['  const offer = pickDevice(plainDiscovery(found), offering);', '  const offer = plainDiscovery(found).devices[0];']), ['test/discovery-thread.test.ts']],
  ["speed: the spare runner guesses a GPU driver's process wherever a group needs one", 'speed: Vitest ready in the spare runner', selectDevices, edits(['  return first !== undefined && first.some((b) => backendModule(b)?.registers === true);', '  return first !== undefined;']), LIBRARY_SEARCH],
  ['speed: read ahead: a chunk served again from its slot, not read again', 'speed: the reference read ahead', readAheadFile, edits(['      if (current >= 0 && current !== i) slots[current]!.offset = -1;\n', '']), READ_AHEAD],
  ['speed: read ahead: chunks asked before a failed layout check still trusted', 'speed: the reference read ahead', readAheadFile, edits(['      if (!ahead) ready = false;\n', '']), READ_AHEAD],
  ['speed: read ahead: no layout check', 'speed: the reference read ahead', readAheadFile, edits(['      if (ready && !layoutChecked) {', '      if (ready && !layoutChecked && false) {']), READ_AHEAD],
  ['speed: read ahead: a short read taken whole', 'speed: the reference read ahead', readAheadFile, edits(['    if (failed || got !== s.length) {', '    if (failed) {']), READ_AHEAD],
  ['speed: read ahead: nothing asked ahead', 'speed: the reference read ahead', readAheadFile, edits(['    for (const [offset, length] of want) {', '    for (const [offset, length] of want.slice(0, 0)) {']), READ_AHEAD],
  ['speed: read ahead: close lets go of no descriptor', 'speed: the reference read ahead', readAheadFile, edits(['      for (const d of descriptors) closeFd(d);\n', '']), READ_AHEAD],
  ["speed: read ahead: the probe never tells its reader the comparisons are over", 'speed: the reference read ahead', probe, edits(['  // the reference is not read again: what its reader holds goes before the timing\'s buffer comes\n  refs.rest();\n', '']), MODEL],
  ["speed: read ahead: the probe's comparisons never use the reader's views", 'speed: the reference read ahead', probe, edits(['    if (ref.view) return ref.view(offset, n);\n', '']), MODEL],
  // ---- the truncation child started early (issue 32)
  ['speed: truncate early: the child waits for no probe (started beside it, its memory added to the run\'s fullest moment)', 'memory: the truncation child after the probe', 'suites/context.ts', edits(['  if (!probeRuns || probed.has(id) || probeFaults.has(id)) return f();', '  return f();']), ['test/probe-memory.test.ts']],
  ["speed: truncate early: the check before it hands nothing over", 'speed: the truncation child started early', hazardReset, edits(['  handOverTruncateEarly(ctx);\n  const native', '  const native']), TRUNCATE_EARLY_COMMAND],
  ["speed: truncate early: a file handed over before the check never removed", 'speed: the truncation child started early', hazardFileChanges, edits(['      before.remove();\n', '']), TRUNCATE_EARLY],
  ["speed: truncate early: no room for the file handed over early raised in the check before it", 'speed: the truncation child started early', hazardFileChanges, edits(['  try {\n    file = scratchFile(ctx.options.scratchDir, TRUNCATE_FILE_BYTES);\n  } catch {\n    return; // no room', '  {\n    file = scratchFile(ctx.options.scratchDir, TRUNCATE_FILE_BYTES);\n  } if (false) {\n    return; // no room']), ['test/host.test.ts']],
  ["scratch: the probe's file written where --skip leaves the probe out", 'scratch: nothing written for nothing', deviceRunner, edits(['  if (isGpuDriver({ backend }) && probeHere) {', '  if (isGpuDriver({ backend }) && !d.skip.includes(PROBE_VERDICT)) {']), SPARE],
  ['speed: truncate early: the runner starts no early child', 'speed: the truncation child started early', deviceRunner, edits(['  if (isGpuDriver({ backend })) whenProbeDone(d.device, probeHere, () => startTruncateChildFor(', '  if (false) whenProbeDone(d.device, probeHere, () => startTruncateChildFor(']), TRUNCATE_EARLY_COMMAND],
  ['speed: truncate early: started where the check is deselected', 'speed: the truncation child started early', truncateEarly, edits(['|| options.deselected?.[TRUNCATE_CHECK] !== undefined)', ')']), [...TRUNCATE_EARLY, ...TRUNCATE_EARLY_COMMAND]],
  ['speed: truncate early: the check never uses the early child', 'speed: the truncation child started early', hazardFileChanges, edits(["const early = runEarlyTruncateChild(ctx.device.id, args, (w) => writeEvent({ type: 'wait', device: ctx.device.id, ...w }));", "const early = { unavailable: writeEvent.name } as ReturnType<typeof runEarlyTruncateChild>;"]), TRUNCATE_EARLY],
  ['speed: truncate early: a child that ended before it started taken as the check\'s run', 'speed: the truncation child started early', truncateEarlyThread, edits(['    if (!childStarted && !timedOut) {', '    if (!sent) {']), TRUNCATE_EARLY],
  ["speed: truncate early: the driver's init outside the timing lock", 'speed: the truncation child started early', truncateChild, edits(['    lock = acquireTimingLock({ timeoutMs: o.lockLimitMs, label: `${o.device} truncation child of pid ${process.ppid}`, shared: true });', "    lock = { path: '', waitedMs: 0, release: () => {} };"]), TRUNCATE_EARLY],
  ["speed: truncate early: the child's hold of the timing lock exclusive", 'speed: the truncation child started early', truncateChild, edits(['`${o.device} truncation child of pid ${process.ppid}`, shared: true });', '`${o.device} truncation child of pid ${process.ppid}`, shared: false });']), TRUNCATE_EARLY],
  ['speed: truncate early: a shared hold taken exclusive', 'speed: the truncation child started early', 'bindings/timing-lock.ts', edits(['  const mode = options.shared ? LOCK_SH : LOCK_EX;', '  const mode = LOCK_EX;']), LOCK],
  ['speed: truncate early: a shared holder removes the file others still hold', 'speed: the truncation child started early', 'bindings/timing-lock.ts', edits(['(!options.shared || (made && flock(fd, LOCK_EX | LOCK_NB)))', '(!options.shared || made)']), LOCK],
  ["speed: truncate early: the child's wait for the lock counted as the check's time", 'speed: the truncation child started early', truncateEarly, edits(["      onWait?.({ waiting: true, what: 'the timing lock (the truncation child)', limitMs: e.lockLimitMs });", '']), TRUNCATE_EARLY],
  ["speed: truncate early: the check's wait for the child's lock not told to the command", 'speed: the truncation child started early', hazardFileChanges, edits(["(w) => writeEvent({ type: 'wait', device: ctx.device.id, ...w })", '() => undefined']), TRUNCATE_EARLY_COMMAND],
  ["speed: truncate early: a child that gave up on the lock is no host fault", 'speed: the truncation child started early', truncateEarly, edits(['  if (f?.fault) throw new HostFault(f.fault);', '']), TRUNCATE_EARLY],
  ['speed: truncate early: the child neither dies with its runner nor ends at end of input', 'speed: the truncation child started early', truncateChild, edits(['    setParentDeathSignal(9);\n    const start', '    const start'], ['    if (n === 0) return undefined;', '    if (n === 0) {\n      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);\n      continue;\n    }']), TRUNCATE_EARLY_COMMAND],
  ["speed: a GPU's runner never a device spare", 'speed: the device spares', 'cli/orchestrate.ts', edits([': spec.discover ? takeSpareRunner() : takeDeviceSpare();', ': spec.discover ? takeSpareRunner() : undefined;']), ['test/spare-runner.test.ts']],
  ['speed: the device spares none took kept to the end of the run', 'speed: the device spares', 'cli/discovering-runners.ts', edits(['  // every GPU found has its runner by now: the device spares none took are not kept waiting\n  releaseDeviceSpares();\n', '']), ['test/spare-runner.test.ts']],
  ['speed: a device spare for every node, whatever --device asks', 'speed: the device spares', 'cli/select-devices.ts', edits(['const count = this.selection.devices.length > 0 ? asked :', 'const count =']), ['test/spare-runner.test.ts']],
  ['speed: the variable that hides devices not read', 'speed: the device spares', 'bindings/backends/registering.ts', edits(["const visible = s.gpuNodes.visibleEnv ? env[s.gpuNodes.visibleEnv] : undefined;", 'const visible = undefined as string | undefined;']), ['test/spare-runner.test.ts']],
  ['speed: the two ways of the link read one after the other', 'speed: the looks at the machine', gpuUsers, edits(['c.nvmlDeviceGetPcieThroughputInto.async(device, NVML_PCIE_UTIL_RX_BYTES, rxCell, () => {});', "throw new Error('serial');"]), ['test/gpu-users.test.ts']],
  ["speed: the receive side's cell not set afresh for a look", 'speed: the looks at the machine', gpuUsers, edits(["koffi.encode(rxCell, 'uint32_t', RX_PENDING);", '']), ['test/gpu-users.test.ts']],
  ["speed: truncate early: the run's own child counted as another user of the GPU", 'speed: the truncation child started early', gpuUsers, edits(['new Set([...excludePids, ...ownChildPids()])', 'new Set([...excludePids])']), ['test/gpu-users.test.ts']],
  // ---- the reference checks (issue 36): attributes held to behaviour, repetition, flags and negatives
  ['reference: an attribute of 0 not held to a registration that works', 'reference: attributes', refAttributes, edits(['  if (value === 0 && registered) return', '  if (false && registered) return']), REFERENCE],
  ['reference: an attribute of 1 not held to a refusal', 'reference: attributes', refAttributes, edits(['  if (value !== 0 && !registered) return', '  if (false && !registered) return']), REFERENCE],
  ['reference: the device address not compared where every device says 1', 'reference: attributes', refAttributes, edits([': everyOne && !same', ': false && !same']), REFERENCE],
  ['reference: USES_HOST_PAGE_TABLES not held to PAGEABLE_MEMORY_ACCESS', 'reference: attributes', refAttributes, edits(['usesTables === 1 && canAccess === 0', 'false && canAccess === 0']), REFERENCE],
  ['reference: one cycle instead of 100', 'reference: repetition', refRepetition, edits(['export const CYCLES = 100;', 'export const CYCLES = 1;']), REFERENCE],
  ["reference: the cycles' fall of free device memory not judged", 'reference: repetition', refRepetition, edits(['c.leaked = c.falls.length === 2 && c.falls.every((f) => f >= HALF_SLACK_BYTES);', 'c.leaked = false;']), REFERENCE],
  ["reference: a fall of free device memory in one half of the cycles called a leak", 'reference: repetition', refRepetition, edits(['c.falls.length === 2 && c.falls.every((f) => f >= HALF_SLACK_BYTES)', 'c.falls.some((f) => f >= HALF_SLACK_BYTES)']), REFERENCE],
  ["reference: a fall of free device memory in one half of the cycles not run again", 'reference: repetition', refRepetition, edits(["if ('done' in c && c.once && !c.broke && !c.memFailed) {", "if ('done' in c && c.leaked && !c.broke && !c.memFailed) {"]), REFERENCE],
  ["reference: a fall in one half of both runs of the cycles passed (not the host's error)", 'reference: repetition', refRepetition, edits(['if (earlier && c.once && !c.broke && !c.memFailed) {', 'if (earlier && c.leaked && !c.broke && !c.memFailed) {']), REFERENCE],
  ["reference: the cycles' growth of VmLck not judged", 'reference: repetition', refRepetition, edits(['grew.locked > 0 ? `VmLck grew', 'false ? `VmLck grew']), REFERENCE],
  ['reference: VmLck read from the VmPin line', 'reference: repetition', lockedMemoryFile, edits(["const lockedKiB = field('VmLck');", "const lockedKiB = field('VmPin');"]), REFERENCE],
  ['reference: cuMemGetInfo free read from total', 'reference: repetition', 'bindings/driver-kit.ts', edits(['return { free: Number(free[0]), total: Number(total[0]) };', 'return { free: Number(total[0]), total: Number(total[0]) };']), REFERENCE],
  ["reference: unknown flag bits tried without the device's own flag", 'reference: negatives', refNegatives, edits(['const flags = (bits | own) >>> 0;', 'const flags = bits >>> 0;']), REFERENCE],
  ['reference: an accepted flag, pointer or size counted as refused', 'reference: negatives', refNegatives, edits(["return succeeded(c) ? 'fail'", "return succeeded(c) ? 'pass'"]), REFERENCE],
  ['reference: a raw registration wrongly accepted is not released', 'reference: negatives', refNegatives, edits(['    un = driverCall(() => ops.unregisterAddress(o.address));', '    un = undefined;']), REFERENCE],
  ['reference: a size of 0 kept unreleased does not keep its mapping', 'reference: negatives', refNegatives, edits(['if (!succeeded(un) && o.keep) {', 'if (!succeeded(un) && o.keep && o.length > 0) {']), REFERENCE],
  // ---- a figure judged with its noise (issue 37)
  ['noise: a host too noisy judged all the same', 'noise: the decision', decision, edits(['  const judgeable = half <= L;', '  const judgeable = true;']), DECISION],
  ['noise: the spread between runs ignored', 'noise: the decision', decision, edits(['  if (df > 0) {', '  if (df < 0) {']), DECISION],
  ['noise: a regression at 60% of --max-drop', 'noise: the decision', decision, edits(['  const over = beyond(drop, maxDrop);', '  const over = beyond(drop, maxDrop * 0.6);']), DECISION],
  ["noise: a round's registered copy paired with the next round's page-locked one", 'noise: the pairs', decision, edits(['.map((i) => Math.log(valid[i]![1] / valid[i]![0]));', '.map((i) => Math.log(valid[(i + 1) % valid.length]![1] / valid[i]![0]));']), DECISION],
  ['noise: every round kept, the slow ones too', 'noise: the pairs', decision, edits(['Math.max(MIN_ROUNDS, Math.ceil(times.length / 2))', 'Math.max(MIN_ROUNDS, times.length)']), DECISION],
  ['noise: the gate re-times once at most', 'noise: re-timing', decision, edits(['export const MAX_RETIMES = 2;', 'export const MAX_RETIMES = 1;']), DECISION],
  ['noise: a figure near the limit never re-timed', 'noise: re-timing', decision, edits(["retime: outcome === 'too-noisy' || straddles };", "retime: outcome === 'too-noisy' };"]), DECISION],
  ['noise: too noisy told as the driver', 'noise: attribution', compareRules, edits(["return ch.decision?.outcome === 'too-noisy' ? 'noisy' : 'busy';", "return ch.decision?.outcome === 'too-noisy' ? 'registration' : 'busy';"]), DECISION],
  ['noise: no extra rounds of the pair', 'noise: adaptive rounds', measure, edits(['    most: ADAPTIVE_MOST_FACTOR * runs,', '    most: 0,']), DECISION],
  ['noise: the rounds not kept in the results', 'noise: samples kept', 'cli/assemble.ts', edits(['      ...(t.samples ? { samples: t.samples } : {}),\n', '']), GATE_NOISE],
  // history compare: each device's last runs of its driver, with their rounds (history/fleet-compare.ts, history/store.ts)
  ['noise: history keeps no rounds', 'noise: history', historyStore, edits(['  str(a, roundsOf(d));', '  str(a, null);']), HISTORY_NOISE],
  ['noise: history upgrades a store of 2 without the rounds', 'noise: history', historyStore, edits(['for (let v = from + 1; v <= STORE_VERSION; v++)', 'for (let v = from + 1; v < STORE_VERSION; v++)']), HISTORY_NOISE],
  ['noise: history reads the rounds kept as none', 'noise: history', historyCompare, edits(['  if (r.rounds === null || r.rounds === undefined) return {};', '  if (r.rounds !== 0) return {};']), HISTORY_NOISE],
  ['noise: history takes one run more than --last-runs', 'noise: history', historyCompare, edits(['sd.run DESC) < ${lastRuns}`);', 'sd.run DESC) <= ${lastRuns}`);']), HISTORY_NOISE],
  ["noise: history's baseline of another driver too", 'noise: history', historyCompare, edits([' AND d.dkey = x.dkey AND d.dname = x.dname AND d.dver = x.dver', ' AND d.dkey = x.dkey']), HISTORY_NOISE],
  ['noise: history compare ignores --last-runs', 'noise: history', options, edits(["  return Object.freeze({ db: a.db, old: a.old, new: a.new, json: a.json, lastRuns: a.lastRuns ?? DEFAULT_LAST_RUNS,", "  return Object.freeze({ db: a.db, old: a.old, new: a.new, json: a.json, lastRuns: DEFAULT_LAST_RUNS,"]), HISTORY_NOISE],
  ['noise: history judges one run a side', 'noise: history', historyCompare, edits(['    const moreRuns = { moreBaselines: otherRuns(\'olds\'), moreCandidates: otherRuns(\'news\') };', '    const moreRuns = {};']), HISTORY_NOISE],
  ["noise: history ignores the new side's other runs", 'noise: history', compareRules, edits(['  const newsOf = otherRuns(options.moreCandidates, matchedByHost);', '  const newsOf = otherRuns(undefined, matchedByHost);']), HISTORY_NOISE],
  ['noise: history decides figures with their noise only in the SQL', 'noise: history', historyCompare, edits(['  await judgeFigures(c, maxDrop);\n', '']), HISTORY_NOISE],
  ['noise: history marks a too-noisy figure unchanged', 'noise: history', historyCompare, edits(["if (changes.some((ch) => ch !== undefined && ch.kind !== 'unchanged'))", "if (changes.some((ch) => ch !== undefined && ch.kind === 'regression'))"]), HISTORY_NOISE],
  ['noise: a population of any size', 'noise: the fleet', historyCompare, edits(['    if (g.drops.length < POPULATION_MIN) continue;', '    if (g.drops.length < 1) continue;']), ['test/population.test.ts']],
  ["noise: the double's noise never applied", "noise: the double", 'test/double/common.c', edits(['  if (!n->on) return 1.0;', '  if (n->on) return 1.0;']), DOUBLE_RATES],
  // ---- the reference checks (issue 36): the copies (suites/hazards/reference-copies.ts, docs/reference-checks.md)
  ['reference: a second context at the pageable speed passes (PORTABLE ignored)', 'reference judgement', refCopies, edits(['            const fast = ratio !== undefined && ratio >= margin;', '            const fast = ratio !== undefined;']), REFERENCE_COPIES],
  ['reference: wrong bytes from the copy on a stream pass', 'reference judgement', refCopies, edits(['        const right = got?.diff === -1;', '        const right = got !== undefined;']), REFERENCE_COPIES],
  ['reference: the copy on a stream made synchronously instead', 'reference machinery', refCopiesHarness, edits(['  const copy = driverCall(() => ref.uploadAsync(host, stream));', '  const copy = driverCall(() => ops.upload(host));']), REFERENCE_COPIES],
  ['reference: wrong bytes read through the device pointer pass', 'reference judgement', refCopies, edits(['        const right = seen?.diff === -1;', '        const right = seen !== undefined;']), REFERENCE_COPIES],
  ['reference: the pointer query answering after the release passes', 'reference judgement', refCopies, edits(['        const stillKnown = after !== undefined && after.code.code === 0;', '        const stillKnown = false;']), REFERENCE_COPIES],
  ['reference: every GPU at once copies to its own device only', 'reference machinery', refCopies, edits(['          const all = [ops, ...others];', '          const all = [ops];']), REFERENCE_COPIES],
  ['reference: wrong bytes on one of several GPUs pass', 'reference judgement', refCopies, edits(['        const wrong = copies.filter((c) => c.diff !== -1);', '        const wrong = copies.filter((c) => c.diff === null);']), REFERENCE_COPIES],
  ['reference: the pointer query asks another attribute than DEVICE_POINTER', 'reference binding', cudaBinding, edits(['const CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3;', 'const CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 2;']), REFERENCE_COPIES],
  // ---- the device's clock ----
  ['clock: the end event recorded before the copy', 'device clock', deviceClockFile, edits(['      upload(host);\n      calls.record(end, null);', '      calls.record(end, null);\n      upload(host);']), DEVICE_CLOCK],
  ['clock: the probe never opens the device clock (the host times every copy)', 'device clock', probe, edits(["    return { device: t.deviceClock(), clock: { clock: 'device' } };", "    return { clock: { clock: 'host', why: 'mutant' } };"]), DEVICE_CLOCK],
  ["clock: the staged copy's upload left out of the staged figure", 'device clock', probe, edits(['    samples.stagedMs.push(hostCopy + upload.ms);', '    samples.stagedMs.push(hostCopy + 0 * upload.ms);']), DEVICE_CLOCK],
  ["clock: the double's device clock advanced by the host's time (the load shows in the events)", 'device clock (double)', doubleEngine, edits(['    device_s = modelled > floor_s ? modelled : floor_s;', '    device_s = pace_now() - entry;']), DEVICE_CLOCK],
  ["clock: a slow second context on a busy machine failed as the driver's", 'busy host attribution', refCopies, edits(['!fast && busy.length > 0 && succeeded(unregister)', '!fast && false && succeeded(unregister)']), REFERENCE_COPIES],
  ["reference: the portable check's first timing looks at the machine (an estimated 90 ms of NVML on the H200)", 'reference: looks only when slow', refCopies, edits(['[first, fromSecond, stagedGBps] = measure(false);', '[first, fromSecond, stagedGBps] = measure(true);']), REFERENCE_COPIES],
  ["reference: the portable check's second timing does not look at the machine (a busy host's slow copy the driver's)", 'reference: looks only when slow', refCopies, edits(['                const again = measure(true);', '                const again = measure(false);']), REFERENCE_COPIES],
  ["reference: the portable check's wait for the timing lock not counted in its data", 'reference: the lock wait shown', refCopies, edits(['              lockWaitMs += t.lockWaitMs;', '              lockWaitMs += 0 * t.lockWaitMs;']), REFERENCE_COPIES],
  ["reference: the portable check's timing takes the lock exclusive (it waits for the truncation children's driver starts)", 'reference: the lock held shared', refCopies, edits(["onWait: (w: HostWait) => writeEvent({ type: 'wait', device: ctx.device.id, ...w }), shared: true };", "onWait: (w: HostWait) => writeEvent({ type: 'wait', device: ctx.device.id, ...w }), shared: false };"]), REFERENCE_COPIES],
  ['measure: a shared timing takes the lock exclusive', 'reference: the lock held shared', 'suites/measure.ts', edits(['    lock = takeLock(deviceId, limitMs, shared);', '    lock = takeLock(deviceId, limitMs);']), REFERENCE_COPIES],
  ["hazards: the truncation check before the context reset again (its child's start no longer beside the reset)", 'hazards: the truncation check last', 'suites/hazards/index.ts', edits(["  // after every check that uses the device's context: it resets it\n  contextResetCheck,\n", ''], ['  truncateContainedCheck,\n', '  truncateContainedCheck,\n  contextResetCheck,\n']), HAZARDS],
  // ---- the devices that never register, checked without Vitest (issue 32: suites/without-vitest.ts)
  ['without Vitest: device by device instead of suite by suite', 'no Vitest: the same order', withoutVitest, edits(['  for (const suite of suiteOrder) {\n    for (const options of devices) {', '  for (const options of devices) {\n    for (const suite of suiteOrder) {']), WITHOUT_VITEST],
  ['without Vitest: a check an earlier process reported run again', 'no Vitest: the same checks', withoutVitest, edits(['        if (!options.skip.includes(check.id)) runCheck(check, options, context);', '        runCheck(check, options, context);']), WITHOUT_VITEST],
  ['without Vitest: no end of the run', 'no Vitest: the same events', withoutVitest, edits(["  writeEvent({ type: 'end', durationMs: performance.now() - started });\n", '']), WITHOUT_VITEST],
  ["without Vitest: the GPU runner's Vitest run never given its devices", 'runner: provided after the answer', deviceRunner, edits(["vitest.provide('mappedReg', devices);\n", '']), WITHOUT_VITEST],
  ['spare runner: started for --help', 'spare: runs only', 'cli/spare-runner.ts', edits(["a === '--help' || ", '']), SPARE],
  ['spare runner: never taken by the first discovering process', 'spare: used', orchestrate, edits(['  const spare = o.env ? undefined : spec.discover ? takeSpareRunner() : takeDeviceSpare();', '  const spare = o.env ? undefined : spec.discover ? undefined : takeDeviceSpare();']), SPARE],
  ['without Vitest: a check left out by the selection asked whether it applies', 'no Vitest: the same results', 'suites/check.ts', edits(['    if (deselected !== undefined) o = deselected;', '    if (deselected !== undefined && deselected === null) o = deselected;']), WITHOUT_VITEST],
  ['early stop: no handler before the command is loaded (a signal ends it silently, the spare runner left to find out)', 'signals: before the run', 'cli/main.ts', edits(['if (runsChecks(process.argv.slice(2))) installEarlyStop();', 'if (runsChecks(process.argv.slice(2)) && false) installEarlyStop();']), ['test/signals.test.ts']],
  ["early stop: its handlers left once the run's are in (a signal mid-run ends it with nothing written)", 'signals: before the run', 'cli/signals.ts', edits(['  for (const [s, h] of early) process.off(s, h);\n', '']), ['test/signals.test.ts']],
  ["memory: the bench leaves out the probe's wait for the discovery beside it", 'memory: no discovery beside the probe', 'bench/conformance.ts', edits(['  if (dev.scratch?.discoveryWaitMs !== undefined) out.discoveryWaitMs = dev.scratch.discoveryWaitMs;\n', '']), ['test/bench.test.ts', '-t', 'deviceFigures']],
  ["memory: a discovering process that checks nothing runs its drivers' teardown", 'memory: no discovery beside the probe', deviceRunner, edits(['  if (!offer) endUnused();', '  if (!offer) process.exit(0);']), ['test/cli.test.ts', '-t', 'checks nothing ends']],
  ["memory: the probe reads its region beside a discovery still running", 'memory: no discovery beside the probe', 'suites/context.ts', edits(['    const discoveryWaitMs = waitForDiscovery(ctx.options);', '    const discoveryWaitMs = 0;']), ['test/signals.test.ts', '-t', 'reads no page of its region']],
  ["memory: a GPU driver's discovering process waited for (it checks a GPU of its own)", 'memory: no discovery beside the probe', discoveringRunners, edits(["!g.exited && !g.backends.some((backend) => isGpuDriver({ backend })))", '!g.exited)']), ['test/process-gone.test.ts']],
  ['memory: a discovering process that exited waited for', 'memory: no discovery beside the probe', discoveringRunners, edits(["g.pid !== undefined && !g.exited && ", 'g.pid !== undefined && ']), ['test/process-gone.test.ts']],
  ["memory: a process that is not the command's child waited for", 'memory: no discovery beside the probe', 'bindings/process-gone.ts', edits(['!dead(s.state) && s.ppid === parent ?', '!dead(s.state) ?']), ['test/process-gone.test.ts']],
  ['memory: a zombie taken for a live process', 'memory: no discovery beside the probe', 'bindings/process-gone.ts', edits(["state === 'Z' || state === 'X'", "state === 'X'"]), ['test/process-gone.test.ts']],
  ['memory: a pid given to a newer process taken for the one the run knew', 'memory: no discovery beside the probe', 'bindings/process-gone.ts', edits(['s === undefined || s.startTicks !== p.startTicks || dead(s.state)', 's === undefined || dead(s.state)']), ['test/process-gone.test.ts']],
  ['lock: a shared taker walks past the closed gate (timed copies wait behind shared holders)', 'lock: timed copies go first', timingLock, edits(['      if (options.shared) return !gateClosed(fd) && flock(fd, mode | LOCK_NB);', '      if (options.shared) return flock(fd, mode | LOCK_NB);']), LOCK],
  ['lock: an exclusive taker never closes the gate', 'lock: timed copies go first', timingLock, edits(['      gate ||= closeGate(fd);', '      gate ||= false;']), LOCK],
  ['lock: a shared taker that gave up behind timed copies does not say so', 'lock: timed copies go first', timingLock, edits(['whoHolds(fd), options.shared === true && gateClosed(fd));', 'whoHolds(fd), false);']), LOCK],
  ["lock: a holder's line taken whoever the kernel says holds the lock (a killed holder named)", 'lock: the holder named', 'bindings/timing-lock.ts', edits(['  if (line && kernel.some((h) => h.pid === line.pid || h.pid === 0)) return line;', '  if (line) return line;']), ['test/timing-lock.test.ts']],
  ['lock: shared holders never named', 'lock: the holder named', 'bindings/timing-lock.ts', edits(["      const m = /^\\d+: FLOCK +\\S+ +(READ|WRITE) +", "      const m = /^\\d+: FLOCK +\\S+ +(WRITE) +"]), ['test/timing-lock.test.ts']],
  // ---- the scratch of the run's own killed runners (a folder still being made)
  ["scratch: a folder still being made by the caller's own ended runner kept for the grace", 'scratch: nothing left behind', 'bindings/scratch-lock.ts', edits(['  if (m !== null && ended.has(Number(m[1])) && !processExists(Number(m[1]))) return true;\n', '']), ['test/scratch-lock.test.ts']],
  ["scratch: a pid said ended but alive loses its folder", 'scratch: nothing left behind', 'bindings/scratch-lock.ts', edits(['ended.has(Number(m[1])) && !processExists(Number(m[1]))', 'ended.has(Number(m[1]))']), ['test/scratch-lock.test.ts']],
  // ---- compare --json: whose a failing change is
  ["compare --json: a busy machine's change blamed on the driver", 'compare: the host is never the driver', compareRules, edits(["    blame: ch.kind === 'error' ? 'host' : 'driver',", "    blame: 'driver',"]), ['test/busy.test.ts']],
  ["compare --json: the host's error alone called the driver's regression", 'compare: the host is never the driver', compareRules, edits(['driverRegression: driverRegressed(c.counts),', 'driverRegression: hasRegression(c),']), ['test/busy.test.ts']],
  // ---- the probe's scratch file written by several threads (issue 32)
  ["scratch writers: the last share stops a page short (a hole of zeros in the file)", 'scratch: every byte written', 'bindings/scratch.ts', edits(['    const to = i === shares - 1 ? bytes : Math.min(bytes, from + share);', '    const to = i === shares - 1 ? bytes - 4096 : Math.min(bytes, from + share);']), ['test/scratch.test.ts']],
  ['scratch writers: one thread whatever the cores', 'scratch: the writers', 'bindings/scratch.ts', edits(['  return Math.max(1, Math.min(4, cores - 1, Math.ceil(bytes / (64 * MiB))));', '  return 1;']), ['test/scratch.test.ts']],
];
const dry = process.argv.includes('--dry');
// --new: run only the mutations the page does not list yet; the page's own rows for the others are carried, and
// the page says which were run this time and which were carried
const onlyNew = process.argv.includes('--new');
const only = process.argv.slice(2).find((a) => a !== '--dry' && a !== '--new');
/** The page's caught-by lists, by mutation name (the `## name: caught by N test(s)` sections and their `- test` lines). */
function pageRows() {
  const found = new Map();
  if (!existsSync('docs/mutations.md')) return found;
  let current;
  for (const line of readFileSync('docs/mutations.md', 'utf8').split('\n')) {
    const head = /^## (.*): (caught by \d+ test\(s\)|SURVIVED)$/.exec(line);
    if (head) found.set((current = head[1]), []);
    else if (current !== undefined && line.startsWith('- ')) found.get(current).push(line.slice(2));
  }
  return found;
}
const carried = onlyNew ? pageRows() : new Map();
const chosen = only ? mutations.filter(([name]) => name.includes(only)) : mutations.filter(([name]) => !carried.has(name));
if (chosen.length === 0) throw new Error(`no mutation matches ${JSON.stringify(only)}`);
if (dry) {
  // every pattern against the current sources, nothing written or run
  // every stale one named, not only the first
  const stale = [];
  for (const [name, , file, mutate] of chosen) {
    try {
      if (mutate(readFileSync(file, 'utf8')) === readFileSync(file, 'utf8')) stale.push(`${name}: changed nothing`);
    } catch (e) {
      stale.push(`${name}: ${e.message}`);
    }
  }
  if (stale.length > 0) {
    console.error(stale.join('\n'));
    process.exit(1);
  }
  console.log(`${chosen.length} mutations, every pattern matches`);
  process.exit(0);
}

const started = Date.now();
const rows = [];
// Vitest's global setup builds dist/ from the (mutated) sources: build it again from the real ones at the end.
process.on('exit', () => execFileSync(process.execPath, ['scripts/prepare.mjs'], { stdio: 'inherit' }));
// A signal (a kill of this script alone) must not leave a mutant in the sources: with these handlers the script
// is not ended mid-mutation; the signal is answered between two mutations, once the source is back (a Ctrl-C
// ends the test run too: its failure to write results ends the script through the finally below).
let restore = () => {};
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    restore();
    process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
  });
}
for (const [name, why, file, mutate, tests] of chosen) {
  const original = readFileSync(file, 'utf8');
  restore = () => writeFileSync(file, original);
  const mutated = mutate(original);
  if (mutated === original) throw new Error(`mutation "${name}" changed nothing: its pattern is stale`);
  const out = join(tmpdir(), `mutation-${process.pid}.json`);
  const t0 = Date.now();
  try {
    writeFileSync(file, mutated);
    try {
      execFileSync('npx', ['vitest', 'run', ...tests, '--reporter=json', `--outputFile=${out}`], { stdio: 'ignore' });
    } catch {
      // vitest exits 1 when a test fails: that is the expected outcome
    }
    // The global setup builds dist/ with tsc: a mutant that does not type-check never reaches a test. That is
    // not a catch by a test: the mutation must be rewritten to type-check.
    if (!existsSync(out)) throw new Error(`mutation "${name}": vitest wrote no results (does the mutant type-check? npx tsc --noEmit -p tsconfig.json)`);
    const result = JSON.parse(readFileSync(out, 'utf8'));
    if (result.numTotalTests === 0) throw new Error(`mutation "${name}": no test ran`);
    const failed = result.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status === 'failed').map((a) => `${f.name.replace(/^.*\/test\//, 'test/')}: ${a.fullName}`));
    // a file that could not run at all (a syntax error in the mutant) also counts, with its message
    for (const f of result.testResults) if (f.status === 'failed' && f.assertionResults.length === 0) failed.push(`${f.name.replace(/^.*\/test\//, 'test/')}: (the file failed to run: ${String(f.message).split('\n')[0]})`);
    rows.push({ name, why, file, tests, failed, seconds: (Date.now() - t0) / 1000 });
    console.log(`${failed.length ? 'caught ' : 'SURVIVED'} ${name} (${failed.length} failing tests, ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  } finally {
    writeFileSync(file, original);
    rmSync(out, { force: true });
  }
  // the loop is synchronous: a pending signal is handled only here, between two mutations
  await new Promise((r) => setImmediate(r));
}
const minutes = ((Date.now() - started) / 60000).toFixed(1);

if (!only) {
  const ran = rows.length;
  // with --new, the page's rows for the mutations not run this time, in the script's order
  if (onlyNew) {
    const fresh = new Map(rows.map((r) => [r.name, r]));
    rows.length = 0;
    for (const [name, why, file, , tests] of mutations) rows.push(fresh.get(name) ?? { name, why, file, tests, failed: carried.get(name) ?? [], carried: true });
  }
  const caught = rows.filter((r) => r.failed.length > 0).length;
  const lines = [
    '# Mutations of the model, the checks, the bindings and the gate, and the tests that catch them',
    '',
    'Made by `node scripts/mutations.mjs`: each mutation is applied alone to `src/`, `suites/` (the checks, the hazards, the',
    'machine check around the timed copies), `bindings/`, `results/`, `reporters/`, `history/` or `cli/` (the options, the',
    'selection of checks and devices, the outputs, the watchdog), the test files that hold that code run (the last column',
    'of each mutation in the script names them: the model: `test/probe`, `static`, `verdict`, `ops`; the checks: `test/checks`;',
    "the hazards: `test/hazards`; the bindings: `test/cuda`, `test/hip`; the gate's rules: `test/gate-boundaries`; whose fault",
    'a failure is, in every report: `test/attribution`; the machine check at its thresholds: `test/machine-check`; the',
    'timing lock and the waits: `test/timing-lock`, `test/lock-wait`, `test/busy`; the reads that never block and the caps:',
    '`test/machine-reads`, `test/machine-caps`, `test/outputs`; the options: `test/options`; ...),',
    'and the source is restored. A mutation no test catches would be listed as SURVIVED; a pattern that no longer',
    'matches the source stops the script, and so does a mutant that does not compile (the tests build `dist/` with tsc',
    'first; the build, unlike `npm test`, allows an unused local). `node scripts/mutations.mjs NAME` runs the mutations whose name contains NAME and writes nothing;',
    '`--dry` only checks that every pattern matches.',
    '',
    `${rows.length} mutations, ${caught} caught, ${rows.length - caught} survived; the run took ${minutes} min on the`,
    'machine that wrote this file (2 cores, shared).',
    ...(onlyNew
      ? [
          '',
          `This page was written with \`--new\`: ${ran} mutations (those the page did not list before) were run this time; the`,
          `other ${rows.length - ran} rows, marked "carried", are as the page's earlier run found them, not run again.`,
        ]
      : []),
    '',
    '| mutation | of | file | caught by |',
    '| --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.name} | ${r.why} | \`${r.file}\` | ${r.failed.length ? `${r.failed.length} test(s)` : '**SURVIVED**'}${r.carried ? ' (carried)' : ''} |`),
    '',
  ];
  for (const r of rows) {
    lines.push(`## ${r.name}: ${r.failed.length ? `caught by ${r.failed.length} test(s)` : 'SURVIVED'}`, '');
    for (const t of r.failed) lines.push(`- ${t}`);
    lines.push('');
  }
  writeFileSync('docs/mutations.md', lines.join('\n'));
}
console.log(`${rows.length} mutations, ${rows.filter((r) => r.failed.length === 0).length} survived, ${minutes} min`);
if (rows.some((r) => r.failed.length === 0)) process.exitCode = 1;
