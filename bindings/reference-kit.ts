// What a registering device offers the reference checks (suites/hazards/reference.ts) beyond its ops: the register
// flags they pass, the attributes they hold the driver to, a second context and the other devices of this process.
// Each backend module builds its own (bindings/backends/cuda.ts, hip.ts); the calls themselves: ./reference-ops.ts.
import type { DeviceOps, WithOpsOptions } from './device-ops.js';

/** Ops of another context or device of this process, and what it is ('a context created with cuCtxCreate_v2 on CUDA device 0'). */
export interface OtherContext {
  readonly what: string;
  withOps<T>(bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T;
}

/** What a registering device offers the reference checks (NativeKit.reference). */
export interface ReferenceKit {
  /** Why the driver has no reference calls (it lacks some); absent when it has them all. */
  readonly missing?: string;
  /** The register flags: PORTABLE (every context), DEVICEMAP / hipHostRegisterMapped (a device pointer). */
  readonly portableFlag: number;
  readonly deviceMapFlag: number;
  /** The C calls, for the checks' texts. */
  readonly names: { readonly async: string; readonly devicePointer: string; readonly deviceToDevice: string; readonly pointerQuery: string };
  /** CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: its value, or why there is none. */
  canUseHostPointer(): number | string;
  /** PAGEABLE_MEMORY_ACCESS: its value, or why there is none. */
  pageableMemoryAccess(): number | string;
  /** The devices of this driver in this process. */
  deviceCount(): number;
  /** A second context to copy from (CUDA: one created on this device; HIP: another device), or why none can be made. */
  secondContext(): OtherContext | string;
  /** Ops of device `ordinal` of this driver, in its own (primary) context. */
  withDeviceOps<T>(ordinal: number, bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T;
}

