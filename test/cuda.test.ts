// bindings/cuda.ts against the CUDA driver double (test/double/README.md), loaded by path as the real
// libcuda.so.1 would be. Scenarios that need another double configuration (read at cuInit) load a copy of
// the library under another name: a separate instance with its own state.

import { join } from 'node:path';
import koffi from 'koffi';
import { beforeAll, describe, expect, it } from 'vitest';
import { Interrupted, OutOfMemory } from '../src/fatal.js';
import { hostSlice, type Host } from '../src/ops.js';
import {
  CU_DEVICE_ATTRIBUTE,
  CudaError,
  DriverError,
  LibraryNotFoundError,
  NotADriverError,
  CU_MEMHOSTREGISTER,
  loadCuda,
  withCudaOps,
  type CudaDriver,
  type DeviceOps,
} from '../bindings/cuda.js';
import { bindingFixture, exportsOf, pattern as patternOf, type DoubleExports } from './support/binding-harness.js';
import { thrown } from './support/thrown.js';
import { expectRoundTrip } from './support/ops-round-trip.js';
import { expectDoubleDevice } from './support/double-device.js';
import { expectTextFileRefused } from './support/not-a-driver.js';

const ENV_KEYS = ['MAPPED_REG_CUDA_LIBRARY', 'MAPPED_REG_DOUBLE_PROFILE', 'MAPPED_REG_DOUBLE_FAULTS', 'MAPPED_REG_DOUBLE_DEVICES'];
const fixture = bindingFixture('cuda', ENV_KEYS);
const { fileMapping, restoreEnv, freshCopy, state } = fixture;

let driver: CudaDriver;

let dbl: DoubleExports;

/** A separate instance of the double (its own state), configured by `env` at its cuInit. */
function freshDriver(env: Record<string, string>): { driver: CudaDriver; path: string } {
  const path = freshCopy('libcuda_double');
  const d = loadCuda(path);
  for (const [k, v] of Object.entries(env)) process.env[k] = v;
  try {
    d.devices(); // cuInit reads the configuration now
  } finally {
    for (const k of Object.keys(env)) restoreEnv(k);
  }
  return { driver: d, path };
}

const pattern = (n: number, seed = 7): Uint8Array => patternOf(n, seed);

/** withCudaOps over `bytes` on device 0, its `f` doing `before` and then throwing `boom`: the call rethrows boom. */
function expectRethrown(bytes: number, boom: Error, log: (m: string) => void, before: (ops: DeviceOps) => void): void {
  const f = (ops: DeviceOps): never => {
    before(ops);
    throw boom;
  };
  expect(() => withCudaOps(driver, 0, bytes, f, { log })).toThrow(boom);
}

beforeAll(() => {
  dbl = state.exports;
  driver = loadCuda(state.doublePath);
});

describe('loading', () => {
  it('a missing library is LibraryNotFoundError naming what was tried', () => {
    const e = thrown(() => loadCuda(join(state.dir, 'nowhere', 'libcuda.so.1')));
    expect(e).toBeInstanceOf(LibraryNotFoundError);
    const err = e as LibraryNotFoundError;
    expect(err.api).toBe('CUDA');
    expect(err.tried).toEqual([join(state.dir, 'nowhere', 'libcuda.so.1')]);
    expect(err.message).toBe(`CUDA: ${join(state.dir, 'nowhere', 'libcuda.so.1')} not found (tried ${join(state.dir, 'nowhere', 'libcuda.so.1')})`);

    const bare = thrown(() => loadCuda('libcuda_not_installed_here.so.1')) as LibraryNotFoundError;
    expect(bare).toBeInstanceOf(LibraryNotFoundError);
    expect(bare.message).toBe('CUDA: libcuda_not_installed_here.so.1 not found (tried libcuda_not_installed_here.so.1)');
  });

  it('by default it looks for libcuda.so.1, or for $MAPPED_REG_CUDA_LIBRARY', () => {
    expect(new LibraryNotFoundError('CUDA', ['libcuda.so.1']).message).toBe('CUDA: libcuda.so.1 not found (tried libcuda.so.1)');
    let found: CudaDriver | undefined;
    try {
      found = loadCuda();
    } catch (e) {
      // No CUDA driver on this machine (CI): exactly the message users see.
      expect(e).toBeInstanceOf(LibraryNotFoundError);
      expect((e as Error).message).toBe('CUDA: libcuda.so.1 not found (tried libcuda.so.1)');
    }
    if (found) expect(found.path).toBe('libcuda.so.1'); // a machine with the real driver

    process.env['MAPPED_REG_CUDA_LIBRARY'] = state.doublePath;
    try {
      expect(loadCuda()).toBe(driver);
      process.env['MAPPED_REG_CUDA_LIBRARY'] = join(state.dir, 'missing.so');
      expect(() => loadCuda()).toThrow(`CUDA: ${join(state.dir, 'missing.so')} not found (tried ${join(state.dir, 'missing.so')})`);
    } finally {
      restoreEnv('MAPPED_REG_CUDA_LIBRARY');
    }
  });

  it('a file that is not a library, or a library without the driver symbols, is NotADriverError', () => {
    expectTextFileRefused(loadCuda, state.dir, 'libcuda.so.1');

    const hip = thrown(() => loadCuda(state.otherDoublePath)) as NotADriverError;
    expect(hip).toBeInstanceOf(NotADriverError);
    expect(hip.message).toBe(`CUDA: ${state.otherDoublePath} is not a CUDA driver library (no symbol cuInit)`);

    const dirPath = thrown(() => loadCuda(state.dir)) as NotADriverError;
    expect(dirPath).toBeInstanceOf(NotADriverError);
  });

  it('loads once per name', () => {
    expect(loadCuda(state.doublePath)).toBe(driver);
    expect(driver.api).toBe('CUDA');
    expect(driver.path).toBe(state.doublePath);
  });
});

