// history compare: two selections of the store (`--old driver=13.0*`, `--new driver=13.1*`) compared with the rules
// of `compare` and of the gate (results/compare.ts), at fleet scale.
//
// - A selector is key=glob pairs with the keys of the expectations file, matched as there: `driver=` the driver's
//   version or name and version, `device=` the device's name or id, `host=` the hostname. Its devices are the
//   devices that match; its runs the runs that hold one.
// - Which run counts: per host, the latest run of the selection (by start time). A device of the selection is a
//   device of that run: a host's latest run decides what the host has, so a GPU gone in it is missing even if an
//   earlier run of the same driver had it.
// - What is compared: the hosts that have a run on the new side. A host of the old side with no run on the new
//   side is not compared (a rollout that has not reached it yet): it is counted, never missing. A host's run on
//   the new side is its latest run of the new selection, or a later run (after its old side's run) with no device
//   of the backends its old side had: the GPUs gone after the upgrade, a driver that no longer starts. Then each
//   device of the old side that the host's new run lacks is missing.
// - Devices are matched by host, backend, PCI bus id and name (compare's key of two merged files).
// - The SQL finds the devices where anything could have changed (a verdict, a check's status, a figure beyond the
//   allowed drop, a device missing or new with a failing check, a check the host failed, a pass that an
//   expectation lists as a failure); those are then judged by compare itself (compareResults on each host's
//   devices), so the rules live in one place. Every other device is unchanged, and counted as such.
// - The figures (registered GB/s, registered / page-locked) are judged with their noise, as `compare --also-old`
//   judges them: each side of a device is its run that counts and up to --last-runs - 1 runs before it of the same
//   host, device and driver in that side's selection, each with its rounds where the store kept them (version 3),
//   through results/decision.ts. Where a side has rounds or several runs, the SQL cannot tell an unchanged figure
//   (a host too noisy to judge is told with no drop at all): those devices' figures are decided here, by compare's
//   own bandwidthChange and registrationChange, and a device whose figure is anything but unchanged is judged whole.
import type { DuckDBConnection } from '@duckdb/node-api';
import { BANDWIDTH_CHECK, bandwidthChange, CHANGE_KINDS, type Comparison, compareResults, type Counts, type DeviceComparison, hasRegression, type MoreRuns, registrationChange, regressionList, totalCounts } from '../results/compare.js';
import { type Expectations, globToRegExp, parseExpectations } from '../results/expectations.js';
import { type DropDecision, decideDrop } from '../results/decision.js';
import { InputError } from '../results/read.js';
import type { CheckResult, DeviceWithHost, RunResult } from '../results/types.js';
import { missingColumns } from './columns.js';
import { DEFAULT_LAST_RUNS } from '../results/last-runs.js';
import type { Store } from './store.js';

export interface Selector {
  /** As given: `driver=13.1* host=node-1*`. */
  text: string;
  host?: string;
  driver?: string;
  device?: string;
}

/** Parses a selector (`key=glob` pairs, quoted as in an expectations file); `flag` names it in errors. */
export function parseSelector(text: string, flag: string): Selector {
  let e;
  try {
    e = parseExpectations(`fail * ${text}`, flag).entries[0];
  } catch (err) {
    if (err instanceof InputError) throw new InputError(err.message.replace(`${flag}:1:`, `${flag} ${JSON.stringify(text)}:`).replace(/"fail" needs.*$/, 'expected key=glob pairs'));
    throw err;
  }
  if (!e || (e.host === undefined && e.driver === undefined && e.device === undefined)) {
    throw new InputError(`${flag} ${JSON.stringify(text)}: expected key=glob pairs of driver=, host=, device= (e.g. ${flag} driver=13.1*)`);
  }
  return { text: text.trim(), ...(e.host !== undefined ? { host: e.host } : {}), ...(e.driver !== undefined ? { driver: e.driver } : {}), ...(e.device !== undefined ? { device: e.device } : {}) };
}

/** A side as the engine takes it: which hosts, which devices (by name, id, driver name and version). */
export interface Side {
  label: string;
  host?: (hostname: string) => boolean;
  device?: (d: { name: string; id: string; dname: string; dver: string }) => boolean;
}

/** A selector as a side, its globs matched exactly as the expectations file's (results/expectations.ts). */
export function sideOf(s: Selector): Side {
  const g = (glob: string | undefined): ((x: string) => boolean) | undefined => {
    if (glob === undefined) return undefined;
    const re = globToRegExp(glob);
    return (x) => re.test(x);
  };
  const host = g(s.host);
  const device = g(s.device);
  const driver = g(s.driver);
  return {
    label: s.text,
    ...(host ? { host } : {}),
    ...(device || driver ? { device: (d) => (!device || device(d.name) || device(d.id)) && (!driver || driver(d.dver) || driver(`${d.dname} ${d.dver}`)) } : {}),
  };
}

export interface SideSummary {
  selector: string;
  /** Devices of the store that the selector matches, in any run. */
  matched: number;
  hosts: number;
  devices: number;
  /** Driver name and version of the side's devices, with how many devices each. */
  drivers: { driver: string; devices: number }[];
  from?: string;
  to?: string;
  /**
   * The runs each compared device's figures were judged on (its run that counts and those before it, of the same
   * driver, at most --last-runs): the fewest and the most over the devices with a figure, those runs in all, and
   * how many of them kept their rounds (a store of version 3); absent where no compared device has a figure.
   */
  figureRuns?: { devices: number; least: number; most: number; runs: number; withRounds: number };
}

