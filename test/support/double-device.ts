// The one device the CUDA and HIP driver doubles (test/double) report, alike but for its name, as the binding
// tests (test/cuda.test.ts, test/hip.test.ts) check it.
import { expect } from 'vitest';
import type { DeviceCounter, DeviceQueries } from '../../bindings/driver-queries.js';

/** The calls of a binding's driver object that describe its devices. */
export type DeviceReport = Pick<DeviceCounter, 'devices'> & Pick<DeviceQueries, 'name' | 'pciBusId' | 'totalMem'> & { deviceCount(): number };

/** `driver`, over the double's default profile, reports its one device, named `name`. */
export function expectDoubleDevice(driver: DeviceReport, name: string): void {
  expect(driver.devices()).toEqual({ count: 1 });
  expect(driver.deviceCount()).toBe(1);
  expect(driver.name(0)).toBe(name);
  expect(driver.pciBusId(0)).toBe('0000:00:00.0');
  expect(driver.totalMem(0)).toBe(80 * 2 ** 30);
}
