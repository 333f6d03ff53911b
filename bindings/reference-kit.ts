// What a registering device offers the reference checks (suites/hazards/reference-*.ts) beyond its ops: the register
// flags they pass, the attributes they hold to what the driver then does, the device's free memory, a registration's
// device address, a second context and the other devices of this process. Each module that registers
// (backends/cuda.ts, backends/hip.ts) states its own; the checks never tell one driver from another. The copies'
// calls themselves (streams, the device-to-device copy, the pointer query): ./reference-ops.ts.
import type { DeviceOps, WithOpsOptions } from './device-ops.js';

/** The attributes held to behaviour, by what they promise (CUDA's names in the comments). */
export type ReferenceAttribute =
  /** HOST_REGISTER_SUPPORTED: a host range registers. */
  | 'hostRegister'
  /** READ_ONLY_HOST_REGISTER_SUPPORTED: a read-only mapping registers with the read-only flag. */
  | 'readOnlyRegister'
  /** CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: the device reads a registration at the host's own address. */
  | 'hostPointer'
  /** PAGEABLE_MEMORY_ACCESS: the device reads pageable host memory with no registration. */
  | 'pageableAccess'
  /** PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: through the host's page tables. */
  | 'pageTables';

/** One attribute's answer: its value, the error its query gave, or why this driver has no such attribute. */
export type AttributeReading =
  | { readonly attribute: string; readonly value: number }
  | { readonly attribute: string; readonly error: string }
  | { readonly attribute?: undefined; readonly absent: string };

/** Ops of another context or device of this process, and what it is ('a context created with cuCtxCreate_v2 on CUDA device 0'). */
export interface OtherContext {
  readonly what: string;
  withOps<T>(bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T;
}

/** What a registering device offers the reference checks (NativeKit.reference). */
export interface ReferenceKit {
  /** Why the driver has none of the copies' calls (bindings/reference-ops.ts: it lacks some); absent when it has them all. */
  readonly missing?: string;
  /** The register flag that makes a registration seen by every context (CUDA PORTABLE, HIP Portable: 0x01). */
  readonly portableFlag: number;
  /** The register flag that maps a range into the device's address space (CUDA DEVICEMAP, HIP Mapped: 0x02). */
  readonly deviceMapFlag: number;
  /** The driver's "invalid value" (1 on CUDA and HIP): what a refused flag, pointer or size should say. */
  readonly invalidValue: { readonly code: number; readonly name: string };
  /** The C call that gives a registration's device address, for the checks' text. */
  readonly devicePointerCall: string;
  /** The copies' other C calls, for the checks' texts. */
  readonly names: { readonly async: string; readonly deviceToDevice: string; readonly pointerQuery: string };
  /** The attribute of this device. */
  attribute(which: ReferenceAttribute): AttributeReading;
  /** The attribute of every device this driver sees (the device pointer equals the host's only when all say 1). */
  attributeOnAll(which: ReferenceAttribute): AttributeReading[];
  /** The device's free and total memory (cuMemGetInfo / hipMemGetInfo), the device made current through `ops`. Throws a DriverError. */
  memInfo(ops: DeviceOps): { free: number; total: number };
  /** The device address of a registered host address (flags 0), the device made current through `ops`. Throws a DriverError. */
  devicePointer(ops: DeviceOps, address: bigint): bigint;
  /** The devices of this driver in this process. */
  deviceCount(): number;
  /** A second context to copy from (CUDA: one created on this device; HIP: another device), or why none can be made. */
  secondContext(): OtherContext | string;
  /** Ops of device `ordinal` of this driver, in its own (primary) context. */
  withDeviceOps<T>(ordinal: number, bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T;
}

/** An attribute's reading from a query that may throw: its value or the error's text. */
export function readAttribute(attribute: string, query: () => number): AttributeReading {
  try {
    return { attribute, value: query() };
  } catch (e) {
    return { attribute, error: e instanceof Error ? e.message : String(e) };
  }
}
