// What withCudaOps and withHipOps (driver-kit.ts: withDriverOps) hand to their callback, the ops themselves (built once from each driver's calls), and the
// release discipline they share.

import { constants as bufferConstants } from 'node:buffer';
import koffi from 'koffi';
import { isFatal } from '../src/fatal.js';
import type { Host, Ops } from '../src/ops.js';
import type { DriverApi } from './errors.js';
import { type ReferenceCalls, type ReferenceOps, referenceOps } from './reference-ops.js';
import { type EventCalls, deviceClock } from './device-clock.js';

/**
 * Ops on one device and one device buffer, plus what the hazard checks need. All synchronous.
 * Registrations made here are not recorded in any RegistrationTable: wrap with trackedOps (src/ops.ts) for
 * that, and note that trackedOps records only `register`/`unregister`; the extra calls below are the caller's
 * to account for. (withDriverOps counts the ones it has not seen released, only so that withCudaOps may decide
 * whether to let the primary context go.)
 */
export interface DeviceOps extends Ops {
  readonly api: DriverApi;
  readonly ordinal: number;
  /** Size of the device buffer: the most roundTrip, upload and download can move. */
  readonly bytes: number;
  /** The flags `register` passes (CUDA: READ_ONLY when the device supports it; HIP: 0). */
  readonly registerFlags: number;
  registerWithFlags(host: Host, flags: number): void;
  /**
   * Register a raw range, with no view to check it against: for the hazard checks that need a NULL pointer,
   * a size of 0 or a range past the end of a mapping. Anything else should use a Host.
   */
  registerAddress(address: bigint, length: number, flags: number): void;
  unregisterAddress(address: bigint): void;
  /** Device buffer -> `into` (its whole length, at most `bytes`). */
  download(into: Host): void;
  /** Wait for the device (cuCtxSynchronize / hipDeviceSynchronize). */
  synchronize(): void;
  /**
   * Streams, device pointers and the pointer query of the reference checks (bindings/reference-ops.ts); a string
   * says why there are none (a driver that lacks one of their calls); absent where the backend has none.
   */
  readonly reference?: ReferenceOps | string;
}

export interface WithOpsOptions {
  /**
   * Where a failure to release what the ops allocated goes (it never replaces f's result or exception).
   * Default: process.emitWarning.
   */
  log?: (message: string) => void;
}

/** A release step: what it frees, and how; or, with `kept`, why it is deliberately not freed (logged). */
export type ReleaseStep = { what: string; run: () => void } | { what: string; kept: string };

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * Run `body`, then every step of `release()` in order, whatever happens. A step that throws, or one kept on
 * purpose, is reported to `log` and the next step still runs; a non-fatal failure of the release replaces
 * neither body's result nor its exception. A fatal error (src/fatal.ts: out of memory, a stack overflow, an
 * interrupt) raised by a step or by `log` is rethrown once every step has run, unless body threw a fatal error of
 * its own (that one goes first). If body returns a promise (an async callback), the release waits for it to settle.
 */
