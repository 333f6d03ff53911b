// The conformance run again (`repeats`; docs/bench.md): --repeat N runs of the command, and with --against DIR as
// many of another build's (a package folder holding dist/cli/main.js, e.g. the code before a change), the two
// alternating (this first in odd rounds, the other first in even ones), so that a machine that drifts over the
// call moves both alike. Only the whole run's wall time, exit status and peak PSS are kept of each; the median of
// each build's wall times is the figure (the "median of 5 runs, against the code before, alternating").
import type { Options } from './bench-options.js';
import { type RunFrom, conformanceRun } from './conformance.js';
import type { Conformance, RepeatRun, Repeats } from './result.js';

/** A run's sample: the build, the order within the call, its wall time, exit status and peak PSS. */
function sample(build: RepeatRun['build'], order: number, c: Conformance): RepeatRun {
  return { build, order, wallMs: c.wallMs, exitCode: c.exitCode, ...(c.memory.run ? { peakPssKiB: c.memory.run.pssKiB } : {}), ...(c.phasesMs ? { phasesMs: c.phasesMs } : {}) };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * `rounds` runs of this build (the first is `first`, the bench's detailed run, already made) and, with `against`,
 * as many of the other build's, alternating. Devices and options as the detailed run's.
 */
export async function repeatRuns(o: Options, devices: string[], first: Conformance, rounds: number, against?: string, from: RunFrom = {}): Promise<Repeats> {
  const runs: RepeatRun[] = [sample('this', 1, first)];
  const other = against !== undefined ? { ...from, main: against, label: `conformance run against ${against}` } : undefined;
  for (let round = 1; round <= rounds; round++) {
    // round 1: this (made already), then the other; round 2: the other first; and so on
    const order: RepeatRun['build'][] = other ? (round % 2 === 1 ? ['this', 'against'] : ['against', 'this']) : ['this'];
    for (const build of order) {
      if (round === 1 && build === 'this') continue;
      const c = await conformanceRun(o, devices, build === 'this' ? { ...from, label: `conformance run ${round} of ${rounds}` } : other!);
      runs.push(sample(build, runs.length + 1, c));
    }
  }
  const of = (b: RepeatRun['build']): RepeatRun[] => runs.filter((r) => r.build === b);
  const summary = (rs: RepeatRun[]): Repeats['this'] => {
    const pss = rs.flatMap((r) => (r.peakPssKiB !== undefined ? [r.peakPssKiB] : []));
    return { medianMs: median(rs.map((r) => r.wallMs)), bestMs: Math.min(...rs.map((r) => r.wallMs)), ...(pss.length ? { maxPeakPssKiB: Math.max(...pss) } : {}) };
  };
  return { rounds, runs, this: summary(of('this')), ...(against !== undefined ? { against: { main: against, ...summary(of('against')) } } : {}) };
}
