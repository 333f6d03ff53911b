// What the JUnit report of a run holds, as plain data before any XML is written: its testsuites, their testcases
// and how each ends. The JUnit writer (reporters/junit.ts) serializes it, and the terminal's totals line counts it
// (reporters/summary.ts), so that the file and the terminal give the same pass, fail, error and skip counts.
//
// The lines it draws (docs/ci.md, "How JUnit tells it"):
// - one problem is one red testcase: a check the gate is red about, a figure the gate judged, a device of the
//   baseline that is gone, a driver that failed to start (one failure naming its code, its devices not counted
//   again as missing), an unmet --require, the device's errors outside any check. The gate's decision is told by
//   its suite's name (`gate [PASS]`, `gate [FAIL]`), properties and system-out, never by another failure; only a
//   reason no other testcase stands for gets a `gate.decision` testcase.
// - <failure> for what the driver did, <error> for what the host did (type `host`), and for a crash, a timeout,
//   an interrupted run or the device's own process failing (types `crash`, `timeout`, `interrupted`, `run`).
// - the device in every testcase's name (`cuda:0 > hazard.tmpfs_bytes`), the host in every suite's name and
//   `hostname`, so that two hosts' suites never merge.
// - no testcase that judges nothing: the gate's figures are testcases only against a baseline (or where the gate
//   said something of them); a passing testcase is a check that passed (or warned) or a figure the gate held.
import { verdictLabel } from '../results/compare.js';
import { checkReason } from '../results/check-text.js';
import { FAILING } from '../results/status.js';
import type { CheckResult, DeviceResult, DeviceWithHost, GateDecision, GateNote, GateReason, RunResult } from '../results/types.js';
import { interruptedText } from './interrupted.js';
import { MESSAGE_CAP, capList, capText } from './safe-text.js';

/** How a testcase ends that did not pass: the element and its attributes, and its text. */
export interface CaseOutcome {
  element: 'failure' | 'error' | 'skipped';
  message: string;
  type?: string;
  body?: string;
}

export interface JunitCase {
  name: string;
  classname: string;
  /** Seconds. */
  time: number;
  outcome?: CaseOutcome;
  out?: string;
}

export interface JunitSuite {
  name: string;
  hostname: string;
  timestamp: string;
  /** Seconds. */
  time: number;
  properties: [string, string][];
  cases: JunitCase[];
  /** The suite's own <system-out> (the gate's decision and its reasons). */
  out?: string;
}

export interface JunitReport {
  name: string;
  /** Seconds, the whole run. */
  time: number;
  suites: JunitSuite[];
}

/** The counts a CI system shows of a report. */
export interface JunitTotals {
  tests: number;
  passed: number;
  failures: number;
  errors: number;
  skipped: number;
}

/** How the run ended, beyond its result: the stop signal that interrupted it (SIGINT, SIGTERM, SIGHUP), if any. */
export interface RunEnd {
  stoppedBy?: string;
}

/** A time in seconds, to the millisecond; 0 for what is not a finite positive number. */
export const seconds = (ms: number): number => (Number.isFinite(ms) && ms > 0 ? Math.round(ms) / 1000 : 0);

/** A device's testsuite time: its checks' durations summed (a duration not finite or not positive counts none). */
export const checksSeconds = (checks: readonly { durationMs: number }[]): number => seconds(checks.reduce((ms, c) => ms + (Number.isFinite(c.durationMs) && c.durationMs > 0 ? c.durationMs : 0), 0));


/** A testcase's title: the device first, as Vitest puts the file before the test (`cuda:0 > hazard.tmpfs_bytes`). */
export const caseTitle = (device: string, what: string): string => `${device} > ${what}`;

/** The host a device was measured on: its own in a merged file, else the run's. */
const hostOf = (result: RunResult, d: DeviceResult): string => (d as DeviceWithHost).host?.hostname ?? result.host.hostname;

/** What the check expected and observed, and its message: the body of a <failure> or an <error>. */
function outcomeLines(c: CheckResult): string[] {
  const lines: string[] = [];
  if (c.expected !== undefined) lines.push(`expected: ${c.expected}`);
  if (c.observed !== undefined) lines.push(`observed: ${c.observed}`);
  if (c.message !== undefined && c.status !== 'warn') lines.push(`message: ${c.message}`);
  return lines;
}

