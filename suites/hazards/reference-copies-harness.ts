// The copy machinery of the reference copy checks (./reference-copies.ts): copies on a created stream, interleaved
// best-of-N timings, a read through a device pointer, the pointer query, and ops held open on several devices at
// once. No check is defined here. The discipline is the harness's (./harness.ts): registrations through Held,
// released at the end. What all the reference checks share (the device's reference kit, when a check applies):
// ./reference-harness.ts.
import type { DeviceOps } from '../../bindings/device-ops.js';
import type { AttributeReading, ReferenceKit } from '../../bindings/reference-kit.js';
import type { ReferenceOps } from '../../bindings/reference-ops.js';
import { type DeviceClock, type Host, firstDifference, isFatal } from '../../src/index.js';
import { type Code, codeText, driverCall } from './harness.js';

/** The window the portable check times: enough bytes that a registered copy and a staged one differ plainly. */
export const PORTABLE_BYTES = 16 * 1024 * 1024;
/** The windows of the other reference checks (bytes checked, the async one also timed for the report). */
export const ASYNC_BYTES = 4 * 1024 * 1024;
export const DEVICE_POINTER_BYTES = 1024 * 1024;
export const EVERY_GPU_BYTES = 4 * 1024 * 1024;

/** The ops' reference calls; throws when the driver lacks them (the applies of each check said so before). */
export function referenceOf(ops: DeviceOps): ReferenceOps {
  const r = ops.reference;
  if (r === undefined || typeof r === 'string') throw new Error(`no reference calls on these ops: ${r ?? 'none offered'}`);
  return r;
}

/** An attribute's value, or the text of why there is none (the error its query gave, or why the driver has no such attribute). */
export function valueOrWhy(reading: AttributeReading): number | string {
  return 'value' in reading ? reading.value : 'error' in reading ? reading.error : reading.absent;
}

// ---- timing (reported; only the portable check judges a ratio, of two registered copies) ----

/** Several timings interleaved round by round, so that a machine that slows for a while slows each alike: each `fs` times one copy (ms); GB/s of the best each. */
export function interleavedGBps(bytes: number, runs: number, fs: readonly (() => number)[]): number[] {
  const best = fs.map(() => Infinity);
  for (let i = 0; i < runs; i++) fs.forEach((f, k) => (best[k] = Math.min(best[k]!, f())));
  return best.map((ms) => bytes / (Math.max(ms, 1e-6) / 1000) / 1e9);
}

/** `f` timed on the host's clock (ms). */
export const hostTimed = (f: () => void) => (): number => {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
};

/**
 * Uploads of `ops` timed on its device's clock (src/probe.ts, the probe's own), or on the host's where the device
 * has none or its events could not be made (`clock` says which): `time(host)` gives one upload's ms; `close` gives
 * the clock back.
 */
export function uploadTimer(ops: DeviceOps): { time: (host: Host) => number; clock: 'device' | 'host'; close(): void } {
  let device: DeviceClock | undefined;
  try {
    device = ops.deviceClock?.();
  } catch (e) {
    if (isFatal(e)) throw e;
  }
  if (!device) return { time: (host) => hostTimed(() => ops.upload(host))(), clock: 'host', close: () => {} };
  const d = device;
  return { time: (host) => d.timeUpload(host), clock: 'device', close: () => d.close() };
}

export const gbpsText = (g: number): string => `${g.toFixed(2)} GB/s`;

// ---- bytes ----

/** The ops' device buffer brought back into a page-locked buffer and compared with `expected`: first differing offset, -1 when equal. */
export function deviceBytes(ops: DeviceOps, expected: Uint8Array): { download: Code; diff: number | null } {
  const into = ops.allocHost(expected.length);
  try {
    const download = driverCall(() => ops.download(into));
    return { download, diff: download.code === 0 ? firstDifference(into.bytes, expected) : null };
  } finally {
    driverCall(() => ops.freeHost(into));
  }
}

/** A copy of `host` into the ops' buffer on a stream created for it, the stream synchronized and destroyed. */
export interface StreamCopy {
  create: Code;
  copy?: Code;
  sync?: Code;
  destroy?: Code;
}

export function streamCopy(ops: DeviceOps, host: Host): StreamCopy {
  const ref = referenceOf(ops);
  let stream = 0n;
  const create = driverCall(() => {
    stream = ref.createStream();
  });
  if (create.code !== 0) return { create };
  const copy = driverCall(() => ref.uploadAsync(host, stream));
  const sync = driverCall(() => ref.synchronizeStream(stream));
  return { create, copy, sync, destroy: driverCall(() => ref.destroyStream(stream)) };
}

export const streamCopied = (s: StreamCopy): boolean => s.create.code === 0 && s.copy?.code === 0 && s.sync?.code === 0;

export function streamCopyText(s: StreamCopy): string {
  const part = (what: string, c: Code | undefined): string => (c === undefined ? '' : `${what} ${codeText(c)}`);
  return [part('stream', s.create), part('async copy', s.copy), part('synchronize', s.sync), part('destroy', s.destroy)].filter(Boolean).join(', ');
}

// ---- the pointer query ----

/** What the driver says of `address`: the device pointer it knows, or the error it returned. */
export interface PointerAnswer {
  code: Code;
  devicePointer?: bigint;
}

export function askPointer(ref: ReferenceOps, address: bigint): PointerAnswer {
  let devicePointer: bigint | undefined;
  const code = driverCall(() => {
    devicePointer = ref.pointerDevicePointer(address);
  });
  return code.code === 0 && devicePointer !== undefined ? { code, devicePointer } : { code };
}

// ---- several contexts and devices ----

/** Ops of every device in `ordinals`, all open at once, for `f` (each released when f returns). */
export function withDevicesOps<T>(kit: ReferenceKit, ordinals: readonly number[], bytes: number, log: (m: string) => void, f: (ops: DeviceOps[]) => T): T {
  const open = (i: number, held: DeviceOps[]): T => (i === ordinals.length ? f(held) : kit.withDeviceOps(ordinals[i]!, bytes, (ops) => open(i + 1, [...held, ops]), { log }));
  return open(0, []);
}
