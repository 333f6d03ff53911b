// bindings/hip.ts against the HIP driver double (test/double/README.md), loaded by path as a real
// libamdhip64.so would be. Scenarios that need another double configuration (read at hipInit) load a copy
// of the library under another name: a separate instance with its own state.

import { join } from 'node:path';
import koffi from 'koffi';
import { beforeAll, describe, expect, it } from 'vitest';
import { Interrupted, OutOfMemory } from '../src/fatal.js';
import {
  HIP_INTEGRATED_ATTRIBUTE,
  HIP_LIBRARIES,
  HOST_REGISTER_DEFAULT,
  HipError,
  DriverError,
  LibraryNotFoundError,
  NotADriverError,
  hipIntegratedAttribute,
  hipVersion,
  loadHip,
  withHipOps,
  type DeviceOps,
  type HipDriver,
} from '../bindings/hip.js';
import { bindingFixture, exportsOf, pattern as patternOf, type DoubleExports } from './support/binding-harness.js';
import { thrown } from './support/thrown.js';
import { expectRoundTrip } from './support/ops-round-trip.js';
import { expectDoubleDevice } from './support/double-device.js';
import { expectTextFileRefused } from './support/not-a-driver.js';

const ENV_KEYS = [
  'MAPPED_REG_HIP_LIBRARY',
  'MAPPED_REG_DOUBLE_PROFILE',
  'MAPPED_REG_DOUBLE_FAULTS',
  'MAPPED_REG_DOUBLE_DEVICES',
  'MAPPED_REG_DOUBLE_HIP_VERSION',
];
const fixture = bindingFixture('hip', ENV_KEYS);
const { fileMapping, restoreEnv, freshCopy, state } = fixture;

let driver: HipDriver;

let dbl: DoubleExports;

/**
 * A separate instance of the double, configured by `env`: the double reads it at init, and
 * hipRuntimeGetVersion reads the version whenever it is asked, so `env` stays set while `use` runs.
 */
function withFreshDriver<T>(env: Record<string, string>, use: (d: HipDriver, exports: DoubleExports) => T): T {
  const path = freshCopy('libamdhip64_double');
  for (const [k, v] of Object.entries(env)) process.env[k] = v;
  try {
    return use(loadHip(path), exportsOf(path));
  } finally {
    for (const k of Object.keys(env)) restoreEnv(k);
  }
}

const pattern = (n: number, seed = 5): Uint8Array => patternOf(n, seed);

beforeAll(() => {
  dbl = state.exports;
  driver = loadHip(state.doublePath);
});

describe('loading', () => {
  it('a missing library is LibraryNotFoundError naming every name tried', () => {
    expect(HIP_LIBRARIES).toEqual(['libamdhip64.so', 'libamdhip64.so.7', 'libamdhip64.so.6', 'libamdhip64.so.5']);
    const where = join(state.dir, 'nowhere', 'libamdhip64.so');
    const e = thrown(() => loadHip(where)) as LibraryNotFoundError;
    expect(e).toBeInstanceOf(LibraryNotFoundError);
    expect(e.api).toBe('HIP');
    expect(e.message).toBe(`HIP: ${where} not found (tried ${where})`);

    let found: HipDriver | undefined;
    try {
      found = loadHip();
    } catch (err) {
      // No HIP runtime on this machine (CI): every default name was tried, in order.
      expect(err).toBeInstanceOf(LibraryNotFoundError);
      expect((err as LibraryNotFoundError).tried).toEqual([...HIP_LIBRARIES]);
      expect((err as Error).message).toBe(
        'HIP: libamdhip64.so not found (tried libamdhip64.so, libamdhip64.so.7, libamdhip64.so.6, libamdhip64.so.5)',
      );
    }
    if (found) expect(HIP_LIBRARIES).toContain(found.path); // e.g. the GPU machine's libamdhip64.so.5

    process.env['MAPPED_REG_HIP_LIBRARY'] = state.doublePath;
    try {
      expect(loadHip()).toBe(driver);
    } finally {
      restoreEnv('MAPPED_REG_HIP_LIBRARY');
    }
  });

  it('a file that is not a library, or a library without the HIP symbols, is NotADriverError', () => {
    expectTextFileRefused(loadHip, state.dir, 'libamdhip64.so');
    const cuda = thrown(() => loadHip(state.otherDoublePath)) as NotADriverError;
    expect(cuda.message).toBe(`HIP: ${state.otherDoublePath} is not a HIP driver library (no symbol hipRuntimeGetVersion)`);
  });
});

