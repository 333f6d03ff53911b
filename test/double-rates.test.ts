// The double's paced copies and device order (MAPPED_REG_DOUBLE_RATES, MAPPED_REG_DOUBLE_RATES_<N>,
// MAPPED_REG_DOUBLE_ORDER; test/double/README.md), through the project's real bindings: discovery, withOps, the
// driver's copies. A paced copy is never shorter than bytes / G (asserted exactly); how close to it it ends is
// asserted only against a wide bound (twice the deadline, or the next device's 25% longer one, best of 5).
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCuda } from '../bindings/cuda.js';
import type { DeviceOps } from '../bindings/device-ops.js';
import type { DiscoveredDevice } from '../bindings/discovery.js';
import { MAP, PROT, type Mapping, mmap, munmap } from '../bindings/libc.js';
import { buildDoubles } from './double/build.js';
import { ROOT, cleanEnv } from './support/command.js';
import { type DoubleConfig, type Loaded, doubleEnv, loadDouble } from './support/drivers.js';

const MiB = 1024 * 1024;
const mappings: Mapping[] = [];
afterAll(() => {
  for (const m of mappings) munmap(m);
});

/** Anonymous read-write memory of `n` bytes, filled: pageable host memory. */
function pageable(n: number): Mapping {
  const m = mmap(n, PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
  mappings.push(m);
  m.bytes.fill(0x5a);
  return m;
}

/** The devices of a fresh double configured as asked. */
function devices(backend: 'cuda' | 'hip', config: DoubleConfig): DiscoveredDevice[] {
  return loaded(backend, config).devices;
}

/** A fresh double configured as asked: its devices, and its count of paced copies and its rates (test-only exports). */
function loaded(backend: 'cuda' | 'hip', config: DoubleConfig): { devices: DiscoveredDevice[]; double: Loaded } {
  const double = loadDouble(backend, { ...(backend === 'hip' ? { profile: 'rocm-fixed' } : {}), ...config });
  return { devices: double.discovery.devices.filter((d) => d.backend === backend), double };
}

/** How many copies of each kind `f` had paced on API ordinal `device`. */
function pacedBy(double: Loaded, device: number, f: () => void): Record<Kind, number> {
  const kinds: Kind[] = ['registered', 'pinned', 'pageable'];
  const before = kinds.map((k) => double.paced(device, k));
  f();
  return Object.fromEntries(kinds.map((k, i) => [k, double.paced(device, k) - before[i]!])) as Record<Kind, number>;
}

type Kind = 'registered' | 'pinned' | 'pageable';

/** Milliseconds of each of `runs` uploads of `bytes` bytes from a source of `kind`, on `d`, through its ops. */
function uploads(d: DiscoveredDevice, kind: Kind, bytes: number, runs = 5): number[] {
  return d.native!.withOps(bytes, (ops: DeviceOps) => {
    const source = kind === 'pinned' ? ops.allocHost(bytes) : pageable(bytes);
    if (kind === 'registered') ops.register(source);
    try {
      const ms: number[] = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        ops.upload(source);
        ms.push(performance.now() - t0);
      }
      return ms;
    } finally {
      if (kind === 'registered') ops.unregister(source);
      if (kind === 'pinned') ops.freeHost(source);
    }
  });
}

/** bytes / G, in ms. */
const deadlineMs = (bytes: number, gbps: number): number => (bytes / (gbps * 1e9)) * 1000;

