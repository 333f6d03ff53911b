// The history store judges as compare judges a slower driver and a busy machine: the control copy
// (registered / page-locked), what the run saw of the machine and a downtrained link are kept (store version 2),
// and `history compare` names the same regressions as `compare` of the same files. A store of version 1 is read
// as it is and upgraded by an add. The figures are written here by hand on the double's fixture.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import type { DeviceLoad, RunResult } from '../results/types.js';
import { MAIN, ROOT, cleanEnv } from './support/command.js';
import { storeAsVersion1 } from './support/store-v1.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-history-busy-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(), encoding: 'utf8', cwd: work });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const quiet: DeviceLoad = { busy: false, why: [], attempts: 1, waitedForQuietMs: 0, lockWaitMs: 0, timedMs: 50, quietWaitS: 60, processes: [], linkMBps: 0, monitor: 'nvml', hostCopyGBps: 10, pressure: { cpuSome: 0, memorySome: 0 } };
const busy: DeviceLoad = {
  ...quiet,
  busy: true,
  why: ['30.0 GB/s of PCIe traffic not ours; on the GPU: pid 4242 hog-link (774 MiB)'],
  attempts: 4,
  waitedForQuietMs: 6000,
  processes: [{ pid: 4242, name: 'hog-link', usedMiB: 774 }],
  linkMBps: 30000,
};

let serial = 0;
/** The fixture's run on `host` at minute `minute`, its cuda:0 timed as given. */
function results(host: string, minute: number, registered: number, pageLocked: number, load: DeviceLoad, link?: { downtrained: boolean; text: string }): string {
  const r = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'cuda.json'), 'utf8')) as RunResult;
  r.schemaVersion = 2;
  r.host = { ...r.host, hostname: host };
  r.startedAt = `2026-12-01T10:${String(minute).padStart(2, '0')}:00.000Z`;
  r.finishedAt = `2026-12-01T10:${String(minute).padStart(2, '0')}:30.000Z`;
  delete r.gate;
  const d = r.devices.find((x) => x.id === 'cuda:0')!;
  // the old side's driver 13.0, the new side's (a later minute) 13.1: what history compare selects by
  d.driver = { ...d.driver, version: minute === 1 ? '13.0' : '13.1' };
  d.timing = { ...d.timing!, registeredGBps: registered, pageLockedGBps: pageLocked, pageLockedRatio: registered / pageLocked, hostCopyGBps: 10 };
  d.load = load;
  if (link) d.link = { gts: 16, width: 16, gbps: 31.5, maxGts: 32, maxWidth: 16, ...link };
  const file = join(work, `r${serial++}.json`);
  writeFileSync(file, JSON.stringify(r));
  return file;
}

interface Regression {
  kind: string;
  host?: string;
  line: string;
}

/** What compare of the two files and history compare of the store say: the regressions, by kind. */
function both(oldFile: string, newFile: string): { compare: Regression[]; history: Regression[]; historyCode: number | null; compareCode: number | null } {
  const db = join(work, `s${serial++}.db`);
  const add = cli(['history', 'add', '--db', db, oldFile, newFile]);
  expect(add.code, add.stderr).toBe(0);
  const c = cli(['compare', '--json', oldFile, newFile]);
  const h = cli(['history', 'compare', '--db', db, '--old', 'driver=13.0', '--new', 'driver=13.1', '--json']);
  const regressions = (text: string): Regression[] => (JSON.parse(text) as { regressions: Regression[] }).regressions;
  return { compare: regressions(c.stdout), history: h.code === 2 ? [] : regressions(h.stdout), historyCode: h.code, compareCode: c.code };
}

