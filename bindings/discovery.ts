// One list of devices across backends, with stable ids (cuda:0, hip:0, opencl:0, vulkan:0, cpu), each carrying
// the model's Device (its integrated query and registration ops). A missing library is a note, not an error.
// Which backends there are, and how each finds its devices, is the registry's (registry.ts): nothing here names one.
import { type Backend, BACKENDS, type BackendReport } from '../results/types.js';
import type { DiscoveredDevice } from './backend.js';
import { backendIds, backendModule, backendModules, registersHostMemory } from './registry.js';

export { type Backend, BACKENDS, type BackendReport };
export type { DiscoveredDevice, NativeDevice, NativeKit } from './backend.js';

export interface Discovery {
  readonly devices: DiscoveredDevice[];
  readonly backends: BackendReport[];
  /** True when a driver library that registers (CUDA, HIP, BackendModule.registers) was loaded. */
  readonly gpuDriverFound: boolean;
}

/** Every device of the backends asked for (all registered ones by default), in the registry's order. */
export function discover(backends: readonly Backend[] = backendIds()): Discovery {
  const devices: DiscoveredDevice[] = [];
  const reports: BackendReport[] = [];
  let gpuDriverFound = false;
  for (const m of backendModules()) {
    if (!backends.includes(m.id)) continue;
    const r = m.discover();
    devices.push(...r.devices);
    reports.push(r.report);
    // a GPU driver was found when its library loaded (its report names it), whatever it then said
    gpuDriverFound ||= m.registers && r.report.library !== null;
  }
  return { devices, backends: reports, gpuDriverFound };
}

// ---- discovery as data: what one process found, handed to another ----

/** True for a device of a GPU driver (CUDA, HIP, BackendModule.registers): one that registers host memory, and whose process runs the probe. */
export const isGpuDriver = (d: Pick<DiscoveredDevice, 'backend'>): boolean => registersHostMemory(d.backend);

/** The JSON-safe part of a discovered device, with its framework. */
export type PlainDevice = Omit<DiscoveredDevice, 'device' | 'native'> & { framework: string };

/** A Discovery as data (no driver handles, no hooks): what the discovering process reports to the command. */
export interface PlainDiscovery {
  readonly devices: PlainDevice[];
  readonly backends: BackendReport[];
  readonly gpuDriverFound: boolean;
}

export function plainDevice(d: DiscoveredDevice): PlainDevice {
  const { device, native: _native, ...plain } = d;
  return { ...plain, framework: device.framework };
}

export function plainDiscovery(found: Discovery): PlainDiscovery {
  return { devices: found.devices.map(plainDevice), backends: found.backends, gpuDriverFound: found.gpuDriverFound };
}

/**
 * A device rebuilt from its data, for what needs no driver: the static verdict (the integrated answer given at
 * discovery is replayed, a failed query as the error it gave) and the reports. It has no ops.
 */
export function deviceFromPlain(p: PlainDevice): DiscoveredDevice {
  const { framework, ...rest } = p;
  const m = backendModule(p.backend);
  const sharedMemoryQuery = (): boolean => {
    if (p.integrated === null) throw new Error(p.integratedError ?? `${p.id}: the integrated query failed at discovery`);
    return p.integrated;
  };
  const asked = m?.registers ? { sharedMemoryQuery, registration: m.driver.policy } : {};
  return { ...rest, device: { id: p.id, framework, name: p.name, type: p.type, ...asked } };
}
