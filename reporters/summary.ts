// The terminal's last word on a run: a table of the devices (verdict, driver, bandwidths, check counts), each
// verdict's reason and each error in full, then the gate's decision: every reason it is red, what it excused
// (known failures, flakes that passed on re-run), and one PASS/FAIL line that says why (INTERRUPTED when a
// signal stopped the run). On a terminal (a width given: cli/stdout.ts) the table fits it, its least needed
// columns left out first, and the other lines wrap at its words; in a pipe the table is whole and nothing is
// cut. Colours, where the command asks for them, are added last, on text already safe for the terminal.
import { notAskedLine } from '../results/compare.js';
import { FAILING } from '../results/status.js';
import type { DeviceLoad, DeviceResult, GateDecision, GateNote, RunResult } from '../results/types.js';
import { plural, twoDecimals as fixed } from '../results/format.js';
import { hostFaultLines } from './host-faults.js';
import { interruptedText } from './interrupted.js';
import { type RunEnd, allCases, junitCases, junitTotals } from './junit-cases.js';
import { type Look, type Paint, plain, type Style, wrap } from './look.js';
import { refusalLine } from './refusals.js';
import { selectionSkips } from './selection.js';
import { MESSAGE_CAP, NAME_CAP, capList, capText, terminalSafe } from './safe-text.js';

/** One line of the terminal: control characters (escape sequences above all) from a driver or a file made visible. */
const terminalText = (s: string): string => terminalSafe(s, false);

const label = (d: DeviceResult): string => (d.verdict.refusal ? `${d.verdict.kind} (${d.verdict.refusal})` : d.verdict.kind);

/** A verdict's colour: Usable green, a refusal or a registration left behind red, a verdict short of Usable yellow. */
const VERDICT_STYLE: Partial<Record<DeviceResult['verdict']['kind'], Style>> = { Usable: 'pass', Refused: 'fail', Still_registered: 'fail', Too_slow: 'warn', Inconclusive: 'warn' };

/** A column of the devices' table: its title, and its rank when the terminal is too narrow (dropped lowest first; none: always kept). */
interface Column {
  title: string;
  rank?: number;
}

const COLUMNS: readonly Column[] = [
  { title: 'device' },
  { title: 'name', rank: 3 },
  { title: 'driver', rank: 4 },
  { title: 'verdict' },
  { title: 'registered GB/s', rank: 6 },
  { title: 'staged GB/s', rank: 2 },
  { title: 'ratio', rank: 5 },
  { title: 'page-locked GB/s', rank: 0 },
  { title: 'reg/page-locked', rank: 1 },
  { title: 'checks' },
];

/** The columns that carry colours. */
const VERDICT_COLUMN = COLUMNS.findIndex((c) => c.title === 'verdict');
const CHECKS_COLUMN = COLUMNS.findIndex((c) => c.title === 'checks');

const tableWidth = (rows: string[][], columns: number[]): number =>
  columns.reduce((w, i) => w + Math.max(...rows.map((r) => r[i]!.length)), 0) + 2 * (columns.length - 1);

/** Where, among the columns' ranks, the check counts are told short (no zero counts) on a narrow terminal. */
const SHORT_COUNTS_RANK = 2.5;

/**
 * The columns shown: all of them, or within `width` those kept whatever the width and as many of the others as
 * fit, the least needed dropped first (page-locked GB/s, then reg/page-locked, staged GB/s, ...), and the check
 * counts told short (`short`) before the name goes.
 */
function fitColumns(rows: string[][], shortRows: string[][], width: number | undefined): { shown: number[]; dropped: number[]; short: boolean } {
  const shown = COLUMNS.map((_, i) => i);
  const dropped: number[] = [];
  let short = false;
  const steps = [...COLUMNS.map((c, i) => ({ i, rank: c.rank })).filter((c) => c.rank !== undefined), { i: -1, rank: SHORT_COUNTS_RANK }].sort((a, b) => a.rank! - b.rank!);
  for (const { i } of steps) {
    if (width === undefined || tableWidth(short ? shortRows : rows, shown) <= width) break;
    if (i < 0) short = true;
    else {
      shown.splice(shown.indexOf(i), 1);
      dropped.push(i);
    }
  }
  // the counts whole again where the columns dropped since left room for them
  if (short && tableWidth(rows, shown) <= width!) short = false;
  return { shown, dropped, short };
}

/** The table's lines: each cell painted (`paints`: a cell's painter by row and column), then padded to its column. */
function table(rows: string[][], shown: number[], paints: ((text: string) => string)[][] = []): string[] {
  const widths = shown.map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r, n) =>
    shown
      .map((i, k) => {
        const text = r[i]!;
        const paint = paints[n]?.[i];
        return `${paint ? paint(text) : text}${' '.repeat(k === shown.length - 1 ? 0 : widths[k]! - text.length)}`;
      })
      .join('  ')
      .trimEnd(),
  );
}

