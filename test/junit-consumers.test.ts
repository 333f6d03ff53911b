// The JUnit report as CI systems read it: real runs of the built command (the CUDA double, the machine's own
// Vulkan and CPU devices) read back through real consumers installed as devDependencies, beside junit-10.xsd:
// junit2json (xml2js, the parser of many JUnit tools), fast-xml-parser (that of many GitHub reporters), and
// junit-report-merger (how several hosts' reports become one). On a pass, wrong bytes, a regression against a
// baseline, a device missing, a driver that fails to start, a check the host failed (a full scratch disk), a host
// with two GPUs and two hosts merged, every consumer must give the command's own totals line, every red testcase
// must name its device and its check, and the text must come back exact.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { parse as junit2json } from 'junit2json';
import { mergeToString } from 'junit-report-merger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { junitXml } from '../reporters/junit.js';
import { mergeResults } from '../results/merge.js';
import type { RunResult } from '../results/types.js';
import { MAIN, NO_HAZARDS } from './support/command.js';
import { validateJunit } from './support/junit-xsd.js';
import { type Ran as Ran_, runScript, workspace } from './support/workspace.js';

const { work, doubles } = workspace('mapped-reg-junit-consumers-');
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts) spawnSync('umount', [m]);
});

/** The double's copies paced, so that a bandwidth is a fact of the test (as test/gate.test.ts paces them). */
const RATES = 'registered=0.2,pinned=0.15,pageable=0.05';
const cuda = (extra: Record<string, string> = {}): Record<string, string> => ({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_RATES: RATES, ...extra });

interface Totals {
  tests: number;
  passed: number;
  failures: number;
  errors: number;
  skipped: number;
}

interface Ran extends Ran_ {
  json: RunResult;
  junit: string;
  /** The command's own totals line (`tests: N: ... passed, ... failed, ... errors, ... skipped`). */
  totals: Totals;
}

/** The command with --json and --junit, in a scratch folder of its own (or `scratchDir`, a tmpfs of the test's). */
function run(args: string[], env: Record<string, string> = {}, scratchDir?: string): Ran {
  const base = mkdtempSync(join(work, 'run-'));
  const out = (ext: string): string => `${base}.${ext}`;
  const scratch = scratchDir === undefined ? ['--scratch-dir', base, '--size', '8'] : ['--scratch-dir', scratchDir, '--allow-tmpfs-scratch'];
  const r = runScript(MAIN, [...scratch, '--json', out('json'), '--junit', out('xml'), ...args], work, env);
  const m = /^tests: (\d+): (\d+) passed, (\d+) failed, (\d+) errors?, (\d+) skipped \(as the JUnit report counts them\)$/m.exec(r.stdout);
  expect(m, r.stdout + r.stderr).not.toBeNull();
  const [tests, passed, failures, errors, skipped] = m!.slice(1).map(Number) as [number, number, number, number, number];
  return { ...r, json: JSON.parse(readFileSync(out('json'), 'utf8')) as RunResult, junit: readFileSync(out('xml'), 'utf8'), totals: { tests, passed, failures, errors, skipped } };
}

// ---------------------------------------------------------------------------------------------------------------
// The consumers.

const fxp = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', textNodeName: '#text', parseAttributeValue: false, parseTagValue: false, trimValues: false, isArray: (name) => ['testsuite', 'testcase', 'property', 'failure', 'error', 'skipped', 'system-out'].includes(name) });

interface FxpCase {
  name: string;
  classname: string;
  time?: string;
  failure?: { message: string; type?: string; '#text'?: string }[];
  error?: { message: string; type?: string; '#text'?: string }[];
  skipped?: { message?: string }[];
  'system-out'?: (string | { '#text': string })[];
}
interface FxpSuite {
  name: string;
  hostname: string;
  time?: string;
  tests: string;
  failures: string;
  errors: string;
  skipped: string;
  testcase?: FxpCase[];
  properties?: { property: { name: string; value: string }[] };
  'system-out'?: (string | { '#text': string })[];
}
interface FxpDoc {
  testsuites: { time?: string; tests: string; failures: string; errors: string; testsuite?: FxpSuite[] };
}

