// Every measurement of a device, in the order the bench runs them (bench/device.ts): the order matters, since
// the cold page cache must come before anything touches the region's mapping, and the copies share one
// page-locked buffer.
import { pageLocked, pageable, registered, staged, stagedHalf } from './copies.js';
import { driverCall } from './driver-call.js';
import { link } from './link.js';
import type { Measurement } from './measurement.js';
import { nativeReference } from './native.js';
import { registrationCold, registrationWarm } from './registration.js';
import type { DeviceContext, DeviceSession } from '../session.js';

/** The measurements of each phase of a device's bench (bench/device.ts), each list in order. */
export const MEASUREMENTS: {
  /** With the device's ops, before the page-locked buffer is allocated. */
  readonly registration: readonly Measurement<DeviceSession>[];
  /** With the device's ops and the page-locked buffer (those that stage need it: without it they do not apply). */
  readonly copies: readonly Measurement<DeviceSession>[];
  /** With the device's ops, the page-locked buffer released. */
  readonly calls: readonly Measurement<DeviceSession>[];
  /** Once the device is released: the link, and the native reference in its own process. */
  readonly afterRelease: readonly Measurement<DeviceContext>[];
} = {
  registration: [registrationCold, registrationWarm],
  copies: [pageable, staged, pageLocked, registered, stagedHalf],
  calls: [driverCall],
  afterRelease: [link, nativeReference],
};