describe('versions and the integrated attribute', () => {
  it('splits HIP_VERSION', () => {
    expect(hipVersion(50731921)).toEqual({ raw: 50731921, major: 5, minor: 7, patch: 31921 });
    expect(hipVersion(70204000)).toEqual({ raw: 70204000, major: 7, minor: 2, patch: 4000 });
  });

  it('picks 25 for HIP 4.x and 16 for HIP 5.x to 7.x, and refuses to guess otherwise', () => {
    expect(HIP_INTEGRATED_ATTRIBUTE.V4).toBe(25);
    expect(HIP_INTEGRATED_ATTRIBUTE.V5).toBe(16);
    expect(hipIntegratedAttribute(40500000)).toBe(25);
    expect(hipIntegratedAttribute(50731921)).toBe(16);
    expect(hipIntegratedAttribute(60443483)).toBe(16);
    expect(hipIntegratedAttribute(70204000)).toBe(16);
    expect(() => hipIntegratedAttribute(80000000)).toThrow(/no known hipDeviceAttributeIntegrated for HIP 8.0/);
    expect(() => hipIntegratedAttribute(305)).toThrow(/HIP 0.0/); // the pre-4.2 encoding
  });

  for (const [version, label] of [
    ['50731921', '5.7'],
    ['60443483', '6.4'],
    ['70204000', '7.2'],
  ] as const) {
    it(`asks attribute 16 of a runtime reporting HIP ${label}`, () => {
      withFreshDriver({ MAPPED_REG_DOUBLE_HIP_VERSION: version, MAPPED_REG_DOUBLE_FAULTS: 'integrated' }, (d) => {
        expect(d.runtimeVersion().raw).toBe(Number(version));
        expect(d.integratedAttribute()).toBe(16);
        expect(d.integrated(0)).toBe(true);
      });
      withFreshDriver({ MAPPED_REG_DOUBLE_HIP_VERSION: version }, (d) => {
        expect(d.integrated(0)).toBe(false);
      });
    });
  }

  it('asks attribute 25 of a runtime reporting HIP 4.5 (16 is L2CacheSize there)', () => {
    withFreshDriver({ MAPPED_REG_DOUBLE_HIP_VERSION: '40500000', MAPPED_REG_DOUBLE_FAULTS: 'integrated' }, (d) => {
      expect(d.integratedAttribute()).toBe(25);
      expect(d.integrated(0)).toBe(true);
      expect(d.attribute(0, 16)).not.toBe(0);
    });
    withFreshDriver({ MAPPED_REG_DOUBLE_HIP_VERSION: '40500000' }, (d) => expect(d.integrated(0)).toBe(false));
  });

  it('a failed integrated query is a HipError; an unknown major version throws', () => {
    withFreshDriver({ MAPPED_REG_DOUBLE_FAULTS: 'integrated_query_fails' }, (d) => {
      const e = thrown(() => d.integrated(0)) as HipError;
      expect([e.call, e.code, e.codeName]).toEqual(['hipDeviceGetAttribute', 1, 'hipErrorInvalidValue']);
    });
    withFreshDriver({ MAPPED_REG_DOUBLE_HIP_VERSION: '80100000' }, (d) => {
      expect(() => d.integrated(0)).toThrow(/no known hipDeviceAttributeIntegrated for HIP 8.1/);
    });
  });
});

