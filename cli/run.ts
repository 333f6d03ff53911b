// What `run` and `list` do: discover, decide static verdicts, probe the devices that need the self-test on a
// scratch file, and report. The verdicts come from the model (src/); this file only drives and prints.
import { renameSync, writeFileSync, unlinkSync } from 'node:fs';
import { hostname, release } from 'node:os';
import { dirname, basename, join } from 'node:path';
import { type Discovery, type DiscoveredDevice, discover, type Backend } from '../bindings/discovery.js';
import { makeScratchRegion, removeStaleScratch } from '../bindings/scratch.js';
import { cacheable, errorText, probeReport, registrations, staticVerdict, type ProbeReport, type Verdict, verdictToString } from '../src/index.js';

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'timeout' | 'crash' | 'skip';

export interface CheckResult {
  id: string;
  status: CheckStatus;
  durationMs: number;
  expected?: string;
  observed?: string;
  message?: string;
}

export interface DeviceResult {
  id: string;
  backend: Backend;
  name: string;
  pciBusId: string | null;
  driver: { name: string; version: string };
  integrated: boolean | null;
  attributes?: Readonly<Record<string, number | string>>;
  staticVerdict: string;
  verdict: { kind: Verdict['kind']; refusal?: string; reason?: string; text: string };
  cacheable: boolean;
  checks: CheckResult[];
  timing?: { registeredGBps: number; stagedGBps: number; ratio: number; minRelativeSpeed: number; runs: number; bytes: number };
  windows?: { offset: number; length: number; equal: boolean | null; firstDifference: number | null; release: string | null; releaseTries: number }[];
  scratch?: { dir: string; fsType: string; sizeBytes: number };
  log?: string[];
}

export interface RunOptions {
  scratchDir: string;
  sizeMiB: number;
  devices: string[];
  backends: Backend[];
  runs: number;
  minRelativeSpeed: number;
  json?: string;
  /** list: static verdicts only, nothing registered or copied. */
  listOnly: boolean;
  out: (line: string) => void;
}

export interface RunResult {
  schemaVersion: 1;
  tool: { name: string; version: string };
  host: { hostname: string; kernel: string; platform: string };
  startedAt: string;
  finishedAt: string;
  options: Record<string, unknown>;
  backends: Discovery['backends'];
  gpuDriverFound: boolean;
  devices: DeviceResult[];
}

/** Thrown for bad input: the command prints the message on one line and exits 2. */
export class UsageError extends Error {}

function verdictJson(v: Verdict): DeviceResult['verdict'] {
  const base = { kind: v.kind, text: verdictToString(v) };
  if (v.kind === 'Refused') return { ...base, refusal: v.refusal.kind, ...('reason' in v.refusal ? { reason: v.refusal.reason } : {}) };
  if ('reason' in v) return { ...base, reason: v.reason };
  return base;
}

/** The probe's verdict as a check: Usable passes; Too_slow and Inconclusive warn; false successes fail. */
function probeStatus(v: Verdict): CheckStatus {
  if (v.kind === 'Usable') return 'pass';
  if (v.kind === 'Too_slow' || v.kind === 'Inconclusive') return 'warn';
  return 'fail';
}

function probeDevice(d: DiscoveredDevice, o: RunOptions, result: DeviceResult): void {
  const started = performance.now();
  const region = makeScratchRegion(o.scratchDir, o.sizeMiB * 1024 * 1024);
  result.scratch = { dir: region.dir, fsType: region.fsType, sizeBytes: region.size };
  let r: ProbeReport;
  try {
    r = probeReport(d.device, region.map, region.reference, { runs: o.runs, minRelativeSpeed: o.minRelativeSpeed });
  } finally {
    if (!region.close()) o.out(`  ${d.id}: the scratch mapping stays mapped until the process ends: the driver may still hold part of it`);
  }
  result.verdict = verdictJson(r.verdict);
  result.cacheable = cacheable(r.verdict);
  result.windows = r.windows.map((w) => ({ ...w }));
  result.log = r.log;
  if (r.timing) {
    const t = r.timing;
    result.timing = { registeredGBps: t.registeredGBps, stagedGBps: t.stagedGBps, ratio: t.ratio, minRelativeSpeed: t.minRelativeSpeed, runs: t.runs, bytes: t.bytes };
  }
  result.checks.push({
    id: 'probe.verdict',
    status: probeStatus(r.verdict),
    durationMs: performance.now() - started,
    expected: 'Usable',
    observed: verdictToString(r.verdict),
    message: r.windows.map((w, i) => `window ${i + 1}: ${w.equal === null ? 'not compared' : w.equal ? 'bytes equal' : `bytes differ at ${w.firstDifference}`}`).join(', '),
  });
}

/** Writes `data` to `file` atomically: a temporary file beside it, then a rename. */
export function writeAtomically(file: string, data: string): void {
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, file);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // never written
    }
    throw e;
  }
}

const fmt = (x: number | undefined): string => (x === undefined ? '-' : x.toFixed(2));

