// The runtimes side by side as one view (docs/runtimes.md): a row per runtime and device (verdict, registered GB/s,
// registered / page-locked, the checks that did not pass), or one row for a runtime that did not load, did not
// start or found no device, with its reason; and the decision: each candidate passes when its run's gate against
// the baseline runtime passed (results/gate.ts decided it in that run, by the rules of --baseline). Read by the
// terminal, HTML and JUnit reporters of the matrix and written as runtime-matrix.json.
import { readFileSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { verdictLabel } from './compare.js';
import { plural } from './format.js';
import type { RuntimeBackend, RuntimeProbe, RuntimeRecord } from './runtime.js';
import { whyNotStarted } from './runtime.js';
import type { RunResult } from './types.js';

/** The matrix file's kind: `history add` of it adds each runtime's results file it names. */
export const MATRIX_KIND = 'runtime-matrix';
/** The matrix file's name in the output folder. */
export const MATRIX_FILE = 'runtime-matrix.json';

/** One runtime's part: what was found, and what its run left (none for a runtime that did not load). */
export interface RuntimeRun {
  readonly runtime: RuntimeRecord;
  readonly probe: RuntimeProbe;
  /** Its results file, relative to the matrix file's folder. */
  readonly file?: string;
  readonly result?: RunResult;
  /** Its run's exit status (null: ended by a signal), or undefined when none was started. */
  readonly exitCode?: number | null;
  /** Its run's last line on stderr, when it wrote no results. */
  readonly problem?: string;
}

export type RowKind = 'device' | 'not-loaded' | 'not-started' | 'no-device' | 'not-run';

export interface MatrixRow {
  readonly runtime: string;
  readonly backend: RuntimeBackend;
  readonly role: 'baseline' | 'candidate';
  readonly version?: string;
  readonly path: string;
  readonly kind: RowKind;
  /** A device row's device. */
  readonly device?: { readonly id: string; readonly name: string; readonly pciBusId: string | null };
  readonly verdict?: string;
  readonly registeredGBps?: number;
  readonly pageLockedRatio?: number;
  /** The checks that did not pass (not pass, not skip): `id status`. */
  readonly notPassed: readonly string[];
  /** Why a runtime's row has no device. */
  readonly reason?: string;
}

/** A candidate's decision against its backend's baseline. */
export interface CandidateDecision {
  readonly runtime: string;
  readonly backend: RuntimeBackend;
  readonly baseline: string;
  readonly pass: boolean;
  /** Why it is not as good, one line each (the gate's reasons, or why it did not run). */
  readonly reasons: readonly string[];
}

export interface RuntimeMatrix {
  readonly kind: typeof MATRIX_KIND;
  readonly version: 1;
  /** Each backend's baseline runtime. */
  readonly baselines: readonly { readonly backend: RuntimeBackend; readonly runtime: string }[];
  readonly rows: readonly MatrixRow[];
  readonly candidates: readonly CandidateDecision[];
  /** Every candidate is at least as good as its baseline. */
  readonly pass: boolean;
  /** The candidates that regressed, by label. */
  readonly regressed: readonly string[];
  /** Each runtime's results file, relative to the matrix file (what `history add` of the matrix adds). */
  readonly runs: readonly { readonly runtime: string; readonly file: string }[];
}

/** The reason a runtime's run has no device to show: its load, its start, its run, or its discovery's note. */
function noDeviceRow(r: RuntimeRun): Pick<MatrixRow, 'kind' | 'reason'> {
  if (!r.probe.loaded) return { kind: 'not-loaded', reason: r.probe.reason ?? 'did not load' };
  if (!r.probe.started) {
    const why = whyNotStarted(r.probe);
    return { kind: 'not-started', reason: `${r.probe.reason ?? 'did not start'}${why ? `: ${why}` : ''}` };
  }
  if (!r.result) return { kind: 'not-run', reason: r.problem ?? `its run wrote no results (exit ${r.exitCode ?? 'by a signal'})` };
  const report = r.result.backends?.find((b) => b.backend === r.runtime.backend);
  if (report?.initError) return { kind: 'not-started', reason: `did not start: ${report.initError.message}` };
  return { kind: 'no-device', reason: report?.note ?? 'no device' };
}

function rowsOf(r: RuntimeRun): MatrixRow[] {
  const base = { runtime: r.runtime.label, backend: r.runtime.backend, role: r.runtime.role, ...(r.runtime.version ? { version: r.runtime.version } : {}), path: r.runtime.path };
  const devices = r.result?.devices.filter((d) => d.backend === r.runtime.backend) ?? [];
  if (devices.length === 0) return [{ ...base, ...noDeviceRow(r), notPassed: [] }];
  return devices.map((d) => ({
    ...base,
    kind: 'device' as const,
    device: { id: d.id, name: d.name, pciBusId: d.pciBusId },
    verdict: verdictLabel(d.verdict),
    ...(d.timing ? { registeredGBps: d.timing.registeredGBps } : {}),
    ...(d.timing?.pageLockedRatio !== undefined ? { pageLockedRatio: d.timing.pageLockedRatio } : {}),
    notPassed: d.checks.filter((c) => c.status !== 'pass' && c.status !== 'skip').map((c) => `${c.id} ${c.status}`),
  }));
}

/** A candidate's decision: its run's gate against the baseline, or why it has none. */
function decision(r: RuntimeRun, baseline: string): CandidateDecision {
  const base = { runtime: r.runtime.label, backend: r.runtime.backend, baseline };
  const gate = r.result?.gate;
  if (gate) return { ...base, pass: gate.pass, reasons: gate.pass ? [] : gate.reasons.map((x) => x.text) };
  const row = noDeviceRow(r);
  return { ...base, pass: false, reasons: [row.reason ?? 'no decision'] };
}

/** The matrix of `runs` (each backend's baseline first, then its candidates, in the order found). */
export function runtimeMatrix(runs: readonly RuntimeRun[]): RuntimeMatrix {
  const baselines = runs.filter((r) => r.runtime.role === 'baseline').map((r) => ({ backend: r.runtime.backend, runtime: r.runtime.label }));
  const ordered = [...runs].sort((a, b) => (a.runtime.backend === b.runtime.backend ? (a.runtime.role === 'baseline' ? -1 : b.runtime.role === 'baseline' ? 1 : 0) : 0));
  const candidates = ordered.filter((r) => r.runtime.role === 'candidate').map((r) => decision(r, r.runtime.baseline ?? baselines.find((b) => b.backend === r.runtime.backend)?.runtime ?? '(none)'));
  return {
    kind: MATRIX_KIND,
    version: 1,
    baselines,
    rows: ordered.flatMap(rowsOf),
    candidates,
    pass: candidates.every((c) => c.pass),
    regressed: candidates.filter((c) => !c.pass).map((c) => c.runtime),
    runs: ordered.flatMap((r) => (r.file ? [{ runtime: r.runtime.label, file: r.file }] : [])),
  };
}

/** The matrix's exit status: 0 when every candidate is at least as good as its baseline, 1 otherwise. */
export const matrixExitStatus = (m: RuntimeMatrix): number => (m.pass ? 0 : 1);

/** The matrix's one-line answer. */
export function matrixHeadline(m: RuntimeMatrix): string {
  if (m.candidates.length === 0) return 'PASS: no candidate runtime beside the baseline';
  if (m.pass) return `PASS: every candidate runtime is at least as good as its baseline (${m.candidates.map((c) => c.runtime).join(', ')})`;
  return `FAIL: ${plural(m.regressed.length, 'candidate runtime')} regressed against the baseline: ${m.regressed.join(', ')}`;
}

/** The largest matrix file read (it names files; it never holds results). */
const MATRIX_MAX_BYTES = 1024 * 1024;

/**
 * The results files a matrix file names (resolved beside it), for `history add OUT/runtime-matrix.json`; undefined
 * when `path` is not a matrix file (by its name, then its kind).
 */
export function matrixRunFiles(path: string): string[] | undefined {
  if (path === '-' || basename(path) !== MATRIX_FILE) return undefined;
  try {
    if (statSync(path).size > MATRIX_MAX_BYTES) return undefined;
    const m = JSON.parse(readFileSync(path, 'utf8')) as Partial<RuntimeMatrix>;
    if (m.kind !== MATRIX_KIND || !Array.isArray(m.runs)) return undefined;
    return m.runs.filter((r) => typeof r?.file === 'string').map((r) => resolve(dirname(path), r.file));
  } catch {
    return undefined;
  }
}
