// `npm run bench`: what the conformance suite measures, measured on its own, per CUDA/HIP device, with
// tinybench: host-to-device copies of a registered file mapping against staging, page-locked and pageable
// copies; the PCIe link's limit; what registration costs per GiB with a warm and a cold page cache; one driver
// call through koffi; the native reference (bench/native/staged.c) on the same file; and the wall time,
// phases and peak memory of a whole conformance run. docs/bench.md explains every figure and its target.
// Timings are reported, never judged: the exit status says only whether the bench could measure.
//
// Here: the options, discovery, the order of things, the result. The measurements of a device are in
// measurements/ (run by device.ts), the native reference's build in native/, the conformance run in
// conformance.ts, the text and the JSON in render/.
import { rmSync } from 'node:fs';
import { hostname, release } from 'node:os';
import { discover } from '../bindings/discovery.js';
import { backendModules } from '../bindings/registry.js';
import { errorText } from '../src/index.js';
import { conformanceRun } from './conformance.js';
import { benchDevice } from './device.js';
import { buildNative } from './native/native.js';
import { nodeStart } from './node-start.js';
import { repeatRuns } from './repeats.js';
import { scalingRuns } from './scaling.js';
import { type Options, UsageError, parseOptions } from './bench-options.js';
import { pkg } from './package.js';
import { say } from './progress.js';
import { writeJson } from './render/json.js';
import { renderText } from './render/text.js';
import type { BenchResult, DeviceBench } from './result.js';
import { TARGETS } from './targets.js';

async function main(argv: string[]): Promise<number> {
  let o: Options;
  try {
    // --help prints the options and ends the process (yargs)
    o = await parseOptions(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`bench: ${e.message.split('\n')[0]}\n`);
      return 2;
    }
    throw e;
  }
  const startedAt = new Date().toISOString();
  const registering = backendModules().filter((m) => m.registers);
  const found = discover(registering.map((m) => m.id));
  const gpus = found.devices.filter((d) => d.native);
  const unknown = o.devices.filter((id) => !gpus.some((d) => d.id === id));
  if (unknown.length) {
    process.stderr.write(`bench: unknown device ${unknown.join(', ')} (${registering.map((m) => m.framework).join('/')} devices found: ${gpus.map((d) => d.id).join(', ') || 'none'})\n`);
    return 2;
  }
  const selected = gpus.filter((d) => o.devices.length === 0 || o.devices.includes(d.id));
  const notes = found.backends.map((b) => `${b.backend}: ${b.note ?? (b.library ? `${b.library}, ${b.devices} device(s)` : 'no library')}`);
  const errors: string[] = [];
  const devices: DeviceBench[] = [];
  if (selected.length) {
    const native = buildNative(o);
    try {
      for (const d of selected) {
        try {
          devices.push(benchDevice(d, o, native));
        } catch (e) {
          errors.push(`${d.id}: ${errorText(e)}`);
        }
      }
    } finally {
      if (native.dir) rmSync(native.dir, { recursive: true, force: true });
    }
  } else say(`no CUDA/HIP device was found (${notes.join('; ')}): only the conformance run and node -e 0 are measured`);
  for (const d of devices) errors.push(...d.errors.map((e) => `${d.id}: ${e}`));

  // Nothing of ours holds the device now (withOps released it): the conformance run has it to itself.
  // a default run (every device the command finds) unless --device chose some
  const conformance = await conformanceRun(o, o.devices);
  if (conformance.error) errors.push(`conformance run: ${conformance.error}`);
  const repeats = o.repeat > 1 || o.against ? await repeatRuns(o, o.devices, conformance, o.repeat, o.against) : undefined;
  // every GPU found (not only --device's): the counts are of GPUs
  const scaling = o.scale ? await scalingRuns(o, gpus.map((d) => d.id), o.scale) : undefined;
  if (scaling?.skipped) errors.push(`scaling: ${scaling.skipped}`);
  // the suite's registered copy against the native reference of the same device, both measured in this run
  for (const k of conformance.devices) {
    const native = devices.find((d) => d.id === k.id)?.native.registeredGBps;
    if (k.registeredGBps !== undefined && native) k.nativeRatio = k.registeredGBps / native;
  }
  say('node -e 0');
  const start = nodeStart(o.runs);
  const result: BenchResult = {
    schemaVersion: 1,
    tool: { name: `${pkg.name} bench`, version: pkg.version, ...(pkg.dependencies?.tinybench ? { tinybench: pkg.dependencies.tinybench } : {}) },
    host: { hostname: hostname(), kernel: release(), platform: `${process.platform}-${process.arch}`, node: process.version, root: process.getuid?.() === 0 },
    startedAt,
    finishedAt: new Date().toISOString(),
    options: { runs: o.runs, sizeMiB: o.sizeMiB, scratchDir: o.scratchDir, devices: o.devices, dropCaches: o.dropCaches, repeat: o.repeat, ...(o.against ? { against: o.against } : {}), ...(o.scale ? { scale: o.scale } : {}) },
    targets: { nativeRatio: TARGETS.nativeRatio, peakMiB: TARGETS.peakMiB(o.sizeMiB), runnerPeakMiB: TARGETS.runnerPeakMiB(o.sizeMiB), noGpuRunOverNodeStart: TARGETS.noGpuRunOverNodeStart, gpuRunWallMs: TARGETS.gpuRunWallMs },
    gpu: { found: selected.length > 0, ...(selected.length ? {} : { message: notes.join('; ') }), backends: found.backends },
    devices,
    conformance,
    ...(repeats ? { repeats } : {}),
    ...(scaling ? { scaling } : {}),
    nodeStart: start,
    runOverNodeStart: conformance.wallMs / start.medianMs,
    errors,
  };
  process.stdout.write(`${renderText(result).join('\n')}\n`);
  if (o.json) writeJson(o.json, result);
  return errors.length ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
