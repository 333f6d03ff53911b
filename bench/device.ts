// One CUDA/HIP device's bench: its scratch region, then the measurements (./measurements/) in their order while
// the device's ops are held, then those that need it released. Each failure is listed under the device's errors
// and the rest still run.
import type { DiscoveredDevice } from '../bindings/discovery.js';
import { makeScratchRegion } from '../bindings/scratch.js';
import { errorText, registrations } from '../src/index.js';
import { MEASUREMENTS } from './measurements/index.js';
import { measure } from './measurements/measurement.js';
import type { NativeBinary } from './native/native.js';
import type { Options } from './bench-options.js';
import { say } from './progress.js';
import type { DeviceBench } from './result.js';
import { type DeviceContext, DeviceSession } from './session.js';
import { MiB } from './units.js';

export function benchDevice(d: DiscoveredDevice, o: Options, nativeBinary: NativeBinary): DeviceBench {
  const n = d.native!;
  const bytes = o.sizeMiB * MiB;
  say(`${d.id}: scratch file of ${o.sizeMiB} MiB in ${o.scratchDir}`);
  const region = makeScratchRegion(o.scratchDir, bytes);
  const result: DeviceBench = {
    id: d.id,
    name: d.name,
    api: n.api,
    pciBusId: d.pciBusId,
    driver: d.driver,
    region: { bytes, fsType: region.fsType, dir: o.scratchDir },
    copies: {},
    link: { error: 'not read' },
    registration: {},
    native: { status: 'not-run' },
    errors: [],
  };
  const c: DeviceContext = { device: d, native: n, options: o, bytes, region, nativeBinary, result, kept: [] };
  const step = (what: string, f: () => void): void => {
    try {
      f();
    } catch (e) {
      result.errors.push(`${what}: ${errorText(e)}`);
    }
  };
  try {
    n.withOps(bytes, (ops) => {
      result.registerFlags = ops.registerFlags;
      const s = new DeviceSession(c, ops);
      measure(s, MEASUREMENTS.registration);
      say(`${d.id}: copies, best and median of ${o.runs}`);
      step('page-locked buffer', () => s.allocPinned());
      measure(s, MEASUREMENTS.copies);
      if (s.pinned) step('page-locked buffer release', () => s.freePinned());
      measure(s, MEASUREMENTS.calls);
    });
  } catch (e) {
    result.errors.push(`device ops: ${errorText(e)}`);
  }
  // Nothing of the bench holds the device now (withOps released it).
  measure(c, MEASUREMENTS.afterRelease);
  for (const m of c.kept) result.errors.push(`a mapping at 0x${m.address.toString(16)} is still registered: kept mapped`);
  region.close(registrations);
  return result;
}
