// The history store against a hostile user (the built command): a page or a store never written over an input,
// a truncated or corrupt store refused in one line (exit 2, never a stack trace, never "regression"), a store
// made atomically (a kill while it is made leaves none or a whole one) and one left half-made by an older version
// completed, a DuckDB file that is not a store never written, results files validated whole (merged parts, a
// device twice) with the good files of the call kept, special files refused at once, and every text from the
// store escaped for the terminal and capped on the page.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, truncateSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../results/types.js';
import { MAIN, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-history-hostile-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(), encoding: 'utf8', cwd: work, maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** One line on stderr, no stack trace: the line. */
function oneLine(r: { stderr: string }): string {
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

const digest = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');
const fixture = (): RunResult => JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'cuda.json'), 'utf8')) as RunResult;

/** A results file of `host` started at `startedAt`, edited by `f`. */
function results(name: string, host: string, startedAt: string, f: (r: RunResult) => void = () => {}): string {
  const r = fixture();
  r.host = { ...r.host, hostname: host };
  r.startedAt = startedAt;
  f(r);
  const file = join(work, name);
  writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  return file;
}

/** A store of two runs of one host, the second on another driver version. */
function store(name: string): string {
  const db = join(work, name);
  const a = results(`${name}-old.json`, 'node-1', '2026-01-01T00:00:00.000Z', (r) => (r.devices[0]!.driver.version = '13.0'));
  const b = results(`${name}-new.json`, 'node-1', '2026-01-02T00:00:00.000Z', (r) => (r.devices[0]!.driver.version = '13.1'));
  const r = cli(['history', 'add', '--db', db, a, b]);
  expect(r.code, r.stderr).toBe(0);
  return db;
}

async function duck<T>(file: string, f: (run: (sql: string) => Promise<unknown[][]>) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(file);
  const c = await instance.connect();
  try {
    return await f(async (sql) => (await c.runAndReadAll(sql)).getRowsJS());
  } finally {
    c.closeSync();
    instance.closeSync();
  }
}

/**
 * Starts `history add --db db file` and kills it (SIGKILL) the moment the engine first writes into `dir`: its
 * temporary store (or, in a version without one, the store's own .wal). What it saw written, and the signal it ended by.
 */
async function addKilledAtFirstWrite(dir: string, db: string, file: string): Promise<{ seen: string; signal: string | null }> {
  let seen = '';
  const watcher = watch(dir, (_event, name) => {
    if (!seen && name && (name.endsWith('.tmp') || name.endsWith('.wal'))) {
      seen = name;
      child.kill('SIGKILL');
    }
  });
  const child = spawn(process.execPath, [MAIN, 'history', 'add', '--db', db, file], { env: cleanEnv(), stdio: 'ignore' });
  const signal = await new Promise<string | null>((done) => child.on('close', (_code, sig) => done(sig)));
  watcher.close();
  return { seen, signal };
}

/** A store as an older version could leave it: its tables made, no meta row written yet. */
async function halfMadeStore(db: string): Promise<void> {
  await duck(db, async (run) => {
    await run(`CREATE TABLE meta(key VARCHAR, value VARCHAR)`);
    await run(`CREATE TABLE runs(run INTEGER, host VARCHAR, started_at VARCHAR, started_ms DOUBLE, finished_at VARCHAR, kernel VARCHAR, platform VARCHAR,
      tool VARCHAR, incomplete BOOLEAN, gate VARCHAR, init_error VARCHAR, source VARCHAR, added_at VARCHAR, devices INTEGER)`);
  });
}

let good: string;
beforeAll(() => {
  good = store('good.db');
});

