// The Ops record of the spec and the registration table the bindings share. No FFI here: a Host is an
// address (for the driver and the table) and a byte view of the same memory (for comparing and copying).

/** The bytes of a mapping or a buffer: where they live in the process, and a view of them. */
export interface Host {
  /** Virtual address of bytes[0] in this process (fabricated by in-memory doubles). */
  readonly address: bigint;
  readonly bytes: Uint8Array;
}

/** A sub-range of a host range, sharing its memory. */
export function hostSlice(host: Host, offset: number, length: number): Host {
  if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0 || offset + length > host.bytes.length) {
    throw new RangeError(`hostSlice: [${offset}, +${length}) is outside a range of ${host.bytes.length} bytes`);
  }
  return { address: host.address + BigInt(offset), bytes: host.bytes.subarray(offset, offset + length) };
}

/**
 * The device's own clock around an upload (events on the copy's stream), where the backend has one: a busy host's
 * scheduling is not the copy (docs/measurement.md, "The device's clock").
 */
export interface DeviceClock {
  /** `upload(host)`, timed by the device: its milliseconds from just before the copy to its end. */
  timeUpload(host: Host): number;
  /** Gives back what the clock holds (its events). */
  close(): void;
}

/** The ways to talk to the device that the self-test needs (spec: type ops). All synchronous. */
export interface Ops {
  /** May throw on a refusal. */
  register(host: Host): void;
  unregister(host: Host): void;
  /** Page-locked when the backend can. */
  allocHost(bytes: number): Host;
  freeHost(host: Host): void;
  /** Copy a host range to the device, then back into `into`. */
  roundTrip(host: Host, into: Host): void;
  /** The host-to-device half alone: what the speed test times. */
  upload(host: Host): void;
  /**
   * The device's clock for timing uploads, where the backend has one (absent: the host's clock times them). Throws
   * when the device cannot give one now (its events could not be made): the host's clock then times them too.
   */
  deviceClock?(): DeviceClock;
}

export interface Registration {
  readonly address: bigint;
  readonly length: number;
  /** Failed unregister calls so far; above 0 the range may still be held by the driver. */
  releaseFailures: number;
}

function overlaps(a: bigint, alen: number, b: bigint, blen: number): boolean {
  return a < b + BigInt(blen) && b < a + BigInt(alen);
}

/**
 * Which ranges are registered with a driver in this process, and which stayed held after a failed release.
 * An entry is added when a register call succeeded and removed only when an unregister of it succeeded, so a
 * range whose release failed stays here until the process ends (its mapping must never be unmapped).
 * A range registered twice (a driver that wrongly accepts it) is two entries.
 */
export class RegistrationTable {
  readonly #entries: Registration[] = [];

  add(host: Host): void {
    this.#entries.push({ address: host.address, length: host.bytes.length, releaseFailures: 0 });
  }

  #find(host: Host): number {
    return this.#entries.findIndex((e) => e.address === host.address && e.length === host.bytes.length);
  }

  /** The driver released the range: forget one entry of it. */
  remove(host: Host): void {
    const i = this.#find(host);
    if (i >= 0) this.#entries.splice(i, 1);
  }

  /** The driver refused to release the range: it stays, counted as held. */
  noteReleaseFailure(host: Host): void {
    const i = this.#find(host);
    if (i >= 0) this.#entries[i]!.releaseFailures += 1;
  }

  /** Every entry overlapping [address, address + length). */
  overlapping(address: bigint, length: number): Registration[] {
    return this.#entries.filter((e) => overlaps(e.address, e.length, address, length)).map((e) => ({ ...e }));
  }

  /** True while any part of the range is registered or held (Transfer.is_pinned). */
  isPinned(host: Host): boolean {
    return this.overlapping(host.address, host.bytes.length).length > 0;
  }

  /** Entries whose release failed at least once. */
  held(): Registration[] {
    return this.#entries.filter((e) => e.releaseFailures > 0).map((e) => ({ ...e }));
  }

  entries(): Registration[] {
    return this.#entries.map((e) => ({ ...e }));
  }

  get size(): number {
    return this.#entries.length;
  }
}

/** The process-wide table: the bindings and the probe record every registration here unless given another. */
export const registrations = new RegistrationTable();

const trackedFor = Symbol('trackedFor');
type Tracked = Ops & { [trackedFor]?: RegistrationTable };

/**
 * Ops whose register and unregister are recorded in `table`: an entry on a successful register, removed on a
 * successful unregister, a failure counted (and the entry kept) on a failed one. Wrapping twice for the same
 * table returns the same record, so nothing is recorded twice.
 */
export function trackedOps(ops: Ops, table: RegistrationTable = registrations): Ops {
  if ((ops as Tracked)[trackedFor] === table) return ops;
  const wrapped: Tracked = {
    register(host) {
      ops.register(host);
      table.add(host);
    },
    unregister(host) {
      try {
        ops.unregister(host);
      } catch (e) {
        table.noteReleaseFailure(host);
        throw e;
      }
      table.remove(host);
    },
    allocHost: (bytes) => ops.allocHost(bytes),
    freeHost: (host) => ops.freeHost(host),
    roundTrip: (host, into) => ops.roundTrip(host, into),
    upload: (host) => ops.upload(host),
    ...(ops.deviceClock ? { deviceClock: () => ops.deviceClock!() } : {}),
    [trackedFor]: table,
  };
  return wrapped;
}
