// What the CUDA driver and the HIP runtime bindings do the same way, written once: loading the library (a path
// given, else the environment variable, else the default names), declaring its prototypes, checking result
// codes into the driver's error class, the host-memory calls' checks, and the skeleton of with…Ops (take the
// device, allocate the device buffer, hand out the ops, release whatever happens). cuda.ts and hip.ts keep what
// differs: their prototype tables, constants and quirks.

import type { Host } from '../src/ops.js';
import type { LibraryHandle } from 'koffi';
import { DriverError, type DriverApi, declareAll, openLibrary } from './errors.js';
import type { ReferenceCalls } from './reference-ops.js';
import type { EventCalls } from './device-clock.js';
import {
  type DeviceOps,
  type OpsCalls,
  type OpsState,
  type ReleaseStep,
  type WithOpsOptions,
  checkBufferBytes,
  checkOrdinal,
  checkSize,
  deviceOps,
  hostAddress,
  pinnedReleaseSteps,
  viewOf,
  withRelease,
} from './device-ops.js';

/** Out parameters are one-element arrays that koffi fills; pointers come back as bigint (null for NULL). */
export type Out<T> = [T];
export type Pointer = bigint | null;
export type IntLike = number | bigint;

// ---- loading ----

export interface DriverLibrary {
  readonly api: DriverApi;
  /** e.g. MAPPED_REG_CUDA_LIBRARY: a name or path that replaces the default search. */
  readonly env: string;
  /** Tried in order when neither a path nor the environment variable is given. */
  readonly defaults: readonly string[];
  /** name -> C prototype, declared once (see declareAll). */
  readonly prototypes: Record<string, string>;
}

/** The libraries a loader of `library` tries, in order: `path`, else $env (when set and not empty), else the defaults. */
export function libraryCandidates(library: Pick<DriverLibrary, 'env' | 'defaults'>, path?: string, env: NodeJS.ProcessEnv = process.env): readonly string[] {
  const explicit = path ?? (env[library.env] || undefined);
  return explicit === undefined ? library.defaults : [explicit];
}

/**
 * A loader for `library`: from `path`, else from $env, else the first of the defaults that exists; one driver per
 * list of candidates, cached for the life of the process. Throws LibraryNotFoundError when none is there,
 * NotADriverError when one does not load or lacks a symbol of the prototypes.
 * `F` is the caller's typed view of the functions (koffi types them as `(...args: any[]) => any`). `make` also gets
 * the library, to declare calls that may be missing without failing the load (bindings/reference-ops.ts).
 */
export function driverLoader<F, D>(library: DriverLibrary, make: (path: string, c: F, lib: LibraryHandle) => D): (path?: string) => D {
  const cache = new Map<string, D>();
  return (path?: string): D => {
    const candidates = libraryCandidates(library, path);
    const key = candidates.join('\n');
    let driver = cache.get(key);
    if (driver === undefined) {
      const opened = openLibrary(library.api, candidates);
      driver = make(opened.path, declareAll<F>(library.api, opened.path, opened.lib, library.prototypes), opened.lib);
      cache.set(key, driver);
    }
    return driver;
  };
}

// ---- calls by role ----

/** A call as the kit takes it: its C name (for errors and call counts) and the function. */
export type Call<Fn> = readonly [call: string, fn: Fn];

/** C prototypes by the role the kit gives each call (HostFunctions' register, alloc, ...). */
export type RolePrototypes<R> = { readonly [K in keyof R]: string };

