// What the checks of one device share inside its process: the device (discovered once), scratch files and
// mappings that are never unmapped while the driver may hold them, ops whose registrations are recorded in the
// model's table, and the probe's report (run once, read by the probe and timing checks). No Vitest here: the
// runner lists the checks (suites/plan.ts) before it loads Vitest, and the checks import this file.
import { randomFillSync } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { DeviceOps } from '../bindings/device-ops.js';
import { type Backend, deviceFromPlain, discover, isGpuDriver } from '../bindings/discovery.js';
import { isBackend } from '../bindings/registry.js';
import { type Mapping, MAP, PROT, dropPages, mmap, munmap } from '../bindings/libc.js';
import { hostCall, isHostFault } from '../bindings/host-fault.js';
import { type PendingScratch, makeScratchRegion, startScratchFile } from '../bindings/scratch.js';
import { makeLockedFolder } from '../bindings/scratch-lock.js';
import { processGone, waitUntilGone } from '../bindings/process-gone.js';
import { type Host, type ProbeReport, probeReport, registrations } from '../src/index.js';
import type { CheckContext } from './check.js';
import { type SuiteOptions, writeEvent } from './protocol.js';
import { adaptiveRounds, measureSection } from './measure.js';
import { type Placement, placeOnGpuNode } from '../bindings/numa.js';
import type { DeviceLoad } from '../results/types.js';

/** The context of each device this process checks, by device id. */
const contexts = new Map<string, CheckContext>();

/** The context of the device of `options` (the runner's options of that device), its device discovered once. */
export function deviceContext(options: SuiteOptions): CheckContext {
  const known = contexts.get(options.device);
  if (known) return known;
  const backend = options.device.split(':')[0] as Backend;
  const plain = options.discovered;
  if (plain && plain.id === options.device && !isGpuDriver(plain)) {
    const rebuilt: CheckContext = { device: deviceFromPlain(plain), options, log: () => {} };
    contexts.set(options.device, rebuilt);
    return rebuilt;
  }
  if (!isBackend(backend)) throw new Error(`unknown backend in device id ${options.device}`);
  const found = discover([backend]);
  const device = found.devices.find((d) => d.id === options.device);
  if (!device) {
    const note = found.backends.find((b) => b.backend === backend)?.note;
    throw new Error(`device ${options.device} not found${note ? `: ${note}` : ''}`);
  }
  // one context for all the checks of this process (else CUDA makes it again for each check's ops)
  device.native?.keepContext();
  const ctx: CheckContext = { device, options, log: () => {} };
  contexts.set(options.device, ctx);
  return ctx;
}

export interface Probed {
  report: ProbeReport;
  /** What the device's process saw of the machine around the timed copies (none when they were not reached). */
  load?: DeviceLoad;
  /** The GPU's NUMA node and whether the probe's memory was placed on it. */
  numa?: Placement;
  /**
   * writtenAhead: the file was written by its own thread while the runner started (startProbeScratch);
   * discoveryWaitMs: how long the probe waited for the discovering processes beside it to end (waitForDiscovery).
   */
  scratch: { dir: string; fsType: string; sizeBytes: number; writtenAhead: boolean; discoveryWaitMs?: number };
  /** Where the time went: making and mapping the scratch file; the self-test, of which the windows' registration. */
  phasesMs: { scratchFile: number; registration: number; probe: number };
}
/** Each device's probe report, by device id. */
const probed = new Map<string, Probed>();
/** The host could not give a device's probe its region (no space, ...): every check that needs the probe says so. */
const probeFaults = new Map<string, Error>();

/** Where each device's probe memory was placed (startProbeScratch), by device id. */
const placements = new Map<string, Placement>();

/** Probe scratch files being written ahead of their probe, by device id (startProbeScratch). */
const pendingScratch = new Map<string, PendingScratch>();

/**
 * Starts writing the scratch file of the device's probe on a thread of its own, before the probe asks for it: a
 * device runner calls this as soon as it knows its device, so that the file is written while Vitest starts. The
 * probe takes it (probeOnce); a run whose probe never comes removes it at exit. Nothing when it cannot start: the
 * probe then makes its file as before.
 */
