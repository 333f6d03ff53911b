// The history store: results of many runs on many hosts, kept columnar in one DuckDB file, for
// `history add`, `history compare` and `history report`. This module (and @duckdb/node-api with it) is loaded
// only by those commands (cli/main.ts imports it dynamically): `run`, `list`, `compare`, `merge` and `report`
// never load the engine.
//
// What is stored, per run (a results file, or each part of a merged one): host, startedAt (as written, and as
// milliseconds), finishedAt, kernel, platform, tool, incomplete, the gate's PASS/FAIL, a GPU driver that failed to
// start, the file it came from and when it was added. Per device: its place in the run, the key compare matches it
// by (backend/PCI bus id/name, #2... for a repeat), id, backend, name, PCI bus id, driver name and version, the
// verdict (kind, refusal, reason, label), the registered and staged GB/s, incomplete, the count of errors outside
// any check, the page-locked GB/s and registered / page-locked, what its process saw of the machine (busy, why,
// the waits) and a link trained below its maximum (version 2 of the store: what compare needs to tell a slower
// driver from a busy machine), and a digest of its checks' statuses (so that two runs of a device whose checks did not change are
// told apart without reading them), and the rounds of the pair (registered and page-locked copies, as taken, and
// their size: version 3), so that `history compare` judges a figure with its noise as `compare` does. Per check: id, status, and, for a status other than pass and skip, what it
// observed (the text compare shows for a regression). Not stored: logs, check data, expected texts, titles,
// durations, attributes, scratch, options.
//
// A run is identified by its host and start time, a device in it by its key: adding a file again, or a file that
// a merged file already brought, adds nothing.
import { createHash, randomBytes } from 'node:crypto';
import { linkSync, lstatSync, readdirSync, rmSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { type DuckDBAppender, type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { deviceKey, verdictLabel } from '../results/compare.js';
import { fileKind, InputError, inputName, parseResults, readInput } from '../results/read.js';
import { MATRIX_FILE } from '../results/runtime-matrix.js';
import { FAILING } from '../results/status.js';
import type { DeviceWithHost, RunResult } from '../results/types.js';
import { ADDED_COLUMNS, DEVICE_COLUMNS_2, DEVICE_COLUMNS_3 } from './columns.js';

export const STORE_FORMAT = 'mapped-reg-conformance history';
/**
 * 2: the control copy and the look at the machine (columns page_locked, pl_ratio, busy, machine); 3: the rounds of
 * the pair (bytes, rounds). 1 and 2 are read as 3 without the columns they lack (NULL), and upgraded by an add.
 */
export const STORE_VERSION = 3;

/** The engine's memory limit and threads: a fleet's add stays within this, whatever its size. */
export const MEMORY_LIMIT = '1GB';
export const THREADS = Math.max(1, Math.min(4, availableParallelism()));
/** How long an add waits for another process that holds the store (DuckDB has one writer at a time). */
export const LOCK_WAIT_MS = 300_000;

const SCHEMA = [
  `CREATE TABLE meta(key VARCHAR, value VARCHAR)`,
  `CREATE TABLE runs(run INTEGER, host VARCHAR, started_at VARCHAR, started_ms DOUBLE, finished_at VARCHAR, kernel VARCHAR, platform VARCHAR,
     tool VARCHAR, incomplete BOOLEAN, gate VARCHAR, init_error VARCHAR, source VARCHAR, added_at VARCHAR, devices INTEGER)`,
  `CREATE TABLE devices(run INTEGER, ord SMALLINT, dkey VARCHAR, id VARCHAR, backend VARCHAR, name VARCHAR, pci VARCHAR, dname VARCHAR, dver VARCHAR,
     vkind VARCHAR, vref VARCHAR, vreason VARCHAR, vlabel VARCHAR, registered DOUBLE, staged DOUBLE, incomplete BOOLEAN, errors INTEGER,
     nchecks SMALLINT, sig VARCHAR, failing BOOLEAN, has_error BOOLEAN, dup_checks BOOLEAN, ${[...DEVICE_COLUMNS_2, ...DEVICE_COLUMNS_3].join(', ')})`,
  `CREATE TABLE checks(run INTEGER, ord SMALLINT, pos SMALLINT, check_id VARCHAR, status VARCHAR, detail VARCHAR)`,
];
const TABLES = ['runs', 'devices', 'checks'] as const;

export interface Store {
  file: string;
  c: DuckDBConnection;
  /** The store's version: a store of 1 opened to read lacks the columns of 2 (the readers put NULLs in their place). */
  version: number;
  /** This call made the store (no file was at its name). */
  created: boolean;
  close(): void;
}

const sqlString = (s: string): string => `'${s.replace(/'/g, "''")}'`;

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').trim();

/**
 * An error of the engine (a truncated or corrupt file, a disk that fails, memory): bad input, one line naming the
 * store. DuckDB throws plain Errors; a TypeError or the like is a fault of this code, and stays one.
 */
export function storeError(file: string, e: unknown): unknown {
  if (e instanceof InputError || !(e instanceof Error) || e.constructor !== Error) return e;
  return new InputError(`${file}: the history store cannot be used (${message(e)})`);
}

/** Runs `body` on the store, its engine errors as storeError says. */
export async function withStoreErrors<T>(file: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (e) {
    throw storeError(file, e);
  }
}

const TABLE_NAMES = ['meta', ...TABLES];

/** The store's tables and its meta rows, made in one transaction: a kill leaves all of them or none. */
async function makeSchema(c: DuckDBConnection, have: string[] = []): Promise<void> {
  await c.run('BEGIN TRANSACTION');
  try {
    for (const [i, t] of TABLE_NAMES.entries()) if (!have.includes(t)) await c.run(SCHEMA[i]!);
    // a half-made store of version 1 or 2 has its devices table without the columns added since
    if (have.includes('devices')) for (const col of [...DEVICE_COLUMNS_2, ...DEVICE_COLUMNS_3]) await c.run(`ALTER TABLE devices ADD COLUMN IF NOT EXISTS ${col}`);
    await c.run(`INSERT INTO meta VALUES ('format', ${sqlString(STORE_FORMAT)}), ('version', '${STORE_VERSION}')`);
    await c.run('COMMIT');
  } catch (e) {
    await c.run('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/**
 * Makes a new store at `path`, atomically: made and closed under a random name beside it, then linked to `path`
 * only if no file is there yet (another add may have made one meanwhile: that one is kept, and used). A kill at
 * any point leaves either no store or a whole one, never a half-made one at `path`.
 */
async function createStore(path: string): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(8).toString('hex')}.tmp`);
  try {
    const instance = await DuckDBInstance.create(tmp, { memory_limit: MEMORY_LIMIT, threads: '1' });
    const c = await instance.connect();
    try {
      await makeSchema(c);
      await c.run('CHECKPOINT');
    } finally {
      c.closeSync();
      instance.closeSync();
    }
    // fsync'd by the engine's checkpoint; link, unlike rename, never replaces a file that appeared meanwhile
    try {
      linkSync(tmp, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  } finally {
    for (const f of [tmp, `${tmp}.wal`]) rmSync(f, { force: true });
  }
}

/**
 * Opens the store: for writing (made when missing), or read-only (it must exist). Only a regular file (or a new
 * name, for writing) is a store: a named pipe, a device, a folder is refused at once. A file that is not a DuckDB
 * database, or a DuckDB database that is not a history store, is bad input and never written. A store an older
 * version left half-made (killed while it made its tables: every table of the store's, all empty, no meta row)
 * is completed. A writer waits for another that holds the file, up to LOCK_WAIT_MS. Any error of the engine is
 * bad input (storeError).
 */
export async function openStore(file: string, mode: 'write' | 'read'): Promise<Store> {
  const path = resolve(file);
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw new InputError(`${file}: cannot use it as a history store (${code ?? message(e)})`);
    // a symbolic link to nothing: the store would be made where it points, behind the name given
    if (lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) throw new InputError(`${file}: a symbolic link to a file that does not exist (name the store itself, or a new name for history add to make one)`);
    if (mode === 'read') throw new InputError(`${file}: no history store there (make one with: history add --db ${file} RESULTS...)`);
  }
  if (st && !st.isFile()) throw new InputError(`${file}: ${fileKind(st)}, not a history store (a store is a regular file, or a new name for history add to make one)`);
  if (st && st.size === 0) throw new InputError(`${file}: an empty file, not a history store (history add makes a store at a name where no file is)`);
  if (!st) await withStoreErrors(file, () => createStore(path));
  const options: Record<string, string> = { memory_limit: MEMORY_LIMIT, threads: String(THREADS), preserve_insertion_order: 'false', ...(mode === 'read' ? { access_mode: 'READ_ONLY' } : {}) };
  const deadline = Date.now() + LOCK_WAIT_MS;
  let instance: DuckDBInstance | undefined;
  for (;;) {
    try {
      instance = await DuckDBInstance.create(path, options);
      break;
    } catch (e) {
      const m = message(e);
      if (/could not set lock|conflicting lock/i.test(m) && Date.now() < deadline) {
        await new Promise((done) => setTimeout(done, 500));
        continue;
      }
      throw new InputError(`${file}: cannot open it as a history store (${m})`);
    }
  }
  let c: DuckDBConnection;
  try {
    c = await instance.connect();
  } catch (e) {
    instance.closeSync();
    throw storeError(file, e);
  }
  const store: Store = {
    file,
    c,
    version: STORE_VERSION,
    created: !st,
    close: () => {
      c.closeSync();
      instance.closeSync();
    },
  };
  try {
    const tables = (await c.runAndReadAll(`SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'`)).getRowsJS().map((r) => String(r[0]));
    const notStore = `a DuckDB database, but not a history store of ${STORE_FORMAT.split(' ')[0]}`;
    if (tables.length === 0) throw new InputError(`${file}: ${notStore} (no table; it is never written: name a new file for the store${mode === 'write' ? ', or remove this one if an add of an older version was killed while making it' : ''})`);
    if (!tables.includes('meta')) throw new InputError(`${file}: ${notStore} (no meta table)`);
    const meta = new Map((await c.runAndReadAll(`SELECT key, value FROM meta`)).getRowsJS().map((r) => [String(r[0]), String(r[1])]));
    if (meta.size === 0 && (await halfMade(c, tables))) {
      // left by an older version killed between its CREATE TABLEs and its meta rows: nothing in it, completed now
      if (mode === 'read') throw new InputError(`${file}: a history store left half-made by an add that was killed (no run in it): history add --db ${file} RESULTS... completes it`);
      await makeSchema(c, tables);
      return store;
    }
    if (meta.get('format') !== STORE_FORMAT) throw new InputError(`${file}: ${notStore} (format ${JSON.stringify(meta.get('format') ?? null)})`);
    const version = meta.get('version');
    if (version === '1' || version === '2') {
      store.version = Number(version);
      // an add upgrades it, in one transaction: the new columns, NULL for the devices already there
      if (mode === 'write') await upgrade(c, store.version);
      if (mode === 'write') store.version = STORE_VERSION;
      return store;
    }
    if (version !== String(STORE_VERSION)) throw new InputError(`${file}: history store version ${version} (this version of mapped-reg-conformance reads versions 1 to ${STORE_VERSION})`);
    return store;
  } catch (e) {
    store.close();
    throw storeError(file, e);
  }
}

/**
 * A store of an older version made one of STORE_VERSION: the columns added since `from` added to `devices` (NULL for
 * what is there: its devices stay figures without their rounds), and its version.
 */
async function upgrade(c: DuckDBConnection, from: number): Promise<void> {
  await c.run('BEGIN TRANSACTION');
  try {
    for (let v = from + 1; v <= STORE_VERSION; v++) for (const col of ADDED_COLUMNS[v] ?? []) await c.run(`ALTER TABLE devices ADD COLUMN IF NOT EXISTS ${col}`);
    await c.run(`UPDATE meta SET value = '${STORE_VERSION}' WHERE key = 'version'`);
    await c.run('COMMIT');
  } catch (e) {
    await c.run('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** Whether the store's tables are all there is, each empty (what a killed creation of an older version left). */
async function halfMade(c: DuckDBConnection, tables: string[]): Promise<boolean> {
  if (!tables.every((t) => TABLE_NAMES.includes(t))) return false;
  for (const t of tables) if (Number((await c.runAndReadAll(`SELECT count(*) FROM main.${t}`)).getRowsJS()[0]![0]) !== 0) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// history add

/** What compare reads of the machine around a device's timed copies, as JSON (null when the run recorded none). */
function machineOf(d: DeviceWithHost): string | null {
  const l = d.load;
  const link = d.link?.downtrained ? { downtrained: true, ...(d.link.text ? { text: d.link.text } : {}) } : undefined;
  if (!l && !link) return null;
  return JSON.stringify({ ...(l ? { why: l.why, attempts: l.attempts, waitedForQuietMs: l.waitedForQuietMs, quietWaitS: l.quietWaitS } : {}), ...(link ? { link } : {}) });
}

/**
 * The rounds of the pair the decision judges a figure by (registered and page-locked ms, as taken, JSON), or null
 * for a device of a file of schemaVersion 1 or 2 (a figure without its noise). The staged and host copies are not
 * kept: no decision takes them.
 */
function roundsOf(d: DeviceWithHost): string | null {
  const s = d.timing?.samples;
  return s ? JSON.stringify({ registeredMs: s.registeredMs, pageLockedMs: s.pageLockedMs }) : null;
}

/** The files named on the command line: a file as given, a folder's *.json files, recursively, in name order. */
export function resultFiles(paths: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      // a runtimes matrix (runtime-matrix.json) names the results beside it, which the walk finds: it is not one
      else if (e.isFile() && e.name.endsWith('.json') && e.name !== MATRIX_FILE) out.push(p);
    }
  };
  for (const p of paths) {
    // standard input: read as a file is
    if (p === '-') {
      out.push(p);
      continue;
    }
    let st;
    try {
      st = statSync(p);
    } catch (e) {
      throw new InputError(`${p}: cannot read it (${(e as NodeJS.ErrnoException).code ?? message(e)})`);
    }
    if (st.isDirectory()) {
      const before = out.length;
      walk(p);
      if (out.length === before) throw new InputError(`${p}: no results file (*.json) in this folder`);
    } else out.push(p);
  }
  return out;
}

/** One run as stored: a results file, or one part of a merged file. */
interface RunRow {
  host: string;
  startedAt: string;
  finishedAt: string;
  kernel: string;
  platform: string;
  tool: string;
  incomplete: boolean;
  gate: string | null;
  initError: string | null;
  devices: DeviceWithHost[];
}

/** The runs a results file holds: itself, or the parts of a merged file (each device with the part it came from). */
export function runsOf(r: RunResult): RunRow[] {
  const tool = `${r.tool.name} ${r.tool.version}`;
  const initError = (r.backends ?? []).filter((b) => b.initError).map((b) => `${b.backend}: ${b.initError!.message}`).join('; ') || null;
  const gate = r.gate ? (r.gate.pass ? 'PASS' : 'FAIL') : null;
  const parts = (r as { merged?: { hostname: string; kernel: string; platform: string; startedAt: string; finishedAt: string; tool: string; devices: number; incomplete?: boolean }[] }).merged;
  const devices = r.devices as DeviceWithHost[];
  if (parts && parts.length > 0 && parts.reduce((n, p) => n + p.devices, 0) === devices.length) {
    // a merged file: its devices are its parts' devices, in the parts' order
    let at = 0;
    return parts.map((p) => {
      const ds = devices.slice(at, at + p.devices);
      at += p.devices;
      const hostInit = (r.backends ?? []).filter((b) => b.initError && (b as { host?: string }).host === p.hostname).map((b) => `${b.backend}: ${b.initError!.message}`).join('; ') || null;
      return { host: p.hostname, startedAt: p.startedAt, finishedAt: p.finishedAt, kernel: p.kernel, platform: p.platform, tool: p.tool, incomplete: p.incomplete === true, gate: null, initError: hostInit, devices: ds };
    });
  }
  // a device that carries another host (a merged file without its parts list): a run of that host, at the file's time
  const byHost = new Map<string, DeviceWithHost[]>();
  for (const d of devices) {
    const h = d.host?.hostname ?? r.host.hostname;
    byHost.set(h, [...(byHost.get(h) ?? []), d]);
  }
  if (byHost.size === 0) byHost.set(r.host.hostname, []);
  return [...byHost].map(([host, ds]) => {
    const h = ds[0]?.host ?? r.host;
    return { host, startedAt: r.startedAt, finishedAt: r.finishedAt, kernel: h.kernel, platform: h.platform, tool, incomplete: r.incomplete === true, gate, initError, devices: ds };
  });
}

/** The keys compare matches a run's devices by (without the host): backend/pciBusId/name, then #2, #3... */
export function deviceKeys(devices: DeviceWithHost[]): string[] {
  const seen = new Set<string>();
  return devices.map((d) => {
    const base = deviceKey(d, '', false);
    let key = base;
    for (let n = 2; seen.has(key); n++) key = `${base}#${n}`;
    seen.add(key);
    return key;
  });
}

/** A digest of a device's check statuses, as compare reads them (by id; a repeated id: the last one). */
function checkDigest(d: DeviceWithHost): { sig: string; n: number; dup: boolean } {
  const byId = new Map<string, string>();
  for (const c of d.checks) byId.set(c.id, c.status);
  const text = [...byId].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, s]) => `${id}\u0000${s}`).join('\u0001');
  return { sig: createHash('md5').update(text).digest('base64'), n: byId.size, dup: byId.size !== d.checks.length };
}

const DETAIL_STATUSES = new Set(['warn', 'fail', 'timeout', 'crash', 'error']);

export interface AddReport {
  files: number;
  /** Files refused: one line each, naming the file. */
  refused: string[];
  runs: { added: number; known: number };
  devices: { added: number; known: number };
  checks: number;
}

/** Files per transaction: what a crash mid-way can lose at most (the files before it are kept). */
const BATCH_FILES = 256;

type Appenders = Record<(typeof TABLES)[number], DuckDBAppender>;

const str = (a: DuckDBAppender, v: string | null | undefined): void => (v === null || v === undefined ? a.appendNull() : a.appendVarchar(v));
const num = (a: DuckDBAppender, v: number | null | undefined): void => (v === null || v === undefined || !Number.isFinite(v) ? a.appendNull() : a.appendDouble(v));

/**
 * Rows go to temp tables through appenders, and from there into the store's tables one transaction a batch of
 * files: a crash mid-way loses the batch, never a half-written run.
 */
class Staging {
  private appenders: Appenders | undefined;
  constructor(private readonly c: DuckDBConnection) {}

  async create(): Promise<void> {
    for (const t of TABLES) await this.c.run(`CREATE OR REPLACE TEMP TABLE stage_${t} AS SELECT * FROM main.${t} LIMIT 0`);
  }

  /** The appenders, opened on first use after a flush. */
  async open(): Promise<Appenders> {
    this.appenders ??= {
      runs: await this.c.createAppender('stage_runs', 'main', 'temp'),
      devices: await this.c.createAppender('stage_devices', 'main', 'temp'),
      checks: await this.c.createAppender('stage_checks', 'main', 'temp'),
    };
    return this.appenders;
  }

  async flush(): Promise<void> {
    const c = this.c;
    if (!this.appenders) return;
    for (const a of Object.values(this.appenders)) a.closeSync();
    this.appenders = undefined;
    await c.run('BEGIN TRANSACTION');
    for (const t of TABLES) await c.run(`INSERT INTO main.${t} SELECT * FROM temp.stage_${t}`);
    await c.run('COMMIT');
    for (const t of TABLES) await c.run(`DELETE FROM temp.stage_${t}`);
  }

  async drop(): Promise<void> {
    for (const t of TABLES) await this.c.run(`DROP TABLE IF EXISTS temp.stage_${t}`);
  }
}

/** The runs the store holds (by host and start time) and, once asked, the device keys of each: what an add skips. */
class KnownRuns {
  private readonly keysOfRun = new Map<number, Set<string>>();
  private constructor(
    private readonly c: DuckDBConnection,
    private readonly ids: Map<string, number>,
    private nextRun: number,
  ) {}

  static async read(c: DuckDBConnection): Promise<KnownRuns> {
    const ids = new Map<string, number>();
    for (const r of (await c.runAndReadAll(`SELECT host, started_at, run FROM runs`)).getRowsJS()) ids.set(`${String(r[0])}\u0000${String(r[1])}`, Number(r[2]));
    const nextRun = Number((await c.runAndReadAll(`SELECT coalesce(max(run), 0) FROM runs`)).getRowsJS()[0]![0]) + 1;
    return new KnownRuns(c, ids, nextRun);
  }

  /** The run's id and the keys of its devices already stored; `added` when the run is new (its id just given). */
  async of(run: RunRow): Promise<{ id: number; have: Set<string>; added: boolean }> {
    const runKey = `${run.host}\u0000${run.startedAt}`;
    let id = this.ids.get(runKey);
    if (id === undefined) {
      id = this.nextRun++;
      this.ids.set(runKey, id);
      const have = new Set<string>();
      this.keysOfRun.set(id, have);
      return { id, have, added: true };
    }
    const have = this.keysOfRun.get(id) ?? new Set((await this.c.runAndReadAll(`SELECT dkey FROM devices WHERE run = ${id}`)).getRowsJS().map((r) => String(r[0])));
    this.keysOfRun.set(id, have);
    return { id, have, added: false };
  }
}

/** One row of runs. */
function appendRun(a: DuckDBAppender, id: number, run: RunRow, source: string, addedAt: string): void {
  const ms = Date.parse(run.startedAt);
  a.appendInteger(id);
  str(a, run.host);
  str(a, run.startedAt);
  num(a, Number.isNaN(ms) ? null : ms);
  str(a, run.finishedAt);
  str(a, run.kernel);
  str(a, run.platform);
  str(a, run.tool);
  a.appendBoolean(run.incomplete);
  str(a, run.gate);
  str(a, run.initError);
  str(a, source);
  str(a, addedAt);
  a.appendInteger(run.devices.length);
  a.endRow();
}

/** One row of devices. */
function appendDevice(a: DuckDBAppender, id: number, ord: number, dkey: string, d: DeviceWithHost): void {
  const digest = checkDigest(d);
  const v = d.verdict as { kind: string; refusal?: string; reason?: string };
  a.appendInteger(id);
  a.appendSmallInt(ord);
  str(a, dkey);
  str(a, d.id);
  str(a, d.backend);
  str(a, d.name);
  str(a, d.pciBusId);
  str(a, d.driver.name);
  str(a, d.driver.version);
  str(a, v.kind);
  str(a, v.refusal);
  str(a, v.reason);
  str(a, verdictLabel(v));
  num(a, d.timing?.registeredGBps);
  num(a, d.timing?.stagedGBps);
  a.appendBoolean(d.incomplete === true);
  a.appendInteger(d.errors?.length ?? 0);
  a.appendSmallInt(digest.n);
  str(a, digest.sig);
  a.appendBoolean(d.checks.some((k) => FAILING.includes(k.status)));
  a.appendBoolean(d.checks.some((k) => k.status === 'error'));
  a.appendBoolean(digest.dup);
  num(a, d.timing?.pageLockedGBps);
  num(a, d.timing?.pageLockedRatio);
  if (d.load) a.appendBoolean(d.load.busy);
  else a.appendNull();
  str(a, machineOf(d));
  num(a, d.timing?.samples ? d.timing.bytes : null);
  str(a, roundsOf(d));
  a.endRow();
}

/** The rows of checks of one device: how many. */
function appendChecks(a: DuckDBAppender, id: number, ord: number, d: DeviceWithHost): number {
  d.checks.forEach((k, pos) => {
    a.appendInteger(id);
    a.appendSmallInt(ord);
    a.appendSmallInt(pos);
    str(a, k.id);
    str(a, k.status);
    str(a, DETAIL_STATUSES.has(k.status) ? (k.observed ?? k.message) : null);
    a.endRow();
  });
  return d.checks.length;
}

/** Stages one run of a file: its row when the run is new, and its devices (with their checks) not stored yet. */
async function stageRun(a: Appenders, known: KnownRuns, run: RunRow, file: string, addedAt: string, report: AddReport): Promise<void> {
  const keys = deviceKeys(run.devices);
  const { id, have, added } = await known.of(run);
  if (added) {
    appendRun(a.runs, id, run, resolve(file), addedAt);
    report.runs.added++;
  } else {
    report.runs.known++;
  }
  run.devices.forEach((d, ord) => {
    const dkey = keys[ord]!;
    if (have.has(dkey)) {
      report.devices.known++;
      return;
    }
    have.add(dkey);
    report.devices.added++;
    appendDevice(a.devices, id, ord, dkey, d);
    report.checks += appendChecks(a.checks, id, ord, d);
  });
}

/**
 * Adds results files to the store: each read and checked as `compare` reads it (refused with one line naming it:
 * not JSON, another schemaVersion, not the schema's shape), its runs and devices added unless already there. The
 * good files of a call are kept whatever the bad ones. `onRefused` is told each refusal as it happens.
 */
export async function addFiles(store: Store, files: string[], onRefused?: (line: string) => void): Promise<AddReport> {
  const { c } = store;
  const report: AddReport = { files: 0, refused: [], runs: { added: 0, known: 0 }, devices: { added: 0, known: 0 }, checks: 0 };
  const known = await KnownRuns.read(c);
  const staging = new Staging(c);
  await staging.create();
  const addedAt = new Date().toISOString();

  let inBatch = 0;
  for (const file of files) {
    let result: RunResult;
    try {
      result = parseResults(await readInput(file), inputName(file));
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      report.refused.push(e.message);
      onRefused?.(e.message);
      continue;
    }
    report.files++;
    const a = await staging.open();
    for (const run of runsOf(result)) await stageRun(a, known, run, file, addedAt, report);
    if (++inBatch >= BATCH_FILES) {
      await staging.flush();
      inBatch = 0;
    }
  }
  await staging.flush();
  await staging.drop();
  await c.run('CHECKPOINT');
  return report;
}

/** What the store holds, in numbers. */
export async function storeCounts(store: Store): Promise<{ runs: number; hosts: number; devices: number; checks: number }> {
  const r = (await store.c.runAndReadAll(`SELECT (SELECT count(*) FROM runs), (SELECT count(DISTINCT host) FROM runs), (SELECT count(*) FROM devices), (SELECT count(*) FROM checks)`)).getRowsJS()[0]!;
  return { runs: Number(r[0]), hosts: Number(r[1]), devices: Number(r[2]), checks: Number(r[3]) };
}