export function run(o: RunOptions, tool: { name: string; version: string }): { result: RunResult; exitCode: number } {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const found = discover(o.backends);
  // A driver library named by the user that did not load is bad input, refused before anything runs.
  for (const [env, backend] of [['MAPPED_REG_CUDA_LIBRARY', 'cuda'], ['MAPPED_REG_HIP_LIBRARY', 'hip']] as const) {
    const report = found.backends.find((b) => b.backend === backend);
    if (process.env[env] && report && report.library === null) throw new UsageError(`${env}=${process.env[env]}: ${report.note ?? 'not loaded'}`);
  }
  if (o.devices.length > 0) {
    const known = new Set(found.devices.map((d) => d.id));
    const unknown = o.devices.filter((id) => !known.has(id));
    if (unknown.length > 0) throw new UsageError(`unknown device ${unknown.join(', ')} (found: ${[...known].join(', ') || 'none'})`);
  }
  const selected = found.devices.filter((d) => o.devices.length === 0 || o.devices.includes(d.id));
  if (!o.listOnly) {
    for (const stale of removeStaleScratch(o.scratchDir)) o.out(`removed ${stale}, left in ${o.scratchDir} by a run that no longer exists`);
  }

  o.out(`discovery (${(performance.now() - t0).toFixed(0)} ms):`);
  for (const b of found.backends) {
    const what = b.backend === 'cpu' ? 'the host CPU' : b.library ? `${b.library}, ${b.devices} device(s)` : 'no library';
    o.out(`  ${b.backend}: ${what}${b.note ? ` - ${b.note}` : ''}`);
  }
  for (const d of selected) {
    const attrs = d.attributes ? ` ${Object.entries(d.attributes).map(([k, v]) => `${k}=${v}`).join(' ')}` : '';
    const mem = d.totalMemBytes ? `, ${(d.totalMemBytes / 2 ** 30).toFixed(1)} GiB` : '';
    o.out(`  ${d.id}: ${d.name} [${d.driver.name} ${d.driver.version}${d.pciBusId ? `, ${d.pciBusId}` : ''}${mem}] integrated=${d.integrated ?? `unknown${d.integratedError ? ` (${d.integratedError})` : ''}`}${attrs}`);
  }
  if (!found.gpuDriverFound) o.out('  no GPU driver was found (neither CUDA nor HIP): only the devices above are checked');

  const devices: DeviceResult[] = [];
  for (const d of selected) {
    const started = performance.now();
    const s = staticVerdict(d.device);
    const staticText = s.kind === 'Decided' ? verdictToString(s.verdict) : 'Self_test_required';
    const result: DeviceResult = {
      id: d.id,
      backend: d.backend,
      name: d.name,
      pciBusId: d.pciBusId,
      driver: d.driver,
      integrated: d.integrated,
      ...(d.attributes ? { attributes: d.attributes } : {}),
      staticVerdict: staticText,
      // until the probe runs (never, under list), a device that needs the self-test has no verdict yet
      verdict: s.kind === 'Decided' ? verdictJson(s.verdict) : { kind: 'Inconclusive', reason: 'self-test required, not run', text: 'Self_test_required (not probed)' },
      cacheable: s.kind === 'Decided' ? cacheable(s.verdict) : false,
      checks: [{ id: 'static.verdict', status: 'pass', durationMs: performance.now() - started, observed: staticText }],
    };
    if (s.kind === 'Self_test_required' && !o.listOnly) {
      try {
        probeDevice(d, o, result);
      } catch (e) {
        result.verdict = { kind: 'Inconclusive', reason: errorText(e), text: `Inconclusive (${errorText(e)})` };
        result.checks.push({ id: 'probe.verdict', status: 'fail', durationMs: performance.now() - started, message: errorText(e) });
      }
    } else if (!o.listOnly) {
      result.checks.push({ id: 'probe.verdict', status: 'skip', durationMs: 0, message: `decided statically: ${staticText}` });
    }
    devices.push(result);
  }

  o.out('');
  const header = ['device', 'name', 'verdict', 'registered GB/s', 'staged GB/s', 'ratio'];
  const rows = devices.map((d) => [d.id, d.name, d.verdict.text, fmt(d.timing?.registeredGBps), fmt(d.timing?.stagedGBps), d.timing ? d.timing.ratio.toFixed(2) : '-']);
  const widths = header.map((h, i) => Math.min(60, Math.max(h.length, ...rows.map((r) => r[i]!.length))));
  const line = (cells: string[]): string => cells.map((c, i) => (c.length > widths[i]! ? `${c.slice(0, widths[i]! - 1)}…` : c.padEnd(widths[i]!))).join('  ').trimEnd();
  o.out(line(header));
  for (const r of rows) o.out(line(r));
  const held = registrations.held();
  if (held.length > 0) o.out(`warning: ${held.length} range(s) could not be released and stay registered until the process ends`);

  const result: RunResult = {
    schemaVersion: 1,
    tool,
    host: { hostname: hostname(), kernel: release(), platform: `${process.platform}-${process.arch}` },
    startedAt,
    finishedAt: new Date().toISOString(),
    options: { scratchDir: o.scratchDir, sizeMiB: o.sizeMiB, devices: o.devices, backends: o.backends, runs: o.runs, minRelativeSpeed: o.minRelativeSpeed, list: o.listOnly },
    backends: found.backends,
    gpuDriverFound: found.gpuDriverFound,
    devices,
  };
  if (o.json) writeAtomically(o.json, `${JSON.stringify(result, null, 2)}\n`);
  o.out(`\n${devices.length} device(s) in ${((performance.now() - t0) / 1000).toFixed(2)} s`);
  const failed = devices.some((d) => d.checks.some((c) => c.status === 'fail' || c.status === 'crash' || c.status === 'timeout'));
  return { result, exitCode: failed ? 1 : 0 };
}