describe('an output never names the store or an input', () => {
  for (const via of ['its name', 'a symbolic link'] as const) {
    it(`history report --html naming the store by ${via}: exit 2, the store intact`, () => {
      // a copy of the good store (two runs, 13.0 then 13.1): this test could harm it
      const db = join(work, `report-over-${via.replace(/\W/g, '-')}.db`);
      copyFileSync(good, db);
      const before = digest(db);
      const target = via === 'its name' ? db : join(work, `link-${Date.now()}.db`);
      if (via === 'a symbolic link') symlinkSync(db, target);
      const r = cli(['history', 'report', '--db', db, '--html', target]);
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r)).toMatch(/--html .*: the same file as the store --db .*an input is never overwritten/);
      expect(digest(db)).toBe(before);
      expect(cli(['history', 'compare', '--db', db, '--old', 'driver=13.0', '--new', 'driver=13.1']).code).toBe(0);
    });
  }

  it('history report --html naming the expectations file: exit 2, the file intact', () => {
    const exp = join(work, 'exp.txt');
    writeFileSync(exp, 'fail hazard.tmpfs_bytes\n');
    const r = cli(['history', 'report', '--db', good, '--expectations', exp, '--html', exp]);
    expect(r.code, r.stderr).toBe(2);
    expect(readFileSync(exp, 'utf8')).toBe('fail hazard.tmpfs_bytes\n');
  });

  it('history add --db naming one of the results files: exit 2, the file intact', () => {
    const file = results('db-is-input.json', 'node-9', '2026-01-01T00:00:00.000Z');
    const before = digest(file);
    const r = cli(['history', 'add', '--db', file, file]);
    expect(r.code, r.stderr).toBe(2);
    expect(oneLine(r)).toMatch(/--db .*db-is-input\.json: the same file as the results file/);
    expect(digest(file)).toBe(before);
  });
});

describe('a truncated or corrupt store: one line, exit 2 (never 1, which history compare means as a regression)', () => {
  const broken = (name: string, harm: (file: string) => void): string => {
    const db = join(work, name);
    copyFileSync(good, db);
    harm(db);
    return db;
  };
  const truncated = (): string => broken(`truncated-${Math.random().toString(36).slice(2)}.db`, (f) => truncateSync(f, Math.floor(statSync(f).size / 3)));
  const corrupt = (): string =>
    broken(`corrupt-${Math.random().toString(36).slice(2)}.db`, (f) => {
      const b = readFileSync(f);
      // past the headers (4 kB and two of 4 kB): the first block, whose checksum no longer matches
      for (let i = 12288 + 64; i < 12288 + 4096; i++) b[i] = b[i]! ^ 0x55;
      writeFileSync(f, b);
    });
  for (const [what, make] of [
    ['truncated', truncated],
    ['corrupt', corrupt],
  ] as const) {
    for (const command of ['compare', 'report', 'add'] as const) {
      it(`${what}: history ${command}`, () => {
        const db = make();
        const args =
          command === 'compare'
            ? ['history', 'compare', '--db', db, '--old', 'driver=13.0', '--new', 'driver=13.1']
            : command === 'report'
              ? ['history', 'report', '--db', db, '--html', join(work, `${what}.html`)]
              : ['history', 'add', '--db', db, results(`${what}-add.json`, 'node-2', '2026-01-03T00:00:00.000Z')];
        const r = cli(args);
        expect(r.code, r.stderr).toBe(2);
        expect(oneLine(r)).toMatch(/^mapped-reg-conformance: .*\.db: .*history store/);
      });
    }
  }
});