export interface HistoryComparison {
  old: SideSummary;
  new: SideSummary;
  /** Hosts with a run on both sides; on the new side only (their devices are new). */
  hosts: { compared: number; newOnly: number };
  /** Hosts of the old side with no run on the new side: not compared (the rollout has not reached them). */
  notCompared: { count: number; hosts: string[] };
  /** Hosts whose run on the new side has none of the devices of their old side's backends (gone, or the driver failed). */
  gpusGone: { count: number; hosts: string[] };
  maxDrop: number;
  /** --last-runs: the most runs of a device, on each side, that its figures were judged on. */
  lastRuns: number;
  expectations?: string;
  /** The devices judged by compare (those where something changed); every other one is unchanged. */
  devices: DeviceComparison[];
  counts: Counts;
  /**
   * Each model's registered / page-locked across its devices, per pair of driver versions: the population's shift
   * (populationShifts). A shift beyond --max-drop is the driver's regression however small each device's own drop.
   */
  populations?: PopulationShift[];
}

/** One model's devices, OLD's driver version against NEW's: each device's registered / page-locked, paired, decided as one. */
export interface PopulationShift {
  name: string;
  driver: { old: string; new: string };
  devices: number;
  decision: DropDecision;
}

/** The fewest devices of a model whose shift is judged as a population (fewer: each device is judged alone). */
export const POPULATION_MIN = 5;

/**
 * Each model's shift, paired device by device (the same host and PCI bus id on both sides): the decision of
 * results/decision.ts on the devices' drops as one run's rounds, its centre their median. So a driver that moved the
 * whole population is told even where each device's own drop is within its noise, and one noisy device, however far
 * it fell, moves the median no more than any other (it is judged on its own, as a device).
 */
export function populationShifts(rows: readonly { name: string; oldDriver: string; newDriver: string; old: number; neu: number }[], maxDrop: number): PopulationShift[] {
  const groups = new Map<string, { name: string; driver: { old: string; new: string }; drops: number[] }>();
  for (const r of rows) {
    if (!(r.old > 0 && r.neu > 0 && Number.isFinite(r.old) && Number.isFinite(r.neu))) continue;
    const key = JSON.stringify([r.name, r.oldDriver, r.newDriver]);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { name: r.name, driver: { old: r.oldDriver, new: r.newDriver }, drops: [] }));
    g.drops.push(Math.log(r.old / r.neu));
  }
  const out: PopulationShift[] = [];
  for (const g of groups.values()) {
    if (g.drops.length < POPULATION_MIN) continue;
    // the drops as the baseline's rounds against a candidate of none: the drop of the population is their median
    const decision = decideDrop({ baseline: [{ logs: g.drops }], candidate: [{ logs: g.drops.map(() => 0) }], maxDrop });
    if (decision) out.push({ name: g.name, driver: g.driver, devices: g.drops.length, decision });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name) || a.driver.old.localeCompare(b.driver.old) || a.driver.new.localeCompare(b.driver.new));
}

export interface HistoryCompareOptions {
  /** --max-drop, its default applied by the command (cli/options.ts). */
  maxDrop: number;
  expectations?: Expectations;
  /** --last-runs: the most runs of a device, on each side, that its figures are judged on (default DEFAULT_LAST_RUNS). */
  lastRuns?: number;
}

const SAMPLE = 20;


/** Hosts whose figures are decided at a time (their runs' rounds are read into memory a batch at a time). */
const FIGURE_HOSTS = 1000;

type Row = Record<string, unknown>;
const rows = async (c: DuckDBConnection, sql: string): Promise<Row[]> => (await c.runAndReadAll(sql)).getRowObjectsJS() as Row[];
const s = (x: unknown): string => String(x);
const n = (x: unknown): number => Number(x);
const sqlString = (x: string): string => `'${x.replace(/'/g, "''")}'`;

/** A temp table of string tuples, filled through an appender. */
async function tempTable(c: DuckDBConnection, name: string, columns: string[], values: (string | number)[][]): Promise<void> {
  await c.run(`CREATE OR REPLACE TEMP TABLE ${name}(${columns.join(', ')})`);
  const a = await c.createAppender(name, 'main', 'temp');
  for (const row of values) {
    for (const v of row) {
      if (typeof v === 'number') a.appendInteger(v);
      else a.appendVarchar(v);
    }
    a.endRow();
  }
  a.closeSync();
}

const ORDER = `started_ms DESC NULLS LAST, started_at DESC, run DESC`;

/**
 * The two sides' runs and devices, as temp tables: side_dev (the selected devices of every run), old_run and
 * new_run (per host, the run that counts), o_dev and n_dev (the devices compared: of hosts with a new run).
 */