/** A device's check counts (`short`: the zero counts left out, for a narrow terminal). */
function counts(d: DeviceResult, short = false): string {
  const n = (pred: (s: DeviceResult['checks'][number]['status']) => boolean): number => d.checks.filter((c) => pred(c.status)).length;
  const parts: [number, string][] = [[n((s) => s === 'pass'), 'pass'], [n((s) => s === 'warn'), 'warn'], [n((s) => FAILING.includes(s)), 'fail']];
  const errors = n((s) => s === 'error');
  if (errors) parts.push([errors, 'host error']);
  parts.push([n((s) => s === 'skip'), 'skip']);
  const told = short ? parts.filter(([k]) => k > 0) : parts;
  return (told.length ? told : parts.slice(0, 1)).map(([k, what]) => `${k} ${what}`).join(', ');
}

/** The check counts painted: a failure red, a host error magenta, a warning yellow (a zero stays plain). */
const paintCounts = (paint: Paint) => (text: string): string =>
  text.replace(/\b([1-9]\d*) (fail|host error|warn|pass)\b/g, (all, _n: string, what: string) => paint(all, what === 'fail' ? 'fail' : what === 'host error' ? 'host' : what === 'warn' ? 'warn' : 'pass'));

/** The reason of a verdict that is not a refusal, with one level of parentheses: `Not_needed: a CPU device reads host memory directly`. */
const verdictReason = (d: DeviceResult): string | undefined => (d.verdict.reason && d.verdict.kind !== 'Refused' ? `${d.verdict.kind}: ${d.verdict.reason}` : undefined);

/** The machine around one device's timed copies, on one line: quiet or busy (and why), the host copy, the waits. */
export function loadLine(load: DeviceLoad, hostCopyGBps: number | undefined): string {
  const host = hostCopyGBps !== undefined ? `host copy ${hostCopyGBps.toFixed(2)} GB/s${load.baselineHostCopyGBps !== undefined ? ` (baseline ${load.baselineHostCopyGBps.toFixed(2)})` : ''}` : 'host copy -';
  // what the machine gave is capped, as the reports cap it (300 processes on the GPU made a line of 15,000 characters)
  const others = load.processes.length ? `; on the GPU: ${capList(load.processes.map((p) => `pid ${p.pid} ${capText(p.name, NAME_CAP)}`)).join(', ')}` : '';
  const link = load.linkMBps !== null ? `; link traffic not ours ${(load.linkMBps / 1000).toFixed(1)} GB/s` : `; GPU not looked at (${capText(load.monitorNote ?? 'no monitor', MESSAGE_CAP)})`;
  const waits = `; timing lock waited ${(load.lockWaitMs / 1000).toFixed(2)} s${load.attempts > 1 ? `, ${load.attempts} timings over ${(load.waitedForQuietMs / 1000).toFixed(0)} s waiting for quiet` : ''}`;
  return `${load.busy ? `BUSY machine: ${load.why.map((w) => capText(w, MESSAGE_CAP)).join('; ')}` : 'quiet machine'}; ${host}${others}${link}${waits}`;
}

/** The devices' table, their verdicts' reasons and their errors (`list`: no check counts), fit to `look`. */
export function runSummary(result: RunResult, listOnly = false, look: Look = {}): string[] {
  const paint = look.paint ?? plain;
  const rows = [COLUMNS.map((c) => c.title)];
  const paints: ((text: string) => string)[][] = [[]];
  for (const d of result.devices) {
    const t = d.timing;
    rows.push(
      [d.id, d.name, `${d.driver.name} ${d.driver.version}`, label(d), fixed(t?.registeredGBps), fixed(t?.stagedGBps), t ? t.ratio.toFixed(2) : '-', fixed(t?.pageLockedGBps), t?.pageLockedRatio !== undefined ? t.pageLockedRatio.toFixed(3) : '-', listOnly ? '-' : counts(d)].map(
        terminalText,
      ),
    );
    const style = VERDICT_STYLE[d.verdict.kind];
    const row: ((text: string) => string)[] = [];
    if (style) row[VERDICT_COLUMN] = (text) => paint(text, style);
    row[CHECKS_COLUMN] = paintCounts(paint);
    paints.push(row);
  }
  const shortRows = rows.map((r, n) => (n === 0 || listOnly ? r : [...r.slice(0, -1), counts(result.devices[n - 1]!, true)]));
  const { shown, dropped, short } = fitColumns(rows, shortRows, look.width);
  const out = table(short ? shortRows : rows, shown, paints);
  const lines: string[] = [];
  if (dropped.length) lines.push(`left out to fit ${look.width} columns: ${dropped.map((i) => COLUMNS[i]!.title).join(', ')} (a wider terminal, or a pipe, shows them)`);
  // what each GPU's process saw of the machine around its timed copies
  for (const d of result.devices) if (d.load) lines.push(terminalText(`${d.id}: ${loadLine(d.load, d.timing?.hostCopyGBps)}`));
  // each verdict's reason once: a refusal in plain words (its table cell names it), and where to read more
  for (const d of result.devices) {
    const why = refusalLine(d.verdict) ?? verdictReason(d);
    if (why) lines.push(terminalText(`${d.id}: ${why}`));
  }
  for (const d of result.devices) for (const e of d.errors ?? []) lines.push(terminalText(`${d.id}: ${e}`));
  // the checks the selection left out (--check, --skip, --skips-file), once for every device
  if (!listOnly) for (const s of selectionSkips(result)) lines.push(terminalText(`skip: ${s.ids.join(', ')}: ${s.reason}`));
  // the host's faults, told apart from the driver's, and why each new process of a device was started
  lines.push(...hostFaultLines(result.devices).map(terminalText));
  return [...out, ...lines.flatMap((l) => wrap(l, look.width))];
}