const fxpRead = (xml: string): FxpDoc => fxp.parse(xml) as FxpDoc;
const fxpCases = (doc: FxpDoc): FxpCase[] => (doc.testsuites.testsuite ?? []).flatMap((s) => s.testcase ?? []);

/** The counts fast-xml-parser's tree gives: by the elements, and by the attributes of <testsuites> and each suite. */
function fxpTotals(doc: FxpDoc): Totals {
  const cases = fxpCases(doc);
  const failures = cases.filter((c) => c.failure).length;
  const errors = cases.filter((c) => c.error).length;
  const skipped = cases.filter((c) => c.skipped).length;
  const top = doc.testsuites;
  expect({ tests: Number(top.tests), failures: Number(top.failures), errors: Number(top.errors) }).toEqual({ tests: cases.length, failures, errors });
  expect((top.testsuite ?? []).reduce((n, s) => n + Number(s.skipped), 0)).toBe(skipped);
  return { tests: cases.length, passed: cases.length - failures - errors - skipped, failures, errors, skipped };
}

/** The counts junit2json gives (xml2js underneath): by its testcases' failure, error and skipped lists. */
async function junit2jsonTotals(xml: string): Promise<Totals> {
  const doc = (await junit2json(xml)) as { testsuite?: { tests?: number; failures?: number; errors?: number; skipped?: number; testcase?: { failure?: unknown[]; error?: unknown[]; skipped?: unknown[] }[] }[] };
  const cases = (doc.testsuite ?? []).flatMap((s) => s.testcase ?? []);
  const failures = cases.filter((c) => c.failure?.length).length;
  const errors = cases.filter((c) => c.error?.length).length;
  const skipped = cases.filter((c) => c.skipped?.length).length;
  for (const s of doc.testsuite ?? []) {
    const own = s.testcase ?? [];
    expect([s.tests, s.failures, s.errors, s.skipped]).toEqual([own.length, own.filter((c) => c.failure?.length).length, own.filter((c) => c.error?.length).length, own.filter((c) => c.skipped?.length).length]);
  }
  return { tests: cases.length, passed: cases.length - failures - errors - skipped, failures, errors, skipped };
}

/** What every report must be, in every consumer: valid, the command's totals, a time on every suite, titles that name the device and check. */
async function expectReadAlike(r: Ran): Promise<FxpDoc> {
  const v = validateJunit(r.junit);
  expect(v.ok, v.output).toBe(true);
  const doc = fxpRead(r.junit);
  expect(fxpTotals(doc), 'fast-xml-parser against the totals line').toEqual(r.totals);
  expect(await junit2jsonTotals(r.junit), 'junit2json against the totals line').toEqual(r.totals);
  // a time on <testsuites> and on every suite, a number (never NaN in a reporter that adds them up)
  expect(Number.isFinite(Number(doc.testsuites.time))).toBe(true);
  for (const s of doc.testsuites.testsuite ?? []) {
    expect(s.time, s.name).toMatch(/^\d+(\.\d+)?$/);
    expect(s.hostname).toBe(r.json.host.hostname);
    expect(s.name, 'the host in every suite name').toContain(` on ${r.json.host.hostname}`);
  }
  // every testcase's title names its device (or the gate, or the backend) before its check
  const ids = new Set([...r.json.devices.map((d) => d.id), ...(r.json.gate?.missing.map((m) => m.id) ?? []), ...(r.json.backends ?? []).map((b) => b.backend), 'gate']);
  for (const c of fxpCases(doc)) {
    const [device, check] = c.name.split(' > ');
    expect(ids.has(device!), c.name).toBe(true);
    expect(check, c.name).toMatch(/^[a-z][\w.-]*$/);
  }
  // a check's testcase is `<device> > <check id>`, in the device's classname
  for (const d of r.json.devices) for (const ch of d.checks) expect(fxpCases(doc).filter((c) => c.name === `${d.id} > ${ch.id}` && c.classname === `${d.id}.${ch.suite}`)).toHaveLength(1);
  // the JUnit the command wrote is the JUnit of its results (what the two-host merge below renders)
  expect(junitXml(r.json)).toBe(r.junit);
  return doc;
}

