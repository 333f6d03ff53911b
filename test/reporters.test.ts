// The reports of a run: the JSON results against results/results.schema.json, the JUnit XML (well-formed, one
// <testsuite> per device, the right <failure>/<error>/<skipped>), the Markdown summary. On results built by hand
// (every status, device errors, odd characters) and on real runs of the built command (no GPU; the CUDA double).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultsValidator } from '../results/read.js';
import { MAIN, cleanEnv } from './support/command.js';
import type { CheckResult, DeviceResult, GateNote, RunResult } from '../results/types.js';
import { junitXml, xmlSafe } from '../reporters/junit.js';
import { markdownSummary } from '../reporters/markdown.js';
import { oneLine } from '../results/format.js';
import { buildDoubles } from './double/build.js';
import { validateJunit } from './support/junit-xsd.js';
import { type XmlElement, allElements, childElement, parseXml } from './support/xml.js';

const main = MAIN;
const work = mkdtempSync(join(tmpdir(), 'mapped-reg-reporters-'));
const validate = resultsValidator();

/** What an attribute carries of a text: made safe, on one line (a parser turns an attribute's newlines into spaces). */
const attrText = (s: string): string => oneLine(xmlSafe(s));

const props = (suite: XmlElement): Record<string, string> =>
  Object.fromEntries((childElement(suite, 'properties')?.children ?? []).map((p) => [p.attrs.name!, p.attrs.value ?? p.text]));

// ---------------------------------------------------------------------------------------------------------------
// Results by hand.

const ODD = 'q"uo\'te <tag> & &amp; ]]> ]]> \u0000\u0007\u001b[31mred\u001b[0m \ud800 lone \udc00 \uFFFE\uFFFF &\udc00"\udc00 Ã© café 日本 😀 | pipe\nline\r\nCRLF\ttab';

function check(id: string, suite: CheckResult['suite'], status: CheckResult['status'], extra: Partial<CheckResult> = {}): CheckResult {
  return { id, suite, title: `the ${id} check`, status, durationMs: 12.5, ...extra };
}

