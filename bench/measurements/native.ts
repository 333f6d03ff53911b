// The native reference (`native`; docs/bench.md): bench/native/staged.c on the same file, size, runs and
// registration flags, in its own process once the device is released; bench best / native best beside it.
import { runNative } from '../native/native.js';
import type { DeviceContext } from '../session.js';
import { type Measurement, always } from './measurement.js';

export const nativeReference: Measurement<DeviceContext> = {
  key: 'native',
  title: 'native reference',
  description: 'the same copies in C (bench/native/staged.c), through dlopen of the same driver',
  applies: always,
  run(c) {
    c.result.native = runNative(c.nativeBinary, c.device, c.options, c.region.path, c.result);
    // a reference that could not be built or run is a figure missing: listed, and the bench exits 1
    if (c.result.native.status === 'build-failed' || c.result.native.status === 'failed') c.result.errors.push(`native reference: ${c.result.native.message}`);
  },
};