const redCases = (doc: FxpDoc): FxpCase[] => fxpCases(doc).filter((c) => c.failure || c.error);
const suite = (doc: FxpDoc, prefix: string): FxpSuite | undefined => doc.testsuites.testsuite?.find((s) => s.name.startsWith(prefix));
const text = (x: string | { '#text': string } | undefined): string => (typeof x === 'string' ? x : (x?.['#text'] ?? ''));

// ---------------------------------------------------------------------------------------------------------------

describe('JUnit through real consumers, on real runs of the command', () => {
  let pass: Ran;
  let baseline: string;
  beforeAll(() => {
    pass = run([...NO_HAZARDS, '--backend', 'cuda', '--backend', 'vulkan', '--backend', 'cpu'], cuda());
    baseline = join(work, 'baseline.json');
    writeFileSync(baseline, JSON.stringify(pass.json));
  });

  it('a pass: no red testcase; the gate suite says PASS with no testcase of its own; no gate figure judged without a baseline; Vulkan\'s Kernel_hazard refusal is not a failure', async () => {
    expect(pass.code, pass.stdout + pass.stderr).toBe(0);
    const doc = await expectReadAlike(pass);
    expect(redCases(doc)).toEqual([]);
    expect(pass.totals.failures + pass.totals.errors).toBe(0);
    const gate = suite(doc, 'gate [PASS]')!;
    expect(gate.testcase ?? []).toEqual([]);
    expect(text(gate['system-out']?.[0])).toMatch(/^PASS: /);
    expect(gate.properties!.property).toContainEqual({ name: 'gate', value: 'PASS' });
    expect(fxpCases(doc).filter((c) => c.name.includes('gate.'))).toEqual([]);
    const vulkan = pass.json.devices.find((d) => d.backend === 'vulkan');
    if (vulkan) {
      expect(vulkan.verdict.refusal).toBe('Kernel_hazard');
      const s = suite(doc, `${vulkan.id} `)!;
      expect(s.name).toContain('[Refused (Kernel_hazard)]');
      expect([s.failures, s.errors]).toEqual(['0', '0']);
    }
    // passed: the checks that passed or warned, nothing else
    const ok = pass.json.devices.flatMap((d) => d.checks).filter((c) => c.status === 'pass' || c.status === 'warn').length;
    expect(pass.totals.passed).toBe(ok);
  });

  it('wrong bytes, no baseline: each failing check one <failure> titled with device and check; no green gate.verdict for a Refused device; the decision repeats nothing', async () => {
    const r = run([...NO_HAZARDS, '--backend', 'cuda'], cuda({ MAPPED_REG_DOUBLE_FAULTS: 'wrong_bytes' }));
    expect(r.code).toBe(1);
    expect(r.json.devices[0]!.verdict).toMatchObject({ kind: 'Refused', refusal: 'Wrong_bytes' });
    const doc = await expectReadAlike(r);
    const failing = r.json.devices[0]!.checks.filter((c) => c.status === 'fail').map((c) => `cuda:0 > ${c.id}`);
    expect(failing.length).toBeGreaterThan(0);
    expect(redCases(doc).map((c) => c.name).sort()).toEqual(failing.sort());
    expect(fxpCases(doc).find((c) => c.name === 'cuda:0 > gate.verdict')).toBeUndefined();
    expect(suite(doc, 'gate [FAIL]')!.testcase ?? []).toEqual([]);
  });

  it('a regression against the baseline: one failure, not two', async () => {
    const r = run([...NO_HAZARDS, '--backend', 'cuda', '--backend', 'vulkan', '--backend', 'cpu', '--baseline', baseline], cuda({ MAPPED_REG_DOUBLE_FAULTS: 'wrong_bytes' }));
    expect(r.code).toBe(1);
    const doc = await expectReadAlike(r);
    const red = redCases(doc).map((c) => c.name);
    // each of the gate's reasons (a check now worse than in the baseline, the verdict that left Usable) once, and nothing else
    const reasons = r.json.gate!.reasons.map((x) => `${x.device} > ${x.check === undefined || ['bandwidth', 'registration'].includes(x.check) ? `gate.${x.check ?? 'verdict'}` : x.check}`);
    expect(reasons).toContain('cuda:0 > gate.verdict');
    expect(reasons).toContain('cuda:0 > probe.verdict');
    expect(red.sort()).toEqual(reasons.sort());
    expect(r.totals.failures).toBe(red.length);
    // with a baseline the gate's figures are judged: a held verdict is a pass
    expect(fxpCases(doc).filter((c) => c.name.endsWith('> gate.verdict') && !c.failure).length).toBe(r.json.devices.length - 1);
  });

  it('a device missing (no CUDA library): one failure, `cuda:0 > gate.presence`, in a [MISSING] suite with the host', async () => {
    const r = run([...NO_HAZARDS, '--backend', 'cuda', '--backend', 'cpu', '--baseline', baseline], {});
    expect(r.code).toBe(1);
    const doc = await expectReadAlike(r);
    expect(redCases(doc).map((c) => c.name)).toEqual(['cuda:0 > gate.presence']);
    expect(suite(doc, 'cuda:0 Double CUDA Device [MISSING] on ')).toBeDefined();
  });

  it('a driver that fails to start: one failure naming its code, its device not counted again as missing', async () => {
    const r = run([...NO_HAZARDS, '--backend', 'cuda', '--backend', 'cpu', '--baseline', baseline], cuda({ MAPPED_REG_DOUBLE_FAULTS: 'init_fails' }));
    expect(r.code).toBe(1);
    const doc = await expectReadAlike(r);
    const red = redCases(doc);
    expect(red.map((c) => c.name)).toEqual(['cuda > driver.start']);
    expect(red[0]!.failure![0]!.message).toContain('999 CUDA_ERROR_UNKNOWN');
    expect(red[0]!.failure![0]!.type).toBe('driver-init');
    expect(r.totals).toMatchObject({ failures: 1, errors: 0 });
    // the missing device is named (its suite, no testcase), not failed twice
    const missing = suite(doc, 'cuda:0 Double CUDA Device [MISSING]')!;
    expect(missing.tests).toBe('0');
    expect(text(missing['system-out']?.[0])).toContain('not counted again: the failure is cuda > driver.start');
  });

  it('a host with two GPUs: each device\'s failures titled with its own id', async () => {
    const r = run([...NO_HAZARDS, '--backend', 'cuda'], cuda({ MAPPED_REG_DOUBLE_DEVICES: '2', MAPPED_REG_DOUBLE_FAULTS: 'wrong_bytes' }));
    const doc = await expectReadAlike(r);
    const red = redCases(doc).map((c) => c.name);
    const zero = red.filter((n) => n.startsWith('cuda:0 > ')).map((n) => n.slice(9));
    const one = red.filter((n) => n.startsWith('cuda:1 > ')).map((n) => n.slice(9));
    expect(zero.length).toBeGreaterThan(0);
    expect(one.sort()).toEqual(zero.sort());
    expect(new Set(red).size).toBe(red.length); // no two titles alike
  });

  it('two hosts merged (junit-report-merger, and the project\'s merge): suites stay apart, the counts add up', async () => {
    const other: RunResult = { ...structuredClone(pass.json), host: { ...pass.json.host, hostname: 'gpu-node-2' } };
    const xml2 = junitXml(other);
    const merged = await mergeToString([pass.junit, xml2]);
    const doc = fxpRead(merged);
    const one = fxpRead(pass.junit).testsuites.testsuite!.length;
    expect(doc.testsuites.testsuite).toHaveLength(2 * one);
    expect(fxpCases(doc)).toHaveLength(2 * pass.totals.tests);
    expect(doc.testsuites.testsuite!.filter((s) => s.name.startsWith('gate [PASS]'))).toHaveLength(2);
    // the project's own merge: each device keeps its host in its suite's name and hostname
    const ours = fxpRead(junitXml(mergeResults([pass.json, other])));
    const hosts = (ours.testsuites.testsuite ?? []).map((s) => s.hostname);
    expect(hosts.filter((h) => h === 'gpu-node-2')).toHaveLength(pass.json.devices.length);
    expect(new Set((ours.testsuites.testsuite ?? []).map((s) => s.name)).size).toBe(ours.testsuites.testsuite!.length);
  });
});

