// The JUnit report of a run (GUIDE.md, Contracts: JUnit), built with junit-report-builder: one <testsuite> per
// device, its verdict, backend, driver, PCI bus id, scratch filesystem and bandwidths as <properties>; one
// <testcase> per check, classname `<device id>.<suite>`; <failure> for fail, <error type="crash"> and
// <error type="timeout">, <skipped message="reason">; the device's errors outside any check as a testcase
// `run.errors` with <error type="run">. What a check expected and observed is in its <system-out>.
//
// Every string is made safe for XML 1.0 here, before the builder sees it: characters XML cannot carry (C0
// controls other than tab, newline and carriage return, lone surrogates, U+FFFE/U+FFFF) are replaced, and
// `]]>` is broken up for CDATA. The builder would otherwise strip them itself, and its stripping of a lone
// low surrogate also drops the character before it (the `;` of an `&amp;` it has just written).
import { createRequire } from 'node:module';
import type { Builder, TestCase } from 'junit-report-builder';
import type { CheckResult, DeviceResult, RunResult } from '../results/types.js';

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

/** The `message` attribute of a <failure> or an <error>: the check's message, else what it expected and observed. */
function headline(c: CheckResult): string {
  if (c.message) return c.message;
  if (c.expected !== undefined || c.observed !== undefined) return `expected ${c.expected ?? '?'}; observed ${c.observed ?? '?'}`;
  return c.status;
}

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

/** A <skipped> with a message: junit-report-builder writes a bare <skipped/>, so the attribute is added to it once built. */
function skippedWithMessage(tc: TestCase, reason: string): void {
  tc.skipped();
  const build = tc.build.bind(tc);
  tc.build = (parent) => {
    const element = build(parent);
    for (const child of element.children) {
      const e = child as { name?: unknown; att?: (name: string, value: string) => unknown };
      if (e.name === 'skipped' && typeof e.att === 'function') e.att('message', reason);
    }
    return element;
  };
}

function properties(d: DeviceResult): [string, string | number | boolean | null | undefined][] {
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
    ['registeredGBps', d.timing?.registeredGBps],
    ['stagedGBps', d.timing?.stagedGBps],
    ['ratio', d.timing?.ratio],
    ['minRelativeSpeed', d.timing?.minRelativeSpeed],
    ['runs', d.timing?.runs],
    ['bytes', d.timing?.bytes],
    ['linkGBps', d.timing?.linkGBps],
    ['processes', d.processes],
    ['restarts', d.restarts?.join(' | ')],
    ['incomplete', d.incomplete],
  ];
}

/** The run as JUnit XML (a string, UTF-8 when written). */
export function junitXml(result: RunResult): string {
  const builder = junit.newBuilder().name(xmlSafe(`${result.tool.name} ${result.tool.version}`));
  for (const d of result.devices) {
    const suite = builder.testSuite().name(xmlSafe(`${d.id} ${d.name}`)).timestamp(result.startedAt);
    for (const [name, value] of properties(d)) if (value !== undefined && value !== null) suite.property(name, xmlSafe(String(value)));
    let ms = 0;
    for (const c of d.checks) {
      ms += Number.isFinite(c.durationMs) ? c.durationMs : 0;
      const tc = suite
        .testCase()
        .className(xmlSafe(`${d.id}.${c.suite ?? 'unknown'}`))
        .name(xmlSafe(c.id))
        .time(seconds(c.durationMs));
      const text = details(c);
      const body = outcome(c).join('\n');
      if (c.status === 'fail') tc.failure(xmlSafe(headline(c)), 'fail').stacktrace(cdataSafe(body));
      else if (c.status === 'crash' || c.status === 'timeout') tc.error(xmlSafe(headline(c)), c.status, cdataSafe(body));
      // the host failed the check (no space, a process killed from outside): an error, not the driver's failure
      else if (c.status === 'error') tc.error(xmlSafe(headline(c)), 'host', cdataSafe(body));
      else if (c.status === 'skip') skippedWithMessage(tc, xmlSafe(c.message ?? 'does not apply'));
      if (text) tc.standardOutput(cdataSafe(text));
    }
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
  return builder.build();
}
