// What the CUDA driver and the HIP runtime ask of a device the same way, written once: initialize and count the
// devices (a "no device" answer is a count of 0 with its reason, not an error), the per-device queries that
// fill an out parameter or a NUL-terminated buffer, the error texts' fallbacks, and the members both driver
// objects share (DriverCommon). cuda.ts and hip.ts name their C calls and keep their quirks.

import type { DriverApi } from './errors.js';
import { type Checker, type DriverErrorClass, type IntLike, type Out, type SharedHostMethods, checker, cString } from './driver-kit.js';

/** What the driver's initialization said about this machine: devices, or none with the reason. */
export interface DeviceCount {
  count: number;
  /** Set when count is 0: why (the call that said there is no device, or a count of 0). */
  reason?: string;
}

/** The calls that initialize the driver and count its devices, by C name. */
export interface CountFunctions {
  init: readonly [call: string, fn: () => number];
  count: readonly [call: string, fn: (out: Out<number>) => number];
  /** The result code that means "no device here" (100 in both APIs). */
  noDeviceCode: number;
  /** The calls whose noDeviceCode means a count of 0 (any other call's is an error). */
  noDeviceFrom: readonly string[];
}

export interface DeviceCounter {
  /** Initializes and counts once (cached). */
  devices(): DeviceCount;
  /** Throws the "no device" call's error again when there is no device: before every device call. */
  ready(): void;
}

/** Initializes then counts, once: the count is asked only when the initialization succeeded. */
export function deviceCounter(api: DriverApi, { fail, check }: Checker, errorName: (code: number) => string, fns: CountFunctions): DeviceCounter {
  const [initCall, init] = fns.init;
  const [countCall, count] = fns.count;
  let state: DeviceCount | undefined;
  /** Set when the driver said there is no device: which call said so. */
  let noDevice: string | undefined;
  const devices = (): DeviceCount => {
    if (state === undefined) {
      let call = initCall;
      let code = init();
      const out: Out<number> = [0];
      if (code === 0) {
        call = countCall;
        code = count(out);
      }
      if (code === fns.noDeviceCode && fns.noDeviceFrom.includes(call)) {
        noDevice = call;
        state = { count: 0, reason: `no ${api} device here: ${call} returned ${code} ${errorName(code)}` };
      } else {
        check(call, code);
        state = out[0] > 0 ? { count: out[0] } : { count: 0, reason: `no ${api} device here: ${countCall} reported 0` };
      }
    }
    return state;
  };
  return {
    devices,
    ready() {
      devices();
      if (noDevice !== undefined) throw fail(noDevice, fns.noDeviceCode);
    },
  };
}

/** How a driver names and describes its result codes. */
export interface ErrorTexts {
  errorName(code: number): string;
  errorString(code: number): string | undefined;
}

/**
 * A driver's error texts: the name its own call gives (`nativeName`: undefined when it gives none it should be
 * believed for), else the name in `names` (the API's header, for a driver or a double that does not know the
 * code), else `UNKNOWN_<code>`; and the description its own call gives, if any.
 */
export function errorTexts(
  names: ReadonlyMap<number, string>,
  nativeName: (code: number) => string | undefined,
  nativeString: (code: number) => string | undefined,
): ErrorTexts {
  return {
    errorName: (code) => nativeName(code) ?? names.get(code) ?? `UNKNOWN_${code}`,
    errorString: nativeString,
  };
}

/** What every call of a driver object starts from: its error texts, the checker of its result codes, its device count. */
export interface DriverBase extends ErrorTexts, DeviceCounter {
  checks: Checker;
}

export function driverBase(api: DriverApi, ErrorClass: DriverErrorClass, texts: ErrorTexts, count: CountFunctions): DriverBase {
  const { errorName, errorString } = texts;
  const checks = checker(ErrorClass, errorName, errorString);
  return { errorName, errorString, checks, ...deviceCounter(api, checks, errorName, count) };
}

/** The per-device queries, by C name; `dev` turns an ordinal into the handle the calls take (after `ready`). */
export interface QueryFunctions {
  name: readonly [call: string, fn: (name: Buffer, len: number, dev: number) => number];
  pciBusId: readonly [call: string, fn: (busId: Buffer, len: number, dev: number) => number];
  totalMem: readonly [call: string, fn: (out: Out<IntLike>, dev: number) => number];
  attribute: readonly [call: string, fn: (out: Out<number>, attrib: number, dev: number) => number];
}

export interface DeviceQueries {
  name(ordinal: number): string;
  pciBusId(ordinal: number): string;
  totalMem(ordinal: number): number;
  attribute(ordinal: number, attrib: number): number;
}

/** A call that fills one number: its value, once the result code is checked. */
export function outNumber({ check }: Checker, call: string, fn: (out: Out<number>) => number): number {
  const out: Out<number> = [0];
  check(call, fn(out));
  return out[0];
}

/** What the CUDA driver and the HIP runtime objects offer alike (each adds its own calls and quirks). */
export interface DriverCommon<A extends DriverApi> extends ErrorTexts, DeviceQueries, SharedHostMethods {
  readonly api: A;
  /** The name or path that was loaded. */
  readonly path: string;
  /** Initializes and counts once (cached); a "no device" answer is a count of 0 with its reason. */
  devices(): DeviceCount;
  /** devices().count: 0 when the driver says there is no device. */
  deviceCount(): number;
}

/** The members of DriverCommon, from what driverBase, deviceQueries and hostCalls made of one driver. */
export function driverCommon<A extends DriverApi>(api: A, path: string, base: DriverBase, queries: DeviceQueries, host: SharedHostMethods): DriverCommon<A> {
  const { errorName, errorString, devices } = base;
  const { hostRegister, hostUnregister, hostRegisterAddress, hostUnregisterAddress, memcpyHtoD, memcpyDtoH } = host;
  return {
    api,
    path,
    errorName,
    errorString,
    devices: () => ({ ...devices() }),
    deviceCount: () => devices().count,
    ...queries,
    hostRegister,
    hostUnregister,
    hostRegisterAddress,
    hostUnregisterAddress,
    memcpyHtoD,
    memcpyDtoH,
  };
}

export function deviceQueries(checks: Checker, dev: (ordinal: number) => number, fns: QueryFunctions): DeviceQueries {
  const { check } = checks;
  /** A NUL-terminated text of at most `size` bytes the driver writes. */
  const text = ([call, fn]: QueryFunctions['name'], size: number, ordinal: number): string => {
    const buf = Buffer.alloc(size);
    check(call, fn(buf, buf.length, dev(ordinal)));
    return cString(buf);
  };
  return {
    name: (ordinal) => text(fns.name, 256, ordinal),
    pciBusId: (ordinal) => text(fns.pciBusId, 64, ordinal),
    totalMem(ordinal) {
      const [call, fn] = fns.totalMem;
      const out: Out<IntLike> = [0];
      check(call, fn(out, dev(ordinal)));
      return Number(out[0]);
    },
    attribute(ordinal, attrib) {
      const [call, fn] = fns.attribute;
      return outNumber(checks, call, (out) => fn(out, attrib, dev(ordinal)));
    },
  };
}
