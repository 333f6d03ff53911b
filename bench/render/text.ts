// The bench's text (stdout): per device a table of copies, the link, the registration cost, the driver call and
// the native reference; then the conformance run's phases, the GB/s the suite reported and the peak memory.
// It only reads a BenchResult: what --json writes (./json.ts) carries the same figures.
import type { ProcessPeak, TreePeak } from '../proc.js';
import type { BenchResult, RegistrationCost } from '../result.js';
import type { Copy } from '../timing.js';
import { MiB } from '../units.js';
import { twoDecimals as f2 } from '../../results/format.js';

const f1 = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(1));
const f0 = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(0));
const pct = (x: number | undefined): string => (x === undefined ? '-' : `${(x * 100).toFixed(1)}%`);

function table(rows: string[][], indent = '  '): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => `${indent}${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')}`.trimEnd());
}

type DeviceFigures = BenchResult['devices'][number];
type ConformanceFigures = BenchResult['conformance'];

/** One device's bench: its copies, link, registration cost, driver call and native reference. */
function deviceLines(d: DeviceFigures, r: BenchResult): string[] {
  const out: string[] = ['', `${d.id}  ${d.name}  [${d.driver.name} ${d.driver.version}${d.pciBusId ? `, ${d.pciBusId}` : ''}]  scratch on ${d.region.fsType}`];
  const c = d.copies;
  const row = (x: Copy | undefined, fallbackLabel: string, note = ''): string[] => [x?.label ?? fallbackLabel, f0(x ? x.bytes / MiB : undefined), f2(x?.bestGBps), f2(x?.medianGBps), note];
  out.push(
    ...table([
      ['host to device', 'MiB', 'best GB/s', 'median GB/s', ''],
      row(c.registered, 'registered'),
      row(c.staged, 'staged: memcpy into page-locked + copy'),
      row(c.pageLocked, 'page-locked alone'),
      row(c.pageable, 'pageable (not registered)'),
      row(c.stagedHalf, 'staged, probe window', 'what the probe times'),
    ]),
  );
  if ('error' in d.link) out.push(`  PCIe link: ${d.link.error}`);
  else out.push(`  PCIe link: ${d.link.gts} GT/s x${d.link.width} = ${f2(d.link.gbps)} GB/s; the registered copy reached ${pct(d.link.registeredShare)} of it`);
  out.push(...registrationLines(d.registration));
  out.push(d.driverCall ? `  one driver call through koffi: ${d.driverCall.call} ${d.driverCall.meanUs.toFixed(3)} us (tinybench mean; median ${d.driverCall.medianUs.toFixed(3)} us)` : '  one driver call through koffi: -');
  const nat = d.native;
  if (nat.status === 'ran') {
    out.push(
      `  native reference (${nat.binary?.how}): registered ${f2(nat.registeredGBps)} GB/s, bench/native ${f2(nat.registeredRatio)}; staged ${f2(nat.stagedGBps)} GB/s, bench/native ${f2(nat.stagedRatio)} (target >= ${r.targets.nativeRatio})`,
    );
  } else out.push(`  native reference: ${nat.status}${nat.message ? `: ${nat.message}` : ''}`);
  for (const e of d.errors) out.push(`  error: ${e}`);
  return out;
}

/** What registration costs, warm and cold, and how the cold page cache was made. */
function registrationLines(reg: DeviceFigures['registration']): string[] {
  const costRow = (label: string, x: RegistrationCost | undefined): string[] => [
    label,
    `${f1(x?.registerMsPerGiB.best)} / ${f1(x?.registerMsPerGiB.median)}`,
    `${f1(x?.unregisterMsPerGiB.best)} / ${f1(x?.unregisterMsPerGiB.median)}`,
    `${f1(x?.totalMsPerGiB.best)} / ${f1(x?.totalMsPerGiB.median)}`,
  ];
  const out = table([['registration, ms per GiB (best / median)', 'register', 'unregister', 'total'], costRow('warm page cache', reg.warm), costRow('cold page cache', reg.cold)]);
  if (reg.cold) {
    const e = reg.cold.eviction;
    out.push(`    cold: evicted by ${e.methods.join(' + ') || 'nothing'}${e.residentAfterMax !== undefined ? `; at most ${pct(e.residentAfterMax)} of the pages still cached after` : ''}${e.failures.length ? ` (${e.failures.join('; ')})` : ''}`);
  }
  return out;
}

