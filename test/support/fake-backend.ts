// The fake backend: a third driver that registers host memory, added by a test through the registry's test
// extension point (registerTestBackend) with its module, this binding and its C double (test/double/fake_double.c)
// alone. Its driver has its own function names and its own codes (not registered: 4040, invalid value: 22), and
// its framework name ('Fake') is none the model lists: whatever it gets right, it gets from what its module says.
import type { Backend } from '../../results/types.js';
import type { Host } from '../../src/ops.js';
import { type DiscoveredDevice, ask } from '../../bindings/backend.js';
import { registeringBackend, registeringDevice } from '../../bindings/backends/registering.js';
import { type DeviceOps, type WithOpsOptions, checkOrdinal } from '../../bindings/device-ops.js';
import { deviceQueries, driverBase, outNumber } from '../../bindings/driver-queries.js';
import {
  type HostCalls,
  type IntLike,
  type Out,
  type Pointer,
  driverErrorClass,
  driverLoader,
  driverCalls,
  hostCalls,
  setDeviceOpsDriver,
  withDriverOps,
} from '../../bindings/driver-kit.js';

/** The fake's id. Not a member of Backend: that list is the product's (the results schema's); a test cannot grow it. */
export const FAKE = 'fake' as Backend;
export const FAKE_LIBRARY_ENV = 'MAPPED_REG_FAKE_LIBRARY';
/** The fake driver's codes (test/double/fake_double.c). */
export const FAKE_NOT_REGISTERED = 4040;
export const FAKE_INVALID_VALUE = 22;
const FAKE_NO_DEVICE = 40;

const PROTOTYPES = {
  fakeDriverVersion: 'int fakeDriverVersion(_Out_ int *version)',
  fakeInit: 'int fakeInit(unsigned int flags)',
  fakeDeviceCount: 'int fakeDeviceCount(_Out_ int *count)',
  fakeDeviceName: 'int fakeDeviceName(char *name, int len, int dev)',
  fakeDevicePciBusId: 'int fakeDevicePciBusId(char *busId, int len, int dev)',
  fakeDeviceTotalMem: 'int fakeDeviceTotalMem(_Out_ size_t *bytes, int dev)',
  fakeDeviceIntegrated: 'int fakeDeviceIntegrated(_Out_ int *value, int dev)',
  fakeSetDevice: 'int fakeSetDevice(int dev)',
  fakeSynchronize: 'int fakeSynchronize(void)',
  fakeDeviceReset: 'int fakeDeviceReset(int dev)',
  fakeMalloc: 'int fakeMalloc(_Out_ void **ptr, size_t size)',
  fakeFree: 'int fakeFree(void *ptr)',
  fakeHostAlloc: 'int fakeHostAlloc(_Out_ void **ptr, size_t size, unsigned int flags)',
  fakeHostFree: 'int fakeHostFree(void *ptr)',
  fakeHostRegister: 'int fakeHostRegister(void *ptr, size_t size, unsigned int flags)',
  fakeHostUnregister: 'int fakeHostUnregister(void *ptr)',
  fakeMemcpyHtoD: 'int fakeMemcpyHtoD(void *dst, void *src, size_t size)',
  fakeMemcpyDtoH: 'int fakeMemcpyDtoH(void *dst, void *src, size_t size)',
  fakeErrorName: 'const char *fakeErrorName(int error)',
} as const;

/** Typed views of the koffi functions (koffi's own type for them is `(...args: any[]) => any`). */
interface FakeFunctions {
  fakeDriverVersion(out: Out<number>): number;
  fakeInit(flags: number): number;
  fakeDeviceCount(out: Out<number>): number;
  fakeDeviceName(name: Buffer, len: number, dev: number): number;
  fakeDevicePciBusId(busId: Buffer, len: number, dev: number): number;
  fakeDeviceTotalMem(out: Out<IntLike>, dev: number): number;
  fakeDeviceIntegrated(out: Out<number>, dev: number): number;
  fakeSetDevice(dev: number): number;
  fakeSynchronize(): number;
  fakeDeviceReset(dev: number): number;
  fakeMalloc(out: Out<Pointer>, bytes: number): number;
  fakeFree(p: bigint): number;
  fakeHostAlloc(out: Out<Pointer>, bytes: number, flags: number): number;
  fakeHostFree(p: bigint): number;
  fakeHostRegister(p: bigint, bytes: number, flags: number): number;
  fakeHostUnregister(p: bigint): number;
  fakeMemcpyHtoD(dst: bigint, src: bigint, bytes: number): number;
  fakeMemcpyDtoH(dst: bigint, src: bigint, bytes: number): number;
  fakeErrorName(error: number): string | null;
}

export interface FakeDriver {
  readonly path: string;
  version(): number;
  /** fakeInit(0) once: the devices, or none and why. */
  devices(): { count: number; reason?: string };
  name(ordinal: number): string;
  pciBusId(ordinal: number): string;
  totalMem(ordinal: number): number;
  integrated(ordinal: number): boolean;
  setDevice(ordinal: number): void;
  synchronize(): void;
  reset(ordinal: number): void;
  malloc(bytes: number): bigint;
  free(buffer: bigint): void;
  readonly host: HostCalls;
  memcpyHtoD(dst: bigint, src: Host): void;
  memcpyDtoH(dst: Host, src: bigint, length?: number): void;
}

