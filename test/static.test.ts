import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type Device,
  type RegistrationPolicy,
  type Ops,
  type Verdict,
  Interrupted,
  LISTED_FRAMEWORKS,
  RegistrationTable,
  RegistrationUnreachable,
  VULKAN_OPT_IN_ENV,
  cacheable,
  frameworkFamily,
  probe,
  probeReport,
  staticVerdict,
  withDeviceOps,
  windowSize,
} from '../src/index.js';
import { backendModule } from '../bindings/registry.js';
import { MemoryOps, memHost, randomBytes } from './support/memory-ops.js';

/** The spec's unit, written out here so that a change of it in src/ is caught, not followed. */
const UNIT = 64 * 1024;

/** The policy the backend module of `framework`'s family gives its devices (CUDA's, HIP's); none for the others. */
function registrationOf(framework: string): RegistrationPolicy | undefined {
  const m = backendModule(frameworkFamily(framework) ?? '');
  return m?.registers ? m.driver.policy : undefined;
}

const CUDA_POLICY = registrationOf('CUDA');

/** A device whose query and ops are spies; ops are an in-memory double, with its backend's registration policy. */
function device(framework: string, type: Device['type'], query?: () => boolean | undefined) {
  const sharedMemoryQuery = query ? vi.fn(query) : undefined;
  const made: MemoryOps[] = [];
  const withOps = vi.fn(<T,>(bytes: number, f: (ops: Ops) => T): T => {
    const ops = new MemoryOps(bytes);
    made.push(ops);
    return f(ops);
  });
  const registration = registrationOf(framework);
  const d: Device = { id: `${framework.toLowerCase()}:0`, framework, name: `${framework} test device`, type, withOps: withOps as Device['withOps'] & typeof withOps, ...(sharedMemoryQuery ? { sharedMemoryQuery } : {}), ...(registration ? { registration } : {}) };
  return { d, sharedMemoryQuery, withOps, made };
}

const decided = (d: Device): Verdict => {
  const s = staticVerdict(d);
  if (s.kind !== 'Decided') throw new Error(`expected Decided, got ${s.kind}`);
  return s.verdict;
};

/** A map whose bytes throw when read: proves a decided device never reads it. */
const untouchable = { address: 0n, get bytes(): Uint8Array { throw new Error('map was read'); } };
const untouchableRef = new Proxy(new Uint8Array(0), { get() { throw new Error('reference was read'); } });

afterEach(() => {
  delete process.env[VULKAN_OPT_IN_ENV];
});

describe('frameworkFamily: the listed names and the one variant rule', () => {
  it('lists cuda, hip, opencl, vulkan, metal, native and cpu', () => {
    expect([...LISTED_FRAMEWORKS]).toEqual(['cuda', 'hip', 'opencl', 'vulkan', 'metal', 'native', 'cpu']);
  });
  it.each([
    ['CUDA', 'cuda'],
    [' cuda ', 'cuda'],
    ['CUDA-12.4', 'cuda'],
    ['cuda12', 'cuda'],
    ['HIP_ROCm7', 'hip'],
    ['OpenCL 3.0', 'opencl'],
    ['Vulkan1.3', 'vulkan'],
    ['vulkan-lavapipe', 'vulkan'],
    ['Metal.2', 'metal'],
    ['cudax', undefined],
    ['hipster', undefined],
    ['ROCm', undefined],
    ['OpenGL', undefined],
    ['', undefined],
  ])('%j -> %s', (name, family) => {
    expect(frameworkFamily(name)).toBe(family);
  });
});

