// Each rule of the gate held at its boundary, against expectations written here by hand (never worked out by the
// code under test): the bandwidth rule just inside, at and just past its limit (at figures whose division rounds
// above the limit), `history compare`'s SQL prefilter against `compare` and against the hand-written answers,
// with and without --max-drop, a required device that is not there while another is, a bandwidth regression
// whose re-run cannot be made, and a verdict listed as a known failure that became Usable.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareResults, exceedsDrop } from '../results/compare.js';
import { parseExpectations } from '../results/expectations.js';
import { decide, parseRequirement } from '../results/gate.js';
import type { CheckResult, DeviceLoad, DeviceResult, RunResult } from '../results/types.js';
import { MAIN, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-boundaries-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A results file of the command (for its shape only: every figure and verdict the tests judge is set by hand below). */
const shape = (): RunResult => JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'cuda.json'), 'utf8')) as RunResult;
const REFUSED = { kind: 'Refused', refusal: 'Wrong_bytes', text: 'Refused (Wrong_bytes)' } as const;

interface Spec {
  host?: string;
  driver?: string;
  startedAt?: string;
  registered?: number;
  refused?: boolean;
  devices?: number;
}

/** One run of one host: its devices Usable (or Refused) with the registered GB/s given. */
function runOf(s: Spec): RunResult {
  const r = shape();
  r.host.hostname = s.host ?? 'boundary-host';
  if (s.startedAt) r.startedAt = s.startedAt;
  const one = r.devices[0]!;
  r.devices = Array.from({ length: s.devices ?? 1 }, (_, i): DeviceResult => {
    const d = structuredClone(one);
    d.id = `cuda:${i}`;
    d.pciBusId = `0000:00:0${i}.0`;
    if (s.driver) d.driver = { name: 'CUDA', version: s.driver };
    if (s.registered !== undefined) d.timing = { ...d.timing!, registeredGBps: s.registered };
    if (s.refused) d.verdict = { ...REFUSED };
    return d;
  });
  return r;
}

const bandwidthKind = (old: number, neu: number, maxDrop?: number): string | undefined =>
  compareResults(runOf({ registered: old }), runOf({ registered: neu }), maxDrop === undefined ? {} : { maxDrop }).devices[0]!.changes.find((c) => c.check === 'bandwidth')?.kind;

