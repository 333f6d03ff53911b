// The round trip test/cuda.test.ts and test/hip.test.ts both run through their driver's ops (withCudaOps,
// withHipOps): a read-only file mapping registered, copied to the device and back whole and through a window,
// uploaded, released; then what the double counted.
import { expect } from 'vitest';
import type { DeviceOps } from '../../bindings/device-ops.js';
import { hostSlice, type Host } from '../../src/ops.js';
import type { DoubleExports } from './binding-harness.js';

export interface RoundTrip {
  /** The file's bytes, and a read-only mapping of that file. */
  content: Uint8Array;
  mapping: Host;
  /** A window of the mapping, copied back into the start of the buffer. */
  window: { offset: number; length: number };
  /** A backend's own steps after the upload, before the release. */
  afterUpload?: (ops: DeviceOps) => void;
}

/** The steps inside the ops; returns the bytes the whole-mapping round trip brought back. */
function roundTripSteps(ops: DeviceOps, trip: RoundTrip): Uint8Array {
  const into = ops.allocHost(trip.content.length);
  ops.register(trip.mapping);
  ops.roundTrip(trip.mapping, into);
  const got = Uint8Array.from(into.bytes);
  const { offset, length } = trip.window;
  ops.roundTrip(hostSlice(trip.mapping, offset, length), hostSlice(into, 0, length));
  expect(into.bytes.subarray(0, length)).toEqual(trip.content.subarray(offset, offset + length));
  ops.upload(trip.mapping);
  trip.afterUpload?.(ops);
  ops.synchronize();
  ops.unregister(trip.mapping);
  ops.freeHost(into);
  return got;
}

/**
 * Runs the round trip through `withOps` and checks what came of it: the mapping's bytes back, the double's
 * registrations as they were before, and each call named in `callsMade` made that many more times.
 */
export function expectRoundTrip(
  dbl: DoubleExports,
  withOps: (steps: (ops: DeviceOps) => Uint8Array) => Uint8Array,
  trip: RoundTrip,
  callsMade: Record<string, number>,
): void {
  const counted = Object.entries(callsMade).map(([name, more]) => ({ name, expected: dbl.calls(name) + more }));
  const regs = dbl.registrations();
  const got = withOps((ops) => roundTripSteps(ops, trip));
  expect(got).toEqual(trip.content);
  expect(dbl.registrations()).toBe(regs);
  for (const { name, expected } of counted) expect(dbl.calls(name), name).toBe(expected);
}