describe('staticVerdict', () => {
  it('Vulkan is refused with Kernel_hazard before any query, whatever the opt-in says', () => {
    process.env[VULKAN_OPT_IN_ENV] = '1';
    for (const [fw, type] of [['Vulkan', 'gpu'], ['Vulkan-1.3', 'gpu'], ['vulkan', 'cpu']] as const) {
      const { d, sharedMemoryQuery } = device(fw, type, () => false);
      const v = decided(d);
      expect(v.kind === 'Refused' && v.refusal.kind).toBe('Kernel_hazard');
      expect(v.kind === 'Refused' && v.refusal.kind === 'Kernel_hazard' && v.refusal.reason).toMatch(/MAPPED_REG_VULKAN_HOST_REGISTER=1 is ignored/);
      expect(sharedMemoryQuery).not.toHaveBeenCalled();
      expect(cacheable(v)).toBe(false);
    }
  });

  it('without the opt-in the Kernel_hazard reason does not mention it', () => {
    const v = decided(device('Vulkan', 'gpu').d);
    expect(v.kind === 'Refused' && v.refusal.kind === 'Kernel_hazard' && v.refusal.reason).not.toMatch(/ignored/);
  });

  it('a CPU device, a Native or CPU backend, and Metal are Not_needed, with no query', () => {
    for (const [fw, type] of [['OpenCL', 'cpu'], ['Native', 'cpu'], ['cpu', 'cpu'], ['Metal', 'gpu'], ['CUDA', 'cpu']] as const) {
      const { d, sharedMemoryQuery } = device(fw, type, () => false);
      expect(decided(d).kind).toBe('Not_needed');
      expect(sharedMemoryQuery).not.toHaveBeenCalled();
    }
  });

  it('CUDA and HIP ask the integrated query once: integrated is Refused Integrated_gpu', () => {
    for (const fw of ['CUDA', 'HIP', 'cuda-13']) {
      const { d, sharedMemoryQuery } = device(fw, 'gpu', () => true);
      expect(decided(d)).toEqual({ kind: 'Refused', refusal: { kind: 'Integrated_gpu' } });
      expect(sharedMemoryQuery).toHaveBeenCalledTimes(1);
    }
  });

  it('CUDA and HIP discrete: Self_test_required, after one query', () => {
    for (const fw of ['CUDA', 'HIP']) {
      const { d, sharedMemoryQuery } = device(fw, 'gpu', () => false);
      expect(staticVerdict(d)).toEqual({ kind: 'Self_test_required' });
      expect(sharedMemoryQuery).toHaveBeenCalledTimes(1);
    }
  });

  it('a HIP device whose query failed is Refused Integrated_gpu (HIP counts a failed query as integrated), not cacheable', () => {
    const v = decided(device('HIP', 'gpu', () => { throw new Error('hipErrorInvalidValue'); }).d);
    expect(v).toEqual({ kind: 'Refused', refusal: { kind: 'Integrated_gpu' } });
    expect(cacheable(v)).toBe(false);
  });

  it('a CUDA device whose query failed is Refused Device_kind_unknown', () => {
    expect(decided(device('CUDA', 'gpu', () => { throw new Error('801'); }).d)).toEqual({ kind: 'Refused', refusal: { kind: 'Device_kind_unknown' } });
  });

  it('a backend that registers host memory but did not say is Refused Device_kind_unknown', () => {
    expect(decided(device('CUDA', 'gpu').d)).toEqual({ kind: 'Refused', refusal: { kind: 'Device_kind_unknown' } });
    expect(decided(device('HIP', 'gpu', () => undefined).d)).toEqual({ kind: 'Refused', refusal: { kind: 'Device_kind_unknown' } });
  });

  it('a fatal error from the query is rethrown', () => {
    expect(() => staticVerdict(device('CUDA', 'gpu', () => { throw new Interrupted(); }).d)).toThrow(Interrupted);
  });

  it('GPU OpenCL is Refused Not_measured', () => {
    for (const type of ['gpu', 'accelerator', 'other'] as const) {
      const v = decided(device('OpenCL', type).d);
      expect(v.kind === 'Refused' && v.refusal.kind).toBe('Not_measured');
    }
  });

  it('a framework neither listed nor a family variant is Refused Not_measured, even for a CPU device, with no query', () => {
    for (const fw of ['ROCm', 'cudax', 'SYCL']) {
      const { d, sharedMemoryQuery } = device(fw, 'cpu', () => false);
      const v = decided(d);
      expect(v.kind === 'Refused' && v.refusal.kind === 'Not_measured' && v.refusal.reason).toMatch(/neither listed nor a family variant/);
      expect(sharedMemoryQuery).not.toHaveBeenCalled();
    }
  });
});

describe('staticVerdict: the registration policy is data', () => {
  it('the registration policy, not the framework name, makes the model ask: an unlisted name with a policy asks, CUDA without one does not', () => {
    const asked = device('Level0', 'gpu', () => false);
    expect(staticVerdict({ ...asked.d, registration: { failedQuery: 'integrated' } })).toEqual({ kind: 'Self_test_required' });
    const failed = device('Level0', 'gpu', () => { throw new Error('query failed'); });
    expect(decided({ ...failed.d, registration: { failedQuery: 'integrated' } })).toEqual({ kind: 'Refused', refusal: { kind: 'Integrated_gpu' } });
    expect(decided({ ...failed.d, registration: { failedQuery: 'unknown' } })).toEqual({ kind: 'Refused', refusal: { kind: 'Device_kind_unknown' } });
    const { registration: _none, ...bare } = device('CUDA', 'gpu', () => false).d;
    expect(decided(bare).kind === 'Refused' && decided(bare)).toMatchObject({ refusal: { kind: 'Not_measured' } });
  });
});

/** A mapping of random bytes, and its reference. */
const region = () => {
  const map = memHost(randomBytes(4 * UNIT));
  return { map, reference: map.bytes.slice() };
};