describe('history compare against compare: the control copy and the machine', () => {
  it('figures that fell on a busy machine: the host\'s in both (busy), with what was seen', () => {
    const r = both(results('node-a', 1, 2, 2, quiet), results('node-a', 2, 1.2, 1.2, busy));
    expect(r.compare.map((x) => x.kind)).toEqual(['busy']);
    expect(r.history.map((x) => x.kind)).toEqual(['busy']);
    expect(r.compareCode).toBe(1);
    expect(r.historyCode).toBe(1);
    expect(r.history[0]!.line).toContain('the machine was busy: 30.0 GB/s of PCIe traffic not ours; on the GPU: pid 4242 hog-link (774 MiB), still busy after 6 s of --quiet-wait 60 (4 timings)');
  });

  it('registration alone slower on a quiet machine: bandwidth and registration, the driver\'s, in both', () => {
    const r = both(results('node-b', 1, 2, 2, quiet), results('node-b', 2, 1.5, 2, quiet));
    expect(r.compare.map((x) => x.kind)).toEqual(['bandwidth', 'registration']);
    expect(r.history.map((x) => x.kind)).toEqual(['bandwidth', 'registration']);
    expect(r.history[1]!.line).toMatch(/registered \/ page-locked 1\.000 -> 0\.750 \(-25\.0%\): a drop of 25\.0%, more than the 10\.0% allowed/);
  });

  it('registered / page-locked alone fell (the absolute figure within the limit): a registration regression, found by the store\'s prefilter too', () => {
    // registered 2 -> 1.9 (-5%), page-locked 2 -> 2.4: the ratio 1.0 -> 0.79
    const r = both(results('node-c', 1, 2, 2, quiet), results('node-c', 2, 1.9, 2.4, quiet));
    expect(r.compare.map((x) => x.kind)).toEqual(['registration']);
    expect(r.history.map((x) => x.kind)).toEqual(['registration']);
  });

  it('every copy slower on a quiet machine with a downtrained link: the link named, in both', () => {
    const r = both(results('node-d', 1, 2, 2, quiet), results('node-d', 2, 1.5, 1.5, quiet, { downtrained: true, text: 'trained at 16.0 GT/s x16, below its maximum 32.0 GT/s x16' }));
    expect(r.history.map((x) => x.kind)).toEqual(['bandwidth']);
    expect(r.history[0]!.line).toContain('every host-to-device copy got slower');
    expect(r.history[0]!.line).toContain('the link is trained at 16.0 GT/s x16, below its maximum 32.0 GT/s x16');
    expect(r.compare[0]!.line).toBe(r.history[0]!.line.replace(/^node-d /, ''));
  });
});

describe('a store of version 1', () => {
  it('is read as it is (no control copy: the registered GB/s judged as before), and an add upgrades it to 3', async () => {
    const db = join(work, 'v1.db');
    const oldFile = results('node-e', 1, 2, 2, quiet);
    // a store as version 1 made it: the same tables less the columns of 2
    const made = join(work, 'v2-made.db');
    expect(cli(['history', 'add', '--db', made, oldFile]).code).toBe(0);
    await storeAsVersion1(made, db);
    // read as it is: a report of the one run
    const page = cli(['history', 'report', '--db', db, '--html', join(work, 'v1.html')]);
    expect(page.code, page.stderr).toBe(0);
    const add = cli(['history', 'add', '--db', db, results('node-e', 2, 1.2, 1.2, busy)]);
    expect(add.code, add.stderr).toBe(0);
    const instance = await DuckDBInstance.create(db, { access_mode: 'READ_ONLY' });
    const c = await instance.connect();
    const version = (await c.runAndReadAll(`SELECT value FROM meta WHERE key = 'version'`)).getRowsJS()[0]![0];
    const cols = (await c.runAndReadAll(`SELECT column_name FROM duckdb_columns() WHERE table_name = 'devices'`)).getRowsJS().map((x) => String(x[0]));
    c.closeSync();
    instance.closeSync();
    expect(version).toBe('3');
    expect(cols).toEqual(expect.arrayContaining(['page_locked', 'pl_ratio', 'busy', 'machine', 'bytes', 'rounds']));
    // the run of version 1 has no control copy: its pair is judged on the registered figure, given to the busy host
    const h = cli(['history', 'compare', '--db', db, '--old', 'driver=13.0', '--new', 'driver=13.1', '--json']);
    expect((JSON.parse(h.stdout) as { regressions: Regression[] }).regressions.map((x) => x.kind)).toEqual(['busy']);
  });
});