// The 'driver' suite, in two blocks to keep each callback short: this one, the driver's queries and error names.
describe('driver', () => {
  it('reports version, devices, name, bus id, memory', () => {
    expect(driver.driverVersion()).toBe(13000);
    expectDoubleDevice(driver, 'Double CUDA Device');
  });

  it('reads the attributes the facts list', () => {
    expect(driver.attribute(0, CU_DEVICE_ATTRIBUTE.INTEGRATED)).toBe(0);
    expect(driver.attribute(0, CU_DEVICE_ATTRIBUTE.CAN_MAP_HOST_MEMORY)).toBe(1);
    expect(driver.attribute(0, CU_DEVICE_ATTRIBUTE.PAGEABLE_MEMORY_ACCESS)).toBe(0);
    expect(driver.attribute(0, CU_DEVICE_ATTRIBUTE.HOST_REGISTER_SUPPORTED)).toBe(1);
    expect(driver.attribute(0, CU_DEVICE_ATTRIBUTE.READ_ONLY_HOST_REGISTER_SUPPORTED)).toBe(1);
    const e = thrown(() => driver.attribute(0, 9999)) as CudaError;
    expect(e).toBeInstanceOf(CudaError);
    expect(e).toBeInstanceOf(DriverError);
    expect([e.call, e.code, e.codeName]).toEqual(['cuDeviceGetAttribute', 1, 'CUDA_ERROR_INVALID_VALUE']);
    const bad = thrown(() => driver.name(5)) as CudaError;
    expect([bad.call, bad.code, bad.codeName]).toEqual(['cuDeviceGet', 101, 'CUDA_ERROR_INVALID_DEVICE']);
  });

  it('cuInit 100 means no CUDA device here: count 0 with the reason, not a crash', () => {
    const { driver: none } = freshDriver({ MAPPED_REG_DOUBLE_PROFILE: 'nodevice' });
    expect(none.devices()).toEqual({ count: 0, reason: 'no CUDA device here: cuInit returned 100 CUDA_ERROR_NO_DEVICE' });
    expect(none.deviceCount()).toBe(0);
    const e = thrown(() => none.attribute(0, CU_DEVICE_ATTRIBUTE.INTEGRATED)) as CudaError;
    expect([e.call, e.code, e.codeName]).toEqual(['cuInit', 100, 'CUDA_ERROR_NO_DEVICE']);
    expect(() => withCudaOps(none, 0, 4096, () => 1)).toThrow(CudaError);
  });

  it('another cuInit failure is an error, not "no device"', () => {
    const path = freshCopy('libcuda_double');
    const d = loadCuda(path);
    process.env['MAPPED_REG_DOUBLE_FAULTS'] = 'init_fails';
    try {
      const e = thrown(() => d.devices()) as CudaError;
      expect([e.call, e.code, e.codeName]).toEqual(['cuInit', 999, 'CUDA_ERROR_UNKNOWN']);
    } finally {
      restoreEnv('MAPPED_REG_DOUBLE_FAULTS');
    }
    expect(d.devices()).toEqual({ count: 1 }); // not cached: the next cuInit succeeds
  });

  it('names codes the driver does not know from its own table, else UNKNOWN_<code>', () => {
    expect(driver.errorName(713)).toBe('CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED');
    expect(driver.errorName(709)).toBe('CUDA_ERROR_CONTEXT_IS_DESTROYED'); // not in the double's table
    expect(driver.errorName(123456)).toBe('UNKNOWN_123456');
    expect(driver.errorString(712)).toBe('part or all of the requested memory range is already mapped');
    expect(driver.errorString(123456)).toBeUndefined();
  });
});

