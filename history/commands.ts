// The `history` commands (cli/main.ts loads this module only when one of them runs; it loads the store, and
// DuckDB with it, when the command starts). DuckDB (@duckdb/node-api, ~70 MB of native library) is an optional
// peer dependency: the gate never needs it, so a plain install (npx, npm install -g, the container image) has
// none, and a history command then says in one line how to add it (exit 2).
import { rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { changeLine, type Comparison, countsLine, deviceName, failingChanges, outcomeWord } from '../results/compare.js';
import type { Expectations } from '../results/expectations.js';
import { fileIdentity } from '../results/file-identity.js';
import { InputError } from '../results/read.js';
import { matrixRunFiles } from '../results/runtime-matrix.js';
import { terminalSafe } from '../reporters/safe-text.js';
import { asComparison, compareSides, historyHasRegression, historyJson, type HistoryComparison, parseSelector, sideOf, type SideSummary } from './fleet-compare.js';
import { historyReport } from './history-page.js';
import { percent, plural } from '../results/format.js';
import { packageJson } from '../results/package-root.js';

/** The store's engine, an optional peer dependency. */
export const ENGINE = '@duckdb/node-api';

/** The engine's version this package pins (its own package.json's peerDependencies), or undefined. */
export function pinnedEngineVersion(): string | undefined {
  return packageJson().peerDependencies?.[ENGINE];
}

/** Whether an import failed because the engine (or its native binding, a package of its own) is not installed. */
export function isEngineMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && /@duckdb\//.test(String((e as Error).message));
}

/** The one line a history command says when the engine is missing (exit 2). */
export function engineMissingMessage(): string {
  const version = pinnedEngineVersion();
  return `history needs the DuckDB engine (${ENGINE}), an optional dependency that this install does not have: npm install ${ENGINE}${version ? `@${version}` : ''} where mapped-reg-conformance is installed (npm install -g for a global install)`;
}

/** The store's module, loaded (and DuckDB with it) when a history command starts; bad input when DuckDB is missing. */
async function storeModule(): Promise<typeof import('./store.js')> {
  try {
    return await import('./store.js');
  } catch (e) {
    if (isEngineMissing(e)) throw new InputError(engineMissingMessage());
    throw e;
  }
}

type Out = (text: string) => void;

/** Failing changes listed in the text form; the rest are counted (`--json` lists every one). */
const SHOWN = 200;


/** `history add`: returns the exit status (2 when a file was refused; the good ones are added all the same). */
export async function historyAdd(a: { db: string; paths: string[] }, out: Out, err: Out): Promise<number> {
  const { addFiles, openStore, resultFiles, storeCounts, storeError } = await storeModule();
  // a matrix of runtimes (runtimes --out DIR) adds each runtime's results file it names, each under its own driver version
  const files = resultFiles(a.paths.flatMap((p) => matrixRunFiles(p) ?? [p]));
  // the store is never read as a results file (nor a results file made the store)
  const store_ = fileIdentity(a.db);
  const same = files.find((f) => fileIdentity(f) === store_);
  if (same !== undefined) throw new InputError(`--db ${a.db}: the same file as the results file ${same}: the store is never one of the files added to it`);
  const t0 = performance.now();
  const store = await openStore(a.db, 'write');
  try {
    const r = await addFiles(store, files, (line) => err(`mapped-reg-conformance: ${terminalSafe(line, false)}\n`));
    if (store.created && r.files === 0) {
      // every file refused: the store this call made holds nothing, and is not left behind
      store.close();
      for (const f of [resolve(a.db), `${resolve(a.db)}.wal`]) rmSync(f, { force: true });
      out(`added nothing: every file was refused (above); no store was made at ${terminalSafe(a.db, false)}\n`);
      return 2;
    }
    const total = await storeCounts(store);
    store.close();
    const size = statSync(resolve(a.db)).size;
    out(
      `added ${plural(r.runs.added, 'run')} (${plural(r.devices.added, 'device')}, ${plural(r.checks, 'check')}) from ${plural(r.files, 'file')}` +
        `${r.runs.known || r.devices.known ? `; already in the store: ${plural(r.runs.known, 'run')} (${plural(r.devices.known, 'device')})` : ''}` +
        `${r.refused.length ? `; refused ${plural(r.refused.length, 'file')} (above)` : ''} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n` +
        `${terminalSafe(a.db, false)}: ${plural(total.runs, 'run')} of ${plural(total.hosts, 'host')}, ${plural(total.devices, 'device')}, ${plural(total.checks, 'check')}, ${(size / 1e6).toFixed(1)} MB\n`,
    );
    return r.refused.length ? 2 : 0;
  } catch (e) {
    try {
      store.close();
    } catch {
      // closed already, or the engine failed: the error below says why
    }
    throw storeError(a.db, e);
  }
}

