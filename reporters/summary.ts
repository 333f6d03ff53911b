// The terminal's last word on a run: a table of the devices (verdict, driver, bandwidths, check counts), each
// verdict's reason and each error in full, then the gate's decision: every reason it is red, what it excused
// (known failures, flakes that passed on re-run), and one PASS/FAIL line that says why. Nothing is cut: a line
// longer than the terminal wraps there, whole words and all.
import { FAILING } from '../results/status.js';
import type { DeviceResult, GateDecision, GateNote, RunResult } from '../results/types.js';
import { hostFaultLines } from './host-faults.js';
import { refusalInPlainWords } from './refusals.js';
import { selectionSkips } from './selection.js';
import { terminalSafe } from './safe-text.js';

/** One line of the terminal: control characters (escape sequences above all) from a driver or a file made visible. */
const terminalText = (s: string): string => terminalSafe(s, false);

const fixed = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(2));
const label = (d: DeviceResult): string => (d.verdict.refusal ? `${d.verdict.kind} (${d.verdict.refusal})` : d.verdict.kind);

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
}

function counts(d: DeviceResult): string {
  const n = (pred: (s: DeviceResult['checks'][number]['status']) => boolean): number => d.checks.filter((c) => pred(c.status)).length;
  const parts = [`${n((s) => s === 'pass')} pass`, `${n((s) => s === 'warn')} warn`, `${n((s) => FAILING.includes(s))} fail`];
  const errors = n((s) => s === 'error');
  if (errors) parts.push(`${errors} host error`);
  parts.push(`${n((s) => s === 'skip')} skip`);
  return parts.join(', ');
}

/** The devices' table, their verdicts' reasons and their errors (`list`: no check counts). */
export function runSummary(result: RunResult, listOnly = false): string[] {
  const rows = [['device', 'name', 'driver', 'verdict', 'registered GB/s', 'staged GB/s', 'ratio', 'checks']];
  for (const d of result.devices) {
    rows.push([d.id, d.name, `${d.driver.name} ${d.driver.version}`, label(d), fixed(d.timing?.registeredGBps), fixed(d.timing?.stagedGBps), d.timing ? d.timing.ratio.toFixed(2) : '-', listOnly ? '-' : counts(d)].map(terminalText));
  }
  const out = table(rows);
  for (const d of result.devices) if (d.verdict.reason) out.push(terminalText(`${d.id}: ${d.verdict.text}`));
  // each refusal in plain words, and where to read more
  for (const d of result.devices) {
    const why = refusalInPlainWords(d.verdict);
    if (why) out.push(terminalText(`${d.id}: ${why}`));
  }
  for (const d of result.devices) for (const e of d.errors ?? []) out.push(terminalText(`${d.id}: ${e}`));
  // the checks the selection left out (--check, --skip, --skips-file), once for every device
  if (!listOnly) for (const s of selectionSkips(result)) out.push(terminalText(`skip: ${s.ids.join(', ')}: ${s.reason}`));
  // the host's faults, told apart from the driver's, and why each new process of a device was started
  out.push(...hostFaultLines(result.devices).map(terminalText));
  return out;
}

const NOTE_LABEL: Partial<Record<GateNote['kind'], string>> = { expected: 'known failure', flaky: 'flaky', fix: 'fix', changed: 'changed' };

/** The gate's decision: what it compared against, every reason it is red, what it excused, then the PASS/FAIL line. */
export function gateSummary(gate: GateDecision): string[] {
  const against = [
    gate.baseline ? `baseline ${gate.baseline} (registered GB/s may drop ${(gate.maxDrop * 100).toFixed(1)}%)` : 'no baseline',
    gate.expectations ? `expectations ${gate.expectations}` : '',
    gate.requires.length ? `required ${gate.requires.join(', ')}` : '',
  ].filter(Boolean);
  const out = [`gate: ${against.join('; ')}`];
  for (const r of gate.reasons) out.push(`  ${r.host ? 'HOST ERROR' : r.kind === 'unexpected-pass' ? 'UNEXPECTED PASS' : gate.baseline && !['driver-init', 'requirement', 'run-error'].includes(r.kind) ? 'REGRESSION' : 'FAIL'}  ${r.text}`);
  for (const n of gate.notes) {
    const what = NOTE_LABEL[n.kind];
    if (!what) continue;
    out.push(`  ${what}  ${n.device} ${n.check}${n.old !== undefined || n.new !== undefined ? ` ${n.old ?? '(none)'} -> ${n.new ?? '(none)'}` : ''}${n.note ? `: ${n.note}` : ''}`);
  }
  out.push(gate.headline);
  return out.map(terminalText);
}