// The same suite: registrations and page-locked memory, straight through the driver.
describe('driver', () => {
  it('keeps 712 and 713 apart, with their names', () => {
    const m = fileMapping(pattern(3 * 4096));
    const ctx = driver.primaryCtxRetain(0);
    try {
      driver.ctxSetCurrent(ctx);
      const before = dbl.registrations();
      driver.hostRegister(m, CU_MEMHOSTREGISTER.READ_ONLY);
      expect(dbl.registrations()).toBe(before + 1);
      const twice = thrown(() => driver.hostRegister(m, CU_MEMHOSTREGISTER.READ_ONLY)) as CudaError;
      expect([twice.call, twice.code, twice.codeName]).toEqual(['cuMemHostRegister_v2', 712, 'CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED']);
      expect(twice.message).toBe(
        'CUDA: cuMemHostRegister_v2 failed: 712 CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED (part or all of the requested memory range is already mapped)',
      );
      driver.hostUnregister(m);
      expect(dbl.registrations()).toBe(before);
      const again = thrown(() => driver.hostUnregister(m)) as CudaError;
      expect([again.call, again.code, again.codeName]).toEqual(['cuMemHostUnregister', 713, 'CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED']);
      // A read-only file mapping needs READ_ONLY on this driver.
      const flags0 = thrown(() => driver.hostRegister(m, 0)) as CudaError;
      expect([flags0.code, flags0.codeName]).toEqual([1, 'CUDA_ERROR_INVALID_VALUE']);
      driver.hostRegister(m, CU_MEMHOSTREGISTER.READ_ONLY | CU_MEMHOSTREGISTER.PORTABLE);
      driver.hostUnregister(m);
    } finally {
      driver.primaryCtxRelease(0);
    }
  });

  it('page-locked memory: a zero-copy view the driver reads and writes', () => {
    const ctx = driver.primaryCtxRetain(0);
    try {
      driver.ctxSetCurrent(ctx);
      const a = driver.memHostAlloc(8192);
      const b = driver.memHostAlloc(8192);
      expect(koffi.address(a.bytes)).toBe(a.address);
      a.bytes.set(pattern(8192, 3));
      // Read back through a pointer, not through the view: the view is the memory itself.
      expect(Array.from(koffi.decode(a.address, 'uint8_t', 8192) as ArrayLike<number>)).toEqual(Array.from(pattern(8192, 3)));
      const dptr = driver.memAlloc(8192);
      driver.memcpyHtoD(dptr, a);
      driver.memcpyDtoH(b, dptr);
      expect(b.bytes).toEqual(pattern(8192, 3)); // the driver wrote into the caller's memory, no copy-back
      driver.memFree(dptr);
      driver.memFreeHost(a);
      driver.memFreeHost(b);
      const e = thrown(() => driver.memFreeHost(b)) as CudaError;
      expect([e.call, e.code]).toEqual(['cuMemFreeHost', 1]);
    } finally {
      driver.primaryCtxRelease(0);
    }
  });

  it('refuses a Host whose bytes are not at its address, before calling the driver', () => {
    const fake: Host = { address: 0x7f0000000000n, bytes: new Uint8Array(4096) };
    const calls = dbl.calls('cuMemHostRegister_v2');
    expect(() => driver.hostRegister(fake, CU_MEMHOSTREGISTER.READ_ONLY)).toThrow(/bytes live at/);
    expect(dbl.calls('cuMemHostRegister_v2')).toBe(calls);
  });
});