export function startProbeScratch(options: SuiteOptions): void {
  if (pendingScratch.has(options.device) || probed.has(options.device)) return;
  // the region and the page-locked window on the GPU's NUMA node, where the host has more than one: the policy
  // is the thread's, and the thread that writes the file is started below, from this one, so it inherits it
  const bus = options.discovered?.pciBusId;
  if (bus && !placements.has(options.device)) placements.set(options.device, placeOnGpuNode(bus));
  const pending = startScratchFile(options.scratchDir, options.sizeMiB * 1024 * 1024);
  if (pending) pendingScratch.set(options.device, pending);
}

/** What waits for a device's probe to be over (whenProbeDone), by device id. */
const afterProbe = new Map<string, (() => void)[]>();

/**
 * Runs `f` once the device's probe is over in this process (its region unmapped and its page-locked window freed,
 * whatever its outcome), or now when it is over or does not run here (`probeRuns` false: reported by an earlier
 * process, or left out by --check): work that would otherwise add its memory to the probe's, the run's fullest moment.
 */
export function whenProbeDone(id: string, probeRuns: boolean, f: () => void): void {
  if (!probeRuns || probed.has(id) || probeFaults.has(id)) return f();
  afterProbe.set(id, [...(afterProbe.get(id) ?? []), f]);
}

function probeDone(id: string): void {
  const waiting = afterProbe.get(id) ?? [];
  afterProbe.delete(id);
  for (const f of waiting) f();
}

/**
 * Before the probe reads its region, the run's fullest moment: waits for the discovering processes the command
 * named (SuiteOptions.waitFor: an OpenCL ICD still starting on a cold page cache, some 90 MiB beside the region),
 * told to the command as a wait for the host (not the check's --timeout). The ms it waited; undefined when none
 * was named, 0 when they were gone already.
 */
function waitForDiscovery(o: SuiteOptions): number | undefined {
  if (!o.waitFor) return undefined;
  const there = o.waitFor.processes.filter((p) => !processGone(p));
  if (there.length === 0) return 0;
  writeEvent({ type: 'wait', device: o.device, waiting: true, what: `the discovery of processes ${there.map((p) => p.pid).join(', ')} to end`, limitMs: o.waitFor.limitMs });
  try {
    return Math.round(waitUntilGone(there, o.waitFor.limitMs).waitedMs);
  } finally {
    writeEvent({ type: 'wait', device: o.device, waiting: false });
  }
}

/** The self-test on a scratch region of `--size` MiB, run once per device; later callers get its report. */
export function probeOnce(ctx: CheckContext): Probed {
  const id = ctx.device.id;
  const fault = probeFaults.get(id);
  if (fault) throw fault;
  const known = probed.get(id);
  if (known) return known;
  const t0 = performance.now();
  let region: ReturnType<typeof makeScratchRegion>;
  try {
    const pending = pendingScratch.get(id);
    pendingScratch.delete(id);
    region = makeScratchRegion(ctx.options.scratchDir, ctx.options.sizeMiB * 1024 * 1024, pending);
  } catch (e) {
    if (isHostFault(e)) probeFaults.set(id, e);
    probeDone(id);
    throw e;
  }
  const t1 = performance.now();
  try {
    // mapped, not yet read: its pages join the process as the comparisons read them. The region's own wait for the
    // file's writer threads (above) came first, so the two waits overlap
    const discoveryWaitMs = waitForDiscovery(ctx.options);
    const measured = measureSection({
      deviceId: id,
      runs: ctx.options.runs,
      backend: ctx.device.backend,
      pciBusId: ctx.device.pciBusId,
      quiet: ctx.options.quiet,
      log: (line) => ctx.log(line),
      // the command's watchdog stops counting the check's --timeout while the host is waited for
      onWait: (w) => writeEvent({ type: 'wait', device: id, ...w }),
    });
    const report = probeReport(ctx.device.device, region.map, region.reference, {
      runs: ctx.options.runs,
      minRelativeSpeed: ctx.options.minRelativeSpeed,
      timingSection: measured.section,
      adaptive: adaptiveRounds(ctx.options.runs, ctx.options.quiet.maxDrop),
      // window 2, released, leaves the runner's memory before the timing's page-locked window is allocated: a
      // shared read-only mapping of the file, so the file keeps its bytes; never a range the table still holds
      dropReleased: (window) => {
        if (!registrations.isPinned(window)) dropPages(window);
      },
    });
    // the timing lock held past its wait, or not a lock of ours: the host's, never the probe's Inconclusive
    const fault = measured.fault();
    if (fault) {
      probeFaults.set(id, fault);
      throw fault;
    }
    const load = measured.load();
    const numa = placements.get(id);
    const done: Probed = { report, ...(load ? { load } : {}), ...(numa ? { numa } : {}), scratch: { dir: region.dir, fsType: region.fsType, sizeBytes: region.size, writtenAhead: region.writtenAhead, ...(discoveryWaitMs !== undefined ? { discoveryWaitMs } : {}) }, phasesMs: { scratchFile: t1 - t0, registration: report.registrationMs, probe: performance.now() - t1 } };
    probed.set(id, done);
    return done;
  } finally {
    region.close();
    probeDone(id);
  }
}

