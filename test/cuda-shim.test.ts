// scripts/h200/cuda-shim.c, the CUDA shim the H200 scripts put in front of the real driver, here in front of the
// CUDA double with paced copies (a copy of n bytes at G GB/s never takes less than n / G), through the project's
// real bindings: MAPPED_REG_SHIM_SLOW_REGISTERED slows the copies from a registered range, MAPPED_REG_SHIM_SLOW_ALL
// every host-to-device copy. The shim stretches each call to F times what the driver took, so a slowed copy never
// takes less than F n / G: only those lower bounds are asserted. (The gate's own use of the shim is in
// test/gate.test.ts, through scripts/h200/gate.sh.)
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DeviceOps } from '../bindings/device-ops.js';
import type { Host } from '../src/ops.js';
import { type DiscoveredDevice, discover } from '../bindings/discovery.js';
import { MAP, PROT, type Mapping, mmap, munmap } from '../bindings/libc.js';
import { buildDoubles } from './double/build.js';
import { ROOT } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-cuda-shim-'));
const mappings: Mapping[] = [];
afterAll(() => {
  for (const m of mappings) munmap(m);
  rmSync(work, { recursive: true, force: true });
});
const doubles = buildDoubles();
const shim = join(work, 'cuda-shim.so');
execFileSync('cc', ['-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-o', shim, join(ROOT, 'scripts', 'h200', 'cuda-shim.c'), '-ldl']);
const MiB = 1024 * 1024;
const RATES = { registered: 0.1, pinned: 0.1, pageable: 0.05 };
let serial = 0;

/** The CUDA device seen through a fresh copy of the shim in front of a fresh copy of the double with paced copies. */
function device(): DiscoveredDevice {
  const n = serial++;
  const [s, d] = [join(work, `shim-${n}.so`), join(work, `double-${n}.so`)];
  copyFileSync(shim, s);
  copyFileSync(doubles.cuda, d);
  const env: Record<string, string> = {
    MAPPED_REG_CUDA_LIBRARY: s,
    MAPPED_REG_SHIM_REAL: d,
    MAPPED_REG_DOUBLE_RATES: Object.entries(RATES).map(([k, v]) => `${k}=${v}`).join(','),
  };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const [found] = discover(['cuda']).devices.filter((x) => x.backend === 'cuda');
    expect(found, 'the double through the shim').toBeDefined();
    return found!;
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

type Kind = keyof typeof RATES;

/** The fastest of `runs` uploads of `bytes` from a source of `kind`, in ms, with the shim's variables `slow` set. */
function upload(d: DiscoveredDevice, kind: Kind, bytes: number, slow: Record<string, string>, runs = 3): number {
  const saved = Object.fromEntries(Object.keys(slow).map((k) => [k, process.env[k]]));
  Object.assign(process.env, slow); // the shim reads them at each copy
  try {
    return d.native!.withOps(bytes, (ops: DeviceOps) => {
      let source: Host;
      if (kind === 'pinned') source = ops.allocHost(bytes);
      else {
        const m = mmap(bytes, PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
        mappings.push(m);
        m.bytes.fill(0x3c);
        source = m;
      }
      if (kind === 'registered') ops.register(source);
      try {
        let best = Infinity;
        for (let i = 0; i < runs; i++) {
          const t0 = performance.now();
          ops.upload(source);
          best = Math.min(best, performance.now() - t0);
        }
        return best;
      } finally {
        if (kind === 'registered') ops.unregister(source);
        if (kind === 'pinned') ops.freeHost(source);
      }
    });
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** n bytes at G GB/s, in ms. */
const ms = (bytes: number, gbps: number): number => (bytes / (gbps * 1e9)) * 1000;

describe('scripts/h200/cuda-shim.c in front of the CUDA double (paced copies)', () => {
  const bytes = 2 * MiB;

  it('MAPPED_REG_SHIM_SLOW_ALL=1.25: every kind of copy takes at least 1.25 n / G of its rate', () => {
    const d = device();
    for (const kind of ['registered', 'pinned', 'pageable'] as const) {
      expect(upload(d, kind, bytes, { MAPPED_REG_SHIM_SLOW_ALL: '1.25' }), kind).toBeGreaterThanOrEqual(1.25 * ms(bytes, RATES[kind]));
    }
  });

  it('MAPPED_REG_SHIM_SLOW_REGISTERED=1.25: a registered copy takes at least 1.25 n / G; with SLOW_ALL=1.25 too, 1.5625 n / G', () => {
    const d = device();
    expect(upload(d, 'registered', bytes, { MAPPED_REG_SHIM_SLOW_REGISTERED: '1.25' })).toBeGreaterThanOrEqual(1.25 * ms(bytes, RATES.registered));
    expect(upload(d, 'registered', bytes, { MAPPED_REG_SHIM_SLOW_REGISTERED: '1.25', MAPPED_REG_SHIM_SLOW_ALL: '1.25' })).toBeGreaterThanOrEqual(1.5625 * ms(bytes, RATES.registered));
    // page-locked and pageable copies keep at least their own pace (whether the shim left them alone needs an
    // upper bound on time, which no test here asserts)
    expect(upload(d, 'pinned', bytes, { MAPPED_REG_SHIM_SLOW_REGISTERED: '1.25' })).toBeGreaterThanOrEqual(ms(bytes, RATES.pinned));
  });
});