// The 'withCudaOps' suite, in blocks of one name to keep each callback short (docs cite its tests by full name):
// this one, the ops' own calls.
describe('withCudaOps', () => {
  it('round trip from a read-only file mapping registered READ_ONLY returns the bytes', () => {
    const content = pattern(64 * 1024);
    const trip = { content, mapping: fileMapping(content), window: { offset: 4096, length: 8192 } };
    const inCudaOps = (steps: (ops: DeviceOps) => Uint8Array): Uint8Array =>
      withCudaOps(driver, 0, 64 * 1024, (ops) => {
        expect(ops.registerFlags).toBe(CU_MEMHOSTREGISTER.READ_ONLY);
        expect(ops.bytes).toBe(64 * 1024);
        return steps(ops);
      });
    expectRoundTrip(dbl, inCudaOps, trip, { cuDevicePrimaryCtxRetain: 1, cuDevicePrimaryCtxRelease_v2: 1, cuMemAlloc_v2: 1, cuMemFree_v2: 1 });
  });

  it('download reads the device buffer back; registerWithFlags passes the flags given', () => {
    const content = pattern(3 * 4096, 11);
    const m = fileMapping(content);
    // the callback's value back: proof that the assertions inside it ran
    const ran = withCudaOps(driver, 0, 4 * 4096, (ops) => {
      const e = thrown(() => ops.registerWithFlags(m, 0)) as CudaError;
      expect(e.code).toBe(1);
      ops.registerWithFlags(m, CU_MEMHOSTREGISTER.READ_ONLY);
      ops.upload(m);
      const back = ops.allocHost(3 * 4096);
      ops.download(back);
      expect(back.bytes).toEqual(content);
      ops.unregister(m);
      return 'ran';
    });
    expect(ran).toBe('ran');
  });

  it('raw-address registration for hazard checks: NULL and size 0 are refused with 1', () => {
    const ran = withCudaOps(driver, 0, 4096, (ops) => {
      expect((thrown(() => ops.registerAddress(0n, 4096, CU_MEMHOSTREGISTER.READ_ONLY)) as CudaError).code).toBe(1);
      const m = fileMapping(pattern(4096));
      expect((thrown(() => ops.registerAddress(m.address, 0, CU_MEMHOSTREGISTER.READ_ONLY)) as CudaError).code).toBe(1);
      ops.registerAddress(m.address + 100n, 200, CU_MEMHOSTREGISTER.READ_ONLY);
      expect((thrown(() => ops.unregisterAddress(m.address)) as CudaError).code).toBe(713);
      ops.unregisterAddress(m.address + 100n);
      return 'ran';
    });
    expect(ran).toBe('ran');
  });
});

// The same suite: what the ops leave behind when f returns or throws, and the context retain they keep for it.
describe('withCudaOps', () => {
  it('frees what f left allocated, leaves registrations alone, even when f throws', () => {
    const m = fileMapping(pattern(2 * 4096));
    const unregisters = dbl.calls('cuMemHostUnregister');
    const freeHosts = dbl.calls('cuMemFreeHost');
    const frees = dbl.calls('cuMemFree_v2');
    const releases = dbl.calls('cuDevicePrimaryCtxRelease_v2');
    const regs = dbl.registrations();
    const boom = new Error('f failed');
    const logged: string[] = [];
    expectRethrown(8192, boom, (msg) => logged.push(msg), (ops) => {
      ops.allocHost(4096);
      ops.allocHost(4096);
      ops.register(m);
    });
    expect(dbl.calls('cuMemFreeHost')).toBe(freeHosts + 2);
    expect(dbl.calls('cuMemFree_v2')).toBe(frees + 1);
    expect(dbl.calls('cuMemHostUnregister')).toBe(unregisters); // not touched
    // The last release of the primary context would drop the registration with the context: kept instead.
    expect(dbl.calls('cuDevicePrimaryCtxRelease_v2')).toBe(releases);
    expect(logged).toEqual([
      "the primary context retain of CUDA device 0 kept: 1 registration made through these ops is not released, and the last release of the context would drop it behind the caller's back",
    ]);
    expect(dbl.registrations()).toBe(regs + 1);
    const ctx = driver.primaryCtxRetain(0);
    driver.ctxSetCurrent(ctx);
    driver.hostUnregister(m); // still registered: ours to release
    driver.primaryCtxRelease(0);
    driver.primaryCtxRelease(0); // the retain withCudaOps kept
  });

  it('keeps the retain while an unregister that failed leaves a registration; releases it once all are released', () => {
    const { driver: d, path } = freshDriver({ MAPPED_REG_DOUBLE_FAULTS: 'unregister_fails=1' });
    const exports = exportsOf(path);
    const m = fileMapping(pattern(4096));
    const logged: string[] = [];
    withCudaOps(
      d,
      0,
      4096,
      (ops) => {
        ops.register(m);
        expect((thrown(() => ops.unregister(m)) as CudaError).code).toBe(999);
      },
      { log: (msg) => logged.push(msg) },
    );
    expect(exports.calls('cuDevicePrimaryCtxRelease_v2')).toBe(0);
    expect(exports.registrations()).toBe(1);
    expect(logged).toHaveLength(1);
    withCudaOps(d, 0, 4096, (ops) => {
      ops.unregister(m); // the retry succeeds, in another withCudaOps
    });
    // These ops made no registration they kept: their own retain goes; the first one's stays.
    expect(exports.calls('cuDevicePrimaryCtxRelease_v2')).toBe(1);
    expect(exports.registrations()).toBe(0);
  });
});

