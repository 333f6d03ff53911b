// The JUnit report of a run (what CI reads of it: docs/ci.md), built with junit-report-builder, valid against Jenkins
// xunit's junit-10.xsd: one <testsuite> per device, named with its id, name and verdict (`cuda:0 NVIDIA H200
// [Usable]`: every CI view shows the verdict, not only those that read properties), with `hostname`, and its
// verdict, backend, driver, PCI bus id, scratch filesystem and bandwidths as <properties>; one <testcase> per
// check, classname `<device id>.<suite>`. A testcase is red exactly when the gate is red about it
// (results/gate.ts): <failure> for a failure or a regression, <error type="crash|timeout"> for the driver's
// crash or timeout, <error type="host"> when the host failed the check (or a figure, on a busy machine, or the
// whole gate, when every reason is the host's); a known failure (listed, or failed in the
// baseline too) is <skipped message="known failure: ...">, never a <failure>; a listed failure that passed is
// <failure type="unexpected-pass">. With a gate, each device gets `gate.verdict`, `gate.bandwidth` and `gate.registration` testcases
// (red on a regression, with both sides and the PCI bus id), a device of the baseline that is gone a testsuite
// of its own, and a testsuite `gate` holds the decision and the run's own failures (a driver that failed to
// start, an unmet --require). The device's errors outside any check are a testcase `run.errors`.
//
// Every string is made safe for XML 1.0 here, before the builder sees it: characters XML cannot carry (C0
// controls other than tab, newline and carriage return, lone surrogates, U+FFFE/U+FFFF) are replaced, and
// `]]>` is broken up for CDATA. The builder would otherwise strip them itself, and its stripping of a lone
// low surrogate also drops the character before it (the `;` of an `&amp;` it has just written).
import { createRequire } from 'node:module';
import type { Builder, TestCase } from 'junit-report-builder';
import { checkReason } from '../results/check-text.js';
import { interruptedText } from './interrupted.js';
import { FAILING } from '../results/status.js';
import type { CheckResult, DeviceResult, GateDecision, GateNote, RunResult } from '../results/types.js';
import { MESSAGE_CAP, capList, capText } from './safe-text.js';

// A CommonJS module whose `module.exports` is the builder; its types declare it as `exports.default`, which an
// ES import under NodeNext would then look for (and not find) at run time.
const junit = createRequire(import.meta.url)('junit-report-builder') as Builder;

/** C0 controls XML 1.0 does not allow (tab, LF and CR are allowed). */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;
/** Code units that are not characters: lone surrogates, U+FFFE, U+FFFF. */
const NOT_A_CHAR = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|[\uFFFE\uFFFF]/g;

/** `s` with only characters XML 1.0 allows: a control character as `\xNN`, anything else not a character as U+FFFD. */
export function xmlSafe(s: string): string {
  return s.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`).replace(NOT_A_CHAR, '\uFFFD');
}

/** For a CDATA section (the builder splits only the first `]]>` of a text). */
const cdataSafe = (s: string): string => xmlSafe(s).replaceAll(']]>', ']]&gt;');

const seconds = (ms: number): number => (Number.isFinite(ms) && ms > 0 ? Math.round(ms) / 1000 : 0);

/** The `message` attribute of a <failure> or an <error>: the check's reason, as the terminal tells it (results/check-text.ts). */
const headline = checkReason;

/** What the check expected and observed, and its message: the body of a <failure> or an <error>. */
function outcome(c: CheckResult): string[] {
  const lines: string[] = [];
  if (c.expected !== undefined) lines.push(`expected: ${c.expected}`);
  if (c.observed !== undefined) lines.push(`observed: ${c.observed}`);
  if (c.message !== undefined && c.status !== 'warn') lines.push(`message: ${c.message}`);
  return lines;
}

/** The testcase's <system-out>: a warning first, then the outcome, the check's figures and its log. */
function details(c: CheckResult): string {
  const lines = outcome(c);
  if (c.status === 'warn') lines.unshift(`warn: ${c.message ?? c.observed ?? 'warning'}`);
  if (c.data !== undefined) lines.push(`data: ${JSON.stringify(c.data)}`);
  for (const l of c.log ?? []) lines.push(`log: ${l}`);
  if (c.process !== undefined && c.process > 1) lines.push(`process: ${c.process} (reported by a new process of the device's run)`);
  return lines.join('\n');
}

