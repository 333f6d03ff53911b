// How a figure is timed (docs/bench.md, "How a figure is timed"): one tinybench task, run synchronously, with
// exactly N samples; best (min), median (p50) and mean. A copy's GB/s is its bytes / seconds / 10^9.
import { Bench, type Fn, type FnOptions } from 'tinybench';
import { gbps } from '../src/probe.js';

export interface Stat {
  bestMs: number;
  medianMs: number;
  meanMs: number;
  samples: number;
}

/** One tinybench task, run synchronously: best (min), median (p50) and mean of its samples. */
export function time(name: string, fn: Fn, o: { iterations: number; timeMs?: number; warmup?: boolean; hooks?: FnOptions }): Stat {
  const bench = new Bench({ iterations: o.iterations, time: o.timeMs ?? 0, warmup: o.warmup ?? true, warmupIterations: 1, warmupTime: 0 });
  bench.add(name, fn, { async: false, ...o.hooks });
  bench.runSync();
  const r = bench.tasks[0]!.result;
  if (r.state === 'errored') throw r.error;
  if (r.state !== 'completed') throw new Error(`${name}: tinybench ended ${r.state}`);
  return { bestMs: r.latency.min, medianMs: r.latency.p50, meanMs: r.latency.mean, samples: r.latency.samplesCount };
}

export interface Copy extends Stat {
  label: string;
  bytes: number;
  bestGBps: number;
  medianGBps: number;
}

/** A timed copy of `bytes`, with its GB/s. */
export function copy(label: string, bytes: number, s: Stat): Copy {
  return { label, bytes, ...s, bestGBps: gbps(bytes, s.bestMs), medianGBps: gbps(bytes, s.medianMs) };
}