// The same suite: a release step that fails, ordinary or fatal.
describe('withCudaOps', () => {
  it('a failed release is logged and replaces neither the result nor the exception', () => {
    const logged: string[] = [];
    // f drops the context's last retain itself: the double frees the device buffer with it, so every
    // release step after f fails.
    const result = withCudaOps(
      driver,
      0,
      4096,
      (ops) => {
        ops.allocHost(4096);
        driver.primaryCtxRelease(0);
        return 'result of f';
      },
      { log: (m) => logged.push(m) },
    );
    expect(result).toBe('result of f');
    expect(logged.length).toBeGreaterThanOrEqual(3);
    expect(logged.join('\n')).toMatch(/release of the primary context retain of CUDA device 0 failed: CUDA: cuDevicePrimaryCtxRelease_v2 failed: 201/);

    const boom = new Error('f failed too');
    const logged2: string[] = [];
    const throwingLog = (m: string): never => {
      logged2.push(m);
      throw new Error('a logger that throws changes nothing');
    };
    expectRethrown(4096, boom, throwingLog, () => driver.primaryCtxRelease(0));
    expect(logged2.length).toBeGreaterThan(0);
  });

  it('a fatal error while freeing the device buffer is rethrown once every step ran; a non-fatal one is only logged', () => {
    const created = dbl.calls('cuDevicePrimaryCtxRetain');
    const released = () => dbl.calls('cuDevicePrimaryCtxRelease_v2');
    const releasedAtStart = released();
    const failing = (error: unknown): CudaDriver => ({
      ...driver,
      memFree: (dptr) => {
        driver.memFree(dptr); // freed all the same: what is seen is the error
        throw error;
      },
    });
    for (const fatal of [new OutOfMemory(), new Interrupted(), new RangeError('Maximum call stack size exceeded')]) {
      const logged: string[] = [];
      const before = released();
      const frees = dbl.calls('cuMemFreeHost');
      // f returns: its result is replaced by the fatal error, after the later steps (the context retain) ran
      expect(() => withCudaOps(failing(fatal), 0, 4096, (ops) => (ops.allocHost(4096), 'result'), { log: (m) => logged.push(m) })).toThrow(fatal);
      expect(released() - before).toBe(1);
      expect(dbl.calls('cuMemFreeHost') - frees).toBe(1);
      expect(logged).toEqual([expect.stringMatching(/^release of the device buffer of 4096 bytes on CUDA device 0 failed: /)]);
      // f throws an ordinary error: the fatal error goes first
      expect(() => withCudaOps(failing(fatal), 0, 4096, () => { throw new Error('f failed'); }, { log: () => {} })).toThrow(fatal);
      // f throws a fatal error of its own: that one goes first
      const own = new Interrupted('f was interrupted');
      expect(() => withCudaOps(failing(fatal), 0, 4096, () => { throw own; }, { log: () => {} })).toThrow(own);
    }
    // a non-fatal failure replaces neither the result nor the exception
    const ordinary = new CudaError('cuMemFree_v2', 1, 'CUDA_ERROR_INVALID_VALUE');
    expect(withCudaOps(failing(ordinary), 0, 4096, () => 'result', { log: () => {} })).toBe('result');
    const boom = new Error('f failed');
    expect(() => withCudaOps(failing(ordinary), 0, 4096, () => { throw boom; }, { log: () => {} })).toThrow(boom);
    // every retain was given back, whatever was thrown
    expect(dbl.calls('cuDevicePrimaryCtxRetain') - created).toBe(released() - releasedAtStart);
  });
});