/** Runs `edit` on the element a node builds (junit-report-builder has no call for some attributes and children). */
function afterBuild(node: { build: TestCase['build'] }, edit: (element: ReturnType<TestCase['build']>) => void): void {
  const build = node.build.bind(node);
  node.build = (parent) => {
    const element = build(parent);
    edit(element);
    return element;
  };
}

/** A <skipped> with a message: junit-report-builder writes a bare <skipped/>, so the attribute is added to it once built. */
function skippedWithMessage(tc: TestCase, reason: string): void {
  tc.skipped();
  afterBuild(tc, (element) => {
    for (const child of element.children) {
      const e = child as { name?: unknown; att?: (name: string, value: string) => unknown };
      if (e.name === 'skipped' && typeof e.att === 'function') e.att('message', reason);
    }
  });
}

const verdictLabel = (v: { kind: string; refusal?: string }): string => (v.refusal ? `${v.kind} (${v.refusal})` : v.kind);

/** The device's timing figures written as properties, each under its name in the results. */
const TIMING_PROPERTIES = ['registeredGBps', 'stagedGBps', 'ratio', 'minRelativeSpeed', 'runs', 'bytes', 'linkGBps', 'pageLockedGBps', 'pageLockedRatio', 'hostCopyGBps'] as const;

/** The <properties> of a device's testsuite, in order; an undefined or null value is left out. */
function properties(d: DeviceResult, gate: GateDecision | undefined): [string, string | number | boolean | null | undefined][] {
  return [
    ['device.id', d.id],
    ['device.name', d.name],
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
}

const FAILING_NOTES: readonly GateNote['kind'][] = ['regression', 'unexpected-pass', 'error'];

/** How one check's testcase ends, from its status and what the gate says of it. */
function checkOutcome(tc: TestCase, c: CheckResult, note: GateNote | undefined, gate: GateDecision | undefined): void {
  const body = outcome(c).join('\n');
  const judged = note?.kind ? `gate: ${note.kind}${note.note ? ` (${note.note})` : ''}` : undefined;
  if (c.status === 'error') {
    tc.error(xmlSafe(headline(c)), 'host', cdataSafe(body));
    return;
  }
  if (note?.kind === 'unexpected-pass') {
    tc.failure(xmlSafe(note.note ?? 'unexpected pass'), 'unexpected-pass').stacktrace(cdataSafe([body, judged].filter(Boolean).join('\n')));
    return;
  }
  const failing = FAILING.includes(c.status);
  if (failing && gate && !(note && FAILING_NOTES.includes(note.kind))) {
    // the gate accepts it: a listed known failure, one the baseline had too, or a flake that passed on re-run
    const why =
      note?.kind === 'expected' && note.expectation
        ? `known failure: ${note.expectation.source}: ${note.expectation.line}`
        : note?.kind === 'flaky'
          ? `flaky: ${c.status} on the first run, ${note.note ?? 'passed on re-run'}`
          : `known failure: ${c.status} in the baseline too${gate.baseline ? ` (${gate.baseline})` : ''}`;
    skippedWithMessage(tc, xmlSafe(why));
    return;
  }
  if (c.status === 'fail') tc.failure(xmlSafe(headline(c)), 'fail').stacktrace(cdataSafe(body));
  else if (c.status === 'crash' || c.status === 'timeout') tc.error(xmlSafe(headline(c)), c.status, cdataSafe(body));
  else if (note?.kind === 'regression') tc.failure(xmlSafe(`regression against the baseline: ${c.id} ${note.old ?? '(none)'} -> ${note.new ?? '(none)'}`), 'regression').stacktrace(cdataSafe([body, judged].filter(Boolean).join('\n')));
  else if (c.status === 'skip') skippedWithMessage(tc, xmlSafe(c.message ?? 'does not apply'));
}

/** What each gate testcase of a device names: the verdict, the registered GB/s, registered / page-locked. */
const GATE_FIGURES = { verdict: 'verdict', bandwidth: 'registered', registration: 'registered / page-locked' } as const;

/**
 * `gate.verdict`, `gate.bandwidth` and `gate.registration` of a device: a <failure> on a regression, with both
 * sides and the PCI bus id; an <error type="host"> for a figure not judged because the host failed it (a machine
 * that stayed busy): not passed, and not the driver's.
 */
function gateCases(suite: ReturnType<ReturnType<Builder['newBuilder']>['testSuite']>, d: DeviceResult, gate: GateDecision): void {
  for (const check of ['verdict', 'bandwidth', 'registration'] as const) {
    const note = gate.notes.find((n) => n.device === d.id && n.check === check);
    if (check === 'bandwidth' && !note && !(gate.baseline && d.timing)) continue;
    if (check === 'registration' && !note && !(gate.baseline && d.timing?.pageLockedRatio !== undefined)) continue;
    const tc = suite.testCase().className(xmlSafe(`${d.id}.gate`)).name(`gate.${check}`).time(0);
    const now = check === 'verdict' ? verdictLabel(d.verdict) : check === 'bandwidth' ? `${d.timing?.registeredGBps.toFixed(2)} GB/s` : `${d.timing?.pageLockedRatio?.toFixed(3)}`;
    const sides = note ? `${note.old ?? '(none)'} -> ${note.new ?? '(none)'}` : now;
    const hostError = note?.kind === 'error';
    const text = `${d.id} ${d.name} (${d.pciBusId ?? 'no PCI bus id'}): ${GATE_FIGURES[check]} ${sides}${hostError ? ': not judged: the host, not the driver' : ''}${note?.note ? `: ${note.note}` : ''}${note?.detail ? `: ${note.detail}` : ''}`;
    if (hostError) tc.error(xmlSafe(text), 'host', cdataSafe(text));
    else if (note && FAILING_NOTES.includes(note.kind)) tc.failure(xmlSafe(text), note.kind === 'regression' ? 'regression' : note.kind);
    tc.standardOutput(cdataSafe(`${text}\n${gate.baseline ? `baseline: ${gate.baseline}` : 'no baseline'}`));
  }
}

/** A gate reason as JUnit lists it under `gate.decision`: the host's marked, so that a mixed failure reads as one. */
const reasonLine = (r: GateDecision['reasons'][number]): string => `- ${r.host ? `[the host${r.kind === 'busy' ? ': busy' : r.kind === 'noisy' ? ': too noisy to judge' : ''}] ` : ''}${r.text}`;

/** How the run ended, beyond its result: the stop signal that interrupted it (SIGINT, SIGTERM, SIGHUP), if any. */
export interface RunEnd {
  stoppedBy?: string;
}

/**
 * The run as JUnit XML (a string, UTF-8 when written). An interrupted run (incomplete, or stopped by a signal)
 * has an <error type="interrupted"> naming the signal in the `gate` testsuite, counted in the run's errors: a CI
 * view shows it red, never as a green run of fewer tests.
 */
export function junitXml(result: RunResult, run: RunEnd = {}): string {
  const gate = result.gate;
  const builder = junit.newBuilder().name(xmlSafe(`${result.tool.name} ${result.tool.version}`));
  const hostname = xmlSafe(result.host.hostname);
  for (const d of result.devices) {
    const suite = builder.testSuite().name(xmlSafe(`${d.id} ${d.name} [${verdictLabel(d.verdict)}]`)).timestamp(result.startedAt);
    afterBuild(suite, (element) => element.att('hostname', hostname));
    for (const [name, value] of properties(d, gate)) if (value !== undefined && value !== null) suite.property(name, xmlSafe(String(value)));
    let ms = 0;
    for (const c of d.checks) {
      ms += Number.isFinite(c.durationMs) ? c.durationMs : 0;
      const tc = suite
        .testCase()
        .className(xmlSafe(`${d.id}.${c.suite ?? 'unknown'}`))
        .name(xmlSafe(c.id))
        .time(seconds(c.durationMs));
      const note = gate?.notes.find((n) => n.device === d.id && n.check === c.id);
      checkOutcome(tc, c, note, gate);
      const text = [details(c), note?.note ? `gate: ${note.kind}: ${note.note}` : ''].filter(Boolean).join('\n');
      if (text) tc.standardOutput(cdataSafe(text));
    }
    if (gate) gateCases(suite, d, gate);
    if (d.errors?.length) {
      const n = d.errors.length;
      suite
        .testCase()
        .className(xmlSafe(`${d.id}.run`))
        .name('run.errors')
        .error(xmlSafe(n === 1 ? d.errors[0]! : `${n} errors outside any check: ${d.errors[0]!}`), 'run', cdataSafe(d.errors.join('\n')));
    }
    suite.time(seconds(ms));
  }
  let gateSuite: ReturnType<ReturnType<Builder['newBuilder']>['testSuite']> | undefined;
  if (gate) {
    for (const m of gate.missing) {
      const suite = builder.testSuite().name(xmlSafe(`${m.id} ${m.name} [MISSING]`)).timestamp(result.startedAt);
      afterBuild(suite, (element) => element.att('hostname', hostname));
      suite.property('pciBusId', xmlSafe(m.pciBusId ?? ''));
      suite.property('backend', xmlSafe(m.backend));
      const text = `${m.id} ${m.name} (${m.pciBusId ?? 'no PCI bus id'}) is missing: the baseline had it (${m.verdict ?? 'no verdict'}, ${m.driver ?? 'no driver'}), this run has not${m.why ? `: ${m.why}` : ''}`;
      suite.testCase().className(xmlSafe(`${m.id}.gate`)).name('gate.presence').time(0).failure(xmlSafe(text), 'missing');
    }
    const suite = builder.testSuite().name(xmlSafe(`gate [${gate.pass ? 'PASS' : 'FAIL'}]`)).timestamp(result.startedAt);
    gateSuite = suite;
    afterBuild(suite, (element) => element.att('hostname', hostname));
    if (gate.baseline) suite.property('baseline', xmlSafe(gate.baseline));
    if (gate.expectations) suite.property('expectations', xmlSafe(gate.expectations));
    suite.property('maxDrop', String(gate.maxDrop));
    const decision = suite.testCase().className('gate').name('gate.decision').time(0);
    // every reason the host's: an <error type="host">, as for a check the host failed; else a <failure>
    if (!gate.pass && gate.reasons.every((r) => r.host)) decision.error(xmlSafe(gate.headline), 'host', cdataSafe(gate.reasons.map(reasonLine).join('\n')));
    else if (!gate.pass) decision.failure(xmlSafe(gate.headline), 'gate');
    decision.standardOutput(cdataSafe([gate.headline, ...gate.reasons.map(reasonLine)].join('\n')));
    for (const r of gate.reasons.filter((x) => x.kind === 'driver-init' || x.kind === 'requirement')) {
      suite.testCase().className('gate').name(xmlSafe(`gate.${r.kind}`)).time(0).failure(xmlSafe(r.text), r.kind);
    }
  }
  if (result.incomplete || run.stoppedBy !== undefined) {
    const suite = gateSuite ?? builder.testSuite().name('gate [INCOMPLETE]').timestamp(result.startedAt);
    if (!gateSuite) afterBuild(suite, (element) => element.att('hostname', hostname));
    if (run.stoppedBy !== undefined) suite.property('stoppedBy', xmlSafe(run.stoppedBy));
    const text = interruptedText(result, run.stoppedBy);
    suite.testCase().className('gate').name('run.interrupted').time(0).error(xmlSafe(text), 'interrupted', cdataSafe(text));
  }
  // junit-10.xsd has no `skipped` on <testsuites> (only on <testsuite>): the builder writes it there
  return builder.build().replace(/^(<\?xml[^>]*>\s*<testsuites\b[^>]*?) skipped="\d+"/, '$1');
}