describe('the bandwidth rule at its limit', () => {
  it('exceedsDrop: more than the limit is a drop, exactly the limit is not, whichever way the division rounds', () => {
    // [old, new, limit, more than the limit?]: the fractions in the comments are 1 - new / old in doubles
    const table: [number, number, number, boolean][] = [
      [2, 1.82, 0.1, false], // 9%
      [2, 1.78, 0.1, true], // 11%
      [2, 1.8, 0.1, false], // 10%, rounds below: 0.09999999999999998
      [1.97, 1.773, 0.1, false], // 10%, rounds above: 0.10000000000000009
      [1.1, 0.99, 0.1, false], // 10%, rounds above
      [2.2, 1.98, 0.1, false], // 10%, rounds above
      [2, 1.7999, 0.1, true], // 10.005%: a twentieth of a point past it is past it
      [3, 2.4, 0.2, false], // 20%, rounds above: 0.20000000000000007
      [2, 1.58, 0.2, true], // 21%
      [2, 1.9, 0.05, false], // 5%, rounds above: 0.050000000000000044
      [2, 1.88, 0.05, true], // 6%
      [2, 2, 0, false], // no drop at a limit of nothing
      [2, 1.99, 0, true], // any drop at a limit of nothing
      [2, 2.5, 0.1, false], // a rise is no drop
    ];
    for (const [o, n, max, want] of table) expect(exceedsDrop(o, n, max), `${o} -> ${n} at ${max}`).toBe(want);
  });

  it('compare: 9% unchanged, 11% a regression, exactly 10% (rounding above) unchanged; the same for a rise, which is a fix past the limit', () => {
    expect(bandwidthKind(2, 1.82)).toBe('unchanged');
    expect(bandwidthKind(2, 1.78)).toBe('regression');
    expect(bandwidthKind(1.97, 1.773)).toBe('unchanged');
    expect(bandwidthKind(1.1, 0.99)).toBe('unchanged');
    expect(bandwidthKind(2, 2.18)).toBe('unchanged');
    expect(bandwidthKind(2, 2.22)).toBe('fix');
    // a rise of exactly 10% whose division rounds above it: 2.2 / 2 - 1 is 0.10000000000000009
    expect(bandwidthKind(2, 2.2)).toBe('unchanged');
    expect(bandwidthKind(0.7, 0.77)).toBe('unchanged');
    // --max-drop moves the limit: 11% is within 20%, 21% is not
    expect(bandwidthKind(2, 1.78, 0.2)).toBe('unchanged');
    expect(bandwidthKind(3, 2.4, 0.2)).toBe('unchanged');
    expect(bandwidthKind(2, 1.58, 0.2)).toBe('regression');
  });

  it('the gate at the default limit: a 9% drop passes, an 11% drop fails, exactly 10% (rounding above) passes', async () => {
    const gate = (old: number, neu: number) => decide(runOf({ registered: neu }), { baseline: { file: 'b.json', result: runOf({ registered: old }) } });
    expect((await gate(2, 1.82)).pass).toBe(true);
    const eleven = await gate(2, 1.78);
    expect(eleven.pass).toBe(false);
    expect(eleven.reasons.map((r) => r.text)).toEqual(['cuda:0 Double CUDA Device (0000:00:00.0): registered 2.00 GB/s -> 1.78 GB/s (-11.0%): a drop of 11.0%, more than the 10.0% allowed: staged 1.68 GB/s -> 1.68 GB/s (shown, not judged)']);
    const exact = await gate(1.97, 1.773);
    expect(exact.pass).toBe(true);
    expect(exact.headline).toBe('PASS: 1 device (1 Usable), no regression against b.json (registered GB/s within 10.0%)');
  });
});

/** A run whose registered / page-locked ratio is `ratio` (2 GB/s registered). */
const withRatio = (ratio: number): RunResult => {
  const r = runOf({ registered: 2 });
  r.devices[0]!.timing = { ...r.devices[0]!.timing!, pageLockedGBps: 2 / ratio, pageLockedRatio: ratio };
  return r;
};
/** The look at a machine still busy after --quiet-wait 60. */
const BUSY: DeviceLoad = {
  busy: true,
  why: ["the host's memcpy ran at 2.83 GB/s, under 70% of the baseline's 5.74 GB/s: other copies load host memory"],
  attempts: 2,
  waitedForQuietMs: 60_000,
  lockWaitMs: 0,
  timedMs: 100,
  quietWaitS: 60,
  processes: [],
  linkMBps: null,
  monitor: null,
  hostCopyGBps: null,
  pressure: { cpuSome: 95, memorySome: 0 },
};
/** A re-run of probe.verdict that comes back with the ratio given, on a busy machine where `busy`. */
/** A machine busy with CPU pressure alone: it does not excuse a fall of registered / page-locked (docs/measurement.md). */
const CPU_BUSY: DeviceLoad = { ...BUSY, why: ['CPU pressure 95.0% (some, avg10): more runnable threads than cores'] };

const rerunOf = (ratio: number, busy: DeviceLoad | false = false) => async (): Promise<CheckResult> => ({
  id: 'probe.verdict',
  suite: 'probe',
  title: 'probe',
  status: 'pass',
  durationMs: 1,
  data: { timing: { registeredGBps: 2, pageLockedGBps: 2 / ratio, pageLockedRatio: ratio }, ...(busy ? { load: busy } : {}) },
});

