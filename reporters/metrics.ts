// The metrics of a run for node_exporter's textfile collector (`--metrics FILE`): OpenMetrics text that the
// collector's Prometheus text parser also reads. So every family is a gauge (that parser knows no `info` type:
// the device's info metric is a gauge named *_info with value 1, as node_exporter's own node_uname_info), no
// sample has a timestamp (the collector refuses them), and the text ends with `# EOF` (OpenMetrics requires it;
// to the collector it is a comment). Speeds are in bytes per second (Prometheus' base units), from the GB/s of
// the results (10^9 bytes). Built from the RunResult alone.
import { CHECK_STATUSES } from '../results/status.js';
import type { RunResult } from '../results/types.js';

/** The prefix of every metric name. */
export const METRIC_PREFIX = 'mapped_reg_';

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  samples: { labels: Labels; value: number }[];
}

/** A label value as the text format writes it: backslash, double quote and line feed escaped. */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** A HELP text: backslash and line feed escaped (OpenMetrics escapes the double quote there too). */
const escapeHelp = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** A number as the text format writes it (+Inf, -Inf, NaN by name). */
function formatValue(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return '+Inf';
  if (x === -Infinity) return '-Inf';
  return String(x);
}

const GB = 1e9;
const seconds = (iso: string): number | undefined => {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
};

/** A figure of the results, where the run measured it (results of schemaVersion 1 have no control copy). */
const finite = (v: number | undefined): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The families of a run, in the order they are written; a family with no sample is left out. */
function families(r: RunResult): Family[] {
  const f = (name: string, help: string): Family => ({ name: `${METRIC_PREFIX}${name}`, help, samples: [] });
  const info = f('device_info', 'A device of the run and its verdict (value 1): device id, name, backend, PCI bus id, driver and version, verdict and refusal');
  const usable = f('device_usable', '1 when the device\'s verdict is Usable, else 0');
  const registered = f('device_registered_copy_bytes_per_second', 'Host-to-device copy speed from the registered file-backed mapping (best of the timed runs)');
  const pageLocked = f('device_page_locked_copy_bytes_per_second', 'Host-to-device copy speed from a page-locked buffer, timed beside the registered copy (a busy machine slows both)');
  const staged = f('device_staged_copy_bytes_per_second', 'Host-to-device copy speed staged through a page-locked buffer (best of the timed runs)');
  const ratio = f('device_registered_to_page_locked_ratio', 'Registered copy speed over the page-locked one timed beside it: what a busy machine cannot fake (the gate judges its fall always)');
  const busy = f('device_busy', '1 when the machine was busy around the device\'s timed copies (another process on its link, host memory loaded, pressure), else 0');
  const checks = f('device_checks', 'The device\'s checks by status');
  for (const d of r.devices) {
    const device = d.id;
    info.samples.push({
      labels: {
        device,
        name: d.name,
        backend: d.backend,
        pci_bus_id: d.pciBusId ?? '',
        driver: d.driver.name,
        driver_version: d.driver.version,
        verdict: d.verdict.kind,
        refusal: d.verdict.refusal ?? '',
      },
      value: 1,
    });
    usable.samples.push({ labels: { device }, value: d.verdict.kind === 'Usable' ? 1 : 0 });
    if (d.timing) {
      registered.samples.push({ labels: { device }, value: d.timing.registeredGBps * GB });
      staged.samples.push({ labels: { device }, value: d.timing.stagedGBps * GB });
    }
    const locked = finite(d.timing?.pageLockedGBps);
    if (locked !== undefined) pageLocked.samples.push({ labels: { device }, value: locked * GB });
    const r2 = finite(d.timing?.pageLockedRatio);
    if (r2 !== undefined) ratio.samples.push({ labels: { device }, value: r2 });
    if (d.load) busy.samples.push({ labels: { device }, value: d.load.busy ? 1 : 0 });
    for (const status of CHECK_STATUSES) checks.samples.push({ labels: { device, status }, value: d.checks.filter((c) => c.status === status).length });
  }
  const gatePass = f('gate_pass', '1 when the gate passed, 0 when it failed (absent: the run had no gate, as list)');
  const gateReasons = f('gate_reasons', 'How many reasons the gate gave for failing');
  const gateHostReasons = f('gate_host_reasons', 'How many of the gate\'s reasons are the host\'s, not the driver\'s (a check the host failed, a figure of a busy machine): equal to gate_reasons, the host alone failed the run');
  const figureOutcome = f('gate_figure_outcome', 'The gate\'s decision on a figure with its noise (value 1): device, figure (registration: registered / page-locked; bandwidth: registered GB/s), outcome (regression, pass, too-noisy: the host\'s), the noise used');
  const figureDrop = f('gate_figure_drop', 'A figure\'s drop against the baseline, a fraction of it (negative: a rise): the estimate and its interval at the stated confidence (bound estimate, low, high)');
  for (const x of r.gate?.figures ?? []) {
    const figure = x.check;
    figureOutcome.samples.push({ labels: { device: x.device, figure, outcome: x.decision.outcome, noise: x.decision.noise.used }, value: 1 });
    figureDrop.samples.push({ labels: { device: x.device, figure, bound: 'estimate' }, value: x.decision.drop });
    if (x.decision.interval) {
      figureDrop.samples.push({ labels: { device: x.device, figure, bound: 'low' }, value: x.decision.interval.low });
      figureDrop.samples.push({ labels: { device: x.device, figure, bound: 'high' }, value: x.decision.interval.high });
    }
  }
  if (r.gate) {
    gatePass.samples.push({ labels: {}, value: r.gate.pass ? 1 : 0 });
    gateReasons.samples.push({ labels: {}, value: r.gate.reasons.length });
    gateHostReasons.samples.push({ labels: {}, value: r.gate.reasons.filter((x) => x.host).length });
  }
  const started = f('run_start_timestamp_seconds', 'When the run started (Unix time)');
  const finished = f('run_finish_timestamp_seconds', 'When the run finished (Unix time): the age of these metrics');
  const duration = f('run_duration_seconds', 'How long the run took');
  const incomplete = f('run_incomplete', '1 when the run was stopped before every check reported');
  const t0 = seconds(r.startedAt);
  const t1 = seconds(r.finishedAt);
  if (t0 !== undefined) started.samples.push({ labels: {}, value: t0 });
  if (t1 !== undefined) finished.samples.push({ labels: {}, value: t1 });
  if (t0 !== undefined && t1 !== undefined) duration.samples.push({ labels: {}, value: Math.round((t1 - t0) * 1000) / 1000 });
  incomplete.samples.push({ labels: {}, value: r.incomplete ? 1 : 0 });
  return [info, usable, registered, pageLocked, staged, ratio, busy, checks, gatePass, gateReasons, gateHostReasons, figureOutcome, figureDrop, started, finished, duration, incomplete].filter((x) => x.samples.length > 0);
}

/** The run as OpenMetrics text for the textfile collector (ends with `# EOF` and a line feed). */
export function metricsText(r: RunResult): string {
  const out: string[] = [];
  for (const fam of families(r)) {
    out.push(`# HELP ${fam.name} ${escapeHelp(fam.help)}`, `# TYPE ${fam.name} gauge`);
    for (const s of fam.samples) {
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
      out.push(`${fam.name}${labels.length ? `{${labels.join(',')}}` : ''} ${formatValue(s.value)}`);
    }
  }
  out.push('# EOF');
  return `${out.join('\n')}\n`;
}