// The 'runtime' suite, in two blocks to keep each callback short: this one, what a runtime reports, its registrations.
describe('runtime', () => {
  it('reports devices, name, bus id, memory', () => {
    expect(driver.api).toBe('HIP');
    expect(driver.runtimeVersion()).toEqual({ raw: 70204000, major: 7, minor: 2, patch: 4000 });
    expect(driver.hipDriverVersion()).toBe(70204000);
    expectDoubleDevice(driver, 'Double HIP Device');
    expect(driver.attribute(0, 3)).toBe(1); // CanMapHostMemory
    expect(driver.integrated(0)).toBe(false);
  });

  it('the nodevice profile is 0 devices with a "no HIP device" reason, not a crash', () => {
    withFreshDriver({ MAPPED_REG_DOUBLE_PROFILE: 'nodevice' }, (d) => {
      expect(d.runtimeVersion()).toEqual({ raw: 50731921, major: 5, minor: 7, patch: 31921 });
      const devices = d.devices();
      expect(devices.count).toBe(0);
      expect(devices.reason).toBe('no HIP device here: hipInit returned 100 hipErrorNoDevice');
      expect(d.deviceCount()).toBe(0);
      const e = thrown(() => d.integrated(0)) as HipError;
      expect(e).toBeInstanceOf(HipError);
      expect(e).toBeInstanceOf(DriverError);
      expect([e.call, e.code, e.codeName]).toEqual(['hipInit', 100, 'hipErrorNoDevice']);
      expect(() => withHipOps(d, 0, 4096, () => 1)).toThrow(HipError);
    });
    withFreshDriver({ MAPPED_REG_DOUBLE_DEVICES: '0' }, (d) => {
      expect(d.devices().reason).toMatch(/^no HIP device here: /);
    });
  });

  it('keeps 712 and 713 apart, with their names (rocm-fixed)', () => {
    withFreshDriver({ MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed' }, (d, exports) => {
      const m = fileMapping(pattern(2 * 4096));
      d.setDevice(0);
      d.hostRegister(m, HOST_REGISTER_DEFAULT); // HIP ignores ReadOnly on AMD: flags 0 pin a read-only mapping
      expect(exports.registrations()).toBe(1);
      const twice = thrown(() => d.hostRegister(m, 0)) as HipError;
      expect([twice.call, twice.code, twice.codeName]).toEqual(['hipHostRegister', 712, 'hipErrorHostMemoryAlreadyRegistered']);
      d.hostUnregister(m);
      const again = thrown(() => d.hostUnregister(m)) as HipError;
      expect([again.call, again.code, again.codeName]).toEqual(['hipHostUnregister', 713, 'hipErrorHostMemoryNotRegistered']);
      expect(exports.registrations()).toBe(0);
    });
  });
});

// The same suite: what a broken runtime reports, error names, page-locked memory.
describe('runtime', () => {
  it('reports what ROCm 7.2.4 says, however wrong (rocm724: a double registration "succeeds", its release 713)', () => {
    // A separate instance: the stuck entries stay in its table for good.
    withFreshDriver({ MAPPED_REG_DOUBLE_PROFILE: 'rocm724' }, (d, exports) => {
      const m = fileMapping(pattern(2 * 4096));
      d.setDevice(0);
      d.hostRegister(m, 0);
      d.hostRegister(m, 0);
      expect(exports.registrations()).toBe(2);
      const e = thrown(() => d.hostUnregister(m)) as HipError;
      expect([e.code, e.codeName]).toEqual([713, 'hipErrorHostMemoryNotRegistered']);
    });
  });

  it('names codes from hipGetErrorName, unless it says hipErrorUnknown for another code', () => {
    expect(driver.errorName(712)).toBe('hipErrorHostMemoryAlreadyRegistered');
    expect(driver.errorName(999)).toBe('hipErrorUnknown');
    expect(driver.errorName(709)).toBe('hipErrorContextIsDestroyed'); // the double does not know it
    expect(driver.errorName(123456)).toBe('UNKNOWN_123456');
  });

  it('page-locked memory: a zero-copy view', () => {
    driver.setDevice(0);
    const a = driver.hostMalloc(4096);
    expect(koffi.address(a.bytes)).toBe(a.address);
    a.bytes.set(pattern(4096, 1));
    const b = driver.hostMalloc(4096);
    const dptr = driver.malloc(4096);
    driver.memcpyHtoD(dptr, a);
    driver.memcpyDtoH(b, dptr);
    expect(b.bytes).toEqual(pattern(4096, 1));
    driver.free(dptr);
    driver.hostFree(a);
    driver.hostFree(b);
  });
});