/** The conformance run's phases, as a table (each device's within the checks). */
function phaseTable(k: ConformanceFigures): string[] {
  const rows: string[][] = [['phase', 'ms']];
  rows.push(['whole, spawn to exit (Node start included)', f0(k.wallMs)]);
  if (k.phasesMs) {
    rows.push(['discovery', f0(k.phasesMs.discovery)], ['checks (every device at once)', f0(k.phasesMs.checks)]);
    for (const d of k.devices) {
      if (d.probeMs === undefined) {
        rows.push([`  ${d.id}: every check (no self-test)`, f0(d.checksMs)]);
        continue;
      }
      rows.push(
        [`  ${d.id}: scratch file`, f0(d.scratchFileMs)],
        [`  ${d.id}: probe`, f0(d.probeMs)],
        [`    of which registration (both windows)`, f1(d.registrationMs)],
        ...(d.discoveryWaitMs !== undefined ? [[`    of which the wait for the discovery beside it`, f0(d.discoveryWaitMs)] as [string, string]] : []),
        [`  ${d.id}: hazards (${d.hazardChecks} checks)`, f0(d.hazardsMs)],
      );
      rows.push([`  ${d.id}: timing checks (margin ${f1(d.timingMs.margin)}, link ${f1(d.timingMs.link)})`, f1(d.timingMs.total)]);
    }
    rows.push(['reports', f1(k.phasesMs.reports)], ['outside the phases (Node start, loading, writing)', f0(k.outsidePhasesMs)]);
  }
  return table(rows);
}

/** The peak memory of the run's processes, against the targets. */
function memoryLines(k: ConformanceFigures): string[] {
  const parts = (p: ProcessPeak): string =>
    p.rssAnonMaxKiB === undefined ? '' : `; at most anon ${f0(p.rssAnonMaxKiB / 1024)}, file ${f0((p.rssFileMaxKiB ?? 0) / 1024)}, shmem ${f0((p.rssShmemMaxKiB ?? 0) / 1024)} MiB`;
  const mib = (p: ProcessPeak): string => `${f0(p.peakKiB / 1024)} MiB (${p.source}${parts(p)})`;
  const out = [`  peak memory, sampled every ${k.memory.intervalMs} ms (${k.memory.walks} walks of /proc):`];
  const run = k.memory.run;
  if (run) {
    const name = (p: TreePeak['processes'][number]): string => `${p.role === 'device-runner' ? `runner ${p.device ?? '?'}` : p.role}${p.role === 'other' && p.device ? ` (${p.device})` : ''}`;
    const each = run.processes.map((p) => `${name(p)} ${f0(p.pssKiB / 1024)}`).join(', ');
    out.push(`    the whole run at its fullest: ${f0(run.pssKiB / 1024)} MiB PSS (${each}; resident sets summed ${f0(run.rssSumKiB / 1024)}); target <= ${run.targetMiB} MiB: ${run.withinTarget ? 'within' : 'OVER'}`);
    // where it went then, each process's PSS by kind (where the kernel splits it)
    for (const p of run.processes) {
      if (p.pssAnonKiB === undefined) continue;
      out.push(`      ${name(p)}, pid ${p.pid}: anon ${f0(p.pssAnonKiB / 1024)}, file ${f0((p.pssFileKiB ?? 0) / 1024)}, shmem ${f0((p.pssShmemKiB ?? 0) / 1024)} MiB PSS`);
    }
  }
  if (k.memory.command) out.push(`    command, pid ${k.memory.command.pid}: ${mib(k.memory.command)}`);
  // a runner of several devices is listed under each in the JSON, once here
  const runners = [...new Map(k.memory.runners.map((p) => [p.pid, { ...p, device: k.memory.runners.filter((q) => q.pid === p.pid).map((q) => q.device ?? '?').join(', ') }])).values()];
  for (const p of runners) out.push(`    device runner ${p.device}, pid ${p.pid}: ${mib(p)}; target <= ${p.targetMiB} MiB: ${p.withinTarget ? 'within' : 'OVER'}`);
  for (const p of k.memory.others) out.push(`    other, pid ${p.pid}${p.device ? ` (${p.device})` : ''}: ${mib(p)}  ${p.command.slice(0, 80)}`);
  return out;
}

