// The decision on a figure with its noise (results/decision.ts), and the gate's false-alarm rate (issue 37): a gate
// that fails a good driver once in a few hundred runs gets switched off. The acceptance below runs the command's own
// gate (results/gate.ts decide, with its re-timings) on runs made by the driver double's noise model
// (test/support/noise-model.ts; MAPPED_REG_DOUBLE_NOISE) at the spread the H200 showed on a loaded instance.
import { describe, expect, it } from 'vitest';
import { registrationChange } from '../results/compare.js';
import { DEFAULT_CONFIDENCE, MAX_RETIMES, beyond, decideDrop, normalQuantile, ratioLogs, roundsWanted } from '../results/decision.js';
import { decide } from '../results/gate.js';
import type { CheckResult, DeviceWithHost, RunResult } from '../results/types.js';
import { adaptiveRounds } from '../suites/measure.js';
import { type Noise, gauss, generator, simulatedDevice, simulatedResult, simulatedRun } from './support/noise-model.js';

const logsOf = (ratios: number[]): number[] => ratios.map(Math.log);

describe('decideDrop', () => {
  it('figures without their noise are judged as before: more than the limit is a regression, exactly the limit is not', () => {
    expect(decideDrop({ baseline: [{ figure: 1.97 }], candidate: [{ figure: 1.773 }], maxDrop: 0.1 })).toMatchObject({ outcome: 'pass', noise: { used: 'none' } });
    expect(decideDrop({ baseline: [{ figure: 1 }], candidate: [{ figure: 0.89 }], maxDrop: 0.1 })).toMatchObject({ outcome: 'regression', why: 'a drop of 11.0%, more than the 10.0% allowed' });
    expect(decideDrop({ baseline: [{ figure: 1 }], candidate: [{ figure: 0.91 }], maxDrop: 0.1 })?.outcome).toBe('pass');
    expect(decideDrop({ baseline: [], candidate: [{ figure: 1 }], maxDrop: 0.1 })).toBeUndefined();
    expect(beyond(0.10000000000000009, 0.1)).toBe(false);
  });

  it('with rounds: an interval at the stated confidence, the noise named, one baseline run advised against', () => {
    const base = logsOf([1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0]);
    const d = decideDrop({ baseline: [{ logs: base }], candidate: [{ logs: base.map((x) => x + Math.log(0.8)) }], maxDrop: 0.1 })!;
    expect(d.outcome).toBe('regression');
    expect(d.drop).toBeCloseTo(0.2, 6);
    expect(d.noise.used).toBe('within runs');
    expect(d.interval!.low).toBeGreaterThan(0.1);
    expect(d.interval!.high).toBeLessThan(0.3);
    expect(d.confidence).toBe(DEFAULT_CONFIDENCE);
    expect(d.advice).toMatch(/one baseline run: the noise between runs is not seen; a baseline of several runs judges it/);
    expect(d.why).toBe('a drop of 20.0%, more than the 10.0% allowed');
    expect(d.noiseText).toMatch(/^within runs, 1\+1 runs: 1\d\.\d% to 2\d\.\d% at 99\.9%$/);
  });

  it('a host whose spread is wider than the limit is too noisy to judge (the host, not a pass), unless the whole interval is beyond', () => {
    const wide = logsOf([1.0, 1.3, 0.75, 1.2, 0.8, 1.25, 0.7]);
    const noisy = decideDrop({ baseline: [{ logs: wide }], candidate: [{ logs: wide.map((x) => x + Math.log(0.88)) }], maxDrop: 0.1 })!;
    expect(noisy.outcome).toBe('too-noisy');
    expect(noisy.advice).toMatch(/wider than 10\.0%: a baseline of several runs, or a quieter host/);
    const far = decideDrop({ baseline: [{ logs: wide }], candidate: [{ logs: wide.map((x) => x + Math.log(0.3)) }], maxDrop: 0.1 })!;
    expect(far.outcome).toBe('regression');
  });

  it('several runs: the spread between runs is used, so a drift that one run cannot show widens the interval', () => {
    const run = (shift: number): { logs: number[] } => ({ logs: logsOf([1.0, 1.002, 0.998, 1.001, 0.999]).map((x) => x + Math.log(shift)) });
    const one = decideDrop({ baseline: [run(1)], candidate: [run(0.93)], maxDrop: 0.1 })!;
    const several = decideDrop({ baseline: [run(1), run(1.06), run(0.95), run(1.02)], candidate: [run(0.93)], maxDrop: 0.1 })!;
    expect(one.noise.used).toBe('within runs');
    expect(several.noise.used).toBe('within and between runs');
    expect(several.noise.betweenRuns!).toBeGreaterThan(0.03);
    expect(several.interval!.high - several.interval!.low).toBeGreaterThan(5 * (one.interval!.high - one.interval!.low));
  });

  it("the ratio is each round's pair, as taken: a drift that moves both copies of a round cancels", () => {
    // every round slower by its own load, registered and page-locked alike: each pair's ratio is 1
    const load = [1, 1.3, 0.8, 1.5, 1.1, 0.9, 1.2];
    const logs = ratioLogs(load.map((x) => 2.6 * x), load.map((x) => 2.6 * x));
    expect(logs).toEqual([0, 0, 0, 0]);
    // a round without a valid page-locked duration is left out, never paired with another round's
    expect(ratioLogs([2, 2, 2, 2], [2, null, 4, 2])).toEqual([0, Math.log(2), 0]);
    // the slower half of the pairs (a host that loaded them) is left out: 7 rounds keep their 4 fastest pairs
    expect(ratioLogs([2, 2, 9, 2, 2, 9, 9], [2, 2, 2, 2.2, 2, 9, 2])).toEqual([0, 0, Math.log(1.1), 0]);
  });

  it("rounds wanted: more while the run's own interval is wider than the target, none once within it", () => {
    const ones = [1, 1, 1, 1, 1, 1, 1];
    expect(roundsWanted([1, 1.05, 0.95, 1.04, 0.96, 1.03, 0.97, 1.06, 0.94], [1, 1, 1, 1, 1, 1, 1, 1, 1], 0.0263)).toBeGreaterThan(0);
    expect(roundsWanted([1, 1.001, 0.999, 1.0, 1.0, 1.001, 0.999], ones, 0.0263)).toBe(0);
    expect(normalQuantile(0.999)).toBeCloseTo(3.0902, 4);
    expect(normalQuantile(0.5)).toBeCloseTo(0, 9);
    expect(normalQuantile(0.001)).toBeCloseTo(-3.0902, 4);
  });
});