async function selectSides(c: DuckDBConnection, old: Side, neu: Side, version: number, lastRuns: number): Promise<void> {
  const hosts = (await rows(c, `SELECT DISTINCT host FROM runs`)).map((r) => s(r.host));
  const combos = (await rows(c, `SELECT DISTINCT name, id, dname, dver FROM devices`)).map((r) => ({ name: s(r.name), id: s(r.id), dname: s(r.dname), dver: s(r.dver) }));
  const sideRows = (side: 'old' | 'new', sd: Side): { hosts: string[][]; combos: string[][] } => ({
    hosts: hosts.filter((h) => !sd.host || sd.host(h)).map((h) => [side, h]),
    combos: combos.filter((d) => !sd.device || sd.device(d)).map((d) => [side, d.name, d.id, d.dname, d.dver]),
  });
  const o = sideRows('old', old);
  const nw = sideRows('new', neu);
  await tempTable(c, 'sel_host', ['side VARCHAR', 'host VARCHAR'], [...o.hosts, ...nw.hosts]);
  await tempTable(c, 'sel_combo', ['side VARCHAR', 'name VARCHAR', 'id VARCHAR', 'dname VARCHAR', 'dver VARCHAR'], [...o.combos, ...nw.combos]);
  await c.run(`CREATE OR REPLACE TEMP TABLE side_dev AS
    SELECT sc.side, r.host, r.run, r.started_ms, r.started_at, d.ord, d.backend
    FROM devices d JOIN runs r ON r.run = d.run
    JOIN sel_combo sc ON sc.name = d.name AND sc.id = d.id AND sc.dname = d.dname AND sc.dver = d.dver
    JOIN sel_host sh ON sh.side = sc.side AND sh.host = r.host`);
  await c.run(`CREATE OR REPLACE TEMP TABLE old_run AS
    SELECT DISTINCT host, run, started_ms, started_at FROM side_dev WHERE side = 'old'
    QUALIFY row_number() OVER (PARTITION BY host ORDER BY ${ORDER}) = 1`);
  // the backends of each host's old side: a later run with none of them has lost its GPUs
  await c.run(`CREATE OR REPLACE TEMP TABLE old_backends AS
    SELECT DISTINCT sd.host, sd.backend FROM side_dev sd JOIN old_run o ON o.run = sd.run WHERE sd.side = 'old'`);
  await c.run(`CREATE OR REPLACE TEMP TABLE new_run AS
    SELECT host, run, started_ms, started_at, gone FROM (
      SELECT DISTINCT host, run, started_ms, started_at, false AS gone FROM side_dev WHERE side = 'new'
      UNION ALL
      SELECT r.host, r.run, r.started_ms, r.started_at, true AS gone FROM runs r
      JOIN old_run o ON o.host = r.host
      JOIN sel_host sh ON sh.side = 'new' AND sh.host = r.host
      WHERE r.started_ms > o.started_ms
        AND NOT EXISTS (SELECT 1 FROM devices d JOIN old_backends b ON b.backend = d.backend AND b.host = r.host WHERE d.run = r.run)
    ) QUALIFY row_number() OVER (PARTITION BY host ORDER BY ${ORDER}, gone) = 1`);
  // a store of an older version (opened to read) lacks the columns added since: NULL in their place
  const v = missingColumns(version);
  await c.run(`CREATE OR REPLACE TEMP TABLE o_dev AS
    SELECT o.host, d.*${v} FROM old_run o JOIN side_dev sd ON sd.side = 'old' AND sd.run = o.run JOIN devices d ON d.run = sd.run AND d.ord = sd.ord
    WHERE o.host IN (SELECT host FROM new_run)`);
  await c.run(`CREATE OR REPLACE TEMP TABLE n_dev AS
    SELECT nr.host, d.*${v} FROM new_run nr JOIN side_dev sd ON sd.side = 'new' AND sd.run = nr.run JOIN devices d ON d.run = sd.run AND d.ord = sd.ord`);
  // each compared device's earlier runs on its side (the same host, key and driver, with a figure): the runs its
  // figures are judged on beside the one that counts, the latest lastRuns - 1 of them
  for (const [side, dev, more] of [['old', 'o_dev', 'o_more'], ['new', 'n_dev', 'n_more']] as const) {
    await c.run(`CREATE OR REPLACE TEMP TABLE ${more} AS
      SELECT x.host, d.*${v} FROM ${dev} x
      JOIN side_dev sd ON sd.side = '${side}' AND sd.host = x.host AND sd.run <> x.run
      JOIN devices d ON d.run = sd.run AND d.ord = sd.ord AND d.dkey = x.dkey AND d.dname = x.dname AND d.dver = x.dver
      WHERE x.registered IS NOT NULL AND d.registered IS NOT NULL
      QUALIFY row_number() OVER (PARTITION BY x.host, x.dkey ORDER BY sd.started_ms DESC NULLS LAST, sd.started_at DESC, sd.run DESC) < ${lastRuns}`);
  }
}