/** The conformance run: its command and exit, its phases against the targets, the GB/s the suite reported, its memory. */
function conformanceLines(r: BenchResult): string[] {
  const k = r.conformance;
  const out = ['', `conformance run: ${k.command.join(' ')}`, `  exit ${k.exitCode ?? k.signal}${k.error ? `; ${k.error}` : ''}`, ...phaseTable(k)];
  if (r.gpu.found) out.push(`  the whole run: ${f0(k.wallMs)} ms; target with a GPU: <= ${r.targets.gpuRunWallMs} ms: ${k.wallMs <= r.targets.gpuRunWallMs ? 'within' : 'OVER'}`);
  for (const d of k.devices) {
    if (d.registeredGBps === undefined) continue;
    const against = d.nativeRatio === undefined ? '' : `: ${f2(d.nativeRatio)} of the native reference's registered copy in this run (target >= ${r.targets.nativeRatio})`;
    out.push(`  ${d.id}: the suite reported registered ${f2(d.registeredGBps)} GB/s, staged ${f2(d.stagedGBps)} GB/s${against}`);
  }
  out.push(
    `  node -e 0: ${f0(r.nodeStart.medianMs)} ms (median of ${r.nodeStart.samples}; best ${f0(r.nodeStart.bestMs)}); the run took ${f1(r.runOverNodeStart)} x that${r.gpu.found ? '' : ` (target with no GPU: <= ${r.targets.noGpuRunOverNodeStart}: ${r.runOverNodeStart <= r.targets.noGpuRunOverNodeStart ? 'within' : 'OVER'})`}`,
  );
  out.push(...memoryLines(k));
  if (k.outputTail) out.push('  its output ended with:', ...k.outputTail.split('\n').map((l) => `    ${l}`));
  return out;
}

const mib = (kib: number | undefined): string => (kib === undefined ? '-' : f0(kib / 1024));

/** --repeat / --against: each run in its order, and each build's median. */
function repeatLines(x: NonNullable<BenchResult['repeats']>): string[] {
  const out = ['', `repeated: ${x.rounds} round(s)${x.against ? `, alternating with ${x.against.main}` : ''}`];
  out.push(...table([['run', 'build', 'wall ms', 'peak PSS MiB', 'exit'], ...x.runs.map((r) => [String(r.order), r.build, f0(r.wallMs), mib(r.peakPssKiB), String(r.exitCode)])]));
  out.push(`  this build: median ${f0(x.this.medianMs)} ms (best ${f0(x.this.bestMs)}), peak ${mib(x.this.maxPeakPssKiB)} MiB PSS`);
  if (x.against) out.push(`  against: median ${f0(x.against.medianMs)} ms (best ${f0(x.against.bestMs)}), peak ${mib(x.against.maxPeakPssKiB)} MiB PSS; this / against ${f2(x.this.medianMs / x.against.medianMs)}`);
  return out;
}

/** --scale: the run's time against the GPU count, and each figure against its device alone. */
function scalingLines(s: NonNullable<BenchResult['scaling']>): string[] {
  const out = ['', `scaling with the GPU count (${s.counts.join(', ')})${s.skipped ? `: ${s.skipped}` : ''}`];
  out.push(...table([['GPUs', 'wall ms', 'discovery', 'checks', 'peak PSS MiB', 'exit'], ...s.runs.map((r) => [String(r.gpus), f0(r.wallMs), f0(r.phasesMs?.discovery), f0(r.phasesMs?.checks), mib(r.peakPssKiB), String(r.exitCode)])]));
  if (s.mostOverOne !== undefined) out.push(`  the most GPUs over one: ${f2(s.mostOverOne)} x (target <= ${s.targets.overOne}: ${s.mostOverOne <= s.targets.overOne ? 'within' : 'OVER'})`);
  const most = s.runs.at(-1);
  if (most) {
    for (const [id, g] of Object.entries(most.registeredGBps)) {
      const alone = s.alone[id];
      out.push(`  ${id}: registered ${f2(g)} GB/s with ${most.gpus} GPU(s), ${f2(alone)} alone${alone ? ` (${pct(g / alone - 1)})` : ''}`);
    }
  }
  if (s.maxAloneDeviation !== undefined) out.push(`  the largest deviation from a device alone: ${pct(s.maxAloneDeviation)} (target <= ${pct(s.targets.aloneDeviation)}: ${s.maxAloneDeviation <= s.targets.aloneDeviation ? 'within' : 'OVER'})`);
  return out;
}

export function renderText(r: BenchResult): string[] {
  const out: string[] = [];
  out.push(`mapped-reg-conformance bench: region ${r.options.sizeMiB} MiB, best and median of ${r.options.runs} (tinybench ${r.tool.tinybench ?? ''}), scratch ${r.options.scratchDir}`);
  if (!r.gpu.found) out.push(`no CUDA/HIP device was found: ${r.gpu.message ?? ''}`);
  for (const d of r.devices) out.push(...deviceLines(d, r));
  out.push(...conformanceLines(r));
  if (r.repeats) out.push(...repeatLines(r.repeats));
  if (r.scaling) out.push(...scalingLines(r.scaling));
  if (r.errors.length) out.push('', 'errors:', ...r.errors.map((e) => `  ${e}`));
  return out;
}