/** The testcase's <system-out>: a warning first, then the outcome, the check's figures and its log. */
function details(c: CheckResult): string {
  const lines = outcomeLines(c);
  if (c.status === 'warn') lines.unshift(`warn: ${c.message ?? c.observed ?? 'warning'}`);
  if (c.data !== undefined) lines.push(`data: ${JSON.stringify(c.data)}`);
  for (const l of c.log ?? []) lines.push(`log: ${l}`);
  if (c.process !== undefined && c.process > 1) lines.push(`process: ${c.process} (reported by a new process of the device's run)`);
  return lines.join('\n');
}

/** The device's timing figures written as properties, each under its name in the results. */
const TIMING_PROPERTIES = ['registeredGBps', 'stagedGBps', 'ratio', 'minRelativeSpeed', 'runs', 'bytes', 'linkGBps', 'pageLockedGBps', 'pageLockedRatio', 'hostCopyGBps'] as const;

/** The <properties> of a device's testsuite, in order; an undefined or null value is left out. */
function properties(d: DeviceResult, host: string, gate: GateDecision | undefined): [string, string][] {
  const all: [string, string | number | boolean | null | undefined][] = [
    ['device.id', d.id],
    ['device.name', d.name],
    ['host', host],
    ['verdict', d.verdict.text],
    ['verdict.kind', d.verdict.kind],
    ['verdict.refusal', d.verdict.refusal],
    ['verdict.reason', d.verdict.reason],
    ['staticVerdict', d.staticVerdict],
    ['cacheable', d.cacheable],
    ['backend', d.backend],
    ['driver.name', d.driver.name],
    ['driver.version', d.driver.version],
    ['pciBusId', d.pciBusId ?? ''],
    ['integrated', d.integrated === null ? 'unknown' : d.integrated],
    ['scratch.fsType', d.scratch?.fsType],
    ['scratch.dir', d.scratch?.dir],
    ...TIMING_PROPERTIES.map((k): [string, number | undefined] => [k, d.timing?.[k]]),
    ['load.busy', d.load?.busy],
    // (the result is capped: each reason at MESSAGE_CAP, LIST_CAP processes named)
    ['load.why', d.load ? capText(d.load.why.join(' | '), MESSAGE_CAP) || undefined : undefined],
    ['load.processes', d.load ? capList(d.load.processes.map((p) => `${p.pid} ${p.name}`)).join(', ') || undefined : undefined],
    ['load.linkMBps', d.load?.linkMBps ?? undefined],
    ['load.lockWaitMs', d.load?.lockWaitMs],
    ['load.waitedForQuietMs', d.load?.waitedForQuietMs],
    ['link.downtrained', d.link?.downtrained],
    ['link.text', d.link?.text],
    ['numa.node', d.numa?.node ?? undefined],
    ['processes', d.processes],
    ['restarts', d.restarts?.join(' | ')],
    ['incomplete', d.incomplete],
    ['gate', gate ? (gate.pass ? 'PASS' : 'FAIL') : undefined],
    ['gate.baseline', gate?.baseline],
  ];
  return all.filter((p): p is [string, string | number | boolean] => p[1] !== undefined && p[1] !== null).map(([k, v]) => [k, String(v)]);
}

/** The gate's notes that make a testcase red. */
const FAILING_NOTES: readonly GateNote['kind'][] = ['regression', 'unexpected-pass', 'error'];