/** Per fail entry of the expectations: which devices of the new side it could make an unexpected pass of. */
async function expectationCandidates(c: DuckDBConnection, e: Expectations | undefined): Promise<string> {
  const fails = (e?.entries ?? []).filter((x) => x.kind === 'fail');
  if (fails.length === 0) return 'false';
  const combos = (await rows(c, `SELECT DISTINCT name, id, dname, dver FROM n_dev`)).map((r) => ({ name: s(r.name), id: s(r.id), dname: s(r.dname), dver: s(r.dver) }));
  const hosts = (await rows(c, `SELECT DISTINCT host FROM n_dev`)).map((r) => s(r.host));
  const checks = [...(await rows(c, `SELECT DISTINCT check_id FROM checks WHERE (run, ord) IN (SELECT run, ord FROM n_dev)`)).map((r) => s(r.check_id)), 'verdict'];
  const entryRows: (string | number)[][] = [];
  const comboRows: (string | number)[][] = [];
  const hostRows: (string | number)[][] = [];
  const checkRows: (string | number)[][] = [];
  fails.forEach((f, i) => {
    const g = (glob: string | undefined) => (glob === undefined ? () => true : ((re) => (x: string) => re.test(x))(globToRegExp(glob)));
    const [dev, drv, hst, chk] = [g(f.device), g(f.driver), g(f.host), g(f.check)];
    entryRows.push([i, f.host === undefined ? 'any' : 'listed']);
    for (const d of combos) if ((f.device === undefined || dev(d.name) || dev(d.id)) && (f.driver === undefined || drv(d.dver) || drv(`${d.dname} ${d.dver}`))) comboRows.push([i, d.name, d.id, d.dname, d.dver]);
    if (f.host !== undefined) for (const h of hosts) if (hst(h)) hostRows.push([i, h]);
    for (const id of checks) if (chk(id)) checkRows.push([i, id]);
  });
  await tempTable(c, 'exp_entry', ['entry INTEGER', 'hosts VARCHAR'], entryRows);
  await tempTable(c, 'exp_combo', ['entry INTEGER', 'name VARCHAR', 'id VARCHAR', 'dname VARCHAR', 'dver VARCHAR'], comboRows);
  await tempTable(c, 'exp_host', ['entry INTEGER', 'host VARCHAR'], hostRows);
  await tempTable(c, 'exp_check', ['entry INTEGER', 'check_id VARCHAR'], checkRows);
  // a listed failure that passed (or warned), or a Usable verdict listed as a failure
  await c.run(`CREATE OR REPLACE TEMP TABLE exp_cand AS
    SELECT DISTINCT n.host, n.dkey FROM n_dev n
    JOIN exp_combo x ON x.name = n.name AND x.id = n.id AND x.dname = n.dname AND x.dver = n.dver
    JOIN exp_entry e ON e.entry = x.entry
    WHERE (e.hosts = 'any' OR EXISTS (SELECT 1 FROM exp_host h WHERE h.entry = e.entry AND h.host = n.host))
      AND ((n.vlabel = 'Usable' AND EXISTS (SELECT 1 FROM exp_check k WHERE k.entry = e.entry AND k.check_id = 'verdict'))
        OR EXISTS (SELECT 1 FROM checks ch JOIN exp_check k ON k.check_id = ch.check_id
                   WHERE k.entry = e.entry AND ch.run = n.run AND ch.ord = n.ord AND ch.status IN ('pass', 'warn')))`);
  return `(n.host, n.dkey) IN (SELECT host, dkey FROM exp_cand)`;
}

/** What the store kept of the machine around a device's timed copies (history/store.ts, machineOf), as compare reads it. */
function machineOf(r: Row): Partial<Pick<DeviceWithHost, 'load' | 'link'>> {
  if (r.machine === null || r.machine === undefined) return r.busy === null || r.busy === undefined ? {} : { load: loadOf(r.busy === true, {}) };
  const m = JSON.parse(s(r.machine)) as { why?: string[]; attempts?: number; waitedForQuietMs?: number; quietWaitS?: number; link?: { downtrained: boolean; text?: string } };
  return {
    ...(r.busy !== null && r.busy !== undefined ? { load: loadOf(r.busy === true, m) } : {}),
    ...(m.link ? { link: { gts: 0, width: 0, gbps: 0, maxGts: null, maxWidth: null, downtrained: m.link.downtrained, ...(m.link.text ? { text: m.link.text } : {}) } } : {}),
  };
}

/** A device's load as compare reads it: what the store kept (busy, why, the waits), the rest empty. */
function loadOf(busy: boolean, m: { why?: string[]; attempts?: number; waitedForQuietMs?: number; quietWaitS?: number }): NonNullable<DeviceWithHost['load']> {
  return {
    busy,
    why: m.why ?? [],
    attempts: m.attempts ?? 1,
    waitedForQuietMs: m.waitedForQuietMs ?? 0,
    lockWaitMs: 0,
    timedMs: 0,
    quietWaitS: m.quietWaitS ?? 0,
    processes: [],
    linkMBps: null,
    monitor: null,
    hostCopyGBps: null,
    pressure: { cpuSome: null, memorySome: null },
  };
}

/** The rounds the store kept of a device's pair (version 3), as its timing holds them; none for a figure without its noise. */
function roundsOf(r: Row): Partial<Pick<NonNullable<DeviceWithHost['timing']>, 'bytes' | 'samples'>> {
  if (r.rounds === null || r.rounds === undefined) return {};
  const k = JSON.parse(s(r.rounds)) as { registeredMs: (number | null)[]; pageLockedMs: (number | null)[] };
  const none = (): null[] => k.registeredMs.map(() => null);
  return { ...(r.bytes !== null && r.bytes !== undefined ? { bytes: n(r.bytes) } : {}), samples: { registeredMs: k.registeredMs, pageLockedMs: k.pageLockedMs, stagedMs: none(), hostCopyMs: none() } };
}

