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

/** With the device's ops, before the page-locked buffer is allocated. */
export const REGISTRATION: readonly Measurement<DeviceSession>[] = [registrationCold, registrationWarm];
/** With the device's ops and the page-locked buffer (those that stage need it: without it they do not apply). */
export const COPIES: readonly Measurement<DeviceSession>[] = [pageable, staged, pageLocked, registered, stagedHalf];
/** With the device's ops, the page-locked buffer released. */
export const CALLS: readonly Measurement<DeviceSession>[] = [driverCall];
/** Once the device is released: the link, and the native reference in its own process. */
export const AFTER_RELEASE: readonly Measurement<DeviceContext>[] = [link, nativeReference];

/** Every measurement, in order. */
export const MEASUREMENTS: readonly Measurement<DeviceSession>[] = [...REGISTRATION, ...COPIES, ...CALLS, ...AFTER_RELEASE];