/** How one check's testcase ends, from its status and what the gate says of it; undefined: it passed. */
export function checkOutcome(c: CheckResult, note: GateNote | undefined, gate: GateDecision | undefined): CaseOutcome | undefined {
  const body = outcomeLines(c).join('\n');
  const judged = note?.kind ? `gate: ${note.kind}${note.note ? ` (${note.note})` : ''}` : undefined;
  if (c.status === 'error') return { element: 'error', message: checkReason(c), type: 'host', body };
  if (note?.kind === 'unexpected-pass') return { element: 'failure', message: note.note ?? 'unexpected pass', type: 'unexpected-pass', body: [body, judged].filter(Boolean).join('\n') };
  const failing = FAILING.includes(c.status);
  if (failing && gate && !(note && FAILING_NOTES.includes(note.kind))) {
    // the gate accepts it: a listed known failure, one the baseline had too, or a flake that passed on re-run
    const why =
      note?.kind === 'expected' && note.expectation
        ? `known failure: ${note.expectation.source}: ${note.expectation.line}`
        : note?.kind === 'flaky'
          ? `flaky: ${c.status} on the first run, ${note.note ?? 'passed on re-run'}`
          : `known failure: ${c.status} in the baseline too${gate.baseline ? ` (${gate.baseline})` : ''}`;
    return { element: 'skipped', message: why };
  }
  if (c.status === 'fail') return { element: 'failure', message: checkReason(c), type: 'fail', body };
  if (c.status === 'crash' || c.status === 'timeout') return { element: 'error', message: checkReason(c), type: c.status, body };
  if (note?.kind === 'regression') return { element: 'failure', message: `regression against the baseline: ${c.id} ${note.old ?? '(none)'} -> ${note.new ?? '(none)'}`, type: 'regression', body: [body, judged].filter(Boolean).join('\n') };
  if (c.status === 'skip') return { element: 'skipped', message: c.message ?? 'does not apply' };
  return undefined;
}

/** What each gate testcase of a device names: the verdict, the registered GB/s, registered / page-locked. */
const GATE_FIGURES = { verdict: 'verdict', bandwidth: 'registered', registration: 'registered / page-locked' } as const;

/**
 * `gate.verdict`, `gate.bandwidth` and `gate.registration` of a device, each only where the gate judged it
 * (against a baseline, or where it said something of it): a <failure> on a regression, with both sides and the
 * PCI bus id; an <error type="host"> for a figure not judged because the host failed it (a machine that stayed busy).
 */
function gateCases(d: DeviceResult, gate: GateDecision): [check: string, testcase: JunitCase][] {
  const cases: [string, JunitCase][] = [];
  for (const check of ['verdict', 'bandwidth', 'registration'] as const) {
    const note = gate.notes.find((n) => n.device === d.id && n.check === check);
    if (!note && !gate.baseline) continue; // no baseline, nothing said: no gate judged this figure
    if (check === 'bandwidth' && !note && !d.timing) continue;
    if (check === 'registration' && !note && d.timing?.pageLockedRatio === undefined) continue;
    const now = check === 'verdict' ? verdictLabel(d.verdict) : check === 'bandwidth' ? `${d.timing?.registeredGBps.toFixed(2)} GB/s` : `${d.timing?.pageLockedRatio?.toFixed(3)}`;
    const sides = note ? `${note.old ?? '(none)'} -> ${note.new ?? '(none)'}` : now;
    const hostError = note?.kind === 'error';
    const text = `${d.id} ${d.name} (${d.pciBusId ?? 'no PCI bus id'}): ${GATE_FIGURES[check]} ${sides}${hostError ? ': not judged: the host, not the driver' : ''}${note?.note ? `: ${note.note}` : ''}${note?.detail ? `: ${note.detail}` : ''}`;
    const outcome: CaseOutcome | undefined = hostError
      ? { element: 'error', message: text, type: 'host', body: text }
      : note && FAILING_NOTES.includes(note.kind)
        ? { element: 'failure', message: text, type: note.kind === 'regression' ? 'regression' : note.kind, body: text }
        : undefined;
    cases.push([check, { name: caseTitle(d.id, `gate.${check}`), classname: `${d.id}.gate`, time: 0, ...(outcome ? { outcome } : {}), out: `${text}\n${gate.baseline ? `baseline: ${gate.baseline}` : 'no baseline'}` }]);
  }
  return cases;
}

/** A gate reason as the gate suite's system-out lists it: the host's marked, so that a mixed failure reads as one. */
const reasonLine = (r: GateReason): string => `- ${r.host ? `[the host${r.kind === 'busy' ? ': busy' : r.kind === 'noisy' ? ': too noisy to judge' : ''}] ` : ''}${r.text}`;