for (const backend of ['cuda', 'hip'] as const) {
  describe(`${backend} double: MAPPED_REG_DOUBLE_RATES`, () => {
    const bytes = 2 * MiB;

    // Only lower bounds on time here: a busy machine makes a copy slower, never faster than its deadline. That a
    // kind is paced at all is told by the double's count of paced copies; how close to its rate a paced copy ends
    // is a figure of the bench's, not a test's.
    it('each kind of source is paced at its own rate: never faster than bytes / G', () => {
      const rates = { registered: 0.1, pinned: 0.05, pageable: 0.025 };
      const { devices: [d], double } = loaded(backend, { rates: `registered=${rates.registered}, pinned=${rates.pinned},pageable=${rates.pageable}` });
      for (const kind of ['registered', 'pinned', 'pageable'] as const) {
        expect(double.rate(0, kind), kind).toBe(rates[kind]);
        let ms: number[] = [];
        const paced = pacedBy(double, 0, () => (ms = uploads(d!, kind, bytes)));
        expect(paced, kind).toEqual({ registered: 0, pinned: 0, pageable: 0, [kind]: 5 });
        // measured around the call, so never shorter than the double's deadline from the call's entry
        expect(ms, kind).toHaveLength(5);
        expect(Math.min(...ms), kind).toBeGreaterThanOrEqual(deadlineMs(bytes, rates[kind]));
      }
    });

    it('a kind left out is not paced; without the variable nothing is', () => {
      const { devices: [d], double } = loaded(backend, { rates: 'pinned=0.02' });
      expect([double.rate(0, 'registered'), double.rate(0, 'pinned'), double.rate(0, 'pageable')]).toEqual([0, 0.02, 0]);
      let pinned: number[] = [];
      expect(pacedBy(double, 0, () => (pinned = uploads(d!, 'pinned', bytes, 3)))).toEqual({ registered: 0, pinned: 3, pageable: 0 });
      expect(Math.min(...pinned)).toBeGreaterThanOrEqual(deadlineMs(bytes, 0.02));
      expect(pacedBy(double, 0, () => uploads(d!, 'registered', bytes, 3))).toEqual({ registered: 0, pinned: 0, pageable: 0 });
      expect(pacedBy(double, 0, () => uploads(d!, 'pageable', bytes, 3))).toEqual({ registered: 0, pinned: 0, pageable: 0 });
      const { devices: [plain], double: plainDouble } = loaded(backend, {});
      expect(plainDouble.rate(0, 'pinned')).toBe(0);
      expect(pacedBy(plainDouble, 0, () => uploads(plain!, 'pinned', bytes, 3))).toEqual({ registered: 0, pinned: 0, pageable: 0 });
    });

    it('MAPPED_REG_DOUBLE_RATES_<N> overrides the kinds it names for physical device N: device 1 25% slower', () => {
      const { devices: found, double } = loaded(backend, { devices: 2, rates: 'registered=0.1,pinned=0.1', ratesOf: { 1: 'registered=0.08' } });
      expect(found.map((d) => d.pciBusId)).toEqual(['0000:00:00.0', '0000:00:01.0']);
      // the kind RATES_1 leaves out keeps MAPPED_REG_DOUBLE_RATES's rate
      expect([0, 1].map((i) => [double.rate(i, 'registered'), double.rate(i, 'pinned'), double.rate(i, 'pageable')])).toEqual([
        [0.1, 0.1, 0],
        [0.08, 0.1, 0],
      ]);
      const big = 4 * MiB;
      let d1: number[] = [];
      expect(pacedBy(double, 1, () => (d1 = uploads(found[1]!, 'registered', big, 3)))).toEqual({ registered: 3, pinned: 0, pageable: 0 });
      expect(Math.min(...d1)).toBeGreaterThanOrEqual(deadlineMs(big, 0.08));
      let d0: number[] = [];
      expect(pacedBy(double, 0, () => (d0 = uploads(found[0]!, 'registered', big, 3)))).toEqual({ registered: 3, pinned: 0, pageable: 0 });
      expect(Math.min(...d0)).toBeGreaterThanOrEqual(deadlineMs(big, 0.1));
    });

    it('a malformed rate makes init fail with INVALID_VALUE: no device', () => {
      const bad: DoubleConfig[] = [
        { rates: 'registered' },
        { rates: 'registered=' },
        { rates: 'registered=0' },
        { rates: 'registered=-1' },
        { rates: 'registered=1e3' },
        { rates: 'registered=0x10' },
        { rates: 'registered=inf' },
        { rates: 'registered=1.2.3' },
        { rates: 'fast=1' },
        { rates: 'pinned=1,staged=2' },
        { ratesOf: { 3: 'pinned=abc' } },
        { ratesOf: { 15: 'pageable=' } },
      ];
      for (const config of bad) {
        const loaded = loadDouble(backend, { ...(backend === 'hip' ? { profile: 'rocm-fixed' } : {}), ...config });
        expect(loaded.discovery.devices.filter((d) => d.backend === backend), JSON.stringify(config)).toEqual([]);
        const note = loaded.discovery.backends.find((b) => b.backend === backend)?.note ?? '';
        expect(note, JSON.stringify(config)).toMatch(backend === 'cuda' ? /cuInit failed: 1 CUDA_ERROR_INVALID_VALUE/ : /1 hipErrorInvalidValue/);
      }
    });
  });

  describe(`${backend} double: MAPPED_REG_DOUBLE_NOISE`, () => {
    // only lower bounds and counts again: a paced copy with noise ends at its noisy deadline, never before
    it('seeded noise moves each paced copy: the same seed, the same deadlines; no noise, every copy on its deadline or after', () => {
      // copies of 84 ms: a loaded machine's late wake-up is far less than the noise's 20% and more
      const bytes = 8 * MiB;
      const exact = deadlineMs(bytes, 0.1);
      const quiet = uploads(loaded(backend, { rates: 'registered=0.1' }).devices[0]!, 'registered', bytes, 9);
      expect(Math.min(...quiet)).toBeGreaterThanOrEqual(exact);
      // a spread of 30% and a drift of 30%: some copies end before the noiseless deadline (a factor under 1)
      const noisy = uploads(loaded(backend, { rates: 'registered=0.1', noise: 'sd=30%,drift=30%,seed=11' }).devices[0]!, 'registered', bytes, 9);
      expect(Math.min(...noisy)).toBeLessThan(exact);
    });
  });

  describe(`${backend} double: MAPPED_REG_DOUBLE_ORDER`, () => {
    it('API ordinal i is physical device ORDER[i]: its bus id, its device id, its rates', () => {
      const { devices: found, double } = loaded(backend, { devices: 3, order: '2,0', ratesOf: { 2: 'pinned=0.02' } });
      expect(found.map((d) => [d.id, d.pciBusId])).toEqual([
        [`${backend}:0`, '0000:00:02.0'],
        [`${backend}:1`, '0000:00:00.0'],
      ]);
      expect(new Set(found.map((d) => d.name))).toEqual(new Set([backend === 'cuda' ? 'Double CUDA Device' : 'Double HIP Device']));
      if (backend === 'cuda') {
        const driver = loadCuda(double.path); // the driver discovery loaded (one per path)
        expect([driver.attribute(0, 34), driver.attribute(1, 34)]).toEqual([2, 0]); // PCI_DEVICE_ID
      }
      // its rates: physical device 2's pinned copies are paced, physical device 0's are not
      expect([double.rate(0, 'pinned'), double.rate(1, 'pinned')]).toEqual([0.02, 0]);
      const bytes = 2 * MiB;
      let ms: number[] = [];
      expect(pacedBy(double, 0, () => (ms = uploads(found[0]!, 'pinned', bytes, 3)))).toEqual({ registered: 0, pinned: 3, pageable: 0 });
      expect(Math.min(...ms)).toBeGreaterThanOrEqual(deadlineMs(bytes, 0.02));
      expect(pacedBy(double, 1, () => uploads(found[1]!, 'pinned', bytes, 3))).toEqual({ registered: 0, pinned: 0, pageable: 0 });
    });

    it('a subset is allowed: the count is the order\'s length', () => {
      const found = devices(backend, { devices: 4, order: ' 3 ' });
      expect(found.map((d) => [d.id, d.pciBusId])).toEqual([[`${backend}:0`, '0000:00:03.0']]);
    });

    it('an index repeated, out of range or not a number makes init fail: no device', () => {
      for (const order of ['0,0', '2', '-1', 'a', ',', '0;1', '16', '1 0']) {
        const loaded = loadDouble(backend, { ...(backend === 'hip' ? { profile: 'rocm-fixed' } : {}), devices: 2, order });
        expect(loaded.discovery.devices.filter((d) => d.backend === backend), order).toEqual([]);
        expect(loaded.discovery.backends.find((b) => b.backend === backend)?.note ?? '', order).toMatch(/INVALID_VALUE|InvalidValue/);
      }
    });
  });
}

