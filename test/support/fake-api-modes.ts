// What the OpenCL and Vulkan discovery tests share beyond an unusable library: the library the system loads first,
// found by its soname, and the compiled fake's failure modes, each switched by a variable the fake reads.
import { expect } from 'vitest';
import type { ApiDiscovery } from '../../bindings/api-library.js';
import type { CompiledFake } from './compiled-fake.js';

type Discover = (library?: string) => ApiDiscovery;

/**
 * Discovery with `env` unset, through the library the system loads first: it must load `soname` alone, without an
 * error, and number its devices in order. The caller judges which devices it found.
 */
export function discoverSystemLibrary(discover: Discover, env: string, soname: string): ApiDiscovery {
  delete process.env[env];
  const found = discover();
  expect(found.error).toBeUndefined();
  expect(found.library).toBe(soname);
  expect(found.tried).toEqual([soname]);
  found.devices.forEach((device, i) => expect(device.index).toBe(i));
  return found;
}

/** A test file's compiled fake and the variable that switches its failure modes. */
export interface FakeModes {
  discover: Discover;
  fake: CompiledFake;
  modeVariable: string;
}

/** Discovery through the fake with its failure mode set to `mode`. */
export function discoverInMode(m: FakeModes, mode: string): ApiDiscovery {
  process.env[m.modeVariable] = mode;
  return m.discover(m.fake.library);
}

/**
 * The fake in `mode` loads and lists no device: with `error` (the failing call named with its code) where given,
 * with no error at all where not (a driver-less system is zero devices, not a fault).
 */
export function expectNoDevices(m: FakeModes, mode: string, error?: string): void {
  const library = m.fake.library;
  expect(discoverInMode(m, mode)).toEqual({ library, tried: [library], devices: [], ...(error === undefined ? {} : { error }) });
}