const FakeError = driverErrorClass('Fake', 'FakeError');

function makeFakeDriver(path: string, c: FakeFunctions): FakeDriver {
  const texts = { errorName: (code: number) => c.fakeErrorName(code) ?? `UNKNOWN_${code}`, errorString: () => undefined };
  const { checks, devices, ready } = driverBase('Fake', FakeError, texts, { init: ['fakeInit', () => c.fakeInit(0)], count: ['fakeDeviceCount', (out) => c.fakeDeviceCount(out)], noDeviceCode: FAKE_NO_DEVICE, noDeviceFrom: ['fakeInit'] });
  const { check } = checks;
  const dev = (ordinal: number): number => {
    checkOrdinal('Fake', ordinal);
    ready();
    return ordinal;
  };
  // the fake has no attribute call: its one attribute, the integrated query, stands in for it
  const queries = deviceQueries(checks, dev, {
    name: ['fakeDeviceName', c.fakeDeviceName],
    pciBusId: ['fakeDevicePciBusId', c.fakeDevicePciBusId],
    totalMem: ['fakeDeviceTotalMem', c.fakeDeviceTotalMem],
    attribute: ['fakeDeviceIntegrated', (out, _attribute, d) => c.fakeDeviceIntegrated(out, d)],
  });
  const host = hostCalls('Fake', checks, ready, {
    register: ['fakeHostRegister', c.fakeHostRegister],
    unregister: ['fakeHostUnregister', c.fakeHostUnregister],
    alloc: ['fakeHostAlloc', c.fakeHostAlloc],
    free: ['fakeHostFree', c.fakeHostFree],
    htod: ['fakeMemcpyHtoD', c.fakeMemcpyHtoD],
    dtoh: ['fakeMemcpyDtoH', c.fakeMemcpyDtoH],
  });
  return {
    path,
    version: () => outNumber(checks, 'fakeDriverVersion', (out) => c.fakeDriverVersion(out)),
    devices: () => ({ ...devices() }),
    name: queries.name,
    pciBusId: queries.pciBusId,
    totalMem: queries.totalMem,
    integrated: (ordinal) => queries.attribute(ordinal, 0) !== 0,
    setDevice: (ordinal) => check('fakeSetDevice', c.fakeSetDevice(dev(ordinal))),
    synchronize: () => check('fakeSynchronize', c.fakeSynchronize()),
    reset: (ordinal) => check('fakeDeviceReset', c.fakeDeviceReset(dev(ordinal))),
    malloc(bytes) {
      ready();
      const out: Out<Pointer> = [null];
      check('fakeMalloc', c.fakeMalloc(out, bytes));
      if (out[0] === null) throw new Error('Fake: fakeMalloc succeeded but gave a NULL pointer');
      return out[0];
    },
    free: (buffer) => check('fakeFree', c.fakeFree(buffer)),
    host,
    memcpyHtoD: (dst, src) => host.memcpyHtoD(dst, src),
    memcpyDtoH: (dst, src, length) => host.memcpyDtoH(dst, src, length),
  };
}

/** The fake driver from $MAPPED_REG_FAKE_LIBRARY (there is no default library: the double is the only fake driver). */
export const loadFake = driverLoader<FakeFunctions, FakeDriver>({ api: 'Fake', env: FAKE_LIBRARY_ENV, defaults: ['libfake_double.so'], prototypes: PROTOTYPES }, makeFakeDriver);

/** The fake's with…Ops: the device made current before every call, a device buffer, nothing else held. */
export function withFakeOps<T>(driver: FakeDriver, ordinal: number, bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T {
  const calls = driverCalls(driver.host, driver.host, () => driver.synchronize());
  return withDriverOps(setDeviceOpsDriver('Fake', 'withFakeOps', 'fake device', driver, 0, calls), ordinal, bytes, f, options);
}

function fakeDevice(driver: FakeDriver, i: number): DiscoveredDevice {
  const integrated = ask(() => driver.integrated(i));
  return registeringDevice(fakeBackend, {
    ordinal: i,
    name: driver.name(i),
    pciBusId: driver.pciBusId(i),
    totalMemBytes: driver.totalMem(i),
    integrated,
    version: String(driver.version()),
    library: driver.path,
    kit: {
      contextReset: { call: 'fakeDeviceReset', reset: () => driver.reset(i) },
      attributeCall: () => ({ call: 'fakeDeviceIntegrated', query: () => Number(driver.integrated(i)) }),
    },
    withOps: (bytes, f, options) => withFakeOps(driver, i, bytes, f, options),
    keepContext: () => {},
  });
}

export const fakeBackend = registeringBackend({
  id: FAKE, framework: 'Fake', libraryEnv: FAKE_LIBRARY_ENV,
  codes: { notRegistered: [FAKE_NOT_REGISTERED, 'FAKE_ERROR_NOT_REGISTERED'], invalidValue: [FAKE_INVALID_VALUE, 'FAKE_ERROR_INVALID_VALUE'] },
  failedQuery: 'unknown',
  load: loadFake,
  list: (driver) => {
    const { count, reason } = driver.devices();
    return { devices: Array.from({ length: count }, (_, i) => fakeDevice(driver, i)), ...(reason ? { note: `Fake: ${reason}` } : {}) };
  },
});