const sideLine = (which: 'OLD' | 'NEW', s: SideSummary, lastRuns: number): string => {
  const drivers = s.drivers.slice(0, 4).map((d) => `${d.driver} (${d.devices})`).join(', ') + (s.drivers.length > 4 ? `, and ${s.drivers.length - 4} more` : '');
  return `${which}: ${s.selector}: ${plural(s.hosts, 'host')}, ${plural(s.devices, 'device')}${drivers ? `: ${drivers}` : ''}${s.from ? `; runs from ${s.from} to ${s.to}` : ''}${figureRunsText(s.figureRuns, lastRuns)}`;
};

/** The runs a side's figures were judged on, per device: `; figures judged on 10 runs a device (its driver's last, at most 10): 80 runs, each with its rounds`. */
function figureRunsText(f: SideSummary['figureRuns'], lastRuns: number): string {
  if (!f) return '';
  const each = f.least === f.most ? plural(f.most, 'run') : `${f.least} to ${f.most} runs`;
  const rounds = f.withRounds === f.runs ? 'each with its rounds' : f.withRounds === 0 ? 'none with its rounds: figures without their noise' : `${f.withRounds} with their rounds`;
  return `; figures judged on ${each} a device (its driver's last, at most ${lastRuns}): ${plural(f.runs, 'run')}, ${rounds}`;
}

/** How many of the missing checks and devices the text names. */
const MISSING_SHOWN = 20;

/**
 * What the counts call "missing", named (at most MISSING_SHOWN names): per device, the checks NEW lacks, or the
 * device once when it is gone whole; undefined when nothing is missing.
 */
function missingText(c: Comparison): string | undefined {
  let left = MISSING_SHOWN;
  let hidden = 0;
  const parts: string[] = [];
  for (const d of c.devices) {
    const names = d.presence === 'missing' ? ['the whole device'] : d.changes.filter((ch) => ch.kind === 'missing').map((ch) => ch.check);
    if (names.length === 0) continue;
    const shown = names.slice(0, Math.max(0, left));
    hidden += names.length - shown.length;
    left -= shown.length;
    if (shown.length) parts.push(`${deviceName(d)}: ${shown.join(', ')}`);
  }
  if (parts.length === 0 && hidden === 0) return undefined;
  return `${parts.join('; ')}${hidden ? `; and ${hidden} more` : ''}`;
}