describe('probe on a device', () => {

  it('decided and refused devices reach no op at all and never read map or reference', () => {
    const cases = [device('Vulkan', 'gpu', () => false), device('OpenCL', 'cpu'), device('CUDA', 'gpu', () => true), device('HIP', 'gpu', () => { throw new Error('x'); }), device('OpenCL', 'gpu'), device('SYCL', 'gpu')];
    for (const { d, withOps, made } of cases) {
      const v = probe(d, untouchable, untouchableRef);
      expect(v.kind).not.toBe('Usable');
      expect(withOps).not.toHaveBeenCalled();
      expect(made).toHaveLength(0);
    }
  });

  it('a discrete device runs the self-test on its ops, asking the query once, with a device buffer of one window', () => {
    const { d, sharedMemoryQuery, withOps, made } = device('CUDA', 'gpu', () => false);
    const { map, reference } = region();
    const table = new RegistrationTable();
    const r = probeReport(d, map, reference, { table, now: () => 0 });
    // the real clock was replaced by a stopped one: the self-test ran, its timing is Inconclusive
    expect(r.verdict.kind).toBe('Inconclusive');
    expect(r.windows.map((w) => w.equal)).toEqual([true, true]);
    expect(sharedMemoryQuery).toHaveBeenCalledTimes(1);
    expect(withOps).toHaveBeenCalledTimes(1);
    expect(withOps.mock.calls[0]![0]).toBe(windowSize(4 * UNIT));
    expect(made[0]!.calls.register).toBe(2);
    expect(table.size).toBe(0);
  });

  it('a discrete device with a working clock: Usable', () => {
    const { d, made } = device('HIP', 'gpu', () => false);
    const { map, reference } = region();
    // a clock driven by the double, created inside withOps: the probe reads it through this indirection
    let clock = (): number => 0;
    const v = probe({ ...d, withOps: <T>(bytes: number, f: (ops: MemoryOps) => T): T => {
      const ops = new MemoryOps(bytes);
      made.push(ops);
      clock = ops.now;
      return f(ops);
    } } as Device, map, reference, { table: new RegistrationTable(), now: () => clock() });
    expect(v.kind).toBe('Usable');
  });

  it('invalid inputs on a discrete device: Inconclusive before the ops are opened', () => {
    const { d, withOps } = device('CUDA', 'gpu', () => false);
    const map = memHost(randomBytes(UNIT));
    expect(probe(d, map, map.bytes.slice()).kind).toBe('Inconclusive');
    expect(withOps).not.toHaveBeenCalled();
  });

  it('ops that cannot be opened (no device memory) give Inconclusive; a device with no ops too', () => {
    const { map, reference } = region();
    const broken: Device = { id: 'cuda:0', framework: 'CUDA', name: 'x', type: 'gpu', registration: CUDA_POLICY, sharedMemoryQuery: () => false, withOps: () => { throw new Error('CUDA_ERROR_OUT_OF_MEMORY'); } };
    const v = probe(broken, map, reference);
    expect(v.kind === 'Inconclusive' && v.reason).toMatch(/OUT_OF_MEMORY/);
    const none: Device = { id: 'cuda:0', framework: 'CUDA', name: 'x', type: 'gpu', registration: CUDA_POLICY, sharedMemoryQuery: () => false };
    expect(probe(none, map, reference).kind).toBe('Inconclusive');
  });

  it('a fatal error while opening the ops is rethrown', () => {
    const { map, reference } = region();
    const d: Device = { id: 'cuda:0', framework: 'CUDA', name: 'x', type: 'gpu', registration: CUDA_POLICY, sharedMemoryQuery: () => false, withOps: () => { throw new Interrupted(); } };
    expect(() => probe(d, map, reference)).toThrow(Interrupted);
  });

});

describe('withDeviceOps on a device', () => {
  it('withDeviceOps refuses (throws) a device whose static verdict is Refused, before any op exists', () => {
    for (const { d, withOps } of [device('Vulkan', 'gpu', () => false), device('CUDA', 'gpu', () => true), device('OpenCL', 'gpu')]) {
      const f = vi.fn();
      expect(() => withDeviceOps(d, 1024, f)).toThrow(RegistrationUnreachable);
      expect(f).not.toHaveBeenCalled();
      expect(withOps).not.toHaveBeenCalled();
    }
  });

  it('withDeviceOps on a discrete device gives ops whose registrations are recorded in the table', () => {
    const { d } = device('CUDA', 'gpu', () => false);
    const table = new RegistrationTable();
    const host = memHost(new Uint8Array(8192));
    const count = withDeviceOps(d, 4096, (ops) => {
      ops.register(host);
      const n = table.size;
      ops.unregister(host);
      return n;
    }, table);
    expect(count).toBe(1);
    expect(table.size).toBe(0);
  });

  it('withDeviceOps on a device not refused runs f on its ops; on a device with no ops it throws (not RegistrationUnreachable)', () => {
    // Not_needed is decided statically but not Refused: withDeviceOps is not refused, f runs on the device's ops
    const { d, withOps } = device('OpenCL', 'cpu');
    expect(withDeviceOps(d, 1, () => 42)).toBe(42);
    expect(withOps).toHaveBeenCalledTimes(1);
    const bare: Device = { id: 'cpu', framework: 'Native', name: 'cpu', type: 'cpu' };
    let thrown: unknown;
    try {
      withDeviceOps(bare, 1, () => 0);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).not.toBeInstanceOf(RegistrationUnreachable);
    expect((thrown as Error).message).toBe('cpu: the Native backend has no registration ops');
  });
});