describe('the gate\'s other edges', () => {
  it('--require cuda:1 with only cuda:0 present fails, naming what was found; cuda:0 holds', async () => {
    const run = runOf({});
    const one = await decide(run, { requires: [parseRequirement('cuda:1')] });
    expect(one.pass).toBe(false);
    expect(one.reasons).toEqual([{ kind: 'requirement', text: '--require cuda:1: the device cuda:1 required, found cuda:0' }]);
    expect((await decide(run, { requires: [parseRequirement('cuda:0')] })).pass).toBe(true);
    const two = await decide(runOf({ devices: 2 }), { requires: [parseRequirement('cuda:1')] });
    expect(two.pass).toBe(true);
  });

  it('--require cuda=N holds with exactly N cuda devices, and fails with one fewer or one more', async () => {
    const two = runOf({ devices: 2 });
    expect((await decide(two, { requires: [parseRequirement('cuda=2')] })).pass).toBe(true);
    const more = await decide(two, { requires: [parseRequirement('cuda=1')] });
    expect(more.reasons).toEqual([{ kind: 'requirement', text: '--require cuda=1: exactly 1 cuda device required, found cuda:0, cuda:1' }]);
    const fewer = await decide(two, { requires: [parseRequirement('cuda=3')] });
    expect(fewer.reasons).toEqual([{ kind: 'requirement', text: '--require cuda=3: exactly 3 cuda devices required, found cuda:0, cuda:1' }]);
  });

  it('a bandwidth regression whose re-run cannot be made (nothing back, a throw, a crash) stays a regression, and says so', async () => {
    const baseline = { file: 'b.json', result: runOf({ registered: 2 }) };
    const slow = runOf({ registered: 1.5 });
    const crashed: CheckResult = { id: 'probe.verdict', suite: 'probe', title: 'probe', status: 'crash', durationMs: 1 };
    const cases: [string, () => Promise<CheckResult | undefined>, string][] = [
      ['nothing back', async () => undefined, 'could not be re-run'],
      ['a throw', async () => Promise.reject(new Error('the child died')), 'could not be re-run'],
      ['a crash, no figure', async () => crashed, 're-run: crash'],
    ];
    for (const [what, rerun, said] of cases) {
      const calls: string[] = [];
      const g = await decide(slow, { baseline, rerun: (d, c) => (calls.push(`${d} ${c}`), rerun()) });
      expect(calls, what).toEqual(['cuda:0 probe.verdict']);
      expect(g.pass, what).toBe(false);
      expect(g.reasons.map((r) => `${r.kind} ${r.check}`), what).toEqual(['bandwidth bandwidth']);
      expect(g.notes.find((n) => n.check === 'bandwidth'), what).toMatchObject({ kind: 'regression', note: `a drop of 25.0%, more than the 10.0% allowed; ${said}` });
    }
  });

  it('a registered / page-locked that fell is re-run once: back within the limit it is flaky; fallen again it stays the driver\'s; fallen again on a busy machine it is the host\'s', async () => {
    const baseline = { file: 'b.json', result: withRatio(1) };
    // [the re-run's ratio, busy?, the note's kind, its text, the gate's reason kinds]: a 40% fall (1 -> 0.6) first
    const cases: [number, DeviceLoad | false, string, string, string[]][] = [
      [0.95, false, 'flaky', 'flaky, passed on re-run (0.950)', []],
      [0.6, false, 'regression', "a drop of 40.0%, more than the 10.0% allowed: registered copies got slower than page-locked ones timed beside them: the driver's registration; re-run: 0.600", ['registration']],
      [0.6, BUSY, 'error', "the machine was busy: the host's memcpy ran at 2.83 GB/s, under 70% of the baseline's 5.74 GB/s: other copies load host memory, still busy after 60 s of --quiet-wait 60 (2 timings)", ['busy']],
      // CPU pressure alone excuses no fall of the ratio: the re-run's fall stays the driver's
      [0.6, CPU_BUSY, 'regression', "a drop of 40.0%, more than the 10.0% allowed: registered copies got slower than page-locked ones timed beside them: the driver's registration; re-run: 0.600", ['registration']],
    ];
    for (const [ratio, busy, kind, note, reasons] of cases) {
      const calls: string[] = [];
      const g = await decide(withRatio(0.6), { baseline, rerun: (d, c) => (calls.push(`${d} ${c}`), rerunOf(ratio, busy)()) });
      const what = `re-run at ${ratio}${busy ? ', busy' : ''}`;
      expect(calls, what).toEqual(['cuda:0 probe.verdict']);
      const n = g.notes.find((x) => x.check === 'registration');
      expect(n?.kind, what).toBe(kind);
      if (note) expect(n?.note, what).toBe(note);
      expect(g.reasons.map((r) => r.kind), what).toEqual(reasons);
      expect(g.pass, what).toBe(reasons.length === 0);
    }
  });

  it('a verdict listed as a known failure that is Usable is an unexpected pass, whether it was Usable or Refused before', async () => {
    const e = parseExpectations('fail verdict host=boundary-*\n', 'known.txt');
    const verdictKind = (old: RunResult | undefined) => compareResults(old, runOf({}), { expectations: e }).devices[0]!.changes.find((c) => c.check === 'verdict')!;
    for (const [what, old] of [['no baseline', undefined], ['Usable before', runOf({})], ['Refused before', runOf({ refused: true })]] as const) {
      expect(verdictKind(old), what).toMatchObject({ kind: 'unexpected-pass', new: 'Usable', note: 'unexpected pass: listed as a known failure (known.txt:1: fail verdict host=boundary-*): update the expectations' });
    }
    // still refused: a known failure, not an unexpected pass
    const still = compareResults(runOf({ refused: true }), runOf({ refused: true }), { expectations: e }).devices[0]!.changes.find((c) => c.check === 'verdict')!;
    expect(still.kind).toBe('unchanged');
    const g = await decide(runOf({}), { expectations: e, baseline: { file: 'b.json', result: runOf({ refused: true }) } });
    expect(g.pass).toBe(false);
    expect(g.reasons.map((r) => r.kind)).toEqual(['unexpected-pass']);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// history compare against compare and against answers written by hand: one host per figure, one GPU each.

interface Host {
  host: string;
  old: number;
  neu: number;
  /** What the bandwidth entry is at a limit of 5%, 10% (the default) and 20%: R regression, F fix, - unchanged. */
  at: { '5%': string; '10%': string; '20%': string };
}
/** The hosts [name, old GB/s, new GB/s] whose bandwidth entry is `a` at 5%, `b` at 10% and `c` at 20%. */
const hostsAt = (a: string, b: string, c: string, hosts: [string, number, number][]): Host[] => hosts.map(([host, old, neu]) => ({ host, old, neu, at: { '5%': a, '10%': b, '20%': c } }));
// Grouped by those three answers. A host's name is its drop (d) or rise (r) in percent; -above / -below: exactly at
// that limit, the division rounding above or below it.
const FLEET: Host[] = [
  ...hostsAt('-', '-', '-', [['bw-d05-above', 2, 1.9], ['bw-d05-above2', 1.1, 1.045], ['bw-same', 2, 2], ['bw-r04', 2, 2.08]]),
  ...hostsAt('R', '-', '-', [['bw-d06', 2, 1.88], ['bw-d08', 2, 1.84], ['bw-d09', 2, 1.82], ['bw-d10-above', 1.97, 1.773], ['bw-d10-above2', 2.2, 1.98], ['bw-d10-below', 2, 1.8]]),
  ...hostsAt('R', 'R', '-', [['bw-d11', 2, 1.78], ['bw-d13', 2, 1.74], ['bw-d15', 2, 1.7], ['bw-d17', 2, 1.66], ['bw-d19', 2, 1.62], ['bw-d20-above', 3, 2.4]]),
  ...hostsAt('R', 'R', 'R', [['bw-d21', 2, 1.58], ['bw-d25', 2, 1.5], ['bw-d30', 2, 1.4], ['bw-d39', 2, 1.22]]),
  ...hostsAt('F', '-', '-', [['bw-r07', 2, 2.14], ['bw-r10-above', 2, 2.2]]),
  ...hostsAt('F', 'F', '-', [['bw-r11', 2, 2.22]]),
  ...hostsAt('F', 'F', 'F', [['bw-r25', 2, 2.5]]),
];
/** Hosts whose figures do not move: their verdict is listed as a known failure in one of the runs below. */
const LISTED = { usable: 'vd-usable', fixed: 'vd-was-refused', refused: 'vd-still-refused' };

describe('history compare and compare agree with the answers written by hand', () => {
  const db = join(work, 'fleet.db');
  const dir = { old: join(work, 'old'), new: join(work, 'new') };
  const merged = { old: join(work, 'old.json'), new: join(work, 'new.json') };
  const known = join(work, 'known.txt');

  const cli = (args: string[]) => {
    const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(), encoding: 'utf8', cwd: work });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  interface Out {
    regressions: { kind: string; host?: string }[];
    counts: Record<string, number>;
  }
  const both = (extra: string[]): { file: Out; hist: Out } => {
    const file = cli(['compare', '--json', ...extra, merged.old, merged.new]);
    const hist = cli(['history', 'compare', '--db', db, '--old', 'driver=13.0*', '--new', 'driver=13.1*', '--json', ...extra]);
    expect(hist.stderr).toBe('');
    expect(file.stderr).toBe('');
    return { file: JSON.parse(file.stdout) as Out, hist: JSON.parse(hist.stdout) as Out };
  };
  const lines = (o: Out): string[] => o.regressions.map((r) => `${r.host} ${r.kind}`).sort();

  beforeAll(() => {
    for (const d of Object.values(dir)) mkdirSync(d);
    const write = (side: 'old' | 'new', s: Spec): void => writeFileSync(join(dir[side], `${s.host}.json`), JSON.stringify(runOf(s)));
    for (const h of FLEET) {
      write('old', { host: h.host, driver: '13.0', startedAt: '2026-11-01T00:00:00.000Z', registered: h.old });
      write('new', { host: h.host, driver: '13.1', startedAt: '2026-11-02T00:00:00.000Z', registered: h.neu });
    }
    const still = { driver: '13.0', startedAt: '2026-11-01T00:00:00.000Z', registered: 2 };
    const next = { driver: '13.1', startedAt: '2026-11-02T00:00:00.000Z', registered: 2 };
    write('old', { ...still, host: LISTED.usable });
    write('new', { ...next, host: LISTED.usable });
    write('old', { ...still, host: LISTED.fixed, refused: true });
    write('new', { ...next, host: LISTED.fixed });
    write('old', { ...still, host: LISTED.refused, refused: true });
    write('new', { ...next, host: LISTED.refused, refused: true });
    writeFileSync(known, 'fail verdict host=vd-*\n');
    for (const side of ['old', 'new'] as const) {
      const files = [...FLEET.map((h) => h.host), ...Object.values(LISTED)].map((h) => join(dir[side], `${h}.json`));
      expect(cli(['merge', ...files, '-o', merged[side]]).code).toBe(0);
    }
    const add = cli(['history', 'add', '--db', db, dir.old, dir.new]);
    expect(add.code, add.stderr).toBe(0);
  });

  for (const limit of ['5%', '10%', '20%'] as const) {
    it(`at a limit of ${limit}${limit === '10%' ? ' (the default)' : ' (--max-drop)'}: the same regressions and fixes, each as written here`, () => {
      const { file, hist } = both(limit === '10%' ? [] : ['--max-drop', limit]);
      const want = FLEET.filter((h) => h.at[limit] === 'R').map((h) => `${h.host} bandwidth`).sort();
      expect(want.length).toBeGreaterThan(3);
      // and one more fix: the verdict that became Usable
      const fixes = FLEET.filter((h) => h.at[limit] === 'F').length + 1;
      expect(lines(hist)).toEqual(want);
      expect(lines(file)).toEqual(lines(hist));
      expect(hist.counts.fix).toBe(fixes);
      expect(hist.counts).toEqual(file.counts);
    });
  }

  it('a verdict listed as a known failure that is Usable is an unexpected pass in both, whether it was Usable or Refused', () => {
    const { file, hist } = both(['--expectations', known]);
    const want = [...FLEET.filter((h) => h.at['10%'] === 'R').map((h) => `${h.host} bandwidth`), `${LISTED.usable} unexpected-pass`, `${LISTED.fixed} unexpected-pass`].sort();
    expect(lines(hist)).toEqual(want);
    expect(lines(file)).toEqual(want);
    expect(hist.counts).toEqual(file.counts);
    expect(hist.counts['unexpected-pass']).toBe(2);
  });
});