/** The device as compare reads it, from its stored row and checks. */
function deviceOf(r: Row, checks: Row[]): DeviceWithHost {
  const verdict: { kind: string; refusal?: string; reason?: string } = { kind: s(r.vkind) };
  if (r.vref !== null) verdict.refusal = s(r.vref);
  if (r.vreason !== null) verdict.reason = s(r.vreason);
  const d = {
    id: s(r.id),
    backend: s(r.backend),
    name: s(r.name),
    pciBusId: r.pci === null ? null : s(r.pci),
    driver: { name: s(r.dname), version: s(r.dver) },
    verdict,
    checks: checks.map((k) => ({ id: s(k.check_id), status: s(k.status), ...(k.detail !== null ? { observed: s(k.detail) } : {}) }) as CheckResult),
    host: { hostname: s(r.host), kernel: '', platform: '' },
    ...timingOf(r),
    ...machineOf(r),
  };
  return d as unknown as DeviceWithHost;
}

/** The figures the store kept of a device, as its timing holds them (none where it has no registered figure). */
function timingOf(r: Row): Partial<Pick<DeviceWithHost, 'timing'>> {
  if (r.registered === null) return {};
  const timing = {
    registeredGBps: n(r.registered),
    ...(r.staged !== null ? { stagedGBps: n(r.staged) } : {}),
    ...(r.page_locked !== null && r.page_locked !== undefined ? { pageLockedGBps: n(r.page_locked) } : {}),
    ...(r.pl_ratio !== null && r.pl_ratio !== undefined ? { pageLockedRatio: n(r.pl_ratio) } : {}),
    ...roundsOf(r),
  };
  // the store keeps what compare judges of the figures, not the rest of a run's timing (its ratio, its rounds' count)
  return { timing: timing as NonNullable<DeviceWithHost['timing']> };
}

/** The columns of a device that its figures' decision reads: what keys it (host, backend, PCI bus id, name), its figures, its rounds, its machine. */
const FIGURE_COLUMNS = ['host', 'dkey', 'run', 'ord', 'backend', 'name', 'pci', 'registered', 'staged', 'page_locked', 'pl_ratio', 'busy', 'machine', 'bytes', 'rounds'] as const;
const figureColumns = (alias: string): string => FIGURE_COLUMNS.map((col) => `${alias}.${col}`).join(', ');

/**
 * A device as the figures' decision reads it, from FIGURE_COLUMNS: its key, its figures with their rounds, and what
 * its run saw of the machine (compare's bandwidthChange and registrationChange, and otherRuns's keys, read no more).
 */
function figureDevice(r: Row): DeviceWithHost {
  const d = { backend: s(r.backend), name: s(r.name), pciBusId: r.pci === null ? null : s(r.pci), host: { hostname: s(r.host), kernel: '', platform: '' }, checks: [], ...timingOf(r), ...machineOf(r) };
  // the rest of a device (its verdict, checks, driver) is never read of a run beside the one that counts
  return d as unknown as DeviceWithHost;
}

const runOf = (host: string, devices: DeviceWithHost[]): RunResult =>
  ({ schemaVersion: 1, tool: { name: 'history', version: '' }, host: { hostname: host, kernel: '', platform: '' }, startedAt: '', finishedAt: '', options: {}, devices }) as RunResult;

async function summary(c: DuckDBConnection, side: 'old' | 'new', label: string): Promise<SideSummary> {
  const table = side === 'old' ? 'old_run' : 'new_run';
  const head = (await rows(c, `SELECT count(*) AS hosts, min(started_at) AS "from", max(started_at) AS "to", (SELECT count(*) FROM side_dev WHERE side = '${side}') AS matched FROM ${table}`))[0]!;
  const drivers = await rows(c, `SELECT d.dname || ' ' || d.dver AS driver, count(*) AS devices FROM ${table} x JOIN side_dev sd ON sd.side = '${side}' AND sd.run = x.run JOIN devices d ON d.run = sd.run AND d.ord = sd.ord GROUP BY ALL ORDER BY devices DESC, driver`);
  const [dev, more] = side === 'old' ? ['o_dev', 'o_more'] : ['n_dev', 'n_more'];
  const runs = (
    await rows(c, `SELECT count(*) AS devices, min(k) AS least, max(k) AS most, sum(k) AS runs, sum(k_rounds) AS with_rounds FROM (
      SELECT 1 + coalesce(m.k, 0) AS k, CASE WHEN x.rounds IS NOT NULL THEN 1 ELSE 0 END + coalesce(m.k_rounds, 0) AS k_rounds FROM ${dev} x
      LEFT JOIN (SELECT host, dkey, count(*) AS k, count(rounds) AS k_rounds FROM ${more} GROUP BY ALL) m ON m.host = x.host AND m.dkey = x.dkey
      WHERE x.registered IS NOT NULL)`)
  )[0]!;
  return {
    selector: label,
    matched: n(head.matched),
    hosts: n(head.hosts),
    devices: drivers.reduce((t, r) => t + n(r.devices), 0),
    drivers: drivers.map((r) => ({ driver: s(r.driver), devices: n(r.devices) })),
    ...(head.from !== null ? { from: s(head.from), to: s(head.to) } : {}),
    ...(n(runs.devices) > 0 ? { figureRuns: { devices: n(runs.devices), least: n(runs.least), most: n(runs.most), runs: n(runs.runs), withRounds: n(runs.with_rounds) } } : {}),
  };
}

