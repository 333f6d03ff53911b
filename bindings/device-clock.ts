// The device's own clock around a copy: two events recorded on the copy's stream (the legacy default stream, which
// the synchronous host-to-device copy uses), the end one synchronized, the device's milliseconds between them read
// (cuEvent* / hipEvent*). A busy host's scheduling between the copy's calls is not the copy: the events are stamped
// by the device. The calls are declared apart from the driver's own table (declareOptional): a driver without them
// still loads, and its copies are timed on the host's clock (src/probe.ts says which clock a timing used).
import type { DeviceClock, Host } from '../src/ops.js';

/** One driver's event calls, in whatever context (device) is current. A stream of null is the legacy default stream. */
export interface EventCalls {
  /** cuEventCreate / hipEventCreate (default flags: timing enabled). */
  create(): bigint;
  /** cuEventRecord / hipEventRecord. */
  record(event: bigint, stream: bigint | null): void;
  /** cuEventSynchronize / hipEventSynchronize. */
  synchronize(event: bigint): void;
  /** cuEventElapsedTime / hipEventElapsedTime: milliseconds from `start` to `end`. */
  elapsedMs(start: bigint, end: bigint): number;
  /** cuEventDestroy_v2 / hipEventDestroy. */
  destroy(event: bigint): void;
}

/**
 * The device clock of one device's ops: its two events created now (`enter` makes the device current first); each
 * timed upload records the start, copies through `upload`, records the end, waits for it and reads the elapsed
 * time. Throws the driver's error when the events cannot be made (the caller then times on the host's clock).
 */
export function deviceClock(enter: (what: string) => void, calls: EventCalls, upload: (host: Host) => void): DeviceClock {
  enter('deviceClock');
  const start = calls.create();
  let end: bigint;
  try {
    end = calls.create();
  } catch (e) {
    calls.destroy(start);
    throw e;
  }
  return {
    timeUpload(host) {
      enter('timeUpload');
      calls.record(start, null);
      upload(host);
      calls.record(end, null);
      calls.synchronize(end);
      return calls.elapsedMs(start, end);
    },
    close() {
      enter('closeDeviceClock');
      try {
        calls.destroy(start);
      } finally {
        calls.destroy(end);
      }
    },
  };
}