function handResult(): RunResult {
  const cuda: DeviceResult = {
    id: 'cuda:0',
    backend: 'cuda',
    name: 'NVIDIA H200 | "fast" <gpu>',
    pciBusId: '0000:19:00.0',
    driver: { name: 'CUDA', version: '13.0 (580.159.04)' },
    integrated: false,
    attributes: { computeCapability: '9.0', canUseHostPointerForRegisteredMem: 1 },
    staticVerdict: 'Self_test_required',
    verdict: { kind: 'Usable', text: 'Usable' },
    cacheable: true,
    checks: [
      check('static.verdict', 'static', 'pass', { expected: 'Self_test_required', observed: 'Self_test_required', data: { opsOpened: 0 } }),
      check('probe.verdict', 'probe', 'warn', { expected: 'Usable', observed: 'Usable', message: 'the second window was slow', log: ['window 0 equal', 'window 1 equal'] }),
      check('probe.release', 'probe', 'crash', { message: 'the check killed its process: SIGSEGV', data: { signal: 'SIGSEGV' }, durationMs: 1500 }),
      check('timing.margin', 'timing', 'fail', { expected: 'registered >= 0.8 x staged', observed: `${ODD} registered 2.1 GB/s`, message: ODD }),
      check('timing.link', 'timing', 'skip', { message: 'no PCIe link in sysfs for "0000:19:00.0" <none>' }),
      check('hazard.double_registration_refused', 'hazards', 'timeout', { message: 'no result after 2 s: the check was killed', durationMs: 2003.7 }),
    ],
    timing: { registeredGBps: 55.12, stagedGBps: 5.47, ratio: 10.07, minRelativeSpeed: 0.8, runs: 7, bytes: 134217728, linkGBps: 63.0 },
    scratch: { dir: '/var/tmp/scratch', fsType: 'ext4', sizeBytes: 8388608 },
    errors: ['unreadable event: {"type":', `the device's process exited with status 1 before the end of the run ${ODD}`],
    processes: 3,
  };
  const cpu: DeviceResult = {
    id: 'cpu',
    backend: 'cpu',
    name: 'AMD EPYC',
    pciBusId: null,
    driver: { name: 'none (host memory)', version: 'Linux 6.8.0' },
    integrated: null,
    staticVerdict: 'Not_needed (a CPU device reads host memory directly)',
    verdict: { kind: 'Not_needed', reason: 'a CPU device reads host memory directly', text: 'Not_needed (a CPU device reads host memory directly)' },
    cacheable: false,
    checks: [
      check('static.verdict', 'static', 'pass', { expected: 'Not_needed', observed: 'Not_needed' }),
      check('probe.verdict', 'probe', 'skip', { message: 'Not_needed: nothing to probe' }),
      check('timing.margin', 'timing', 'skip', { message: 'no probe' }),
    ],
    scratch: { dir: '/var/tmp/scratch', fsType: 'ext4' },
    processes: 1,
  };
  return {
    schemaVersion: 1,
    tool: { name: 'mapped-reg-conformance', version: '0.1.0' },
    host: { hostname: 'gpu-node-1', kernel: '6.8.0-45-generic', platform: 'linux-x64' },
    startedAt: '2026-01-02T03:04:05.678Z',
    finishedAt: '2026-01-02T03:04:15.001Z',
    options: { scratchDir: '/var/tmp/scratch', sizeMiB: 8, devices: [], backends: ['cuda', 'cpu'], runs: 7, minRelativeSpeed: 0.8, timeoutS: 2, list: false },
    backends: [
      { backend: 'cuda', library: 'libcuda.so.1', devices: 1 },
      { backend: 'cpu', library: null, devices: 1 },
    ],
    gpuDriverFound: true,
    devices: [cuda, cpu],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// What every report of a result must satisfy, hand-made or real.

/**
 * The element a check's testcase must carry: by its status alone without a gate; with one, red only when the gate
 * is red about it (a failing status it accepts, as a known failure or a flake, is skipped).
 */
function expectedElement(c: CheckResult, note: GateNote | undefined, gated: boolean): 'failure' | 'error' | 'skipped' | undefined {
  const failingNote = note !== undefined && ['regression', 'unexpected-pass', 'error'].includes(note.kind);
  if (c.status === 'error') return 'error';
  if (note?.kind === 'unexpected-pass') return 'failure';
  if (['fail', 'timeout', 'crash'].includes(c.status) && gated && !failingNote) return 'skipped';
  if (c.status === 'fail') return 'failure';
  if (c.status === 'crash' || c.status === 'timeout') return 'error';
  if (note?.kind === 'regression') return 'failure';
  if (c.status === 'skip') return 'skipped';
  return undefined;
}

function expectJunitMatches(result: RunResult, xml: string): XmlElement {
  const doc = parseXml(xml);
  expect(doc.name).toBe('testsuites');
  expect(doc.attrs.skipped, 'junit-10.xsd has no skipped on <testsuites>').toBeUndefined();
  const gate = result.gate;
  const suites = allElements(doc, 'testsuite');
  const failedToStart = (result.backends ?? []).filter((b) => b.initError).length;
  expect(suites).toHaveLength(result.devices.length + failedToStart + (gate ? gate.missing.length + 1 : 0));
  // a time on <testsuites> and on every suite (a reporter that adds them up prints NaN otherwise)
  expect(doc.attrs.time).toMatch(/^\d+(\.\d+)?$/);
  for (const s of suites) expect(s.attrs.time, s.attrs.name).toMatch(/^\d+(\.\d+)?$/);
  if (gate) {
    // the decision: the suite's name, a property and its system-out, never another failure beside those it stands for
    const g = suites.at(-1)!;
    expect(g.attrs.name).toBe(attrText(`gate [${gate.pass ? 'PASS' : 'FAIL'}] on ${result.host.hostname}`));
    expect(props(g).gate).toBe(gate.pass ? 'PASS' : 'FAIL');
    expect(childElement(g, 'system-out')!.text.split('\n')[0]).toBe(xmlSafe(gate.headline));
    expect(g.children.find((c) => c.name === 'testcase' && c.attrs.name === 'gate > decision')).toBeUndefined();
  }
  result.devices.forEach((d, n) => expectDeviceSuiteMatches(result, d, suites[n]!));
  // well-formed and valid, by a real XML parser, against what Jenkins' xunit plugin reads (GitLab and the rest read less)
  const xsd = validateJunit(xml);
  expect(xsd.ok, xsd.output).toBe(true);
  return doc;
}

/** A device's <testsuite>: its name, its properties, a testcase a check (and the gate's), the counts they add up to. */
function expectDeviceSuiteMatches(result: RunResult, d: DeviceResult, suite: XmlElement): void {
  const gate = result.gate;
  const label = d.verdict.refusal ? `${d.verdict.kind} (${d.verdict.refusal})` : d.verdict.kind;
  expect(suite.attrs.name).toBe(attrText(`${d.id} ${d.name} [${label}] on ${result.host.hostname}`));
  expect(suite.attrs.hostname).toBe(attrText(result.host.hostname));
  expectSuitePropertiesMatch(d, props(suite));

  const all_ = suite.children.filter((c) => c.name === 'testcase');
  const gateCases = all_.filter((c) => c.attrs.classname === `${d.id}.gate`);
  const cases = all_.filter((c) => c.attrs.classname !== `${d.id}.gate`);
  // the gate's figures only where a gate judged them: against a baseline, or where it said something of them
  if (gate?.baseline) expect(gateCases.map((c) => c.attrs.name)).toContain(`${d.id} > gate.verdict`);
  else expect(gateCases.map((c) => c.attrs.name)).toEqual(gate ? gate.notes.filter((x) => x.device === d.id && ['verdict', 'bandwidth', 'registration'].includes(x.check)).map((x) => `${d.id} > gate.${x.check}`) : []);
  for (const g of gateCases) {
    const note = gate!.notes.find((x) => x.device === d.id && `${d.id} > gate.${x.check}` === g.attrs.name);
    expect(!!childElement(g, 'failure'), `${d.id} ${g.attrs.name}`).toBe(note !== undefined && ['regression', 'unexpected-pass', 'error'].includes(note.kind));
  }
  const extra = d.errors?.length ? 1 : 0;
  expect(cases).toHaveLength(d.checks.length + extra);
  const elements = d.checks.map((c) => expectedElement(c, gate?.notes.find((x) => x.device === d.id && x.check === c.id), gate !== undefined));
  const of = (e: string): number => elements.filter((x) => x === e).length;
  const gateFailures = gateCases.filter((g) => childElement(g, 'failure')).length;
  expect(suite.attrs).toMatchObject({
    tests: String(d.checks.length + extra + gateCases.length),
    failures: String(of('failure') + gateFailures),
    errors: String(of('error') + extra),
    skipped: String(of('skipped')),
  });
  d.checks.forEach((c, k) => expectCheckCaseMatches(d, c, cases[k]!, elements[k]));
  if (extra) {
    const run = cases.at(-1)!;
    expect(run.attrs).toMatchObject({ name: `${d.id} > run.errors`, classname: `${d.id}.run` });
    expect(childElement(run, 'error')!.attrs.type).toBe('run');
    expect(childElement(run, 'error')!.text.split('\n')).toHaveLength(d.errors!.join('\n').split('\n').length);
  }
}

function expectSuitePropertiesMatch(d: DeviceResult, p: Record<string, string>): void {
  expect(p).toMatchObject({
    verdict: attrText(d.verdict.text),
    'verdict.kind': d.verdict.kind,
    backend: d.backend,
    'driver.name': attrText(d.driver.name),
    'driver.version': attrText(d.driver.version),
    pciBusId: d.pciBusId ?? '',
    'scratch.fsType': d.scratch.fsType,
    'scratch.dir': d.scratch.dir,
    cacheable: String(d.cacheable),
    staticVerdict: attrText(d.staticVerdict),
  });
  if (d.timing) {
    expect(Number(p.registeredGBps)).toBe(d.timing.registeredGBps);
    expect(Number(p.stagedGBps)).toBe(d.timing.stagedGBps);
    expect(Number(p.ratio)).toBe(d.timing.ratio);
    expect(p.linkGBps === undefined ? undefined : Number(p.linkGBps)).toBe(d.timing.linkGBps);
  } else expect(p.registeredGBps).toBeUndefined();
}

/** A check's <testcase>: its names and time, the one element its status calls for (`want`), and what it says. */
function expectCheckCaseMatches(d: DeviceResult, c: CheckResult, tc: XmlElement, want: ReturnType<typeof expectedElement>): void {
  expect(tc.attrs.classname).toBe(`${d.id}.${c.suite}`);
  expect(tc.attrs.name).toBe(`${d.id} > ${c.id}`);
  expect(Number(tc.attrs.time)).toBeCloseTo(c.durationMs / 1000, 2);
  const failure = childElement(tc, 'failure');
  const error = childElement(tc, 'error');
  const skipped = childElement(tc, 'skipped');
  const out = childElement(tc, 'system-out')?.text ?? '';
  expect(!!failure, `${c.id} <failure>`).toBe(want === 'failure');
  expect(!!error, `${c.id} <error>`).toBe(want === 'error');
  expect(!!skipped, `${c.id} <skipped>`).toBe(want === 'skipped');
  if (failure && c.message && c.status === 'fail') expect(failure.attrs.message).toBe(attrText(c.message));
  if (error) {
    expect(error.attrs.type).toBe(c.status === 'error' ? 'host' : c.status);
    if (c.message && c.status !== 'error') expect(error.attrs.message).toBe(attrText(c.message));
  }
  if (skipped && c.status === 'skip') expect(skipped.attrs.message).toBe(attrText(c.message ?? 'does not apply'));
  if (skipped && c.status !== 'skip') expect(skipped.attrs.message).toMatch(/^(known failure|flaky): /);
  if (c.status === 'warn') expect(out.split('\n')[0]).toMatch(/^warn: /);
  if (c.expected !== undefined) expect(out).toContain(`expected: ${xmlSafe(c.expected)}`);
  if (c.observed !== undefined) expect(out).toContain(`observed: ${xmlSafe(c.observed)}`);
}

function expectMarkdownMatches(result: RunResult, md: string): string[] {
  const rows = md.split('\n').filter((l) => l.startsWith('| '));
  expect(rows).toHaveLength(2 + result.devices.length); // header, delimiter, a row a device
  // Unescaped pipes split cells: every row has exactly the header's eleven cells.
  for (const r of rows) expect(r.replace(/\\\|/g, '').match(/\|/g)).toHaveLength(12);
  result.devices.forEach((d, n) => expect(rows[2 + n]).toMatch(new RegExp(`^\\| \`${d.id}\` \\| `)));
  const failing = result.devices.flatMap((d) => d.checks.filter((c) => ['fail', 'timeout', 'crash'].includes(c.status)).map((c) => `${d.id} ${c.id}`));
  const errors = result.devices.reduce((n, d) => n + (d.errors?.length ?? 0), 0);
  // then the checks the host failed and why each new process was started (reporters/host-faults.ts)
  const hostFailed = result.devices.reduce((n, d) => n + d.checks.filter((c) => c.status === 'error').length, 0);
  const restarts = result.devices.reduce((n, d) => n + (d.restarts?.length ?? 0), 0);
  // and the gate's reasons and the failures it excused
  const gateItems = (result.gate?.reasons.length ?? 0) + (result.gate?.notes.filter((x) => x.kind === 'expected' || x.kind === 'flaky').length ?? 0);
  const items = md.split('\n').filter((l) => l.startsWith('- '));
  expect(items).toHaveLength(failing.length + errors + hostFailed + restarts + gateItems);
  if (result.gate) expect(md).toContain(`**${result.gate.pass ? 'PASS' : 'FAIL'}**: `);
  return rows;
}

/**
 * Results the schema must refuse: what is wrong, and how to make the hand-made result so (`any`: each break reaches
 * a different depth of the result's JSON, past what its type allows).
 */
const SCHEMA_BREAKS: [string, (r: Record<string, any>) => void][] = [
  ['schemaVersion 3', (r) => (r.schemaVersion = 3)],
  ['a backend not known', (r) => (r.devices[0].backend = 'metal')],
  ['a verdict kind not known', (r) => (r.devices[0].verdict.kind = 'Fine')],
  ['Refused without a refusal', (r) => (r.devices[0].verdict = { kind: 'Refused', text: 'Refused' })],
  ['a refusal on a Usable verdict', (r) => (r.devices[0].verdict.refusal = 'Wrong_bytes')],
  ['a refusal not known', (r) => (r.devices[0].verdict = { kind: 'Refused', refusal: 'Too_hot', text: 'x' })],
  ['pciBusId a number', (r) => (r.devices[0].pciBusId = 25)],
  ['integrated a string', (r) => (r.devices[0].integrated = 'no')],
  ['durationMs a string', (r) => (r.devices[0].checks[0].durationMs = '12')],
  ['a check without an id', (r) => delete r.devices[0].checks[0].id],
  ['timing without its ratio', (r) => delete r.devices[0].timing.ratio],
  ['scratch missing', (r) => delete r.devices[1].scratch],
  ['errors not strings', (r) => (r.devices[0].errors = [{ message: 'x' }])],
  ['no host', (r) => delete r.host],
  ['startedAt not a timestamp', (r) => (r.startedAt = 'yesterday')],
];

/** The hand-made result's JUnit elements, counted without the parser too. */
function expectHandJunitCounted(xml: string): void {
  expect(xml.match(/<testsuite[\s>]/g)).toHaveLength(2);
  expect(xml.match(/<testcase[\s>]/g)).toHaveLength(6 + 1 + 3);
  expect(xml.match(/<failure[\s>/]/g)).toHaveLength(1);
  expect(xml.match(/<error[\s>/]/g)).toHaveLength(3);
  expect(xml.match(/<skipped[\s>/]/g)).toHaveLength(3);
  expect(xml.match(/<error [^>]*type="crash"/g)).toHaveLength(1);
  expect(xml.match(/<error [^>]*type="timeout"/g)).toHaveLength(1);
  expect(xml.match(/<error [^>]*type="run"/g)).toHaveLength(1);
}

/** The hand-made result's odd characters and check details kept as text in its JUnit document. */
function expectHandJunitText(doc: XmlElement): void {
  // the odd message survives as text: quotes, <, &, newlines, tabs, CRLF, non-ASCII; controls and non-characters replaced, visibly
  const failure = allElements(doc, 'failure')[0]!;
  expect(failure.attrs.message).toBe(attrText(ODD));
  expect(failure.attrs.message).toContain('q"uo\'te <tag> & &amp; ]]> ]]> \\x00\\x07\\x1b[31mred\\x1b[0m \uFFFD lone \uFFFD \uFFFD\uFFFD &\uFFFD"\uFFFD Ã© café 日本 😀 | pipe line CRLF tab');
  // the element's text keeps the lines (a parser reads a written CR LF as LF, as XML 1.0 says)
  expect(failure.text).toMatch(/pipe\nline\r?\nCRLF\ttab/);
  const out = childElement(allElements(doc, 'testcase').find((t) => t.attrs.name === 'cuda:0 > timing.margin')!, 'system-out')!.text;
  expect(out).toContain('<tag> & &amp; ]]> ]]> '); // "]]>" written as character data, exact
  expect(failure.text).toContain('expected: registered >= 0.8 x staged');

  const warn = allElements(doc, 'testcase').find((t) => t.attrs.name === 'cuda:0 > probe.verdict' && t.attrs.classname === 'cuda:0.probe')!;
  expect(childElement(warn, 'failure') ?? childElement(warn, 'error') ?? childElement(warn, 'skipped')).toBeUndefined();
  expect(childElement(warn, 'system-out')!.text).toBe(
    'warn: the second window was slow\nexpected: Usable\nobserved: Usable\nlog: window 0 equal\nlog: window 1 equal',
  );
  const passing = allElements(doc, 'testcase').find((t) => t.attrs.name === 'cuda:0 > static.verdict' && t.attrs.classname === 'cuda:0.static')!;
  expect(childElement(passing, 'system-out')!.text).toBe('expected: Self_test_required\nobserved: Self_test_required\ndata: {"opsOpened":0}');
  expect(props(allElements(doc, 'testsuite')[0]!)).toMatchObject({ linkGBps: '63', registeredGBps: '55.12', 'integrated': 'false', processes: '3' });
}

describe('hand-made results', () => {
  const result = handResult();

  it('validate against the schema', () => {
    expect(validate(result), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(JSON.parse(JSON.stringify(result)))).toBe(true);
  });

  it('a broken result does not validate: a wrong status, a missing verdict, a wrong schemaVersion, a Refused without its refusal', () => {
    const wrongStatus = structuredClone(result) as unknown as { devices: { checks: { status: string }[] }[] };
    wrongStatus.devices[0]!.checks[0]!.status = 'passed';
    expect(validate(wrongStatus)).toBe(false);
    expect(validate.errors!.some((e) => e.instancePath === '/devices/0/checks/0/status')).toBe(true);

    const noVerdict = structuredClone(result) as unknown as { devices: Record<string, unknown>[] };
    delete noVerdict.devices[1]!.verdict;
    expect(validate(noVerdict)).toBe(false);
    expect(validate.errors!.some((e) => e.instancePath === '/devices/1' && e.params && (e.params as { missingProperty?: string }).missingProperty === 'verdict')).toBe(true);

    for (const [what, breakIt] of SCHEMA_BREAKS) {
      const broken = structuredClone(result) as unknown as Record<string, any>;
      breakIt(broken);
      expect(validate(broken), what).toBe(false);
    }
  });

  it('new properties at the top, device and check levels still validate (forward compatible)', () => {
    const r = structuredClone(result) as unknown as Record<string, any>;
    r.someFutureField = { x: 1 };
    r.devices[0].numaNode = 1;
    r.devices[0].checks[0].retries = 0;
    expect(validate(r), JSON.stringify(validate.errors)).toBe(true);
  });

  it('JUnit: well-formed, a testsuite per device, failure/error/skipped per status, run.errors, odd characters kept as text', () => {
    const xml = junitXml(result);
    const doc = expectJunitMatches(result, xml);
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    expectHandJunitCounted(xml);
    expectHandJunitText(doc);
  });

  it('JUnit: independent builds (no state carried between calls)', () => {
    const a = junitXml(result);
    const b = junitXml(result);
    expect(b).toBe(a);
    const one = junitXml({ ...result, devices: [result.devices[1]!] });
    expect(parseXml(one).children.filter((c) => c.name === 'testsuite')).toHaveLength(1);
    const none = parseXml(junitXml({ ...result, devices: [] }));
    expect(none.attrs).toMatchObject({ tests: '0', failures: '0', errors: '0' });
  });

  it('Markdown: a row a device, counts, pipes and newlines escaped, the failing checks listed with their messages', () => {
    const md = markdownSummary(result);
    const rows = expectMarkdownMatches(result, md);
    expect(rows[0]).toBe('| device | name | driver | verdict | registered GB/s | staged GB/s | ratio | passed | warned | failed | skipped |');
    expect(rows[2]).toBe('| `cuda:0` | NVIDIA H200 \\| "fast" \\<gpu\\> | CUDA 13.0 (580.159.04) | Usable | 55.12 | 5.47 | 10.07 | 1 | 1 | **3** | 1 |');
    expect(rows[3]).toBe('| `cpu` | AMD EPYC | none (host memory) Linux 6.8.0 | Not\\_needed (a CPU device reads host memory directly) | - | - | - | 1 | 0 | 0 | 2 |');
    const items = md.split('\n').filter((l) => l.startsWith('- '));
    expect(items[0]).toBe('- `cuda:0` **probe.release** (crash): the check killed its process: SIGSEGV');
    expect(items[1]).toContain('**timing.margin** (fail): q"uo\'te \\<tag\\> &amp; &amp;amp; \\]\\]\\> ');
    expect(items[1]).toContain('\\| pipe<br>line<br>CRLF tab — expected registered \\>= 0.8 x staged');
    expect(items[1]).not.toMatch(/[\u0000-\u0008\u000B-\u001F]/);
    expect(items[2]).toContain('**hazard.double\\_registration\\_refused** (timeout): no result after 2 s');
    expect(items.filter((l) => l.includes('**run error**'))).toHaveLength(2);
    expect(md).toContain('#### Failing checks (5)');
    expect(md.split('\n').every((l) => !l.includes('\r'))).toBe(true);
  });

  it('Markdown: no failing section when nothing failed; a note when there are no devices', () => {
    const ok = { ...handResult(), devices: [handResult().devices[1]!] };
    expect(markdownSummary(ok)).not.toContain('Failing');
    expect(markdownSummary({ ...ok, devices: [] })).toContain('No device');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Real runs of the built command.

let doubles: { cuda: string; hip: string };

beforeAll(() => {
  doubles = buildDoubles();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function runCommand(args: string[], env: Record<string, string> = {}): { code: number | null; stderr: string; result: RunResult } {
  const scratch = mkdtempSync(join(work, 'scratch-'));
  const json = join(work, `r-${Math.random().toString(36).slice(2)}.json`);
  const r = spawnSync(process.execPath, [main, '--scratch-dir', scratch, '--size', '8', '--json', json, ...args], { env: cleanEnv(env), encoding: 'utf8', cwd: work });
  return { code: r.status, stderr: r.stderr, result: JSON.parse(readFileSync(json, 'utf8')) as RunResult };
}

describe('real runs of the command', () => {
  it('no GPU (OpenCL, Vulkan, CPU devices): the JSON validates, the JUnit and Markdown match it', () => {
    const { code, stderr, result } = runCommand([]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(validate(result), JSON.stringify(validate.errors)).toBe(true);
    expect(result.devices.length).toBeGreaterThan(0);
    expect(result.devices.map((d) => d.id)).toContain('cpu');
    expectJunitMatches(result, junitXml(result));
    expectMarkdownMatches(result, markdownSummary(result));
  });

  it('the CUDA double, cuda:0 Usable: validates, its testsuite carries the bandwidths', () => {
    // paced (registered 2 GB/s, page-locked 1.5): Usable whatever the machine's load
    const { code, stderr, result } = runCommand(['--device', 'cuda:0'], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_RATES: 'registered=2,pinned=1.5,pageable=0.5' });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(validate(result), JSON.stringify(validate.errors)).toBe(true);
    expect(result.devices).toHaveLength(1);
    expect(result.devices[0]!.verdict.kind).toBe('Usable');
    const doc = expectJunitMatches(result, junitXml(result));
    const p = props(allElements(doc, 'testsuite')[0]!);
    expect(Number(p.registeredGBps)).toBeGreaterThan(0);
    expect(Number(p.stagedGBps)).toBeGreaterThan(0);
    expect(p['verdict.kind']).toBe('Usable');
    expectMarkdownMatches(result, markdownSummary(result));
  });

  it('the CUDA double with a real crash, a slow registered copy (warn, fail) and skips: validates; failure, error and skipped elements', () => {
    const { code, result } = runCommand(['--device', 'cuda:0'], {
      MAPPED_REG_CUDA_LIBRARY: doubles.cuda,
      MAPPED_REG_DOUBLE_FAULTS: 'slow_registered=8',
      MAPPED_REG_FORCE_CRASH: 'cuda:0/probe.release',
    });
    expect(code).toBe(1);
    expect(validate(result), JSON.stringify(validate.errors)).toBe(true);
    const statuses = new Set(result.devices[0]!.checks.map((c) => c.status));
    for (const s of ['warn', 'fail', 'crash', 'skip'] as const) expect(statuses, s).toContain(s);
    const xml = junitXml(result);
    expectJunitMatches(result, xml);
    expect(xml).toMatch(/<error [^>]*type="crash"/);
    expect(xml).toMatch(/<failure /);
    expect(xml).toMatch(/<skipped message="/);
    const md = markdownSummary(result);
    expectMarkdownMatches(result, md);
    expect(md).toMatch(/probe\.release\*\* \(crash\): the check killed its process: SIGSEGV/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The well-formedness check itself (test/support/xml.ts): it must reject what a broken serializer would produce.

describe('the XML well-formedness check', () => {
  it('accepts well-formed documents', () => {
    const e = parseXml('<?xml version="1.0" encoding="UTF-8"?>\n<!-- c --><a x="1 &amp; &#xA;&#10;" y=\'"\'><b/><![CDATA[<&]]>t&lt;<?pi x?></a>\n');
    expect(e.attrs).toEqual({ x: '1 & \n\n', y: '"' });
    expect(e.text).toBe('<&t<');
  });

  it.each([
    ['an unescaped &', '<a>&</a>'],
    ['an unknown entity', '<a>&nbsp;</a>'],
    ['< in an attribute', '<a x="<"/>'],
    ['an unquoted attribute', '<a x=1/>'],
    ['a duplicate attribute', '<a x="1" x="2"/>'],
    ['no space between attributes', '<a x="1"y="2"/>'],
    ['mismatched tags', '<a><b></a></b>'],
    ['an unclosed element', '<a><b/>'],
    ['two roots', '<a/><b/>'],
    ['text after the root', '<a/>x'],
    [']]> in character data', '<a>]]></a>'],
    ['a control character', '<a>\u0007</a>'],
    ['a reference to a control character', '<a>&#x1b;</a>'],
    ['a lone surrogate', '<a>\ud800</a>'],
    ['an unterminated CDATA section', '<a><![CDATA[x</a>'],
    ['-- in a comment', '<a><!-- a -- b --></a>'],
    ['a late XML declaration', '<a><?xml version="1.0"?></a>'],
    ['a bad name', '<1a/>'],
  ])('rejects %s', (_what, doc) => {
    expect(() => parseXml(doc)).toThrow(/not well-formed/);
  });
});