/** The temp table `pairs`: every pair of devices of a compared host; judged by compare when anything could have changed. */
async function pairDevices(c: DuckDBConnection, expCand: string, maxDrop: number): Promise<void> {
  // compare's exceedsDrop, with the same operations in the same order (so rounding alike): a fall, or the mirror
  // image of a rise, of more than maxDrop of the old figure
  const exceeds = (neu: string): string => `((o.registered - ${neu}) / o.registered - CAST(${maxDrop} AS DOUBLE) > 1e-9)`;
  // the same of registered / page-locked (a busy machine makes no difference here: what compare says of it, it
  // says of a pair judged for its figures)
  const exceedsRatio = (neu: string): string => `((o.pl_ratio - ${neu}) / o.pl_ratio - CAST(${maxDrop} AS DOUBLE) > 1e-9)`;
  await c.run(`CREATE OR REPLACE TEMP TABLE pairs AS
    SELECT coalesce(n.host, o.host) AS host, o.run AS orun, o.ord AS oord, n.run AS nrun, n.ord AS nord,
      CASE
        WHEN n.run IS NULL THEN true
        WHEN ${expCand} THEN true
        WHEN o.run IS NULL THEN n.failing OR n.has_error OR n.dup_checks
        ELSE o.vlabel <> n.vlabel OR o.sig <> n.sig OR n.has_error OR o.dup_checks OR n.dup_checks
          OR (o.registered IS NULL) <> (n.registered IS NULL)
          OR (o.registered IS NOT NULL AND NOT (o.registered > 0 AND NOT ${exceeds('n.registered')} AND NOT ${exceeds('(2 * o.registered - n.registered)')}))
          OR (o.pl_ratio IS NULL) <> (n.pl_ratio IS NULL)
          OR (o.pl_ratio IS NOT NULL AND NOT (o.pl_ratio > 0 AND NOT ${exceedsRatio('n.pl_ratio')} AND NOT ${exceedsRatio('(2 * o.pl_ratio - n.pl_ratio)')}))
      END AS judged,
      -- figures with their noise (rounds, or several runs on a side): decided by judgeFigures, not by the SQL
      (o.run IS NOT NULL AND n.run IS NOT NULL AND o.registered IS NOT NULL AND n.registered IS NOT NULL
        AND (o.rounds IS NOT NULL OR n.rounds IS NOT NULL
          OR EXISTS (SELECT 1 FROM o_more m WHERE m.host = o.host AND m.dkey = o.dkey)
          OR EXISTS (SELECT 1 FROM n_more m WHERE m.host = n.host AND m.dkey = n.dkey))) AS noise,
      CASE WHEN o.run IS NULL THEN 'new' ELSE 'unchanged' END AS kind,
      1 + CASE WHEN coalesce(o.registered, n.registered) IS NULL THEN 0 ELSE 1 END + CASE WHEN coalesce(o.pl_ratio, n.pl_ratio) IS NULL THEN 0 ELSE 1 END + coalesce(n.nchecks, 0) AS entries
    FROM o_dev o FULL OUTER JOIN n_dev n ON o.host = n.host AND o.dkey = n.dkey`);
}

/** A device's other runs, by "host/dkey": those of OLD's side (olds) and NEW's (news), in the store's rows. */
type MoreRows = Map<string, { olds: Row[]; news: Row[] }>;

/** The earlier runs (o_more, n_more) of the devices of the pairs `where` picks, by "host/dkey". */
async function moreRows(c: DuckDBConnection, where: string): Promise<MoreRows> {
  const out: MoreRows = new Map();
  const list = await rows(c, `
    SELECT 'old' AS side, ${figureColumns('m')} FROM o_more m WHERE (m.host, m.dkey) IN (SELECT p.host, o.dkey FROM pairs p JOIN o_dev o ON o.run = p.orun AND o.ord = p.oord WHERE ${where})
    UNION ALL BY NAME
    SELECT 'new' AS side, ${figureColumns('m')} FROM n_more m WHERE (m.host, m.dkey) IN (SELECT p.host, x.dkey FROM pairs p JOIN n_dev x ON x.run = p.nrun AND x.ord = p.nord WHERE ${where})`);
  for (const r of list) {
    const key = `${s(r.host)}/${s(r.dkey)}`;
    let e = out.get(key);
    if (!e) out.set(key, (e = { olds: [], news: [] }));
    e[r.side === 'old' ? 'olds' : 'news'].push(r);
  }
  return out;
}

/**
 * The pairs whose figures carry their noise (`noise`: rounds, or several runs on a side) and that nothing else
 * marked judged: their figures decided by compare's own bandwidthChange and registrationChange with the sides'
 * other runs, a batch of hosts at a time; a pair whose figure is anything but unchanged is marked judged.
 */