describe('a check the host failed, on a scratch folder whose name is `ü日本 ]]> & <"\'`', () => {
  it('a full scratch disk: one <error type="host"> (never a <failure>), the folder\'s name back exact in every consumer', async () => {
    const dir = join(work, 'ü日本 ]]> & <"\'');
    mkdirSync(dir);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=20m', 'tmpfs', dir]);
    mounts.push(dir);
    const r = run(['--backend', 'cuda', '--size', '16', '--check', 'probe.*', '--check', 'hazard.truncate_contained'], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda }, dir);
    expect(r.code).toBe(1);
    const doc = await expectReadAlike(r);
    const red = redCases(doc);
    expect(red.map((c) => c.name)).toEqual(['cuda:0 > hazard.truncate_contained']);
    expect(red[0]!.failure).toBeUndefined();
    expect(red[0]!.error![0]!.type).toBe('host');
    const said = `the host: no space left in ${dir} (ENOSPC) while making the check's file`;
    expect(red[0]!.error![0]!.message).toBe(said);
    expect(red[0]!.error![0]!['#text']).toContain(`message: ${said}`);
    const props = suite(doc, 'cuda:0 ')!.properties!.property;
    expect(props).toContainEqual({ name: 'scratch.dir', value: expect.stringContaining(dir) });
    const viaJunit2json = (await junit2json(r.junit)) as { testsuite: { testcase?: { name?: string; error?: { message?: string; inner?: string }[] }[] }[] };
    const e = viaJunit2json.testsuite.flatMap((s) => s.testcase ?? []).find((c) => c.name === 'cuda:0 > hazard.truncate_contained')!.error![0]!;
    expect(e.message).toBe(said);
    expect(e.inner).toContain(said);
    // the decision is the host's: an error where it stands alone, never a failure of the driver
    expect(r.totals).toMatchObject({ failures: 0, errors: 1 });
  });
});