describe('the store is made atomically; a half-made one of an older version is completed; another DuckDB file is never written', () => {
  it('killed while the store is being made: no half-made store is left; the next add makes a whole one', async () => {
    const dir = mkdtempSync(join(work, 'kill-'));
    const db = join(dir, 'fleet.db');
    const file = results('kill-input.json', 'node-3', '2026-01-01T00:00:00.000Z');
    const { seen, signal } = await addKilledAtFirstWrite(dir, db, file);
    expect(seen, 'the engine wrote nothing the test saw').not.toBe('');
    expect(signal).toBe('SIGKILL');
    const r = cli(['history', 'add', '--db', db, file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/: 1 run of 1 host, 1 device/);
  });

  it('a new store leaves no temporary file beside it', () => {
    const dir = mkdtempSync(join(work, 'fresh-'));
    expect(cli(['history', 'add', '--db', join(dir, 's.db'), results('fresh.json', 'node-4', '2026-01-01T00:00:00.000Z')]).code).toBe(0);
    expect(readdirSync(dir)).toEqual(['s.db']);
  });

  it('a --db that is a symbolic link to nothing: refused, nothing made where it points', () => {
    const target = join(work, 'points-here.db');
    const db = join(work, 'dangling.db');
    symlinkSync(target, db);
    const r = cli(['history', 'add', '--db', db, results('dangling.json', 'node-9', '2026-01-01T00:00:00.000Z')]);
    expect(r.code).toBe(2);
    expect(oneLine(r)).toMatch(/dangling\.db: a symbolic link to a file that does not exist/);
    expect(existsSync(target)).toBe(false);
  });

  it('an add whose every file is refused leaves no store behind where there was none', () => {
    const db = join(work, 'never-made.db');
    const bad = join(work, 'not-results.json');
    writeFileSync(bad, '{"schemaVersion": 2}');
    const r = cli(['history', 'add', '--db', db, bad]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/added nothing: every file was refused \(above\); no store was made at .*never-made\.db/);
    expect(existsSync(db)).toBe(false);
    expect(existsSync(`${db}.wal`)).toBe(false);
  });

  it('a store an older version left half-made (its tables, no meta row): read commands say how; add completes it', async () => {
    const db = join(work, 'half.db');
    await halfMadeStore(db);
    const read = cli(['history', 'compare', '--db', db, '--old', 'host=*', '--new', 'host=*']);
    expect(read.code, read.stderr).toBe(2);
    expect(oneLine(read)).toMatch(/half-made .* history add --db .*half\.db RESULTS\.\.\. completes it/);
    const add = cli(['history', 'add', '--db', db, results('half.json', 'node-5', '2026-01-01T00:00:00.000Z')]);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toMatch(/: 1 run of 1 host, 1 device/);
    expect(await duck(db, (run) => run(`SELECT key, value FROM meta ORDER BY key`))).toEqual([
      ['format', 'mapped-reg-conformance history'],
      ['version', '3'],
    ]);
  });

  for (const [what, sql] of [
    ['with no table', []],
    ['with a table of its own', ['CREATE TABLE notes(t VARCHAR)', "INSERT INTO notes VALUES ('mine')"]],
    ['with an empty meta table and a table of its own', ['CREATE TABLE meta(key VARCHAR, value VARCHAR)', 'CREATE TABLE notes(t VARCHAR)']],
  ] as const) {
    it(`a DuckDB database ${what}: refused, never written`, async () => {
      const db = join(work, `foreign-${what.replace(/\W+/g, '-')}.db`);
      await duck(db, async (run) => {
        for (const s of sql) await run(s);
        await run('CHECKPOINT');
      });
      const before = digest(db);
      const r = cli(['history', 'add', '--db', db, results('foreign.json', 'node-6', '2026-01-01T00:00:00.000Z')]);
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r)).toMatch(/a DuckDB database, but not a history store/);
      expect(digest(db)).toBe(before);
      expect(existsSync(`${db}.wal`)).toBe(false);
    });
  }
});

describe('results files are validated whole; the good files of the call are kept', () => {
  const part = (hostname: string, devices: number) => ({ hostname, kernel: 'k', platform: 'p', startedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:01:00.000Z', tool: 't 1', devices });
  const cases: [string, (r: RunResult) => void, RegExp][] = [
    ['merged not a list', (r) => Object.assign(r, { merged: 'not a list' }), /\/merged must be array/],
    ['merged [null]', (r) => Object.assign(r, { merged: [null] }), /\/merged\/0 must be object/],
    ['merged [{"devices": 2}]', (r) => Object.assign(r, { merged: [{ devices: 2 }] }), /\/merged\/0\/hostname is required/],
    ['merged parts that miss a device', (r) => Object.assign(r, { merged: [part('node-7', 0)] }), /\/merged counts 0 device\(s\), \/devices holds 1/],
    ['a device listed twice', (r) => r.devices.push({ ...r.devices[0]! }), /device cuda:0 .* is listed twice/],
  ];
  for (const [what, harm, reason] of cases) {
    it(`${what}: refused in one line naming it; the good file of the same call added`, () => {
      const db = join(work, `whole-${what.replace(/\W+/g, '-')}.db`);
      const bad = results(`bad-${what.replace(/\W+/g, '-')}.json`, 'node-7', '2026-01-01T00:00:00.000Z', harm);
      const ok = results(`ok-${what.replace(/\W+/g, '-')}.json`, 'node-8', '2026-01-01T00:00:00.000Z');
      const r = cli(['history', 'add', '--db', db, bad, ok]);
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r)).toMatch(reason);
      expect(r.stdout).toMatch(/^added 1 run \(1 device, \d+ checks\) from 1 file; refused 1 file/);
    });
  }
});

