// The history commands on what only one side has, and on a store of each version they accept: `history compare`'s
// SQL prefilter (history/fleet-compare.ts, pairDevices) must hand compare every device that only OLD has (gone)
// and every device only NEW has that failed a check or whose check the host failed, so that it names what
// `compare` of the same files names; `history compare` and `history report` of a store of version 1 (read as it
// is, no control copy, no machine) and of 2; and their words where the host alone failed: never REGRESSION.
// The figures are written here by hand on the double's fixture.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import type { CheckResult, DeviceLoad, DeviceResult, RunResult } from '../results/types.js';
import { MAIN, ROOT, cleanEnv } from './support/command.js';
import { storeAsVersion1 } from './support/store-v1.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-history-sides-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(), encoding: 'utf8', cwd: work });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const quiet: DeviceLoad = { busy: false, why: [], attempts: 1, waitedForQuietMs: 0, lockWaitMs: 0, timedMs: 50, quietWaitS: 60, processes: [], linkMBps: 0, monitor: 'nvml', hostCopyGBps: 10, pressure: { cpuSome: 0, memorySome: 0 } };
const linkBusy: DeviceLoad = { ...quiet, busy: true, why: ['30.0 GB/s of PCIe traffic not ours; on the GPU: pid 4242 hog-link (774 MiB)'], attempts: 4, waitedForQuietMs: 6000, linkMBps: 30000 };
const cpuBusy: DeviceLoad = { ...quiet, busy: true, why: ['CPU pressure 93.0% (some, avg10): more runnable threads than cores'], attempts: 4, waitedForQuietMs: 6000 };

interface Dev {
  /** The device's PCI bus id (what matches it across runs, with its backend and name). */
  pci: string;
  registered?: number;
  pageLocked?: number;
  load?: DeviceLoad;
  /** A check's status to set, by id. */
  checks?: Record<string, CheckResult['status']>;
}

let serial = 0;
/** A run of `host` with driver 13.0 (minute 1) or 13.1 (minute 2), its devices as given. */
function results(host: string, minute: 1 | 2, devices: Dev[]): string {
  const r = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'cuda.json'), 'utf8')) as RunResult;
  r.schemaVersion = 2;
  r.host = { ...r.host, hostname: host };
  r.startedAt = `2026-12-01T10:0${minute}:00.000Z`;
  r.finishedAt = `2026-12-01T10:0${minute}:30.000Z`;
  delete r.gate;
  const one = r.devices[0]!;
  r.devices = devices.map((s, i): DeviceResult => {
    const d = structuredClone(one);
    d.id = `cuda:${i}`;
    d.pciBusId = s.pci;
    d.driver = { ...d.driver, version: minute === 1 ? '13.0' : '13.1' };
    const registered = s.registered ?? 2;
    const pageLocked = s.pageLocked ?? 2;
    d.timing = { ...d.timing!, registeredGBps: registered, pageLockedGBps: pageLocked, pageLockedRatio: registered / pageLocked, hostCopyGBps: 10 };
    d.load = s.load ?? quiet;
    for (const [id, status] of Object.entries(s.checks ?? {})) {
      const c = d.checks.find((x) => x.id === id)!;
      c.status = status;
      c.message = status === 'error' ? 'the host: no space left on the scratch filesystem' : `${id}: ${status}`;
    }
    return d;
  });
  const file = join(work, `r${serial++}.json`);
  writeFileSync(file, JSON.stringify(r));
  return file;
}

interface Regression {
  kind: string;
  device: string;
  pciBusId: string;
  check?: string;
}

const HAZARD = 'hazard.double_registration_refused';
/** Each test runs the command 3 to 5 times, DuckDB loading in each: on the shared 2-core machine under a full test run that passed 60 s. */
const SLOW = 180_000;
const TRUNCATE = 'hazard.truncate_contained';

/** A store of `files` (made by history add, version 2). */
function store(files: string[]): string {
  const db = join(work, `s${serial++}.db`);
  const add = cli(['history', 'add', '--db', db, ...files]);
  expect(add.code, add.stderr).toBe(0);
  return db;
}