/** The C function a prototype declares: 'int fakeInit(unsigned int flags)' declares fakeInit. */
export function prototypeName(prototype: string): string {
  const name = /(\w+)\s*\(/.exec(prototype)?.[1];
  if (name === undefined) throw new Error(`not a C prototype: ${prototype}`);
  return name;
}

/** Role tables as driverLoader declares them: one table by C name (what a missing symbol is reported by). */
export function byCName(...tables: readonly Record<string, string>[]): Record<string, string> {
  return Object.fromEntries(tables.flatMap((t) => Object.values(t).map((p) => [prototypeName(p), p])));
}

/**
 * A role table's calls, each its C name and the function declared for it (`declared`: driverLoader's functions by
 * C name). `R` is the caller's typed view of them: koffi types its functions as `(...args: any[]) => any`.
 */
export function roleCalls<R extends { [K in keyof R]: Call<unknown> }>(prototypes: RolePrototypes<R>, declared: Readonly<Record<string, unknown>>): R {
  const entries = Object.entries<string>(prototypes).map(([role, prototype]) => {
    const call = prototypeName(prototype);
    return [role, [call, declared[call]]] as const;
  });
  return Object.fromEntries(entries) as R;
}

// ---- errors ----

/** The constructor of a driver's error class (CudaError, HipError): DriverError with the api filled in. */
export type DriverErrorClass = new (call: string, code: number, codeName: string, description?: string) => DriverError;

/** The error class of one API: `name` is what `error.name` says (e.g. 'CudaError'). */
export function driverErrorClass(api: DriverApi, name: string): DriverErrorClass {
  return class extends DriverError {
    constructor(call: string, code: number, codeName: string, description?: string) {
      super(api, call, code, codeName, description);
      this.name = name;
    }
  };
}

export interface Checker {
  /** The error of `call` returning `code`, named and described by the driver. */
  fail(call: string, code: number): DriverError;
  /** Throws fail(call, code) unless code is success (0 in both APIs). */
  check(call: string, code: number): void;
}

export function checker(ErrorClass: DriverErrorClass, errorName: (code: number) => string, errorString: (code: number) => string | undefined): Checker {
  const fail = (call: string, code: number): DriverError => new ErrorClass(call, code, errorName(code), errorString(code));
  return {
    fail,
    check(call, code) {
      if (code !== 0) throw fail(call, code);
    },
  };
}

/** A call without an out parameter: `ready` first (the driver initialized, see hostCalls), then its result code checked. */
export type ReadyCall = (call: string, run: () => number) => void;

export function readyCall({ check }: Checker, ready: () => void): ReadyCall {
  return (call, run) => {
    ready();
    check(call, run());
  };
}

/** A call that fills one pointer: the pointer, once the result code is checked; NULL from a call that succeeded is an error. */
export function outPointer(api: DriverApi, { check }: Checker, call: string, fn: (out: Out<Pointer>) => number, what = 'pointer'): bigint {
  const out: Out<Pointer> = [null];
  check(call, fn(out));
  if (out[0] === null) throw new Error(`${api}: ${call} succeeded but gave a NULL ${what}`);
  return out[0];
}

/**
 * The pointer query (cuPointerGetAttribute / hipPointerGetAttribute) through `query`, which writes the device
 * address into an 8-byte buffer through a `void *`; the result checked, the device made current by `ready`.
 */
export function pointerQuery({ check }: Checker, ready: () => void, call: string, query: (data: Buffer) => number): bigint {
  ready();
  const data = Buffer.alloc(8);
  check(call, query(data));
  return data.readBigUInt64LE(0);
}

/** What cuMemGetInfo / hipMemGetInfo say of the current device, in bytes. */
export interface MemInfo {
  free: number;
  total: number;
}

/** cuMemGetInfo_v2 / hipMemGetInfo through `fn`, the result checked, the device made current by `ready`. */
export function memInfo({ check }: Checker, ready: () => void, call: string, fn: (free: Out<IntLike>, total: Out<IntLike>) => number): MemInfo {
  ready();
  const free: Out<IntLike> = [0];
  const total: Out<IntLike> = [0];
  check(call, fn(free, total));
  return { free: Number(free[0]), total: Number(total[0]) };
}

/** The text of a NUL-terminated buffer a driver filled (a name, a PCI bus id). */
export function cString(buf: Buffer): string {
  const end = buf.indexOf(0);
  return buf.subarray(0, end < 0 ? buf.length : end).toString('utf8');
}

// ---- host memory: the calls both APIs make alike ----

/** One driver's host-memory calls, by C name: what hostCalls wraps. */
export interface HostFunctions {
  register: readonly [call: string, fn: (p: bigint, bytes: number, flags: number) => number];
  unregister: readonly [call: string, fn: (p: bigint) => number];
  alloc: readonly [call: string, fn: (out: Out<Pointer>, bytes: number, flags: number) => number];
  free: readonly [call: string, fn: (p: bigint) => number];
  /** Synchronous copies between a device address and a host address. */
  htod: readonly [call: string, fn: (dst: bigint, src: bigint, bytes: number) => number];
  dtoh: readonly [call: string, fn: (dst: bigint, src: bigint, bytes: number) => number];
}

/** The host-memory methods of a driver object (CudaDriver's memHostAlloc/memFreeHost are alloc/free here). */
export interface HostCalls {
  hostRegister(host: Host, flags: number): void;
  hostUnregister(host: Host): void;
  /** Raw-address forms, for hazard checks (NULL, size 0, a range with no view). Prefer the Host forms. */
  hostRegisterAddress(address: bigint, length: number, flags: number): void;
  hostUnregisterAddress(address: bigint): void;
  alloc(bytes: number, flags?: number): Host;
  free(host: Host): void;
  /** Synchronous copies of `length` bytes (default: the whole Host). */
  memcpyHtoD(dst: bigint, src: Host, length?: number): void;
  memcpyDtoH(dst: Host, src: bigint, length?: number): void;
}

/** `ready` runs first in each (the driver initialized, and not one that said there is no device). */
export function hostCalls(api: DriverApi, checks: Checker, ready: () => void, fns: HostFunctions): HostCalls {
  const [registerCall, register] = fns.register;
  const [unregisterCall, unregister] = fns.unregister;
  const [allocCall, alloc] = fns.alloc;
  const [freeCall, free] = fns.free;
  const [htodCall, htod] = fns.htod;
  const [dtohCall, dtoh] = fns.dtoh;
  const checkedCall = readyCall(checks, ready);
  /** The bytes a copy of `host` moves: `length`, else all of it; never more than the host range holds. */
  const copyLength = (call: string, host: Host, length: number | undefined): number => {
    const n = checkSize(`${call} size`, length ?? host.bytes.length);
    if (n > host.bytes.length) throw new RangeError(`${api}: ${call}: ${n} bytes asked of a host range of ${host.bytes.length}`);
    return n;
  };
  const registerAddress = (address: bigint, length: number, flags: number): void =>
    checkedCall(registerCall, () => register(address, checkSize(`${registerCall} size`, length), flags >>> 0));
  const unregisterAddress = (address: bigint): void => checkedCall(unregisterCall, () => unregister(address));
  return {
    hostRegister: (host, flags) => registerAddress(hostAddress(api, registerCall, host), host.bytes.length, flags),
    hostUnregister: (host) => unregisterAddress(hostAddress(api, unregisterCall, host)),
    hostRegisterAddress: registerAddress,
    hostUnregisterAddress: unregisterAddress,
    alloc(bytes, flags = 0) {
      ready();
      const address = outPointer(api, checks, allocCall, (out) => alloc(out, checkSize(`${allocCall} size`, bytes), flags >>> 0));
      try {
        return { address, bytes: viewOf(address, bytes) };
      } catch (e) {
        free(address);
        throw e;
      }
    },
    free: (host) => checkedCall(freeCall, () => free(hostAddress(api, freeCall, host))),
    memcpyHtoD: (dst, src, length) =>
      checkedCall(htodCall, () => {
        const n = copyLength(htodCall, src, length);
        return htod(dst, hostAddress(api, htodCall, src), n);
      }),
    memcpyDtoH: (dst, src, length) =>
      checkedCall(dtohCall, () => {
        const n = copyLength(dtohCall, dst, length);
        return dtoh(hostAddress(api, dtohCall, dst), src, n);
      }),
  };
}

// ---- the with…Ops skeleton ----

/** What a device's ops hold of the device itself (CUDA: a primary context retain; HIP: nothing but the current device). */
export interface Held {
  /** Makes the device current: before every op's call, and first in the release. */
  makeCurrent(): void;
  /** The release step that makes it current, e.g. 'making HIP device 0 current'. */
  readonly currentWhat: string;
  /** The last release step, after the device buffer, given how many registrations made through the ops are still outstanding. */
  release?(outstanding: number): ReleaseStep;
}

/** How one API's with…Ops takes a device and its buffer: what differs between CUDA and HIP. */
export interface OpsDriver {
  readonly api: DriverApi;
  /** The function's name, for its errors, e.g. 'withCudaOps'. */
  readonly owner: string;
  /**
   * Takes the device and makes it current, and returns what it holds; calls `hold` with the same as soon as
   * something is held that the release must give back (CUDA: the retain, before the context is made current).
   */
  open(ordinal: number, hold: (held: Held) => void): Held;
  /** The flags `register` passes, asked once the device is current. */
  registerFlags(ordinal: number): number;
  malloc(bytes: number): bigint;
  free(buffer: bigint): void;
  /** The driver calls of the ops, but making the device current (Held.makeCurrent does) and the registration counts. */
  readonly calls: Omit<OpsCalls, 'makeCurrent' | 'registered' | 'unregistered'>;
}

/** A driver object's host-memory methods that both APIs name alike. */
export type SharedHostMethods = Pick<HostCalls, 'hostRegister' | 'hostRegisterAddress' | 'hostUnregister' | 'hostUnregisterAddress' | 'memcpyHtoD' | 'memcpyDtoH'>;

/**
 * The ops' driver calls, through `driver`'s methods as they are when called (a test may replace one), with the
 * API's own page-locked allocation and synchronization.
 */
export function driverCalls(
  driver: SharedHostMethods,
  pinned: { alloc(n: number): Host; free(host: Host): void },
  synchronize: () => void,
  reference?: ReferenceCalls | string,
  events?: EventCalls | string,
): OpsDriver['calls'] {
  return {
    ...(reference !== undefined ? { reference } : {}),
    ...(events !== undefined ? { events } : {}),
    hostRegister: (host, flags) => driver.hostRegister(host, flags),
    hostRegisterAddress: (address, length, flags) => driver.hostRegisterAddress(address, length, flags),
    hostUnregister: (host) => driver.hostUnregister(host),
    hostUnregisterAddress: (address) => driver.hostUnregisterAddress(address),
    allocPinned: (n) => pinned.alloc(n),
    freePinned: (host) => pinned.free(host),
    memcpyHtoD: (dst, src) => driver.memcpyHtoD(dst, src),
    memcpyDtoH: (dst, src, length) => driver.memcpyDtoH(dst, src, length),
    synchronize,
  };
}

/** What an API whose device is made current by a set-device call (HIP's hipSetDevice) gives its ops. */
export interface SetDeviceDriver {
  setDevice(ordinal: number): void;
  malloc(bytes: number): bigint;
  free(buffer: bigint): void;
}

/**
 * The ops' driver of such an API: opening sets the device, and making it current again for the release is all
 * that is held (nothing to give back). `what` names the device in errors: "HIP device", "fake device".
 */
export function setDeviceOpsDriver(api: DriverApi, owner: string, what: string, driver: SetDeviceDriver, registerFlags: number, calls: OpsDriver['calls']): OpsDriver {
  return {
    api,
    owner,
    open(ordinal, hold) {
      driver.setDevice(ordinal);
      const held = { makeCurrent: () => driver.setDevice(ordinal), currentWhat: `making ${what} ${ordinal} current` };
      hold(held);
      return held;
    },
    registerFlags: () => registerFlags,
    malloc: (n) => driver.malloc(n),
    free: (buffer) => driver.free(buffer),
    calls,
  };
}

/**
 * Run f on ops backed by device `ordinal` and a device buffer of `bytes` bytes. When f returns or throws (or
 * its promise settles), every step of the release runs, whatever the others did (device-ops.ts: withRelease):
 * the device made current, the page-locked buffers not yet freed, the device buffer, then what `open` held.
 * A failure there goes to options.log and never replaces f's result or exception (a fatal one is rethrown).
 * Registrations are left alone: only the caller knows what to do with one that would not release; how many
 * the ops made and did not see released is handed to Held.release.
 */
export function withDriverOps<T>(d: OpsDriver, ordinal: number, bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T {
  checkOrdinal(d.owner, ordinal);
  checkBufferBytes(d.owner, bytes);

  let deviceBuffer: bigint | null = null;
  const state: OpsState = { pinned: new Map<bigint, Host>(), closed: false };
  /** Registrations these ops made and did not release: start address -> how many. */
  const outstanding = new Map<bigint, number>();
  let held: Held | undefined;

  const setup = (): DeviceOps => {
    const current = d.open(ordinal, (h) => {
      held = h;
    });
    const registerFlags = d.registerFlags(ordinal);
    const buffer = d.malloc(bytes);
    deviceBuffer = buffer;
    return deviceOps(d.api, d.owner, ordinal, bytes, buffer, registerFlags, {
      ...d.calls,
      makeCurrent: () => current.makeCurrent(),
      registered: (address) => outstanding.set(address, (outstanding.get(address) ?? 0) + 1),
      unregistered: (address) => {
        const n = outstanding.get(address);
        if (n === undefined) return;
        if (n > 1) outstanding.set(address, n - 1);
        else outstanding.delete(address);
      },
    }, state);
  };

  return withRelease(
    () => f(setup()),
    () => {
      state.closed = true;
      // The reverse of acquisition: page-locked buffers first, then the device buffer, then the device itself.
      const steps: ReleaseStep[] = [];
      const h = held;
      if (h !== undefined) steps.push({ what: h.currentWhat, run: () => h.makeCurrent() });
      steps.push(...pinnedReleaseSteps(state.pinned, (host) => d.calls.freePinned(host)));
      if (deviceBuffer !== null) {
        const buffer = deviceBuffer;
        steps.push({ what: `the device buffer of ${bytes} bytes on ${d.api} device ${ordinal}`, run: () => d.free(buffer) });
      }
      if (h?.release) steps.push(h.release([...outstanding.values()].reduce((a, b) => a + b, 0)));
      return steps;
    },
    options,
  );
}