/**
 * The device's raw ops (with the hazard extras) for `f`, every successful registration recorded in the model's
 * table and every release that worked removed from it: what stays in the table afterwards is what the driver
 * may still hold, and its mapping must never be unmapped. What the ops' own release says (a retain kept for a
 * registration still held, a release that failed) goes to the check's log, with its result.
 */
export function withTrackedOps<T>(ctx: CheckContext, bytes: number, f: (ops: DeviceOps) => T): T {
  const native = ctx.device.native;
  if (!native) throw new Error(`${ctx.device.id} has no registration ops`);
  return native.withOps(bytes, (raw) => {
    const record = (host: Host, fn: () => void): void => {
      fn();
      registrations.add(host);
    };
    const release = (host: Host, fn: () => void): void => {
      try {
        fn();
      } catch (e) {
        registrations.noteReleaseFailure(host);
        throw e;
      }
      registrations.remove(host);
    };
    const ops: DeviceOps = {
      ...raw,
      register: (host) => record(host, () => raw.register(host)),
      registerWithFlags: (host, flags) => record(host, () => raw.registerWithFlags(host, flags)),
      registerAddress: (address, length, flags) => record({ address, bytes: new Uint8Array(length) }, () => raw.registerAddress(address, length, flags)),
      unregister: (host) => release(host, () => raw.unregister(host)),
      unregisterAddress: (address) => {
        const entry = registrations.entries().find((e) => e.address === address);
        const host = { address, bytes: new Uint8Array(entry?.length ?? 0) };
        release(host, () => raw.unregisterAddress(address));
      },
    };
    return f(ops);
  }, { log: ctx.log });
}

export interface ScratchFile {
  readonly path: string;
  readonly fd: number;
  readonly size: number;
  /** The bytes written. */
  readonly bytes: Uint8Array;
  /** Removes the file (its mappings, if any, live on). */
  remove(): void;
}

/**
 * A file of `size` random bytes in `dir` (the scratch folder, or /dev/shm for tmpfs), opened read-write, in a
 * private folder held locked (bindings/scratch-lock.ts). A host errno while making it (no space, ...) is a
 * HostFault: the check is `error`, not the driver's failure.
 */
export function scratchFile(dir: string, size: number): ScratchFile {
  const doing = "making the check's file";
  const own = hostCall(dir, doing, () => makeLockedFolder(dir));
  const path = join(own.path, 'hazard.bin');
  let fd = -1;
  const bytes = new Uint8Array(size);
  try {
    hostCall(dir, doing, () => {
      fd = openSync(path, 'w+', 0o600);
      randomFillSync(bytes);
      let done = 0;
      while (done < size) done += writeSync(fd, bytes, done, size - done, done);
    });
  } catch (e) {
    if (fd >= 0) closeSync(fd);
    own.remove();
    throw e;
  }
  let removed = false;
  return {
    path,
    fd,
    size,
    bytes,
    remove() {
      if (removed) return;
      removed = true;
      closeSync(fd);
      own.remove();
    },
  };
}

/** Maps a file read-only and shared (defaults) or as asked; a host errno (ENOMEM, ...) is a HostFault. */
export function mapFile(fd: number, size: number, prot: number = PROT.READ, flags: number = MAP.SHARED): Mapping {
  return hostCall('the process', "mapping the check's file", () => mmap(size, prot, flags, fd, 0));
}

/** Ranges kept mapped because the driver may still hold them, reported by the check that kept them. */
export const keptMappings: Mapping[] = [];

/**
 * Unmaps `m` unless some part of it is still registered (or held after a failed release) in the model's table:
 * then it is kept until the process ends. Returns true when unmapped.
 */
export function releaseMapping(m: Mapping): boolean {
  if (registrations.isPinned(m)) {
    keptMappings.push(m);
    return false;
  }
  munmap(m);
  return true;
}