const compareArgs = (db: string): string[] => ['history', 'compare', '--db', db, '--old', 'driver=13.0', '--new', 'driver=13.1'];
const regressionsOf = (stdout: string): Regression[] => (JSON.parse(stdout) as { regressions: Regression[] }).regressions;
const kinds = (list: Regression[]): string[] => list.map((x) => `${x.pciBusId} ${x.kind}${x.check ? ` ${x.check}` : ''}`).sort();

/** What compare of the two files and history compare of their store say, as sorted lines, with their exit statuses. */
function both(oldFile: string, newFile: string) {
  const db = store([oldFile, newFile]);
  const c = cli(['compare', '--json', oldFile, newFile]);
  const h = cli([...compareArgs(db), '--json']);
  expect(h.code === 0 || h.code === 1, h.stderr).toBe(true);
  return { compare: kinds(regressionsOf(c.stdout)), history: kinds(regressionsOf(h.stdout)), compareCode: c.code, historyCode: h.code, db, json: JSON.parse(h.stdout) as { counts: Record<string, number> } };
}

describe("the fleet prefilter: devices that only one side has", () => {
  it('a device only OLD has is missing, in both; one only NEW has, clean, is new and no regression', () => {
    const r = both(results('node-a', 1, [{ pci: '0000:00:00.0' }, { pci: '0000:00:01.0' }]), results('node-a', 2, [{ pci: '0000:00:00.0' }, { pci: '0000:00:02.0' }]));
    expect(r.history).toEqual(['0000:00:01.0 missing']);
    expect(r.compare).toEqual(r.history);
    expect(r.historyCode).toBe(1);
    // the new device's verdict, figures and checks: all new, none judged a regression
    expect(r.json.counts.new).toBeGreaterThan(0);
  }, SLOW);

  it('a device only NEW has that failed a check: a new failure, in both', () => {
    const r = both(results('node-b', 1, [{ pci: '0000:00:00.0' }]), results('node-b', 2, [{ pci: '0000:00:00.0' }, { pci: '0000:00:03.0', checks: { [HAZARD]: 'fail' } }]));
    expect(r.history).toEqual([`0000:00:03.0 status ${HAZARD}`]);
    expect(r.compare).toEqual(r.history);
  }, SLOW);

  it("a device only NEW has whose check the host failed: a host error, in both, and the words say the host's", () => {
    const r = both(results('node-c', 1, [{ pci: '0000:00:00.0' }]), results('node-c', 2, [{ pci: '0000:00:00.0' }, { pci: '0000:00:04.0', checks: { [TRUNCATE]: 'error' } }]));
    expect(r.history).toEqual([`0000:00:04.0 error ${TRUNCATE}`]);
    expect(r.compare).toEqual(r.history);
    expect(r.historyCode).toBe(1);
    const text = cli(compareArgs(r.db));
    expect(text.stdout).toMatch(/^ {2}HOST ERROR {2}node-c cuda:1 Double CUDA Device \(0000:00:04\.0\): hazard\.truncate_contained could not be judged: the host failed it, not the driver/m);
    expect(text.stdout.trimEnd().split('\n').at(-1)).toMatch(/^0 regressions, .*1 host error, .*: HOST ERROR \(the host, not the driver\): not judged$/);
  }, SLOW);
});