/**
 * The run's totals as its JUnit report counts them (reporters/junit-cases.ts), so that a CI view and the log agree:
 * `tests: 24: 20 passed, 1 failed, 2 errors, 1 skipped`. A warning passed; an error is the host's (or a crash, a
 * timeout, the device's process); a failure is the driver's.
 */
export function totalsLine(result: RunResult, run: RunEnd = {}, look: Look = {}): string[] {
  const t = junitTotals(allCases(junitCases(result, run)));
  return wrap(`tests: ${t.tests}: ${t.passed} passed, ${t.failures} failed, ${plural(t.errors, 'error')}, ${t.skipped} skipped (as the JUnit report counts them)`, look.width);
}

/** The last line of a run that a signal stopped: INTERRUPTED, the signal, and what it left unrun. */
export function interruptedLine(result: RunResult, stoppedBy: string | undefined, look: Look = {}): string[] {
  const paint = look.paint ?? plain;
  // a signal once every check had reported (while the gate or the reports were being made) left no check unrun
  const what = result.incomplete ? interruptedText(result, stoppedBy) : `the run was stopped${stoppedBy ? ` by ${stoppedBy}` : ''} after every check reported, while its reports were written`;
  return wrap(terminalText(`INTERRUPTED: ${what}`), look.width).map((l, i) => (i === 0 ? l.replace(/^INTERRUPTED/, (w) => paint(w, 'warn')) : l));
}

const NOTE_LABEL: Partial<Record<GateNote['kind'], string>> = { expected: 'known failure', flaky: 'flaky', fix: 'fix', changed: 'changed' };

/** A reason's label: the host's (HOST BUSY, HOST ERROR, magenta) or the driver's (REGRESSION against a baseline, FAIL), red. */
function reasonLabel(gate: GateDecision, r: GateDecision['reasons'][number]): [string, Style] {
  if (r.kind === 'busy') return ['HOST BUSY', 'host'];
  if (r.host) return ['HOST ERROR', 'host'];
  if (r.kind === 'unexpected-pass') return ['UNEXPECTED PASS', 'fail'];
  return [gate.baseline && !['driver-init', 'requirement', 'run-error'].includes(r.kind) ? 'REGRESSION' : 'FAIL', 'fail'];
}

/** A note's two sides: `fail -> pass` against a baseline; with none, the status now alone. */
function noteSides(gate: GateDecision, n: GateNote): string {
  if (n.old === undefined && n.new === undefined) return '';
  return gate.baseline ? ` ${n.old ?? '(none)'} -> ${n.new ?? '(none)'}` : n.new !== undefined ? ` ${n.new}` : '';
}

/** The headline painted: PASS green; FAIL red, magenta when the host alone failed the run. */
function paintHeadline(gate: GateDecision, line: string, paint: Paint): string {
  const hostOnly = gate.reasons.length > 0 && gate.reasons.every((r) => r.host || r.kind === 'busy');
  return line.replace(/^(PASS|FAIL)/, (w) => paint(w, gate.pass ? 'pass' : hostOnly ? 'host' : 'fail'));
}

/** The gate's decision: what it compared against, every reason it is red, what it excused, then the PASS/FAIL line. */
export function gateSummary(gate: GateDecision, look: Look = {}): string[] {
  const paint = look.paint ?? plain;
  const against = [
    gate.baseline ? `baseline ${gate.baseline} (registered / page-locked, and registered GB/s on a quiet machine, may drop ${(gate.maxDrop * 100).toFixed(1)}%)` : 'no baseline',
    gate.expectations ? `expectations ${gate.expectations}` : '',
    gate.requires.length ? `required ${gate.requires.join(', ')}` : '',
  ].filter(Boolean);
  const lines: [string, ((first: string) => string)?][] = [[`gate: ${against.join('; ')}`]];
  for (const r of gate.reasons) {
    const [what, style] = reasonLabel(gate, r);
    lines.push([`  ${what}  ${r.text}`, (first) => first.replace(what, paint(what, style))]);
  }
  for (const n of gate.notes) {
    const what = NOTE_LABEL[n.kind];
    if (!what) continue;
    lines.push([`  ${what}  ${n.device} ${n.check}${noteSides(gate, n)}${n.note ? `: ${n.note}` : ''}`]);
  }
  const notAsked = notAskedLine(gate.notAskedFor);
  if (notAsked) lines.push([`  ${notAsked}`]);
  lines.push([gate.headline, (first) => paintHeadline(gate, first, paint)]);
  // safe first, then cut to the width, then painted: an escape sequence is never cut nor counted
  return lines.flatMap(([text, painted]) => wrap(terminalText(text), look.width).map((l, i) => (i === 0 && painted ? painted(l) : l)));
}