describe('special files are refused at once', () => {
  it('history add /dev/zero: one line, exit 2', () => {
    const r = cli(['history', 'add', '--db', join(work, 'zero.db'), '/dev/zero']);
    expect(r.code, r.stderr).toBe(2);
    expect(oneLine(r)).toMatch(/\/dev\/zero: not a regular file \(a character device\)/);
  });

  it('--db naming a named pipe or a device: refused, not waited on', async () => {
    const fifo = join(work, 'store.fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const db of [fifo, '/dev/null']) {
      for (const args of [
        ['history', 'add', '--db', db, results('fifo.json', 'node-9', '2026-01-01T00:00:00.000Z')],
        ['history', 'compare', '--db', db, '--old', 'host=*', '--new', 'host=*'],
      ]) {
        const r = await new Promise<{ code: number | null; stderr: string }>((done) => {
          const child = spawn(process.execPath, [MAIN, ...args], { env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
          let stderr = '';
          child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
          child.on('close', (code) => done({ code, stderr }));
        });
        expect(r.code, r.stderr).toBe(2);
        expect(oneLine(r)).toMatch(/(a named pipe|a character device), not a history store/);
      }
    }
  });
});

describe('text from the store: escaped for the terminal, capped on the page', () => {
  const ESC_TITLE = '\u001b]0;pwned\u0007';
  const RED = '\u001b[31m';
  let db: string;
  beforeAll(() => {
    db = join(work, 'hostile-text.db');
    const harm = (version: string) => (r: RunResult) => {
      r.host.hostname = `node-${ESC_TITLE}${RED}1`;
      const d = r.devices[0]!;
      d.name = `GPU ${RED}${ESC_TITLE}${'N'.repeat(1_000_000)}`;
      d.driver.name = `CUDA${RED}`;
      d.driver.version = version;
      const c = d.checks.find((k) => k.status === 'pass' && k.id.startsWith('hazard.'))!;
      if (version === '13.1') Object.assign(c, { status: 'fail', observed: `${ESC_TITLE}${'M'.repeat(1_000_000)}` });
    };
    const a = results('hostile-old.json', '', '2026-01-01T00:00:00.000Z', harm('13.0'));
    const b = results('hostile-new.json', '', '2026-01-02T00:00:00.000Z', harm('13.1'));
    const r = cli(['history', 'add', '--db', db, a, b]);
    expect(r.code, r.stderr).toBe(0);
  });

  it('history compare prints no control character raw, and shows each as \\xNN', () => {
    const r = cli(['history', 'compare', '--db', db, '--old', 'driver=13.0', '--new', 'driver=13.1']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/REGRESSION/);
    expect(r.stdout).not.toMatch(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/);
    expect(r.stdout).toContain('\\x1b]0;pwned\\x07');
  });

  it('history add refuses a file whose text starts with an escape, and a file whose name has one, quoting neither raw', () => {
    const dir = mkdtempSync(join(work, 'esc-'));
    const named = join(dir, `bad${RED}.json`);
    writeFileSync(named, 'not json');
    const starts = join(dir, 'starts.json');
    writeFileSync(starts, `${ESC_TITLE}{}`);
    const r = cli(['history', 'add', '--db', join(work, 'esc.db'), named, starts]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(2);
    expect(r.stderr).not.toMatch(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/);
    expect(r.stderr).toContain('bad\\x1b[31m.json');
  });

  it('history report: names and messages of 1 MB give a page of bounded size', () => {
    const page = join(work, 'hostile.html');
    const r = cli(['history', 'report', '--db', db, '--html', page]);
    expect(r.code, r.stderr).toBe(0);
    const html = readFileSync(page, 'utf8');
    expect(html).toMatch(/…\(\d+ more characters\)/);
    expect(html).not.toContain('\u001b');
    expect(Buffer.byteLength(html)).toBeLessThan(200_000);
  });
});
