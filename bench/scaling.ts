// The run's time against the GPU count (`scaling`; docs/bench.md): with --scale 1,2,4,8 the command is run on the
// first N GPUs the bench found (--device cuda:0 ... ), for each N, and then each GPU of the largest N alone (the
// first GPU's figure alone is the run over one, when there is one). The
// devices run in parallel, each in its own process; only their timed copies take turns (the host-wide timing
// lock), so the run over 8 should cost little more than the run over 1, and each device's figure should be the
// one it gets alone. With the driver double, MAPPED_REG_DOUBLE_DEVICES=8 gives 8 GPUs (paced copies: its rates and
// shared link make the figures deterministic enough to compare).
import type { Options } from './bench-options.js';
import { type RunFrom, conformanceRun } from './conformance.js';
import type { Scaling } from './result.js';

/** Targets (reported, never enforced): the run over the most GPUs against the run over one, and each figure against its device alone. */
const SCALING_TARGETS = { overOne: 1.5, aloneDeviation: 0.03 } as const;

export async function scalingRuns(o: Options, gpus: readonly string[], counts: readonly number[], from: RunFrom = {}): Promise<Scaling> {
  const usable = counts.filter((n) => n <= gpus.length);
  const skipped = counts.filter((n) => n > gpus.length);
  const runs: Scaling['runs'] = [];
  for (const n of usable) {
    const c = await conformanceRun(o, gpus.slice(0, n), { ...from, label: `scaling: ${n} GPU(s)` });
    const figures = Object.fromEntries(c.devices.flatMap((d) => (d.registeredGBps !== undefined ? [[d.id, d.registeredGBps]] : [])));
    runs.push({ gpus: n, wallMs: c.wallMs, exitCode: c.exitCode, ...(c.phasesMs ? { phasesMs: c.phasesMs } : {}), ...(c.memory.run ? { peakPssKiB: c.memory.run.pssKiB } : {}), registeredGBps: figures });
  }
  const most = runs.at(-1);
  const one = runs.find((r) => r.gpus === 1);
  // the run over one GPU is the first GPU alone
  const alone: Record<string, number> = { ...one?.registeredGBps };
  if (most && most.gpus > 1) {
    for (const id of gpus.slice(0, most.gpus)) {
      if (alone[id] !== undefined) continue;
      const c = await conformanceRun(o, [id], { ...from, label: `scaling: ${id} alone` });
      const g = c.devices.find((d) => d.id === id)?.registeredGBps;
      if (g !== undefined) alone[id] = g;
    }
  } else if (most) Object.assign(alone, most.registeredGBps);
  const deviations = most ? Object.entries(most.registeredGBps).flatMap(([id, g]) => (alone[id] ? [Math.abs(g / alone[id]! - 1)] : [])) : [];
  return {
    counts: [...counts],
    ...(skipped.length ? { skipped: `only ${gpus.length} GPU(s) found: no run over ${skipped.join(', ')}` } : {}),
    runs,
    alone,
    ...(one && most ? { mostOverOne: most.wallMs / one.wallMs } : {}),
    ...(deviations.length ? { maxAloneDeviation: Math.max(...deviations) } : {}),
    targets: SCALING_TARGETS,
  };
}