/** A driver that loaded and failed to start, in one line that names its code. */
function driverStartText(b: NonNullable<RunResult['backends']>[number]): string {
  const e = b.initError!;
  // the code's name and number, each where the message does not already say it
  const missing = [e.codeName, e.code !== undefined ? String(e.code) : undefined].filter((x): x is string => x !== undefined && !e.message.includes(x));
  const named = missing.length ? ` (${missing.join(' ')})` : '';
  return `${e.message}${named}: ${b.library ?? 'the library'} loaded, then failed to start`;
}

/** The key a reason and the testcase that stands for it share. */
const key = (device: string, check: string): string => `${device}\u0000${check}`;

/** The JUnit report of a run, as data. */
export function junitCases(result: RunResult, run: RunEnd = {}): JunitReport {
  const gate = result.gate;
  const suites: JunitSuite[] = [];
  /** The testcases that are red, by device and check (the gate's figures under `verdict`, `bandwidth`, `registration`). */
  const red = new Set<string>();
  const runErrors = new Set<string>();
  for (const d of result.devices) {
    const host = hostOf(result, d);
    const cases: JunitCase[] = [];
    for (const c of d.checks) {
      const note = gate?.notes.find((n) => n.device === d.id && n.check === c.id);
      const outcome = checkOutcome(c, note, gate);
      if (outcome && outcome.element !== 'skipped') red.add(key(d.id, c.id));
      const out = [details(c), note?.note ? `gate: ${note.kind}: ${note.note}` : ''].filter(Boolean).join('\n');
      cases.push({ name: caseTitle(d.id, c.id), classname: `${d.id}.${c.suite ?? 'unknown'}`, time: seconds(c.durationMs), ...(outcome ? { outcome } : {}), ...(out ? { out } : {}) });
    }
    if (gate) {
      for (const [check, g] of gateCases(d, gate)) {
        if (g.outcome) red.add(key(d.id, check));
        cases.push(g);
      }
    }
    if (d.errors?.length) {
      const n = d.errors.length;
      runErrors.add(d.id);
      cases.push({ name: caseTitle(d.id, 'run.errors'), classname: `${d.id}.run`, time: 0, outcome: { element: 'error', message: n === 1 ? d.errors[0]! : `${n} errors outside any check: ${d.errors[0]!}`, type: 'run', body: d.errors.join('\n') } });
    }
    const time = checksSeconds(d.checks);
    suites.push({ name: `${d.id} ${d.name} [${verdictLabel(d.verdict)}] on ${host}`, hostname: host, timestamp: result.startedAt, time, properties: properties(d, host, gate), cases });
  }
  const host = result.host.hostname;
  // a driver that loaded and failed to start: one failure, naming its code; the devices it had are not missing again
  const failedToStart = new Set<string>();
  for (const b of result.backends ?? []) {
    if (!b.initError) continue;
    failedToStart.add(b.backend);
    const text = driverStartText(b);
    const gone = gate?.missing.filter((m) => m.backend === b.backend) ?? [];
    const body = [text, ...gone.map((m) => `not measured, as its driver did not start: ${m.id} ${m.name} (${m.pciBusId ?? 'no PCI bus id'}), in the baseline`)].join('\n');
    suites.push({
      name: `${b.backend} driver [FAILED TO START] on ${host}`,
      hostname: host,
      timestamp: result.startedAt,
      time: 0,
      properties: [['backend', b.backend], ['library', b.library ?? ''], ...(b.initError.codeName ? [['code', b.initError.codeName] as [string, string]] : []), ...(b.initError.code !== undefined ? [['code.number', String(b.initError.code)] as [string, string]] : [])],
      cases: [{ name: caseTitle(b.backend, 'driver.start'), classname: `${b.backend}.driver`, time: 0, outcome: { element: 'failure', message: text, type: 'driver-init', body } }],
    });
  }
  let gateSuite: JunitSuite | undefined;
  if (gate) {
    for (const m of gate.missing) {
      const text = `${m.id} ${m.name} (${m.pciBusId ?? 'no PCI bus id'}) is missing: the baseline had it (${m.verdict ?? 'no verdict'}, ${m.driver ?? 'no driver'}), this run has not${m.why ? `: ${m.why}` : ''}`;
      const explained = failedToStart.has(m.backend);
      suites.push({
        name: `${m.id} ${m.name} [MISSING] on ${host}`,
        hostname: host,
        timestamp: result.startedAt,
        time: 0,
        properties: [['pciBusId', m.pciBusId ?? ''], ['backend', m.backend]],
        // a device whose driver did not start is that failure's, told there: here it is named, not counted again
        cases: explained ? [] : [{ name: caseTitle(m.id, 'gate.presence'), classname: `${m.id}.gate`, time: 0, outcome: { element: 'failure', message: text, type: 'missing', body: text } }],
        ...(explained ? { out: `${text}\nnot counted again: the failure is ${caseTitle(m.backend, 'driver.start')}` } : {}),
      });
    }
    const cases: JunitCase[] = [];
    for (const r of gate.reasons.filter((x) => x.kind === 'requirement')) cases.push({ name: caseTitle('gate', 'require'), classname: 'gate', time: 0, outcome: { element: 'failure', message: r.text, type: 'requirement', body: r.text } });
    // a reason no testcase above stands for (the gate's own, or a future kind): told once, here
    const covered = (r: GateReason): boolean => {
      if (r.kind === 'driver-init' || r.kind === 'requirement') return true;
      if (r.kind === 'missing') return true;
      if (r.kind === 'run-error') return r.device !== undefined && runErrors.has(r.device);
      return r.device !== undefined && red.has(key(r.device, r.check ?? 'verdict'));
    };
    const alone = gate.reasons.filter((r) => !covered(r));
    if (alone.length) {
      const text = alone.map(reasonLine).join('\n');
      const hostOnly = alone.every((r) => r.host);
      cases.push({ name: caseTitle('gate', 'decision'), classname: 'gate', time: 0, outcome: { element: hostOnly ? 'error' : 'failure', message: alone.length === 1 ? alone[0]!.text : `${alone[0]!.text} (and ${alone.length - 1} more)`, type: hostOnly ? 'host' : 'gate', body: text } });
    }
    gateSuite = {
      name: `gate [${gate.pass ? 'PASS' : 'FAIL'}] on ${host}`,
      hostname: host,
      timestamp: result.startedAt,
      time: 0,
      properties: [
        ['gate', gate.pass ? 'PASS' : 'FAIL'],
        ['gate.headline', gate.headline],
        ...(gate.baseline ? [['baseline', gate.baseline] as [string, string]] : []),
        ...(gate.expectations ? [['expectations', gate.expectations] as [string, string]] : []),
        ['maxDrop', String(gate.maxDrop)],
      ],
      cases,
      out: [gate.headline, ...gate.reasons.map(reasonLine)].join('\n'),
    };
    suites.push(gateSuite);
  }
  if (result.incomplete || run.stoppedBy !== undefined) {
    const suite = gateSuite ?? { name: `gate [INCOMPLETE] on ${host}`, hostname: host, timestamp: result.startedAt, time: 0, properties: [], cases: [] };
    if (!gateSuite) suites.push(suite);
    if (run.stoppedBy !== undefined) suite.properties.push(['stoppedBy', run.stoppedBy]);
    const text = interruptedText(result, run.stoppedBy);
    suite.cases.push({ name: caseTitle('gate', 'run.interrupted'), classname: 'gate', time: 0, outcome: { element: 'error', message: text, type: 'interrupted', body: text } });
  }
  const ms = Date.parse(result.finishedAt) - Date.parse(result.startedAt);
  return { name: `${result.tool.name} ${result.tool.version}`, time: seconds(ms), suites };
}

/** The counts of a suite's testcases, or of the whole report's. */
export function junitTotals(cases: readonly JunitCase[]): JunitTotals {
  const of = (e: CaseOutcome['element']): number => cases.filter((c) => c.outcome?.element === e).length;
  const failures = of('failure');
  const errors = of('error');
  const skipped = of('skipped');
  return { tests: cases.length, passed: cases.length - failures - errors - skipped, failures, errors, skipped };
}

/** Every testcase of the report. */
export const allCases = (report: JunitReport): JunitCase[] => report.suites.flatMap((s) => s.cases);
