// The fake backend: a third driver that registers host memory, added by a test through the registry's test
// extension point (registerTestBackend) with its module, this binding and its C double (test/double/fake_double.c)
// alone. Its driver has its own function names and its own codes (not registered: 4040, invalid value: 22), and
// its framework name ('Fake') is none the model lists: whatever it gets right, it gets from what its module says.
import type { Backend } from '../../results/types.js';
import { type DiscoveredDevice, ask } from '../../bindings/backend.js';
import { type DeviceIdentity, identityFacts, registeringBackend, registeringDevice } from '../../bindings/backends/registering.js';
import { type DeviceOps, type WithOpsOptions, checkOrdinal } from '../../bindings/device-ops.js';
import { type CountFunctions, type QueryFunctions, deviceQueries, driverBase, outNumber } from '../../bindings/driver-queries.js';
import {
  type Call,
  type HostCalls,
  type HostFunctions,
  type Out,
  type Pointer,
  type RolePrototypes,
  type SetDeviceDriver,
  byCName,
  driverErrorClass,
  driverLoader,
  driverCalls,
  hostCalls,
  roleCalls,
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

/** The fake's calls the kit has no role for, typed as the C functions take them. */
interface FakeCalls {
  version: Call<(out: Out<number>) => number>;
  init: Call<(flags: number) => number>;
  count: CountFunctions['count'];
  integrated: Call<(out: Out<number>, dev: number) => number>;
  setDevice: Call<(dev: number) => number>;
  synchronize: Call<() => number>;
  reset: Call<(dev: number) => number>;
  malloc: Call<(out: Out<Pointer>, bytes: number) => number>;
  free: Call<(p: bigint) => number>;
  errorName: Call<(error: number) => string | null>;
}

/** The device queries the kit asks alike (the fake has no attribute call: integrated is one of its own). */
type FakeQueries = Omit<QueryFunctions, 'attribute'>;

// Each of the fake's C functions once, by its prototype, under the role the fake or the kit gives it.
const CALLS: RolePrototypes<FakeCalls> = {
  version: 'int fakeDriverVersion(_Out_ int *version)',
  init: 'int fakeInit(unsigned int flags)',
  count: 'int fakeDeviceCount(_Out_ int *count)',
  integrated: 'int fakeDeviceIntegrated(_Out_ int *value, int dev)',
  setDevice: 'int fakeSetDevice(int dev)',
  synchronize: 'int fakeSynchronize(void)',
  reset: 'int fakeDeviceReset(int dev)',
  malloc: 'int fakeMalloc(_Out_ void **ptr, size_t size)',
  free: 'int fakeFree(void *ptr)',
  errorName: 'const char *fakeErrorName(int error)',
};
const QUERIES: RolePrototypes<FakeQueries> = {
  name: 'int fakeDeviceName(char *name, int len, int dev)',
  pciBusId: 'int fakeDevicePciBusId(char *busId, int len, int dev)',
  totalMem: 'int fakeDeviceTotalMem(_Out_ size_t *bytes, int dev)',
};
const HOST: RolePrototypes<HostFunctions> = {
  register: 'int fakeHostRegister(void *ptr, size_t size, unsigned int flags)',
  unregister: 'int fakeHostUnregister(void *ptr)',
  alloc: 'int fakeHostAlloc(_Out_ void **ptr, size_t size, unsigned int flags)',
  free: 'int fakeHostFree(void *ptr)',
  htod: 'int fakeMemcpyHtoD(void *dst, void *src, size_t size)',
  dtoh: 'int fakeMemcpyDtoH(void *dst, void *src, size_t size)',
};

export interface FakeDriver extends SetDeviceDriver, DeviceIdentity {
  version(): number;
  /** fakeInit(0) once: the devices, or none and why. */
  devices(): { count: number; reason?: string };
  integrated(ordinal: number): boolean;
  synchronize(): void;
  reset(ordinal: number): void;
  readonly host: HostCalls;
}

const FakeError = driverErrorClass('Fake', 'FakeError');

function makeFakeDriver(path: string, declared: Readonly<Record<string, unknown>>): FakeDriver {
  const c = roleCalls<FakeCalls>(CALLS, declared);
  const [, errorName] = c.errorName;
  const [initCall, init] = c.init;
  const texts = { errorName: (code: number) => errorName(code) ?? `UNKNOWN_${code}`, errorString: () => undefined };
  const { checks, devices, ready } = driverBase('Fake', FakeError, texts, { init: [initCall, () => init(0)], count: c.count, noDeviceCode: FAKE_NO_DEVICE, noDeviceFrom: [initCall] });
  /** Makes the call and checks its result code. */
  const run = <A extends unknown[]>([call, fn]: Call<(...args: A) => number>, ...args: A): void => checks.check(call, fn(...args));
  const dev = (ordinal: number): number => {
    checkOrdinal('Fake', ordinal);
    ready();
    return ordinal;
  };
  const [integratedCall, integrated] = c.integrated;
  const queries = deviceQueries(checks, dev, { ...roleCalls<FakeQueries>(QUERIES, declared), attribute: [integratedCall, (out, _attribute, d) => integrated(out, d)] });
  return {
    path,
    version: () => outNumber(checks, ...c.version),
    devices: () => ({ ...devices() }),
    name: queries.name,
    pciBusId: queries.pciBusId,
    totalMem: queries.totalMem,
    integrated: (ordinal) => queries.attribute(ordinal, 0) !== 0,
    setDevice: (ordinal) => run(c.setDevice, dev(ordinal)),
    synchronize: () => run(c.synchronize),
    reset: (ordinal) => run(c.reset, dev(ordinal)),
    malloc(bytes) {
      ready();
      const out: Out<Pointer> = [null];
      run(c.malloc, out, bytes);
      if (out[0] === null) throw new Error(`Fake: ${c.malloc[0]} succeeded but gave a NULL pointer`);
      return out[0];
    },
    free: (buffer) => run(c.free, buffer),
    host: hostCalls('Fake', checks, ready, roleCalls<HostFunctions>(HOST, declared)),
  };
}

/** The fake driver from $MAPPED_REG_FAKE_LIBRARY (there is no default library: the double is the only fake driver). */
export const loadFake = driverLoader({ api: 'Fake', env: FAKE_LIBRARY_ENV, defaults: ['libfake_double.so'], prototypes: byCName(CALLS, QUERIES, HOST) }, makeFakeDriver);

/** The fake's with…Ops: the device made current before every call, a device buffer, nothing else held. */
export function withFakeOps<T>(driver: FakeDriver, ordinal: number, bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T {
  const calls = driverCalls(driver.host, driver.host, () => driver.synchronize());
  return withDriverOps(setDeviceOpsDriver('Fake', 'withFakeOps', 'fake device', driver, 0, calls), ordinal, bytes, f, options);
}

function fakeDevice(driver: FakeDriver, i: number): DiscoveredDevice {
  const integrated = ask(() => driver.integrated(i));
  return registeringDevice(fakeBackend, {
    ...identityFacts(driver, i),
    integrated,
    version: String(driver.version()),
    kit: {
      contextReset: { call: 'fakeDeviceReset', reset: () => driver.reset(i) },
      attributeCall: () => ({ call: 'fakeDeviceIntegrated', query: () => Number(driver.integrated(i)) }),
    },
    withOps: (bytes, f, options) => withFakeOps(driver, i, bytes, f, options),
    keepContext: () => {},
  });
}

export const fakeBackend = registeringBackend({
  id: FAKE, framework: 'Fake', libraryEnv: FAKE_LIBRARY_ENV, libraries: ['libfake_double.so'],
  codes: { notRegistered: [FAKE_NOT_REGISTERED, 'FAKE_ERROR_NOT_REGISTERED'], invalidValue: [FAKE_INVALID_VALUE, 'FAKE_ERROR_INVALID_VALUE'] },
  failedQuery: 'unknown',
  load: loadFake,
  list: (driver) => {
    const { count, reason } = driver.devices();
    return { devices: Array.from({ length: count }, (_, i) => fakeDevice(driver, i)), ...(reason ? { note: `Fake: ${reason}` } : {}) };
  },
});