export function withRelease<T>(body: () => T, release: () => ReleaseStep[], options: WithOpsOptions | undefined): T {
  const log = options?.log ?? ((message: string) => process.emitWarning(message, 'MappedRegReleaseWarning'));
  const finish = (): void => {
    let fatal: unknown;
    const say = (message: string): void => {
      try {
        log(message);
      } catch (e) {
        // A logger that throws must not turn a release failure into one; a fatal error still ends the run.
        if (isFatal(e)) fatal ??= e;
      }
    };
    for (const step of release()) {
      if ('kept' in step) {
        say(`${step.what} kept: ${step.kept}`);
        continue;
      }
      try {
        step.run();
      } catch (e) {
        if (isFatal(e)) fatal ??= e;
        say(`release of ${step.what} failed: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    if (fatal !== undefined) throw fatal;
  };
  /** body threw `error`: release, then rethrow it, or the release's fatal error when body's is not fatal. */
  const failed = (error: unknown): never => {
    try {
      finish();
    } catch (fatal) {
      if (!isFatal(error)) throw fatal;
    }
    throw error;
  };
  let result: T;
  try {
    result = body();
  } catch (e) {
    return failed(e);
  }
  if (isPromiseLike(result)) {
    // T is itself a promise type here; the chained promise settles the same way after the release ran.
    return Promise.resolve(result).then(
      (value) => {
        finish();
        return value;
      },
      (error: unknown) => failed(error),
    ) as T;
  }
  finish();
  return result;
}

/**
 * The address a driver is given for `host`. Host memory goes to the driver by `host.address` (a bigint passed
 * to a `void *` parameter: koffi hands the raw value over, no copy and no marshalling), never by letting koffi
 * take the Uint8Array's data pointer, because
 *  - the address is what the RegistrationTable records: the driver must pin exactly that range;
 *  - a registration outlives the call, and koffi only promises a TypedArray's pointer for the duration of a
 *    call (small typed arrays live on V8's heap and may move); a mapping's or pinned buffer's address is stable.
 * Before handing it over we check that `bytes` really views `address` (koffi.address reads the view's data
 * pointer, byteOffset included): a Host with a fabricated address (an in-memory double's) would otherwise make
 * the driver read or write memory that is not what the caller compares against.
 */
export function hostAddress(api: DriverApi, what: string, host: Host): bigint {
  if (host.bytes.length > 0) {
    const actual = koffi.address(host.bytes);
    if (actual !== host.address) {
      throw new Error(
        `${api}: ${what}: the Host says 0x${host.address.toString(16)} but its bytes live at 0x${actual.toString(16)} (not memory of this process?)`,
      );
    }
  }
  return host.address;
}

export function checkSize(what: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what}: ${n} is not a non-negative safe integer`);
  return n;
}

export function checkOrdinal(what: string, ordinal: number): number {
  if (!Number.isInteger(ordinal) || ordinal < 0 || ordinal > 0x7fffffff) throw new RangeError(`${what}: bad device ordinal ${ordinal}`);
  return ordinal;
}

/** A zero-copy view of `length` bytes of native memory at `ptr`. */
export function viewOf(ptr: bigint, length: number): Uint8Array {
  // koffi.view aborts the process past what a buffer can hold (4 GiB on Node 20): refuse up front.
  if (length > bufferConstants.MAX_LENGTH) throw new RangeError(`view of ${length} bytes: more than a buffer can hold (${bufferConstants.MAX_LENGTH})`);
  return new Uint8Array(koffi.view(ptr, length));
}

// ---- the ops of one device, shared by withCudaOps and withHipOps ----

/** The driver calls a device's ops are made of: what differs between CUDA and HIP. */
export interface OpsCalls {
  /** Make the device current (cuCtxSetCurrent / hipSetDevice), before every call. */
  makeCurrent(): void;
  hostRegister(host: Host, flags: number): void;
  hostRegisterAddress(address: bigint, length: number, flags: number): void;
  hostUnregister(host: Host): void;
  hostUnregisterAddress(address: bigint): void;
  /** Page-locked host memory (cuMemHostAlloc / hipHostMalloc) and its free. */
  allocPinned(bytes: number): Host;
  freePinned(host: Host): void;
  memcpyHtoD(dst: bigint, src: Host): void;
  memcpyDtoH(dst: Host, src: bigint, length?: number): void;
  synchronize(): void;
  /** The reference checks' calls (bindings/reference-ops.ts), or why the driver has none. */
  readonly reference?: ReferenceCalls | string;
  /** The events that time a copy on the device's clock (bindings/device-clock.ts), or why the driver has none. */
  readonly events?: EventCalls | string;
  /** After a register / unregister that succeeded (CUDA counts what stays registered). */
  registered?(address: bigint): void;
  unregistered?(address: bigint): void;
}

/** What the ops and their release share: the page-locked buffers not yet freed, and whether `f` has returned. */
export interface OpsState {
  readonly pinned: Map<bigint, Host>;
  closed: boolean;
}

/** The device buffer size of a with…Ops call, checked. */
export function checkBufferBytes(owner: string, bytes: number): number {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new RangeError(`${owner}: a device buffer of ${bytes} bytes`);
  return bytes;
}

/** Checks that the ops are still open and makes the device current: first in every op, named `what` in its error. */
type Enter = (what: string) => void;

/** Registration and release of host ranges, counted through calls.registered/unregistered. */
function registrationOps(enter: Enter, calls: OpsCalls, registerFlags: number): Pick<DeviceOps, 'register' | 'registerWithFlags' | 'registerAddress' | 'unregister' | 'unregisterAddress'> {
  return {
    register(host) {
      enter('register');
      calls.hostRegister(host, registerFlags);
      calls.registered?.(host.address);
    },
    registerWithFlags(host, flags) {
      enter('registerWithFlags');
      calls.hostRegister(host, flags);
      calls.registered?.(host.address);
    },
    registerAddress(address, length, flags) {
      enter('registerAddress');
      calls.hostRegisterAddress(address, length, flags);
      calls.registered?.(address);
    },
    unregister(host) {
      enter('unregister');
      calls.hostUnregister(host);
      calls.unregistered?.(host.address);
    },
    unregisterAddress(address) {
      enter('unregisterAddress');
      calls.hostUnregisterAddress(address);
      calls.unregistered?.(address);
    },
  };
}

/** Page-locked buffers, kept in state.pinned until freed (the release frees what is left). */
function pinnedOps(api: DriverApi, enter: Enter, calls: OpsCalls, state: OpsState): Pick<DeviceOps, 'allocHost' | 'freeHost'> {
  return {
    allocHost(n) {
      enter('allocHost');
      const host = calls.allocPinned(n);
      state.pinned.set(host.address, host);
      return host;
    },
    freeHost(host) {
      enter('freeHost');
      const mine = state.pinned.get(host.address);
      if (mine === undefined || mine.bytes.length !== host.bytes.length) {
        throw new Error(`${api}: freeHost: 0x${host.address.toString(16)} (+${host.bytes.length}) was not allocated by these ops, or was freed`);
      }
      calls.freePinned(mine);
      state.pinned.delete(host.address);
    },
  };
}

/** Copies through the device buffer `buffer` of `bytes` bytes. */
function copyOps(api: DriverApi, enter: Enter, calls: OpsCalls, buffer: bigint, bytes: number): Pick<DeviceOps, 'roundTrip' | 'upload' | 'download'> {
  const fits = (what: string, host: Host): void => {
    if (host.bytes.length > bytes) throw new RangeError(`${api}: ${what}: ${host.bytes.length} bytes do not fit the device buffer of ${bytes}`);
  };
  return {
    roundTrip(host, into) {
      enter('roundTrip');
      fits('roundTrip', host);
      if (into.bytes.length < host.bytes.length) {
        throw new RangeError(`${api}: roundTrip: ${host.bytes.length} bytes do not fit into a range of ${into.bytes.length}`);
      }
      calls.memcpyHtoD(buffer, host);
      calls.memcpyDtoH(into, buffer, host.bytes.length);
    },
    upload(host) {
      enter('upload');
      fits('upload', host);
      calls.memcpyHtoD(buffer, host);
    },
    download(into) {
      enter('download');
      fits('download', into);
      calls.memcpyDtoH(into, buffer);
    },
  };
}

/**
 * The ops of one device on its device buffer `buffer` of `bytes` bytes: each call checks that `owner` (the
 * with…Ops that made them) has not returned, makes the device current, then makes its driver call.
 */
export function deviceOps(
  api: DriverApi,
  owner: string,
  ordinal: number,
  bytes: number,
  buffer: bigint,
  registerFlags: number,
  calls: OpsCalls,
  state: OpsState,
): DeviceOps {
  const enter: Enter = (what) => {
    if (state.closed) throw new Error(`${api}: ${what} on ops whose ${owner} has returned`);
    calls.makeCurrent();
  };
  const copies = copyOps(api, enter, calls, buffer, bytes);
  const events = calls.events;
  return {
    api,
    ordinal,
    bytes,
    registerFlags,
    ...registrationOps(enter, calls, registerFlags),
    ...pinnedOps(api, enter, calls, state),
    ...copies,
    ...(events === undefined
      ? {}
      : {
          deviceClock() {
            if (typeof events === 'string') throw new Error(`${api}: no device clock: ${events}`);
            return deviceClock(enter, events, (host) => copies.upload(host));
          },
        }),
    synchronize() {
      enter('synchronize');
      calls.synchronize();
    },
    ...(calls.reference === undefined ? {} : { reference: typeof calls.reference === 'string' ? calls.reference : referenceOps(api, enter, calls.reference, buffer, bytes) }),
  };
}

/** Release steps freeing the page-locked buffers the ops allocated and `f` did not free. */
export function pinnedReleaseSteps(pinned: Map<bigint, Host>, free: (host: Host) => void): ReleaseStep[] {
  return [...pinned.values()].map((host) => ({
    what: `the page-locked buffer 0x${host.address.toString(16)} (+${host.bytes.length})`,
    run: () => {
      free(host);
      pinned.delete(host.address);
    },
  }));
}
