// The driver double's noise (MAPPED_REG_DOUBLE_NOISE, test/double/common.c read_noise and noise_factor), in
// TypeScript, for simulations of many thousand runs: each round's registered and page-locked copies, paired as the
// probe takes them (src/probe.ts timeRounds), with the same model: every copy's duration times exp(sd / sqrt(2) g),
// g a fresh normal draw; the registered copies of a run times exp(drift g0), g0 drawn once a run; every copy times
// exp(load s), s an AR(1) of 0.95 a copy. The generator differs from the double's (a 32-bit one here, splitmix64
// there): the model is the same, not the draws.
import { adaptiveRounds } from '../../suites/measure.js';
import type { DeviceWithHost, RunResult } from '../../results/types.js';

export interface Noise {
  sd: number;
  drift: number;
  load: number;
}

/** mulberry32: a seeded generator of [0, 1) (the fleet's, bench/fleet.ts). */
export { random as generator } from '../../bench/fleet.js';

/** A standard normal draw (Box-Muller). */
export function gauss(u: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
}

/** One run's rounds of the pair: `runs` rounds, then the extra pairs the probe would take (adaptiveRounds). */
export function simulatedRun(u: () => number, noise: Noise, o: { runs: number; maxDrop: number; registeredMs: number; pageLockedMs: number }): { registeredMs: number[]; pageLockedMs: number[] } {
  const offset = noise.drift * gauss(u);
  let load = gauss(u);
  const copy = (base: number, registered: boolean): number => {
    load = 0.95 * load + 0.3122498999 * gauss(u);
    return base * Math.exp((noise.sd / Math.SQRT2) * gauss(u) + noise.load * load + (registered ? offset : 0));
  };
  const registeredMs: number[] = [];
  const pageLockedMs: number[] = [];
  const pair = (r: number): void => {
    if (r % 2 === 0) {
      registeredMs.push(copy(o.registeredMs, true));
      pageLockedMs.push(copy(o.pageLockedMs, false));
    } else {
      pageLockedMs.push(copy(o.pageLockedMs, false));
      registeredMs.push(copy(o.registeredMs, true));
    }
  };
  for (let r = 0; r < o.runs; r++) pair(r);
  const adaptive = adaptiveRounds(o.runs, o.maxDrop);
  for (let extra = 0; extra < adaptive.most && adaptive.wanted(registeredMs, pageLockedMs) > 0; extra++) pair(o.runs + extra);
  return { registeredMs, pageLockedMs };
}

/** A device of a results file holding one simulated run (bytes of 128 MiB; figures best of the rounds). */
export function simulatedDevice(run: { registeredMs: number[]; pageLockedMs: number[] }, bytes = 128 * 1024 * 1024): DeviceWithHost {
  const best = (xs: number[]): number => Math.min(...xs);
  const gbps = (ms: number): number => bytes / ms / 1e6;
  const registeredGBps = gbps(best(run.registeredMs));
  const pageLockedGBps = gbps(best(run.pageLockedMs));
  const n = run.registeredMs.length;
  return {
    id: 'cuda:0',
    backend: 'cuda',
    name: 'Simulated H200',
    pciBusId: '0000:00:06.0',
    driver: { name: 'CUDA', version: '13.0' },
    integrated: false,
    staticVerdict: 'Self_test_required',
    verdict: { kind: 'Usable', text: 'Usable' },
    cacheable: true,
    checks: [],
    timing: {
      registeredGBps,
      stagedGBps: 5,
      ratio: registeredGBps / 5,
      minRelativeSpeed: 0.8,
      runs: n,
      bytes,
      pageLockedGBps,
      pageLockedRatio: registeredGBps / pageLockedGBps,
      samples: { registeredMs: run.registeredMs, pageLockedMs: run.pageLockedMs, stagedMs: Array(n).fill(null), hostCopyMs: Array(n).fill(null) },
    },
    scratch: { dir: '/tmp', fsType: 'ext4' },
  };
}

/** A results file of one simulated device. */
export function simulatedResult(device: DeviceWithHost): RunResult {
  return {
    schemaVersion: 3,
    tool: { name: 'mapped-reg-conformance', version: 'simulated' },
    host: { hostname: 'simulated', kernel: '', platform: 'linux-x64' },
    startedAt: '2026-12-04T00:00:00.000Z',
    finishedAt: '2026-12-04T00:00:02.000Z',
    options: {},
    devices: [device],
  };
}