describe('attribution in the history commands', () => {
  it('CPU pressure alone: the ratio\'s fall is the driver\'s registration in history compare as in compare; the GB/s the host\'s', () => {
    // registered 2 -> 1.5 (-25%), page-locked unchanged: the ratio 1 -> 0.75, on a machine busy with CPU pressure alone
    const r = both(results('node-d', 1, [{ pci: '0000:00:00.0' }]), results('node-d', 2, [{ pci: '0000:00:00.0', registered: 1.5, load: cpuBusy }]));
    expect(r.history).toEqual(['0000:00:00.0 busy bandwidth', '0000:00:00.0 registration registration']);
    expect(r.compare).toEqual(r.history);
    const last = cli(compareArgs(r.db)).stdout.trimEnd().split('\n').at(-1);
    expect(last).toMatch(/^1 regression, .*1 host error, .*: REGRESSION \(the driver\), and HOST ERROR \(the host\)$/);
  }, SLOW);

  it('history report: a device the host alone failed is "not judged", not a regressed device', () => {
    const db = store([results('node-e', 1, [{ pci: '0000:00:00.0' }]), results('node-e', 2, [{ pci: '0000:00:00.0', registered: 1.2, pageLocked: 1.2, load: linkBusy }])]);
    const out = join(work, 'e.html');
    const page = cli(['history', 'report', '--db', db, '--html', out]);
    expect(page.code, page.stderr).toBe(0);
    const html = readFileSync(out, 'utf8');
    expect(html).toMatch(/<p class="summary"><span class="ok">no regressed device<\/span>; <span class="host-error">1 device not judged: the host, not the driver<\/span>: 0 regressions, /);
    expect(html).toMatch(/<td class="num zero regressed-devices">0<\/td>|<td class="num regressed-devices zero">0<\/td>/);
    expect(html).toMatch(/<li class="line" data-kind="error">/);
  }, SLOW);
});

describe('a store of each version the history commands accept', () => {
  /** The store of `files` made one of version 1: the same tables less the columns version 2 added. */
  async function version1(files: string[]): Promise<string> {
    const made = store(files);
    const db = join(work, `v1-${serial++}.db`);
    await storeAsVersion1(made, db);
    return db;
  }

  // the same pair of runs in each: a link kept busy while both copies fell by 40%, a device gone, a new one failing
  const pair = (host: string): string[] => [
    results(host, 1, [{ pci: '0000:00:00.0' }, { pci: '0000:00:01.0' }]),
    results(host, 2, [{ pci: '0000:00:00.0', registered: 1.2, pageLocked: 1.2, load: linkBusy }, { pci: '0000:00:05.0', checks: { [HAZARD]: 'fail' } }]),
  ];

  it('version 2: the fall is the busy host\'s, the device gone and the new failure are found', () => {
    const db = store(pair('node-f'));
    const h = cli([...compareArgs(db), '--json']);
    expect(h.code).toBe(1);
    expect(kinds(regressionsOf(h.stdout))).toEqual(['0000:00:00.0 busy bandwidth', '0000:00:01.0 missing', `0000:00:05.0 status ${HAZARD}`]);
  }, SLOW);

  it('version 1, read as it is (no add): no machine kept, so the fall is judged a regression; the rest alike; the report reads it', async () => {
    const db = await version1(pair('node-g'));
    const h = cli([...compareArgs(db), '--json']);
    expect(h.code, h.stderr).toBe(1);
    expect(kinds(regressionsOf(h.stdout))).toEqual(['0000:00:00.0 bandwidth bandwidth', '0000:00:01.0 missing', `0000:00:05.0 status ${HAZARD}`]);
    const text = cli(compareArgs(db));
    expect(text.stdout.trimEnd().split('\n').at(-1)).toMatch(/^3 regressions, .*: REGRESSION$/);
    const out = join(work, 'g.html');
    const page = cli(['history', 'report', '--db', db, '--html', out]);
    expect(page.code, page.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toMatch(/<span class="regressed">3 regressed devices on 1 host<\/span>/);
    // read, not upgraded: still version 1
    const instance = await DuckDBInstance.create(db, { access_mode: 'READ_ONLY' });
    const c = await instance.connect();
    const version = (await c.runAndReadAll(`SELECT value FROM meta WHERE key = 'version'`)).getRowsJS()[0]![0];
    c.closeSync();
    instance.closeSync();
    expect(version).toBe('1');
  }, SLOW);

  it('a version the commands do not accept is refused with one line, exit 2', async () => {
    const db = await version1(pair('node-h'));
    const instance = await DuckDBInstance.create(db);
    const c = await instance.connect();
    await c.run(`UPDATE meta SET value = '4' WHERE key = 'version'`);
    c.closeSync();
    instance.closeSync();
    for (const args of [compareArgs(db), ['history', 'report', '--db', db, '--html', join(work, 'h.html')]]) {
      const r = cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/history store version 4 \(this version of mapped-reg-conformance reads versions 1 to 3\)/);
    }
  }, SLOW);
});
