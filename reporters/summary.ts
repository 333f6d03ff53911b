// The terminal's last word on a run: a table of the devices (verdict, driver, bandwidths, check counts), each
// verdict's reason and each error in full, then the gate's decision: every reason it is red, what it excused
// (known failures, flakes that passed on re-run), and one PASS/FAIL line that says why. Nothing is cut: a line
// longer than the terminal wraps there, whole words and all.
import { FAILING } from '../results/status.js';
import type { DeviceLoad, DeviceResult, GateDecision, GateNote, RunResult } from '../results/types.js';
import { hostFaultLines } from './host-faults.js';
import { refusalInPlainWords } from './refusals.js';
import { selectionSkips } from './selection.js';
import { MESSAGE_CAP, NAME_CAP, capList, capText, terminalSafe } from './safe-text.js';
import { twoDecimals as fixed } from '../results/format.js';

/** One line of the terminal: control characters (escape sequences above all) from a driver or a file made visible. */
const terminalText = (s: string): string => terminalSafe(s, false);

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

/** The machine around one device's timed copies, on one line: quiet or busy (and why), the host copy, the waits. */
export function loadLine(load: DeviceLoad, hostCopyGBps: number | undefined): string {
  const host = hostCopyGBps !== undefined ? `host copy ${hostCopyGBps.toFixed(2)} GB/s${load.baselineHostCopyGBps !== undefined ? ` (baseline ${load.baselineHostCopyGBps.toFixed(2)})` : ''}` : 'host copy -';
  // what the machine gave is capped, as the reports cap it (300 processes on the GPU made a line of 15,000 characters)
  const others = load.processes.length ? `; on the GPU: ${capList(load.processes.map((p) => `pid ${p.pid} ${capText(p.name, NAME_CAP)}`)).join(', ')}` : '';
  const link = load.linkMBps !== null ? `; link traffic not ours ${(load.linkMBps / 1000).toFixed(1)} GB/s` : `; GPU not looked at (${capText(load.monitorNote ?? 'no monitor', MESSAGE_CAP)})`;
  const waits = `; timing lock waited ${(load.lockWaitMs / 1000).toFixed(2)} s${load.attempts > 1 ? `, ${load.attempts} timings over ${(load.waitedForQuietMs / 1000).toFixed(0)} s waiting for quiet` : ''}`;
  return `${load.busy ? `BUSY machine: ${load.why.map((w) => capText(w, MESSAGE_CAP)).join('; ')}` : 'quiet machine'}; ${host}${others}${link}${waits}`;
}

/** The devices' table, their verdicts' reasons and their errors (`list`: no check counts). */
export function runSummary(result: RunResult, listOnly = false): string[] {
  const rows = [['device', 'name', 'driver', 'verdict', 'registered GB/s', 'staged GB/s', 'ratio', 'page-locked GB/s', 'reg/page-locked', 'checks']];
  for (const d of result.devices) {
    const t = d.timing;
    rows.push(
      [d.id, d.name, `${d.driver.name} ${d.driver.version}`, label(d), fixed(t?.registeredGBps), fixed(t?.stagedGBps), t ? t.ratio.toFixed(2) : '-', fixed(t?.pageLockedGBps), t?.pageLockedRatio !== undefined ? t.pageLockedRatio.toFixed(3) : '-', listOnly ? '-' : counts(d)].map(
        terminalText,
      ),
    );
  }
  const out = table(rows);
  // what each GPU's process saw of the machine around its timed copies
  for (const d of result.devices) if (d.load) out.push(terminalText(`${d.id}: ${loadLine(d.load, d.timing?.hostCopyGBps)}`));
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
    gate.baseline ? `baseline ${gate.baseline} (registered / page-locked, and registered GB/s on a quiet machine, may drop ${(gate.maxDrop * 100).toFixed(1)}%)` : 'no baseline',
    gate.expectations ? `expectations ${gate.expectations}` : '',
    gate.requires.length ? `required ${gate.requires.join(', ')}` : '',
  ].filter(Boolean);
  const out = [`gate: ${against.join('; ')}`];
  for (const r of gate.reasons) out.push(`  ${r.kind === 'busy' ? 'HOST BUSY' : r.host ? 'HOST ERROR' : r.kind === 'unexpected-pass' ? 'UNEXPECTED PASS' : gate.baseline && !['driver-init', 'requirement', 'run-error'].includes(r.kind) ? 'REGRESSION' : 'FAIL'}  ${r.text}`);
  for (const n of gate.notes) {
    const what = NOTE_LABEL[n.kind];
    if (!what) continue;
    out.push(`  ${what}  ${n.device} ${n.check}${n.old !== undefined || n.new !== undefined ? ` ${n.old ?? '(none)'} -> ${n.new ?? '(none)'}` : ''}${n.note ? `: ${n.note}` : ''}`);
  }
  out.push(gate.headline);
  return out.map(terminalText);
}