describe('text exact, on a result made by hand', () => {
  it('`]]>`, ü日本 and control characters (written visibly) come back from every consumer as the result said them', async () => {
    const said = 'a ]]> b ü日本 😀 <tag> & &amp; &lt; "q" \u0007bell';
    const result: RunResult = {
      schemaVersion: 2,
      tool: { name: 'mapped-reg-conformance', version: '0.1.0' },
      host: { hostname: 'gpu-node-1', kernel: '6.8.0', platform: 'linux-x64' },
      startedAt: '2026-01-02T03:04:05.678Z',
      finishedAt: '2026-01-02T03:04:15.001Z',
      options: {},
      devices: [
        {
          id: 'cuda:0',
          backend: 'cuda',
          name: 'NVIDIA H200',
          pciBusId: '0000:19:00.0',
          driver: { name: 'CUDA', version: '13.0' },
          integrated: false,
          staticVerdict: 'Self_test_required',
          verdict: { kind: 'Refused', refusal: 'Wrong_bytes', text: 'Refused (Wrong_bytes)' },
          cacheable: true,
          checks: [{ id: 'probe.verdict', suite: 'probe', title: 'the probe', status: 'fail', durationMs: 5, message: said, log: [said] }],
          scratch: { dir: '/tmp', fsType: 'ext4' },
        },
      ],
    };
    const xml = junitXml(result);
    expect(validateJunit(xml).ok).toBe(true);
    const visible = said.replace('\u0007', '\\x07');
    const tc = fxpCases(fxpRead(xml))[0]!;
    expect(tc.failure![0]!.message).toBe(visible);
    expect(tc.failure![0]!['#text']).toBe(`message: ${visible}`);
    expect(text(tc['system-out']![0])).toBe(`message: ${visible}\nlog: ${visible}`);
    const j = (await junit2json(xml)) as { testsuite: { testcase: { failure: { message: string; inner: string }[]; 'system-out': string[] }[] }[] };
    expect(j.testsuite[0]!.testcase[0]!.failure[0]!.message).toBe(visible);
    expect(j.testsuite[0]!.testcase[0]!.failure[0]!.inner).toBe(`message: ${visible}`);
    expect(j.testsuite[0]!.testcase[0]!['system-out'][0]).toBe(`message: ${visible}\nlog: ${visible}`);
  });
});
