// What the reference checks (suites/hazards/reference.ts) ask of a driver beyond the synchronous copy of one
// context: a copy on a created stream, the device pointer of a registration and a device-to-device copy read
// through it, the driver's pointer query, a second context and the other devices of this process. Their calls are
// declared apart from the driver's own table (declareOptional): a driver that lacks one still loads, and the
// checks that need them say what is missing instead. What a device offers the checks beyond its ops (a second
// context, the other devices, the attributes): ./reference-kit.ts.
import type { LibraryHandle } from 'koffi';
import type { Host } from '../src/ops.js';

/** One driver's reference calls, made in whatever context (device) is current: the ops make theirs current first. */
export interface ReferenceCalls {
  /** cuStreamCreate / hipStreamCreate: a stream of the current context. */
  streamCreate(): bigint;
  /** cuStreamSynchronize / hipStreamSynchronize. */
  streamSynchronize(stream: bigint): void;
  /** cuStreamDestroy_v2 / hipStreamDestroy. */
  streamDestroy(stream: bigint): void;
  /** cuMemcpyHtoDAsync_v2 / hipMemcpyAsync (host to device) of all of `src` on `stream`. */
  memcpyHtoDAsync(dst: bigint, src: Host, stream: bigint): void;
  /** cuMemHostGetDevicePointer_v2 / hipHostGetDevicePointer (flags 0): the device's address of registered memory. */
  hostDevicePointer(host: Host): bigint;
  /** cuMemcpyDtoD_v2 / hipMemcpy(hipMemcpyDeviceToDevice). */
  memcpyDtoD(dst: bigint, src: bigint, bytes: number): void;
  /**
   * cuPointerGetAttribute / hipPointerGetAttribute with the DEVICE_POINTER attribute (3 in both): the device
   * address the driver knows for `address`. Throws the driver's error for an address it does not know. It only
   * asks: nothing is read through the address.
   */
  pointerDevicePointer(address: bigint): bigint;
}

/** The reference calls as a device's ops make them: the context made current first, copies into the ops' buffer. */
export interface ReferenceOps {
  createStream(): bigint;
  synchronizeStream(stream: bigint): void;
  destroyStream(stream: bigint): void;
  /** `host` into the ops' device buffer on `stream` (returns before the copy is known to be done). */
  uploadAsync(host: Host, stream: bigint): void;
  hostDevicePointer(host: Host): bigint;
  /** `bytes` bytes from device address `src` (a registration's device pointer) into the ops' device buffer. */
  copyFromDevicePointer(src: bigint, bytes: number): void;
  pointerDevicePointer(address: bigint): bigint;
}

/** The ops' reference calls: `enter` checks the ops are open and makes their context current. */
export function referenceOps(api: string, enter: (what: string) => void, calls: ReferenceCalls, buffer: bigint, bytes: number): ReferenceOps {
  const fits = (what: string, n: number): void => {
    if (n > bytes) throw new RangeError(`${api}: ${what}: ${n} bytes do not fit the device buffer of ${bytes}`);
  };
  return {
    createStream() {
      enter('createStream');
      return calls.streamCreate();
    },
    synchronizeStream(stream) {
      enter('synchronizeStream');
      calls.streamSynchronize(stream);
    },
    destroyStream(stream) {
      enter('destroyStream');
      calls.streamDestroy(stream);
    },
    uploadAsync(host, stream) {
      enter('uploadAsync');
      fits('uploadAsync', host.bytes.length);
      calls.memcpyHtoDAsync(buffer, host, stream);
    },
    hostDevicePointer(host) {
      enter('hostDevicePointer');
      return calls.hostDevicePointer(host);
    },
    copyFromDevicePointer(src, n) {
      enter('copyFromDevicePointer');
      fits('copyFromDevicePointer', n);
      calls.memcpyDtoD(buffer, src, n);
    },
    pointerDevicePointer(address) {
      enter('pointerDevicePointer');
      return calls.pointerDevicePointer(address);
    },
  };
}

/**
 * Declares what of `prototypes` `lib` has: the functions, or (when one is missing or cannot be declared) why, so
 * that a driver without them still loads. `F` is the caller's typed view (koffi types them as `(...args: any[]) => any`).
 */
export function declareOptional<F>(lib: LibraryHandle, prototypes: Record<string, string>): { functions: F } | { missing: string } {
  const out: Record<string, unknown> = {};
  const missing: string[] = [];
  for (const [name, prototype] of Object.entries(prototypes)) {
    try {
      out[name] = lib.func(prototype);
    } catch {
      missing.push(name);
    }
  }
  return missing.length > 0 ? { missing: `the driver lacks ${missing.join(', ')}` } : { functions: out as F };
}