describe('bad configuration is told on stderr, one line', () => {
  /** cuInit / hipInit in a child process with the double's variables `config`: its result and its stderr. */
  function initIn(backend: 'cuda' | 'hip', config: DoubleConfig): { result: string; stderr: string } {
    const built = buildDoubles();
    const [lib, call] = backend === 'cuda' ? [built.cuda, 'cuInit'] : [built.hip, 'hipInit'];
    const script = `import koffi from 'koffi'; const f = koffi.load(${JSON.stringify(lib)}).func('int ${call}(unsigned int flags)'); process.stdout.write(String(f(0)));`;
    const env = cleanEnv(Object.fromEntries(Object.entries(doubleEnv(config)).filter(([, v]) => v !== undefined)));
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env, encoding: 'utf8' });
    return { result: r.stdout, stderr: r.stderr };
  }

  it('a bad rate, a bad per-device rate and a bad order each give INVALID_VALUE and one line naming the variable', () => {
    for (const [backend, config, variable] of [
      ['cuda', { rates: 'registered=fast' }, 'MAPPED_REG_DOUBLE_RATES'],
      ['hip', { ratesOf: { 1: 'pinned' } }, 'MAPPED_REG_DOUBLE_RATES_1'],
      ['cuda', { devices: 2, order: '1,1' }, 'MAPPED_REG_DOUBLE_ORDER'],
      ['cuda', { noise: 'sd=2.6' }, 'MAPPED_REG_DOUBLE_NOISE'],
      ['hip', { noise: 'sd=2%,jitter=1%' }, 'MAPPED_REG_DOUBLE_NOISE'],
      ['cuda', { noise: 'seed=-1' }, 'MAPPED_REG_DOUBLE_NOISE'],
      ['cuda', { noise: 'drift' }, 'MAPPED_REG_DOUBLE_NOISE'],
    ] as const) {
      const { result, stderr } = initIn(backend, config);
      expect(result, variable).toBe('1');
      const lines = stderr.split('\n').filter((l) => l.length > 0);
      expect(lines, variable).toHaveLength(1);
      expect(lines[0], variable).toMatch(new RegExp(`^mapped-reg driver double: ${variable} '`));
    }
    // and a good configuration says nothing
    expect(initIn('cuda', { rates: 'registered=1,pinned=2.5,pageable=.5', devices: 2, order: '1,0', ratesOf: { 0: 'pinned=3' } })).toEqual({ result: '0', stderr: '' });
    expect(initIn('hip', { noise: 'sd=2.6%, drift=0.022,load=5%,seed=12345678901' })).toEqual({ result: '0', stderr: '' });
  });
});