/** The comparison as text: both sides, who was compared, each failing change on a line (capped), the missing named (capped), the totals. */
export function formatHistory(h: HistoryComparison): string {
  const c = asComparison(h);
  const out: string[] = [sideLine('OLD', h.old, h.lastRuns), sideLine('NEW', h.new, h.lastRuns)];
  out.push(`compared: ${plural(h.hosts.compared, 'host')} on both sides${h.hosts.newOnly ? `, ${plural(h.hosts.newOnly, 'host')} only on NEW (their devices are new)` : ''}; devices matched by host, backend, PCI bus id and name`);
  if (h.notCompared.count) out.push(`not compared: ${plural(h.notCompared.count, 'host')} of OLD with no run on NEW (not upgraded yet?): ${h.notCompared.hosts.join(', ')}${h.notCompared.count > h.notCompared.hosts.length ? ', ...' : ''}`);
  if (h.gpusGone.count) out.push(`GPUs gone: ${plural(h.gpusGone.count, 'host')} whose last run has none of its old devices' backends: ${h.gpusGone.hosts.join(', ')}${h.gpusGone.count > h.gpusGone.hosts.length ? ', ...' : ''}`);
  if (h.expectations) out.push(`expectations: ${h.expectations}`);
  out.push(`registered GB/s: a drop of more than ${percent(h.maxDrop)} is a regression`);
  const failing = failingChanges(c);
  if (failing.length) {
    out.push('');
    for (const { device, change } of failing.slice(0, SHOWN)) out.push(`  ${change.kind === 'regression' ? 'REGRESSION' : change.kind === 'error' ? 'HOST ERROR' : 'UNEXPECTED PASS'}  ${changeLine(device, change)}`);
    if (failing.length > SHOWN) out.push(`  and ${failing.length - SHOWN} more (--json lists every one)`);
  }
  const missing = missingText(c);
  if (missing) out.push('', `missing (OLD had them, NEW has not): ${missing}`);
  // each model's population, OLD's driver against NEW's: a shift of all of them is the driver's, however small each one's
  const shifts = h.populations ?? [];
  if (shifts.length) out.push('');
  for (const p of shifts) {
    const word = p.decision.outcome === 'regression' ? 'REGRESSION' : p.decision.outcome === 'too-noisy' ? 'TOO NOISY (the hosts)' : 'no shift';
    out.push(`  population ${p.name}, ${p.driver.old} -> ${p.driver.new}, ${plural(p.devices, 'device')}: registered / page-locked ${word}: ${p.decision.why}${p.decision.noiseText ? ` (${p.decision.noiseText})` : ''}`);
  }
  const populationRegressed = shifts.some((p) => p.decision.outcome === 'regression');
  out.push('', `${countsLine(h.counts)}: ${populationRegressed && outcomeWord(h.counts) === 'no regression' ? 'REGRESSION (a population shift)' : outcomeWord(h.counts)}`);
  return `${out.join('\n')}\n`;
}

export interface CompareArgs {
  db: string;
  old: string;
  new: string;
  json: boolean;
  maxDrop: number;
  lastRuns: number;
  expectations?: Expectations;
}

/** `history compare`: returns the exit status (1 on a regression). */
export async function historyCompare(a: CompareArgs, out: Out): Promise<number> {
  const old = parseSelector(a.old, '--old');
  const neu = parseSelector(a.new, '--new');
  const { openStore, withStoreErrors } = await storeModule();
  const store = await openStore(a.db, 'read');
  let h: HistoryComparison;
  try {
    h = await withStoreErrors(a.db, () => compareSides(store, sideOf(old), sideOf(neu), { maxDrop: a.maxDrop, lastRuns: a.lastRuns, ...(a.expectations ? { expectations: a.expectations } : {}) }));
  } finally {
    store.close();
  }
  // a selector that matches no device of the store is a mistake (a typo), not a fleet whose every device is gone
  if (h.old.matched === 0) throw new InputError(`--old ${JSON.stringify(a.old)}: no device of any run in ${a.db} matches it`);
  if (h.new.matched === 0) throw new InputError(`--new ${JSON.stringify(a.new)}: no device of any run in ${a.db} matches it (a driver that fails to start on every host leaves no device of its version: compare with --new 'host=*' then)`);
  // what the store holds came from files and drivers: its control characters never reach the terminal raw
  out(a.json ? historyJson(h) : terminalSafe(formatHistory(h)));
  return historyHasRegression(h) ? 1 : 0;
}

export interface ReportArgs {
  db: string;
  html: string;
  maxDrop: number;
  lastRuns: number;
  expectations?: Expectations;
}

/** `history report`: writes the page; returns the bytes written. */
export async function historyReportCommand(a: ReportArgs, write: (file: string, text: string) => void, out: Out): Promise<void> {
  const { openStore, withStoreErrors } = await storeModule();
  const store = await openStore(a.db, 'read');
  let page: string;
  try {
    page = await withStoreErrors(a.db, () => historyReport(store, { maxDrop: a.maxDrop, lastRuns: a.lastRuns, ...(a.expectations ? { expectations: a.expectations } : {}) }));
  } finally {
    store.close();
  }
  write(resolve(a.html), page);
  out(`fleet report of ${terminalSafe(a.db, false)} written to ${terminalSafe(a.html, false)} (${(Buffer.byteLength(page) / 1e3).toFixed(0)} kB)\n`);
}