// The same suite: a log that throws, an async f, and the checks on sizes, ownership and flags.
describe('withCudaOps', () => {
  it('a fatal error from the log is rethrown once every step ran; an ordinary one is swallowed', () => {
    const before = dbl.calls('cuMemFree_v2');
    const kept = withCudaOps(driver, 0, 4096, (ops) => {
      ops.allocHost(4096);
      return 'kept';
    }, { log: () => { throw new Error('no'); } });
    expect(kept).toBe('kept');
    // the logger is called for a failed step: make the pinned free fail, and the log interrupt
    const broken: CudaDriver = { ...driver, memFreeHost: () => { throw new CudaError('cuMemFreeHost', 1, 'CUDA_ERROR_INVALID_VALUE'); } };
    const frees = dbl.calls('cuMemFree_v2');
    expect(() => withCudaOps(broken, 0, 4096, (ops) => (ops.allocHost(4096), 1), { log: () => { throw new Interrupted(); } })).toThrow(Interrupted);
    expect(dbl.calls('cuMemFree_v2') - frees).toBe(1); // the device buffer was still freed after the log's interrupt
    expect(dbl.calls('cuMemFree_v2') - before).toBe(2);
  });

  it('an async f: a fatal release error rejects the promise, after every step ran', async () => {
    const failing: CudaDriver = { ...driver, memFree: (dptr) => { driver.memFree(dptr); throw new OutOfMemory(); } };
    const before = dbl.calls('cuDevicePrimaryCtxRelease_v2');
    await expect(withCudaOps(failing, 0, 4096, async () => 1, { log: () => {} })).rejects.toBeInstanceOf(OutOfMemory);
    await expect(withCudaOps(failing, 0, 4096, async () => { throw new Error('f failed'); }, { log: () => {} })).rejects.toBeInstanceOf(OutOfMemory);
    expect(dbl.calls('cuDevicePrimaryCtxRelease_v2') - before).toBe(2);
  });

  it('releases after an async f settles', async () => {
    const frees = dbl.calls('cuMemFree_v2');
    let seen: DeviceOps | undefined;
    const p = withCudaOps(driver, 0, 4096, async (ops) => {
      seen = ops;
      await new Promise((r) => setTimeout(r, 5));
      expect(dbl.calls('cuMemFree_v2')).toBe(frees);
      const h = ops.allocHost(4096);
      h.bytes.fill(9);
      ops.upload(h);
      return 42;
    });
    await expect(p).resolves.toBe(42);
    expect(dbl.calls('cuMemFree_v2')).toBe(frees + 1);
    expect(() => seen!.upload({ address: 0n, bytes: new Uint8Array(0) })).toThrow(/withCudaOps has returned/);
  });

  it('checks sizes and ownership', () => {
    expect(() => withCudaOps(driver, 0, 0, () => 1)).toThrow(RangeError);
    expect(() => withCudaOps(driver, -1, 4096, () => 1)).toThrow(RangeError);
    const ran = withCudaOps(driver, 0, 4096, (ops) => {
      const big = ops.allocHost(8192);
      expect(() => ops.upload(big)).toThrow(RangeError);
      expect(() => ops.roundTrip(hostSlice(big, 0, 4096), hostSlice(big, 4096, 100))).toThrow(RangeError);
      expect(() => ops.freeHost(hostSlice(big, 0, 4096))).toThrow(/not allocated by these ops/);
      ops.freeHost(big);
      expect(() => ops.freeHost(big)).toThrow(/not allocated by these ops/);
      return 'ran';
    });
    expect(ran).toBe('ran');
  });

  it('a device whose driver lacks READ_ONLY_HOST_REGISTER_SUPPORTED registers with flags 0', () => {
    // The double answers every attribute; simulate an older driver by asking on the real record.
    const older: CudaDriver = {
      ...driver,
      attribute: (ordinal, attrib) => {
        if (attrib === CU_DEVICE_ATTRIBUTE.READ_ONLY_HOST_REGISTER_SUPPORTED) throw new CudaError('cuDeviceGetAttribute', 1, 'CUDA_ERROR_INVALID_VALUE');
        return driver.attribute(ordinal, attrib);
      },
    };
    expect(withCudaOps(older, 0, 4096, (ops) => ops.registerFlags)).toBe(0);
  });
});
