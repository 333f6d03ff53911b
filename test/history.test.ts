// The history store as a user runs it (the built command), on small fleets written by the fleet
// generator (bench/fleet.ts: real results files, hosts varied, regressions planted): add (idempotent, bad files
// refused among good ones), compare (every regression kind, agreeing with `compare` of the merged files; selectors;
// the latest run; hosts not upgraded), report (in Chromium, every request blocked, its numbers against figures
// worked out here from the files), the engine loaded only by the history commands, and merge's size refusal.
import { spawnSync } from 'node:child_process';
import { closeSync, cpSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUS_IDS, type FleetTruth, generateFleet, hostName } from '../bench/fleet.js';
import type { CheckResult, RunResult } from '../results/types.js';
import { MAIN, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-history-'));
const CHROMIUM = '/usr/bin/chromium';
afterAll(() => rmSync(work, { recursive: true, force: true }));

function cli(args: string[], nodeArgs: string[] = [], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [...nodeArgs, MAIN, ...args], { env: cleanEnv(env), encoding: 'utf8', cwd: work, maxBuffer: 256 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const writeJson = (file: string, x: unknown): void => writeFileSync(file, `${JSON.stringify(x, null, 2)}\n`);
const edit = (file: string, f: (r: RunResult) => void): void => {
  const r = readJson<RunResult>(file);
  f(r);
  writeJson(file, r);
};
const checkOf = (r: RunResult, device: number, id: string): CheckResult => r.devices[device]!.checks.find((c) => c.id === id)!;

/** What the store holds, from the line `history add` ends with. */
function storeLine(stdout: string): { runs: number; hosts: number; devices: number; checks: number } {
  const m = /: (\d+) runs? of (\d+) hosts?, (\d+) devices?, (\d+) checks?, [\d.]+ MB$/m.exec(stdout);
  expect(m, stdout).not.toBeNull();
  return { runs: Number(m![1]), hosts: Number(m![2]), devices: Number(m![3]), checks: Number(m![4]) };
}

interface Regression {
  kind: string;
  host?: string;
  pciBusId: string | null;
  check?: string;
  old?: string;
  new?: string;
  line: string;
}
interface HistoryJson {
  regression: boolean;
  regressions: Regression[];
  counts: Record<string, number>;
  notCompared: { count: number; hosts: string[] };
  gpusGone: { count: number; hosts: string[] };
  hosts: { compared: number; newOnly: number };
}

const OLD = 'driver=13.0*';
const NEW = 'driver=13.1*';

// ---------------------------------------------------------------------------------------------------------------
// Fleet A: 24 hosts with every planted kind, then, by hand: a host error, a fix, a listed failure that passes, a
// listed failure that happens, and a host only on the new side with a failing check.

const A = join(work, 'a');
let truthA: FleetTruth;
const expectationsA = join(work, 'expectations.txt');
let hostError: string;
let fixed: string;
let unexpectedPass: string;
let expectedHost: string;
const newHost = 'gpu-node-99999';

beforeAll(() => {
  truthA = generateFleet({ hosts: 24, out: A, seed: 7, cpu: false, planted: { bandwidth: 2, status: 2, verdict: 1, missing: 1, gone: 1 } });
  const plain = Array.from({ length: 24 }, (_, i) => hostName(i + 1)).filter((h) => !truthA.planted.some((p) => p.host === h));
  [hostError, fixed, unexpectedPass] = plain as [string, string, string];
  expectedHost = truthA.planted.find((p) => p.kind === 'status')!.host;
  edit(join(A, 'new', `results-${hostError}.json`), (r) => {
    Object.assign(checkOf(r, 2, 'hazard.memfd_bytes'), { status: 'error', observed: 'no space left on device (ENOSPC) making the scratch file' });
  });
  edit(join(A, 'old', `results-${fixed}.json`), (r) => {
    Object.assign(checkOf(r, 1, 'hazard.coherent_after_write'), { status: 'fail', observed: 'stale bytes after the write' });
  });
  // a host only on the new side, with a failing check: a new failure, as compare says of a new device
  const copy = readJson<RunResult>(join(A, 'new', `results-${plain[3]}.json`));
  copy.host.hostname = newHost;
  Object.assign(checkOf(copy, 5, 'hazard.overlap_refused'), { status: 'crash', observed: 'SIGSEGV' });
  writeJson(join(A, 'new', `results-${newHost}.json`), copy);
  writeFileSync(
    expectationsA,
    [`fail hazard.unregister_interior host=${unexpectedPass}   # listed, but it passes: an unexpected pass`, `fail hazard.tmpfs_bytes host=${expectedHost}   # a known failure: expected`, ''].join('\n'),
  );
});

/**
 * Stores of fleet A, each added once (by the first test that asks) and then only read: compare and report open
 * a store read-only. A test that adds to a store copies it (storeCopy).
 */
const stores = new Map<string, string>();
function sharedStore(...sides: ('old' | 'new')[]): string {
  const name = `a-${sides.join('-')}.db`;
  if (!stores.has(name)) {
    const db = join(work, name);
    for (const side of sides) expect(cli(['history', 'add', '--db', db, join(A, side)]).code).toBe(0);
    stores.set(name, db);
  }
  return stores.get(name)!;
}
/** Fleet A's two sides. */
const sharedStoreA = (): string => sharedStore('old', 'new');
/** `history compare --json` of fleet A's store, OLD against NEW: run once (by the first test that asks), then only read. */
let comparedA: { code: number | null; json: HistoryJson } | undefined;
function compareA(): { code: number | null; json: HistoryJson } {
  if (!comparedA) {
    const r = cli(['history', 'compare', '--db', sharedStoreA(), '--old', OLD, '--new', NEW, '--json']);
    comparedA = { code: r.code, json: JSON.parse(r.stdout) as HistoryJson };
  }
  return comparedA;
}
/** One side of fleet A merged into one file: merged once (by the first test that asks), then only read. */
const merges = new Map<string, string>();
function mergedSide(side: 'old' | 'new'): string {
  if (!merges.has(side)) {
    const out = join(work, `a-${side}.json`);
    expect(cli(['merge', ...readdirSync(join(A, side)).map((f) => join(A, side, f)), '-o', out]).code).toBe(0);
    merges.set(side, out);
  }
  return merges.get(side)!;
}
/** A copy of fleet A's store (the file and its write-ahead log, if any) for a test that adds to it. */
function storeCopy(name: string): string {
  const from = sharedStoreA();
  const to = join(work, name);
  cpSync(from, to);
  if (existsSync(`${from}.wal`)) cpSync(`${from}.wal`, `${to}.wal`);
  return to;
}

describe('history add', () => {
  it('adds a folder, and adding it again (or a merged file of the same runs) adds nothing', () => {
    const db = join(work, 'idem.db');
    const first = cli(['history', 'add', '--db', db, join(A, 'old')]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^added 24 runs \(192 devices, 3840 checks\) from 24 files/);
    const before = storeLine(first.stdout);
    expect(before).toEqual({ runs: 24, hosts: 24, devices: 192, checks: 3840 });
    const again = cli(['history', 'add', '--db', db, join(A, 'old')]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^added 0 runs \(0 devices, 0 checks\) from 24 files; already in the store: 24 runs \(192 devices\)/);
    expect(storeLine(again.stdout)).toEqual(before);
    // the same runs merged into one file: each part is a run already there
    const merged = mergedSide('old');
    const viaMerged = cli(['history', 'add', '--db', db, merged]);
    expect(viaMerged.code).toBe(0);
    expect(storeLine(viaMerged.stdout)).toEqual(before);
    // a merged file brings its parts as runs of their own hosts: a fresh store from it holds the same
    const db2 = join(work, 'from-merged.db');
    expect(storeLine(cli(['history', 'add', '--db', db2, merged]).stdout)).toEqual(before);
  });

  it('refuses each bad file with one line naming it, keeps the good ones of the same call, and exits 2', () => {
    const dir = join(work, 'mixed');
    cpSync(join(A, 'old'), dir, { recursive: true });
    const bad: [string, string, RegExp][] = [
      ['not-json.json', 'this is not json', /not valid JSON/],
      ['schema-4.json', JSON.stringify({ schemaVersion: 4, devices: [] }), /unknown schemaVersion 4/],
      ['invalid.json', JSON.stringify({ schemaVersion: 1 }), /not a valid results file/],
    ];
    for (const [name, text] of bad) writeFileSync(join(dir, name), text);
    const db = join(work, 'mixed.db');
    const r = cli(['history', 'add', '--db', db, dir]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    for (const [name, , reason] of bad) {
      const line = lines.find((l) => l.includes(join(dir, name)));
      expect(line, name).toMatch(reason);
    }
    expect(r.stdout).toMatch(/^added 24 runs .* from 24 files; refused 3 files/);
    expect(storeLine(r.stdout)).toMatchObject({ runs: 24, devices: 192 });
    // what was kept is usable: the store compares
    expect(cli(['history', 'add', '--db', db, join(A, 'new')]).code).toBe(0);
    expect(cli(['history', 'compare', '--db', db, '--old', OLD, '--new', NEW]).code).toBe(1);
  });

  it('refuses a store that is not one, and a missing path, with one line (exit 2)', () => {
    const notDb = join(work, 'not-a-store.db');
    writeFileSync(notDb, 'hello');
    for (const args of [
      ['history', 'add', '--db', notDb, join(A, 'old')],
      ['history', 'compare', '--db', join(work, 'none.db'), '--old', OLD, '--new', NEW],
      ['history', 'add', '--db', join(work, 'x.db'), join(work, 'no-such-folder')],
    ]) {
      const r = cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trimEnd().split('\n'), r.stderr).toHaveLength(1);
    }
  });
});

describe('history compare', () => {
  let db: string;
  beforeAll(() => {
    db = sharedStoreA();
  });

  it('agrees with compare of the merged files: every regression kind, every count', () => {
    const file = cli(['compare', mergedSide('old'), mergedSide('new'), '--json', '--expectations', expectationsA]);
    const hist = cli(['history', 'compare', '--db', db, '--old', OLD, '--new', NEW, '--json', '--expectations', expectationsA]);
    expect(hist.stderr).toBe('');
    expect(file.code).toBe(1);
    expect(hist.code).toBe(1);
    const f = JSON.parse(file.stdout) as HistoryJson;
    const h = JSON.parse(hist.stdout) as HistoryJson;
    const sorted = (rs: Regression[]): string[] => rs.map((x) => JSON.stringify(x)).sort();
    expect(sorted(h.regressions)).toEqual(sorted(f.regressions));
    expect(h.counts).toEqual(f.counts);
    // and the comparison has every kind: status, verdict, bandwidth, missing, a host error, an unexpected pass
    const kinds = new Set(h.regressions.map((x) => x.kind));
    for (const k of ['status', 'verdict', 'bandwidth', 'missing', 'error', 'unexpected-pass']) expect(kinds, k).toContain(k);
    expect(h.counts.expected).toBeGreaterThan(0);
    expect(h.counts.fix).toBeGreaterThan(0);
    expect(h.regressions.find((x) => x.kind === 'unexpected-pass' && x.host === unexpectedPass)).toMatchObject({ check: 'hazard.unregister_interior', new: 'pass' });
    expect(h.regressions.find((x) => x.kind === 'error')).toMatchObject({ host: hostError, check: 'hazard.memfd_bytes', old: 'pass', new: 'error' });
    expect(h.regressions.find((x) => x.host === newHost)).toMatchObject({ kind: 'status', check: 'hazard.overlap_refused', new: 'crash' });
    // the listed failure happened: expected, not a regression (the host's other GPUs pass it: unexpected passes)
    expect(h.regressions.filter((x) => x.host === expectedHost && x.check === 'hazard.tmpfs_bytes').map((x) => x.kind)).toEqual(Array(7).fill('unexpected-pass'));
  });

  it('finds each planted regression with its host, PCI bus id and both sides, and exits 1', () => {
    const r = compareA();
    expect(r.code).toBe(1);
    const h = r.json;
    const mine = (host: string): Regression[] => h.regressions.filter((x) => x.host === host);
    for (const p of truthA.planted) {
      const got = mine(p.host);
      if (p.kind === 'gone') {
        expect(got.map((x) => `${x.kind} ${x.pciBusId}`).sort(), p.host).toEqual(BUS_IDS.map((b) => `missing ${b}`).sort());
        expect(h.gpusGone.hosts).toContain(p.host);
        continue;
      }
      const kind = p.kind === 'missing' ? 'missing' : p.kind;
      const one = got.find((x) => x.kind === kind && x.pciBusId === p.pciBusId);
      expect(one, `${p.kind} on ${p.host} ${p.pciBusId}`).toBeDefined();
      if (p.kind === 'status') expect(one).toMatchObject({ check: 'hazard.tmpfs_bytes', old: 'pass', new: 'fail' });
      if (p.kind === 'verdict') expect(one).toMatchObject({ old: 'Usable', new: 'Refused (Wrong_bytes)' });
      if (p.kind === 'bandwidth') expect(one!.line).toMatch(/registered [\d.]+ GB\/s -> [\d.]+ GB\/s \(-2\d\.\d%\)/);
    }
    // the text form says the same, one line each
    const text = cli(['history', 'compare', '--db', db, '--old', OLD, '--new', NEW]);
    expect(text.code).toBe(1);
    expect(text.stdout.match(/^ {2}(REGRESSION|HOST ERROR|UNEXPECTED PASS) {2}/gm)).toHaveLength(h.regressions.length);
    // the fleet plants a host error beside the driver's regressions: the last word names both
    expect(text.stdout.trimEnd().split('\n').at(-1)).toMatch(/^\d+ regressions, .*, 1 host error, .*: REGRESSION \(the driver\), and HOST ERROR \(the host\)$/);
  });

  it('exits 0 when nothing regressed (a side against itself), 2 on a bad selector or one that matches nothing', () => {
    const same = cli(['history', 'compare', '--db', sharedStore('old'), '--old', OLD, '--new', OLD]);
    expect(same.code).toBe(0);
    expect(same.stdout).toMatch(/^0 regressions, 0 fixes, 0 new, 0 missing, \d+ unchanged: no regression$/m);
    for (const [sel, reason] of [
      ['13.1', /--new "13\.1": unknown "13\.1"/],
      ['colour=red', /unknown "colour=red"/],
      ['', /expected key=glob pairs/],
      ['driver=99.*', /no device of any run in .* matches it/],
      ['device="NVIDIA H100"', /no device of any run in .* matches it/],
    ] as const) {
      const r = cli(['history', 'compare', '--db', db, '--old', OLD, '--new', sel]);
      expect(r.code, sel).toBe(2);
      expect(r.stderr.trimEnd().split('\n'), r.stderr).toHaveLength(1);
      expect(r.stderr, sel).toMatch(reason);
    }
  });
});

// history compare, continued under the same title (the test names stay as they were): selectors, later runs, hosts not upgraded
describe('history compare', () => {
  let db: string;
  beforeAll(() => {
    db = sharedStoreA();
  });

  it('selectors: host= keeps those hosts, device= those devices, with the same decisions', () => {
    const all = compareA().json;
    const some = cli(['history', 'compare', '--db', db, '--old', `${OLD} host=gpu-node-0000?`, '--new', `host=gpu-node-0000? ${NEW}`, '--json']);
    const h = JSON.parse(some.stdout) as HistoryJson;
    const want = all.regressions.filter((x) => /^gpu-node-0000\d$/.test(x.host!));
    expect(h.regressions.map((x) => x.line).sort()).toEqual(want.map((x) => x.line).sort());
    expect(h.hosts.compared).toBe(9);
    expect(some.code).toBe(want.length ? 1 : 0);
    const named = JSON.parse(cli(['history', 'compare', '--db', db, '--old', `${OLD} device="NVIDIA H200"`, '--new', `device="NVIDIA H200" driver="CUDA 13.1 *"`, '--json']).stdout) as HistoryJson;
    expect(named.regressions.map((x) => x.line).sort()).toEqual(all.regressions.map((x) => x.line).sort());
    // device= by id: only cuda:0 of each host (a host whose GPU went missing numbers the rest again: compare does too)
    const zero = JSON.parse(cli(['history', 'compare', '--db', db, '--old', `${OLD} device=cuda:0`, '--new', `${NEW} device=cuda:0`, '--json']).stdout) as HistoryJson;
    expect(zero.regressions.length).toBeGreaterThan(0);
    expect(zero.regressions.filter((x) => !x.line.includes(' cuda:0 '))).toEqual([]);
  });

  it('the latest run of a host counts: a later run that passes again clears its regression; an earlier one changes nothing', () => {
    // fleet A's store, copied: this test adds to it
    const dbL = storeCopy('latest.db');
    const status = truthA.planted.find((p) => p.kind === 'status')!;
    const before = JSON.parse(cli(['history', 'compare', '--db', dbL, '--old', OLD, '--new', NEW, '--json']).stdout) as HistoryJson;
    expect(before.regressions.some((x) => x.host === status.host && x.kind === 'status')).toBe(true);
    const dir = join(work, 'later');
    cpSync(join(A, 'new', `results-${status.host}.json`), join(dir, 'later.json'));
    edit(join(dir, 'later.json'), (r) => {
      r.startedAt = new Date(Date.parse(r.startedAt) + 3_600_000).toISOString();
      for (const d of r.devices) for (const c of d.checks) if (c.id === 'hazard.tmpfs_bytes') c.status = 'pass';
    });
    cpSync(join(A, 'new', `results-${status.host}.json`), join(dir, 'earlier.json'));
    edit(join(dir, 'earlier.json'), (r) => {
      r.startedAt = new Date(Date.parse(r.startedAt) - 3_600_000).toISOString();
      for (const d of r.devices) for (const c of d.checks) c.status = 'crash';
    });
    expect(cli(['history', 'add', '--db', dbL, dir]).stdout).toMatch(/^added 2 runs/);
    const after = JSON.parse(cli(['history', 'compare', '--db', dbL, '--old', OLD, '--new', NEW, '--json']).stdout) as HistoryJson;
    expect(after.regressions.filter((x) => x.host === status.host)).toEqual([]);
    expect(after.regressions.length).toBe(before.regressions.filter((x) => x.host !== status.host).length);
  });

  it('a host the rollout has not reached is not compared, never missing', () => {
    const C = join(work, 'c');
    const truth = generateFleet({ hosts: 12, out: C, seed: 3, cpu: false, planted: { bandwidth: 1, status: 0, verdict: 0, missing: 0, gone: 0 }, notUpgraded: 3 });
    const dbC = join(work, 'c.db');
    expect(cli(['history', 'add', '--db', dbC, join(C, 'old'), join(C, 'new')]).code).toBe(0);
    const r = cli(['history', 'compare', '--db', dbC, '--old', OLD, '--new', NEW, '--json']);
    const h = JSON.parse(r.stdout) as HistoryJson;
    expect(h.notCompared).toEqual({ count: 3, hosts: truth.notUpgraded });
    expect(h.regressions.map((x) => x.kind)).toEqual(['bandwidth']);
    expect(h.counts.missing).toBe(0);
    expect(cli(['history', 'compare', '--db', dbC, '--old', OLD, '--new', NEW]).stdout).toMatch(/^not compared: 3 hosts of OLD with no run on NEW/m);
  });
});

// ---------------------------------------------------------------------------------------------------------------

/** Linear interpolation between closest ranks, as numpy's default percentile. */
function percentile(sorted: number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** Chromium, started by the first report test that asks (and closed after the report tests). */
let launched: Promise<Browser> | undefined;
const browser = (): Promise<Browser> =>
  (launched ??= (async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium package`).toBe(true);
    return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  })());

/** A page on `file`, offline, every other request blocked and recorded, its errors and warnings kept. */
async function open(file: string) {
  const url = pathToFileURL(file).href;
  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 }, offline: true });
  const page = await context.newPage();
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (err) => problems.push(String(err)));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  await page.route('**', async (r) => (r.request().url() === url ? r.continue() : r.abort()));
  await page.goto(url, { waitUntil: 'load' });
  return { page, context, requests: () => requests.filter((u) => u !== url), problems };
}

/** What the report should say of each side of fleet A, worked out from the files themselves (one run per host and side here). */
function reportFiguresA() {
  return ['old', 'new'].map((side) => {
    const runs = readdirSync(join(A, side)).map((f) => readJson<RunResult>(join(A, side, f)));
    const gpus = runs.flatMap((run) => run.devices.filter((d) => d.backend === 'cuda').map((d) => ({ run, d })));
    const regs = gpus.map((g) => g.d.timing!.registeredGBps).sort((a, b) => a - b);
    const verdicts = new Map<string, number>();
    for (const { d } of gpus) verdicts.set(d.verdict.refusal ? `${d.verdict.kind} (${d.verdict.refusal})` : d.verdict.kind, (verdicts.get(d.verdict.refusal ? `${d.verdict.kind} (${d.verdict.refusal})` : d.verdict.kind) ?? 0) + 1);
    const failures = new Map<string, number>();
    for (const { d } of gpus) for (const c of d.checks) if (c.status === 'fail') failures.set(c.id, (failures.get(c.id) ?? 0) + 1);
    return {
      driver: `CUDA ${side === 'old' ? truthA.oldDriver : truthA.newDriver}`,
      hosts: new Set(gpus.map((g) => g.run.host.hostname)).size,
      devices: gpus.length,
      p: [0.01, 0.5, 0.99].map((q) => percentile(regs, q).toFixed(2)),
      verdicts,
      failures,
    };
  });
}

describe('history report in Chromium, offline', () => {
  afterAll(async () => {
    await (await launched?.catch(() => undefined))?.close();
  });

  it('per driver version: hosts, devices by verdict, p1/p50/p99, check failures and the regressed devices, as the files say', async () => {
    const db = sharedStoreA();
    const html = join(work, 'report.html');
    const r = cli(['history', 'report', '--db', db, '--html', html]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const text = readFileSync(html, 'utf8');
    expect(text).not.toMatch(/<script|https?:|<(link|img|iframe|object|embed)\b/i);
    expect(text).toContain(`content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`);

    const sides = reportFiguresA();
    const regressions = (JSON.parse(cli(['compare', mergedSide('old'), mergedSide('new'), '--json']).stdout) as HistoryJson).regressions;
    const regressedHosts = [...new Set(regressions.map((x) => x.host!))].sort();

    const { page, context, requests, problems } = await open(html);
    expect(requests()).toEqual([]);
    expect(problems).toEqual([]);
    expect(await page.locator('script, img').count()).toBe(0);
    const rows = page.locator('#summary tr.driver');
    expect(await rows.count()).toBe(2);
    for (const [i, want] of sides.entries()) {
      const row = rows.nth(i);
      expect(await row.getAttribute('data-driver')).toBe(want.driver);
      expect(Number(await row.locator('td.hosts').innerText())).toBe(want.hosts);
      expect(Number(await row.locator('td.devices').innerText())).toBe(want.devices);
      expect([await row.locator('td.p1').innerText(), await row.locator('td.p50').innerText(), await row.locator('td.p99').innerText()]).toEqual(want.p);
      for (const [label, count] of want.verdicts) expect(Number(await row.locator(`td[data-verdict="${label}"]`).innerText()), label).toBe(count);
      // the chart writes the same three figures
      const chart = page.locator(`svg#gbps-chart g.row[data-driver="${want.driver}"] text.value`);
      expect(await chart.allTextContents()).toEqual(want.p);
      // check failures
      const section = page.locator(`section.version[data-driver="${want.driver}"]`);
      const failed = await section.locator('tr.check').evaluateAll((els) => els.map((el) => [el.getAttribute('data-check'), Number(el.querySelector('td.fail')!.textContent)] as const).filter(([, n]) => n > 0));
      expect(new Map(failed)).toEqual(want.failures);
    }
    // the regressed devices of the new version, grouped by host: the hosts compare names
    const newSection = page.locator(`section.version[data-driver="${sides[1]!.driver}"]`);
    expect((await newSection.locator('li.host').evaluateAll((els) => els.map((el) => el.getAttribute('data-host')))).sort()).toEqual(regressedHosts);
    expect(await newSection.locator('li.line').count()).toBe(regressions.length);
    expect(await newSection.locator('.more').count()).toBe(0);
    await page.screenshot({ path: join(work, 'report.png'), fullPage: true });
    await context.close();
  }, 60_000);

  it('a fleet of many regressed hosts: the list stops at 50 hosts and counts the rest; the page stays small', async () => {
    const B = join(work, 'b');
    generateFleet({ hosts: 60, out: B, seed: 11, cpu: false, planted: { bandwidth: 57, status: 0, verdict: 0, missing: 0, gone: 0 } });
    const db = join(work, 'b.db');
    expect(cli(['history', 'add', '--db', db, join(B, 'old'), join(B, 'new')]).code).toBe(0);
    const html = join(work, 'b.html');
    expect(cli(['history', 'report', '--db', db, '--html', html]).code).toBe(0);
    const { page, context, requests } = await open(html);
    const section = page.locator('section.version').nth(1);
    expect(await section.locator('li.host').count()).toBe(50);
    expect(await section.locator('p.more').getAttribute('data-more-hosts')).toBe('7');
    expect(await section.locator('p.more').innerText()).toMatch(/^and 7 more hosts \(7 regressed devices\)/);
    expect(await section.locator('p.summary').innerText()).toMatch(/^57 regressed devices on 57 hosts/);
    expect(Number(await page.locator('#summary tr.driver').nth(1).locator('td.regressed-devices').innerText())).toBe(57);
    expect(requests()).toEqual([]);
    await context.close();
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------------------------

describe('DuckDB is loaded by the history commands only', () => {
  // a module hook that writes down every module the command resolves
  const hooks = join(work, 'hooks.mjs');
  const register = join(work, 'register.mjs');
  beforeAll(() => {
    writeFileSync(hooks, `import { appendFileSync } from 'node:fs';\nexport async function resolve(spec, context, next) {\n  const r = await next(spec, context);\n  appendFileSync(process.env.RESOLVED_LOG, r.url + '\\n');\n  return r;\n}\n`);
    writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  });
  const resolved = (args: string[]): { code: number | null; stdout: string; urls: string[] } => {
    const log = join(work, `resolved-${Math.random().toString(36).slice(2)}.log`);
    writeFileSync(log, '');
    const r = cli(args, ['--import', pathToFileURL(register).href], { RESOLVED_LOG: log });
    return { code: r.code, stdout: r.stdout, urls: readFileSync(log, 'utf8').split('\n').filter(Boolean) };
  };
  const engine = (urls: string[]): string[] => urls.filter((u) => /@duckdb|\/history\//.test(u));

  it('history compare loads it (the control: the hook sees it)', () => {
    const r = resolved(['history', 'compare', '--db', sharedStore('old'), '--old', OLD, '--new', OLD]);
    expect(r.code).toBe(0);
    expect(r.urls.some((u) => u.includes('/dist/cli/main.js'))).toBe(true);
    expect(r.urls.some((u) => u.includes('@duckdb/node-api'))).toBe(true);
  });

  it('--version, list, compare, merge and report do not', () => {
    const one = join(A, 'old', `results-${hostName(1)}.json`);
    const two = join(A, 'new', `results-${hostName(1)}.json`);
    // each must have done its work (not failed before it could have loaded anything): its exit status and its output
    const merged = join(work, 'm.json');
    const html = join(work, 'm.html');
    const cases: [string[], (r: { code: number | null; stdout: string }) => void][] = [
      [['--version'], (r) => expect([r.code, r.stdout.trim()]).toEqual([0, expect.stringMatching(/^\d+\.\d+\.\d+/)])],
      [['list', '--backend', 'cpu'], (r) => expect([r.code, r.stdout]).toEqual([0, expect.stringMatching(/^cpu /m)])],
      [['compare', one, two], (r) => expect([r.code === 0 || r.code === 1, r.stdout.trimEnd().split('\n').at(-1)]).toEqual([true, expect.stringMatching(/: (no regression|REGRESSION|HOST ERROR \(the host, not the driver\): not judged)$/)])],
      // (two hosts: merge refuses one host's two runs, as a file holds each device once)
      [['merge', one, join(A, 'old', `results-${hostName(2)}.json`), '-o', merged], (r) => expect([r.code, existsSync(merged)]).toEqual([0, true])],
      [['report', one, two, '--html', html], (r) => expect([r.code, existsSync(html)]).toEqual([0, true])],
    ];
    for (const [args, did] of cases) {
      const r = resolved(args);
      did(r);
      expect(r.urls.some((u) => u.includes('/dist/cli/main.js')), args.join(' ')).toBe(true);
      expect(engine(r.urls), args.join(' ')).toEqual([]);
    }
  });
});

describe('merge refuses what it could not write', () => {
  it('inputs larger than one JSON text can hold: exit 2, one line pointing to history add, nothing written', () => {
    // a sparse file: 450 MiB by its size, nothing on the disk; refused before it is read
    const big = join(work, 'big.json');
    const fd = openSync(big, 'w');
    closeSync(fd);
    spawnSync('truncate', ['-s', '450M', big]);
    const out = join(work, 'never.json');
    const r = cli(['merge', join(A, 'old', `results-${hostName(1)}.json`), big, '-o', out]);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/merge: the 2 files hold 450 MiB, more than the 400 MiB .* history add --db FILE/);
    expect(r.stdout).toBe('');
    expect(existsSync(out)).toBe(false);
  });
});
