// What the reference checks (suites/hazards/reference-*.ts) need of a driver beyond its ops: the attributes they
// hold to what the driver then does, the device's free memory, and a registration's device address. Each module
// that registers (backends/cuda.ts, backends/hip.ts) states its own; the checks never tell one driver from another.
import type { DeviceOps } from './device-ops.js';

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

export interface ReferenceKit {
  /** The register flag that maps a range into the device's address space (CUDA DEVICEMAP, HIP Mapped: 0x02). */
  readonly deviceMapFlag: number;
  /** The driver's "invalid value" (1 on CUDA and HIP): what a refused flag, pointer or size should say. */
  readonly invalidValue: { readonly code: number; readonly name: string };
  /** The C call that gives a registration's device address, for the checks' text. */
  readonly devicePointerCall: string;
  /** The attribute of this device. */
  attribute(which: ReferenceAttribute): AttributeReading;
  /** The attribute of every device this driver sees (the device pointer equals the host's only when all say 1). */
  attributeOnAll(which: ReferenceAttribute): AttributeReading[];
  /** The device's free and total memory (cuMemGetInfo / hipMemGetInfo), the device made current through `ops`. Throws a DriverError. */
  memInfo(ops: DeviceOps): { free: number; total: number };
  /** The device address of a registered host address (flags 0), the device made current through `ops`. Throws a DriverError. */
  devicePointer(ops: DeviceOps, address: bigint): bigint;
}

/** An attribute's reading from a query that may throw: its value or the error's text. */
export function readAttribute(attribute: string, query: () => number): AttributeReading {
  try {
    return { attribute, value: query() };
  } catch (e) {
    return { attribute, error: e instanceof Error ? e.message : String(e) };
  }
}