async function judgeFigures(c: DuckDBConnection, maxDrop: number): Promise<void> {
  const hosts = (await rows(c, `SELECT DISTINCT host FROM pairs WHERE noise AND NOT judged ORDER BY host`)).map((r) => s(r.host));
  const marked: (string | number)[][] = [];
  for (let at = 0; at < hosts.length; at += FIGURE_HOSTS) {
    await tempTable(c, 'fig_host', ['host VARCHAR'], hosts.slice(at, at + FIGURE_HOSTS).map((h) => [h]));
    const where = `p.noise AND NOT p.judged AND p.host IN (SELECT host FROM fig_host)`;
    // each side's rows as the engine gives them (the figures exactly as judgedDevices reads them), paired by host and key
    const olds = await rows(c, `SELECT ${figureColumns('o')} FROM pairs p JOIN o_dev o ON o.run = p.orun AND o.ord = p.oord WHERE ${where}`);
    const news = new Map((await rows(c, `SELECT ${figureColumns('x')} FROM pairs p JOIN n_dev x ON x.run = p.nrun AND x.ord = p.nord WHERE ${where}`)).map((x) => [`${s(x.host)}/${s(x.dkey)}`, x]));
    const more = await moreRows(c, where);
    for (const r of olds) {
      const key = `${s(r.host)}/${s(r.dkey)}`;
      const m = more.get(key);
      const runs: MoreRuns = { olds: (m?.olds ?? []).map(figureDevice), news: (m?.news ?? []).map(figureDevice) };
      const o = figureDevice(r);
      const x = figureDevice(news.get(key)!);
      const changes = [bandwidthChange(o, x, maxDrop, runs), registrationChange(o, x, maxDrop, runs)];
      if (changes.some((ch) => ch !== undefined && ch.kind !== 'unchanged')) marked.push([n(r.run), n(r.ord)]);
    }
  }
  await tempTable(c, 'fig_judged', ['orun INTEGER', 'oord INTEGER'], marked);
  await c.run(`UPDATE pairs SET judged = true WHERE (orun, oord) IN (SELECT orun, oord FROM fig_judged)`);
}

/** The judged pairs' devices, per host, each side in its run's order, with their checks (by "run/ord"). */
async function judgedRows(c: DuckDBConnection): Promise<{ byHost: Map<string, { old: Row[]; new: Row[] }>; checksOf: Map<string, Row[]> }> {
  const devRows = await rows(c, `
    SELECT 'old' AS side, o.* FROM o_dev o JOIN pairs p ON p.judged AND p.orun = o.run AND p.oord = o.ord
    UNION ALL BY NAME
    SELECT 'new' AS side, n.* FROM n_dev n JOIN pairs p ON p.judged AND p.nrun = n.run AND p.nord = n.ord`);
  const checkRows = await rows(c, `
    SELECT ch.run, ch.ord, ch.check_id, ch.status, ch.detail FROM checks ch
    WHERE (ch.run, ch.ord) IN (SELECT orun, oord FROM pairs WHERE judged AND orun IS NOT NULL UNION ALL SELECT nrun, nord FROM pairs WHERE judged AND nrun IS NOT NULL)
    ORDER BY ch.run, ch.ord, ch.pos`);
  const checksOf = new Map<string, Row[]>();
  for (const k of checkRows) {
    const key = `${s(k.run)}/${s(k.ord)}`;
    let list = checksOf.get(key);
    if (!list) checksOf.set(key, (list = []));
    list.push(k);
  }
  const byHost = new Map<string, { old: Row[]; new: Row[] }>();
  for (const r of devRows) {
    const h = s(r.host);
    let e = byHost.get(h);
    if (!e) byHost.set(h, (e = { old: [], new: [] }));
    e[r.side === 'old' ? 'old' : 'new'].push(r);
  }
  return { byHost, checksOf };
}

/** The judged pairs, per host in host order, judged by compare itself. */
async function judgedDevices(c: DuckDBConnection, maxDrop: number, expectations: HistoryCompareOptions['expectations']): Promise<DeviceComparison[]> {
  const { byHost, checksOf } = await judgedRows(c);
  const more = await moreRows(c, 'p.judged');
  const devices: DeviceComparison[] = [];
  for (const host of [...byHost.keys()].sort()) {
    const e = byHost.get(host)!;
    const build = (list: Row[]): DeviceWithHost[] => list.sort((a, b) => n(a.ord) - n(b.ord)).map((r) => deviceOf(r, checksOf.get(`${s(r.run)}/${s(r.ord)}`) ?? []));
    // each side's other runs of its devices, a run as a results file of its own (its figures alone: no check is read)
    const otherRuns = (side: 'olds' | 'news'): RunResult[] => {
      const byRun = new Map<string, Row[]>();
      for (const r of e[side === 'olds' ? 'old' : 'new']) for (const x of more.get(`${host}/${s(r.dkey)}`)?.[side] ?? []) byRun.set(s(x.run), [...(byRun.get(s(x.run)) ?? []), x]);
      return [...byRun.values()].map((list) => runOf(host, list.sort((a, b) => n(a.ord) - n(b.ord)).map(figureDevice)));
    };
    const moreRuns = { moreBaselines: otherRuns('olds'), moreCandidates: otherRuns('news') };
    const cmp = compareResults(runOf(host, build(e.old)), runOf(host, build(e.new)), { maxDrop, ...(expectations ? { expectations } : {}), ...moreRuns });
    for (const d of cmp.devices) {
      // one side empty: compare matched without the host; the key names it all the same
      if (!cmp.matchedByHost) d.key = `${host}/${d.key}`;
      d.host = host;
      devices.push(d);
    }
  }
  return devices;
}