describe('adaptive rounds (suites/measure.ts adaptiveRounds, as the probe takes them)', () => {
  it('more pairs while the run\'s own interval is wider than a quarter of --max-drop, at most 3 x --runs; none on a quiet host', () => {
    expect(adaptiveRounds(7, 0.1).most).toBe(21);
    const shape = { runs: 7, maxDrop: 0.1, registeredMs: 2.6, pageLockedMs: 2.6 };
    const noisy = simulatedRun(generator(5), { sd: 0.05, drift: 0, load: 0 }, shape);
    expect(noisy.registeredMs.length).toBeGreaterThan(7);
    expect(noisy.registeredMs.length).toBeLessThanOrEqual(28);
    const wild = simulatedRun(generator(5), { sd: 0.5, drift: 0, load: 0 }, shape);
    expect(wild.registeredMs.length).toBe(28);
    const quiet = simulatedRun(generator(5), { sd: 0.002, drift: 0, load: 0 }, shape);
    expect(quiet.registeredMs.length).toBe(7);
  });
});

describe('compare and the gate take the decision', () => {
  const device = (ratios: number[]): DeviceWithHost => simulatedDevice({ registeredMs: ratios.map((r) => 2.6 / r), pageLockedMs: ratios.map(() => 2.6) });
  it('a host too noisy to judge is the host\'s (`noisy`, not a pass, not the driver\'s), in compare and in the gate', async () => {
    const wide = [1.0, 1.3, 0.75, 1.2, 0.8, 1.25, 0.7, 1.3, 0.75, 1.2, 0.8, 1.25, 0.7, 1.0];
    const ch = registrationChange(device(wide), device(wide.map((r) => r * 0.88)), 0.1)!;
    expect(ch.kind).toBe('error');
    expect(ch.decision?.outcome).toBe('too-noisy');
    expect(ch.note).toMatch(/^the host is too noisy to judge a drop of 10\.0%: .*: the host, not the driver/);
    const g = await decide(simulatedResult(device(wide.map((r) => r * 0.88))), { baseline: { file: 'b.json', result: simulatedResult(device(wide)) }, maxDrop: 0.1 });
    expect(g.pass).toBe(false);
    // the registered GB/s of the same rounds is as noisy: both the host's
    expect(g.reasons.map((r) => [r.kind, r.check, r.host])).toContainEqual(['noisy', 'registration', true]);
    expect(g.reasons.every((r) => r.kind === 'noisy' && r.host === true)).toBe(true);
    expect(g.headline).toMatch(/^FAIL \(the host, not the driver\): /);
    expect(g.figures?.find((f) => f.check === 'registration')?.decision.outcome).toBe('too-noisy');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The acceptance: the issue's spread, 10,000 quiet comparisons and 10,000 with the registered copy 15% slower.

/**
 * The spread of the loaded H200 instance (issue 37): one round's registered / page-locked spreads by 2.6%; each run's
 * median of 7 rounds by 2.5% between runs, of which the rounds' own noise explains 1.2% (1.2533 x 2.6% / sqrt 7): the
 * rest, 2.2%, moves between runs.
 */
const ISSUE_NOISE: Noise = { sd: 0.026, drift: Math.sqrt(0.025 ** 2 - ((1.2533 * 0.026) / Math.sqrt(7)) ** 2), load: 0 };
const SHAPE = { runs: 7, maxDrop: 0.1, registeredMs: 2.6, pageLockedMs: 2.6 };
/** A baseline of 10 runs of the same driver on the host: several `--baseline` files (a single run's is too thin). */
const BASELINE_RUNS = 10;
const COMPARISONS = 10_000;

/** probe.verdict's result as the gate's re-run gives it: the figures and the rounds of a new simulated run. */
function probeResult(d: DeviceWithHost): CheckResult {
  return { id: 'probe.verdict', suite: 'probe', title: 'probe', status: 'pass', durationMs: 1, data: { verdict: d.verdict, timing: d.timing } };
}

/** The gate on one simulated run against the simulated baseline, re-timing as `run --baseline` does: driver regressions named. */
async function gateOn(u: () => number, baseline: RunResult[], slower: number): Promise<{ kinds: string[]; retimes: number }> {
  const shape = { ...SHAPE, registeredMs: SHAPE.registeredMs / slower };
  const run = simulatedResult(simulatedDevice(simulatedRun(u, ISSUE_NOISE, shape)));
  let retimes = 0;
  const g = await decide(run, {
    baseline: { file: 'base-0.json', result: baseline[0]! },
    moreBaselines: baseline.slice(1).map((result, i) => ({ file: `base-${i + 1}.json`, result })),
    maxDrop: SHAPE.maxDrop,
    rerun: async () => {
      retimes++;
      return probeResult(simulatedDevice(simulatedRun(u, ISSUE_NOISE, shape)));
    },
  });
  return { kinds: g.reasons.map((r) => `${r.kind}${r.check ? ` ${r.check}` : ''}`), retimes };
}

describe('the gate at the issue\'s spread (the double\'s noise model; results/decision.ts through results/gate.ts decide)', () => {
  it('the simulated runs have the issue\'s spread: rounds 2.6%, run medians 2.5% between runs', () => {
    const u = generator(7);
    const medians: number[] = [];
    const rounds: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const r = simulatedRun(u, ISSUE_NOISE, { ...SHAPE, maxDrop: 0.99 });
      // every one of the first 7 rounds, as the issue's figures were taken (no round left out)
      const logs = r.registeredMs.slice(0, 7).map((x, k) => Math.log(r.pageLockedMs[k]! / x));
      rounds.push(...logs.map((x) => x - logs.reduce((a, b) => a + b, 0) / logs.length));
      medians.push([...logs].sort((a, b) => a - b)[3]!);
    }
    const sd = (xs: number[]): number => Math.sqrt(xs.reduce((a, x) => a + x * x, 0) / xs.length - (xs.reduce((a, x) => a + x, 0) / xs.length) ** 2);
    expect(sd(medians)).toBeGreaterThan(0.023);
    expect(sd(medians)).toBeLessThan(0.027);
    // deviations from a run's own mean: the round's spread less what 7 rounds' mean takes away (sqrt(6/7))
    expect(sd(rounds) / Math.sqrt(6 / 7)).toBeGreaterThan(0.024);
    expect(sd(rounds) / Math.sqrt(6 / 7)).toBeLessThan(0.028);
    // the generator is seeded: the same seed, the same draws
    expect(gauss(generator(3))).toBe(gauss(generator(3)));
  });

  it(`${COMPARISONS} quiet comparisons: no false regression; a registered copy 15% slower: caught at least 99.9% of the time`, async () => {
    const u = generator(37);
    const tally = { quietRegressions: 0, quietHost: 0, quietRetimes: 0, caught: 0, slowHost: 0, slowRetimes: 0, maxRetimes: 0 };
    for (let i = 0; i < COMPARISONS; i++) {
      const baseline = Array.from({ length: BASELINE_RUNS }, () => simulatedResult(simulatedDevice(simulatedRun(u, ISSUE_NOISE, SHAPE))));
      const quiet = await gateOn(u, baseline, 1);
      tally.quietRegressions += quiet.kinds.filter((k) => k === 'registration registration' || k === 'bandwidth bandwidth').length > 0 ? 1 : 0;
      tally.quietHost += quiet.kinds.some((k) => k.startsWith('noisy')) ? 1 : 0;
      tally.quietRetimes += quiet.retimes;
      const slow = await gateOn(u, baseline, 0.85);
      tally.caught += slow.kinds.includes('registration registration') ? 1 : 0;
      tally.slowHost += slow.kinds.some((k) => k.startsWith('noisy')) ? 1 : 0;
      tally.slowRetimes += slow.retimes;
      tally.maxRetimes = Math.max(tally.maxRetimes, quiet.retimes, slow.retimes);
    }
    console.log(`issue 37 acceptance: ${JSON.stringify(tally)} of ${COMPARISONS} each`);
    expect(tally.quietRegressions).toBe(0);
    expect(tally.caught / COMPARISONS).toBeGreaterThanOrEqual(0.999);
    expect(tally.maxRetimes).toBeLessThanOrEqual(MAX_RETIMES);
  }, 300_000);

  it('compare (no re-timing) against the same baseline of 10 runs: no false regression either', () => {
    const u = generator(3737);
    let falseRegressions = 0;
    for (let i = 0; i < COMPARISONS; i++) {
      const base = Array.from({ length: BASELINE_RUNS }, () => simulatedDevice(simulatedRun(u, ISSUE_NOISE, SHAPE)));
      const quiet = simulatedDevice(simulatedRun(u, ISSUE_NOISE, SHAPE));
      if (registrationChange(base[0], quiet, SHAPE.maxDrop, { olds: base.slice(1) })!.kind === 'regression') falseRegressions++;
    }
    expect(falseRegressions).toBe(0);
  }, 300_000);
});