// The 'withHipOps' suite, in two blocks of one name to keep each callback short (docs cite its tests by full name):
// this one, the round trip and what the ops leave behind.
describe('withHipOps', () => {
  it('round trip from a read-only file mapping, registered with flags 0, returns the bytes', () => {
    const content = pattern(32 * 1024);
    const downloadBack = (ops: DeviceOps): void => {
      const back = ops.allocHost(32 * 1024);
      ops.download(back);
      expect(back.bytes).toEqual(content);
    };
    const trip = { content, mapping: fileMapping(content), window: { offset: 8192, length: 4096 }, afterUpload: downloadBack };
    const inHipOps = (steps: (ops: DeviceOps) => Uint8Array): Uint8Array =>
      withHipOps(driver, 0, 32 * 1024, (ops) => {
        expect(ops.api).toBe('HIP');
        expect(ops.registerFlags).toBe(0);
        return steps(ops);
      });
    expectRoundTrip(dbl, inHipOps, trip, { hipMalloc: 1, hipFree: 1, hipDeviceReset: 0 /* never */ });
  });

  it('frees what f left allocated and leaves registrations alone, even when f throws', () => {
    const m = fileMapping(pattern(4096));
    const hostFrees = dbl.calls('hipHostFree');
    const frees = dbl.calls('hipFree');
    const unregisters = dbl.calls('hipHostUnregister');
    const regs = dbl.registrations();
    const boom = new Error('f failed');
    expect(() =>
      withHipOps(driver, 0, 4096, (ops) => {
        ops.allocHost(4096);
        ops.allocHost(8192);
        ops.register(m);
        throw boom;
      }),
    ).toThrow(boom);
    expect(dbl.calls('hipHostFree')).toBe(hostFrees + 2);
    expect(dbl.calls('hipFree')).toBe(frees + 1);
    expect(dbl.calls('hipHostUnregister')).toBe(unregisters);
    expect(dbl.registrations()).toBe(regs + 1); // still held: the caller's to release
    driver.hostUnregister(m);
  });
});

// The same suite: a release step that fails, ordinary or fatal, and the checks on the ops' life and sizes.
describe('withHipOps', () => {
  it('a failed release is logged and does not replace the result', () => {
    withFreshDriver({ MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed' }, (d) => {
      const logged: string[] = [];
      const r = withHipOps(
        d,
        0,
        4096,
        (ops) => {
          ops.allocHost(4096);
          d.deviceReset(); // frees the device's allocations behind the ops' back
          return 7;
        },
        { log: (msg) => logged.push(msg) },
      );
      expect(r).toBe(7);
      expect(logged).toHaveLength(2);
      expect(logged[0]).toMatch(/^release of the page-locked buffer 0x[0-9a-f]+ \(\+4096\) failed: HIP: hipHostFree failed: 1 hipErrorInvalidValue/);
      expect(logged[1]).toMatch(/^release of the device buffer of 4096 bytes on HIP device 0 failed: HIP: hipFree failed: 1/);
    });
  });

  it('a fatal error while freeing the device buffer is rethrown once every step ran; a non-fatal one is only logged', () => {
    const freeing = (error: unknown): HipDriver => ({ ...driver, free: (p) => { driver.free(p); throw error; } });
    const frees = dbl.calls('hipHostFree');
    expect(() => withHipOps(freeing(new OutOfMemory()), 0, 4096, (ops) => (ops.allocHost(4096), 7), { log: () => {} })).toThrow(OutOfMemory);
    expect(dbl.calls('hipHostFree') - frees).toBe(1); // the page-locked buffer first, as always
    expect(() => withHipOps(freeing(new Interrupted()), 0, 4096, () => { throw new Error('f failed'); }, { log: () => {} })).toThrow(Interrupted);
    const logged: string[] = [];
    expect(withHipOps(freeing(new Error('hipFree failed')), 0, 4096, () => 7, { log: (m) => logged.push(m) })).toBe(7);
    expect(logged).toEqual(['release of the device buffer of 4096 bytes on HIP device 0 failed: hipFree failed']);
  });

  it('ops are dead after withHipOps returns; sizes are checked', () => {
    const ops = withHipOps(driver, 0, 4096, (o) => o);
    expect(() => ops.allocHost(10)).toThrow(/withHipOps has returned/);
    expect(() => withHipOps(driver, 0, -5, () => 1)).toThrow(RangeError);
    const ran = withHipOps(driver, 0, 4096, (o) => {
      const big = o.allocHost(8192);
      expect(() => o.upload(big)).toThrow(RangeError);
      expect(() => o.download(big)).toThrow(RangeError);
      return 'ran';
    });
    expect(ran).toBe('ran');
  });
});