/** Hosts compared and new-only, and samples of the hosts not compared and of those whose GPUs are gone. */
async function hostFigures(c: DuckDBConnection): Promise<Pick<HistoryComparison, 'hosts' | 'notCompared' | 'gpusGone'>> {
  const hostCounts = (await rows(c, `SELECT count(*) FILTER (WHERE host IN (SELECT host FROM old_run)) AS compared, count(*) FILTER (WHERE host NOT IN (SELECT host FROM old_run)) AS new_only FROM new_run`))[0]!;
  const sample = async (sql: string): Promise<{ count: number; hosts: string[] }> => {
    const list = (await rows(c, sql)).map((r) => s(r.host));
    return { count: list.length, hosts: list.slice(0, SAMPLE) };
  };
  const notCompared = await sample(`SELECT host FROM old_run WHERE host NOT IN (SELECT host FROM new_run) ORDER BY host`);
  const gpusGone = await sample(`SELECT host FROM new_run WHERE gone ORDER BY host`);
  return { hosts: { compared: n(hostCounts.compared), newOnly: n(hostCounts.new_only) }, notCompared, gpusGone };
}

/** Compares two sides of the store (see the rules at the top of this file). */
export async function compareSides(store: Store, old: Side, neu: Side, o: HistoryCompareOptions): Promise<HistoryComparison> {
  const { c } = store;
  const { maxDrop } = o;
  const lastRuns = o.lastRuns ?? DEFAULT_LAST_RUNS;
  await selectSides(c, old, neu, store.version, lastRuns);
  const expCand = await expectationCandidates(c, o.expectations);
  await pairDevices(c, expCand, maxDrop);
  await judgeFigures(c, maxDrop);
  const rest = await rows(c, `SELECT kind, sum(entries) AS entries FROM pairs WHERE NOT judged GROUP BY kind`);
  const devices = await judgedDevices(c, maxDrop, o.expectations);
  const counts = totalCounts(devices);
  for (const r of rest) counts[r.kind === 'new' ? 'new' : 'unchanged'] += n(r.entries);

  const { hosts, notCompared, gpusGone } = await hostFigures(c);
  const shifts = (
    await rows(c, `SELECT o.name, o.dname || ' ' || o.dver AS odrv, n.dname || ' ' || n.dver AS ndrv, o.pl_ratio AS old, n.pl_ratio AS new FROM o_dev o JOIN n_dev n ON o.host = n.host AND o.dkey = n.dkey WHERE o.pl_ratio IS NOT NULL AND n.pl_ratio IS NOT NULL`)
  ).map((r) => ({ name: s(r.name), oldDriver: s(r.odrv), newDriver: s(r.ndrv), old: n(r.old), neu: n(r.new) }));
  const populations = populationShifts(shifts, maxDrop);
  const result: HistoryComparison = {
    old: await summary(c, 'old', old.label),
    new: await summary(c, 'new', neu.label),
    hosts,
    notCompared,
    gpusGone,
    maxDrop,
    lastRuns,
    ...(o.expectations ? { expectations: o.expectations.file } : {}),
    devices,
    counts,
    ...(populations.length ? { populations } : {}),
  };
  for (const t of ['sel_host', 'sel_combo', 'side_dev', 'old_run', 'old_backends', 'new_run', 'o_dev', 'n_dev', 'o_more', 'n_more', 'fig_host', 'fig_judged', 'pairs', 'exp_entry', 'exp_combo', 'exp_host', 'exp_check', 'exp_cand']) await c.run(`DROP TABLE IF EXISTS temp.${t}`);
  return result;
}

/** The comparison as compare's own Comparison (for regressionList, countsLine...). */
export function asComparison(h: HistoryComparison): Comparison {
  return { new: { hostname: 'history', startedAt: '', finishedAt: '', tool: '', devices: h.new.devices }, matchedByHost: true, maxDrop: h.maxDrop, devices: h.devices, counts: h.counts };
}

/** A regression of a device, or of a model's whole population (populationShifts). */
export const historyHasRegression = (h: HistoryComparison): boolean => hasRegression(asComparison(h)) || (h.populations ?? []).some((p) => p.decision.outcome === 'regression');

/** The `--json` form: compare's regressions (kind, host, pciBusId, check, both sides, line) and the sides. */
export function historyJson(h: HistoryComparison): string {
  const c = asComparison(h);
  return `${JSON.stringify(
    {
      format: 'mapped-reg-conformance history comparison',
      version: 1,
      regression: hasRegression(c),
      regressions: regressionList(c),
      old: h.old,
      new: h.new,
      hosts: h.hosts,
      notCompared: h.notCompared,
      gpusGone: h.gpusGone,
      maxDrop: h.maxDrop,
      lastRuns: h.lastRuns,
      ...(h.expectations ? { expectations: h.expectations } : {}),
      counts: h.counts,
      ...(h.populations ? { populations: h.populations } : {}),
    },
    null,
    2,
  )}\n`;
}

export { BANDWIDTH_CHECK, CHANGE_KINDS, sqlString };
