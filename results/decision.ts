// The one decision on a figure that may have fallen (issue 37, docs/gate.md "A decision with its noise"): given the
// baseline's runs and the candidate's runs of one figure (registered / page-locked, or the registered GB/s), each
// run its per-round samples (or, for files of schemaVersion 1 and 2, its figure alone), it says `regression`,
// `pass` or `too-noisy` (the host's spread is too wide to judge a drop of --max-drop: the host's, and not a pass).
// Pure: no I/O, no randomness, the same answer for the same samples. compare, the gate, history compare, the
// metrics and every report take what this says; nothing else compares a figure with --max-drop.
//
// The statistic. Each run gives the median of its rounds' log figures (for the ratio, each round's registered copy
// against the page-locked copy timed beside it: the pair shares the host's drift of that moment), with its standard
// error (1.2533 sd / sqrt(n), the median's). The drop is the mean of the baseline runs' medians less the mean of the
// candidate runs'. Its noise is each side's own (within a run) and, where a side has several runs, the spread
// between runs: on a loaded H200 the ratio of each run's medians spread 0.969-1.079 (sd 2.5%), which one run's
// rounds cannot show. The interval is normal, at the stated one-sided confidence.
//
// The rule, with L = --max-drop (as a log ratio) and z·sigma the interval's half-width:
// - the host's noise allows judging when z·sigma <= L: a run of a driver that did not change then falls beyond L
//   with a probability under 1 - confidence; there, a drop beyond L is a regression, else a pass;
// - the whole interval beyond L is a regression, whatever the noise; the whole interval within L a pass;
// - otherwise the host is too noisy to judge at that threshold (the host's, not the driver's, and not a pass).

/** The confidence the gate states (one-sided): a quiet run's figure falls beyond --max-drop less often than 1 in 1000. */
export const DEFAULT_CONFIDENCE = 0.999;

/**
 * The most timings of a figure after the run's own, by the gate (`run --baseline`), while the runs so far cannot tell it
 * from the limit (`retime`): a run's drift between runs is only averaged out by more runs (docs/gate.md).
 */
export const MAX_RETIMES = 2;

/** The least rounds whose median and spread are used; a run with fewer is judged by its figure alone. */
export const MIN_ROUNDS = 3;

/** The median's standard error over the mean's, for normal samples (sqrt(pi / 2)). */
const MEDIAN_SE = Math.sqrt(Math.PI / 2);

/** One run of one figure: its rounds' log figures (as taken), or, from an older file, its figure alone. */
export interface RunFigure {
  /** The natural log of each round's figure (ratio or GB/s), in the order the rounds were taken. */
  logs?: readonly number[];
  /** The run's own figure (best of its rounds), used when it has too few rounds: the figure without its noise. */
  figure?: number;
}

export type DropOutcome = 'regression' | 'pass' | 'too-noisy';

/** Which noise the decision could use: each run's own, the spread between runs, both, or none. */
export type NoiseUsed = 'within and between runs' | 'within runs' | 'between runs' | 'none';

export interface DropDecision {
  outcome: DropOutcome;
  /** The estimated drop, a fraction of the baseline (negative: a rise). */
  drop: number;
  /** The drop's interval at `confidence` (fractions), absent where no noise was known. */
  interval?: { low: number; high: number };
  confidence: number;
  maxDrop: number;
  /** Runs on each side, and how many of them carried their rounds. */
  runs: { baseline: number; candidate: number; withSamples: number };
  noise: {
    used: NoiseUsed;
    /** The standard error of the drop (log), and its parts: the runs' own and the spread between runs (log sd of one run). */
    sigma: number;
    withinRun: number;
    betweenRuns: number | null;
  };
  /** One line: why (the drop against the limit; for a host too noisy, with the interval). */
  why: string;
  /** The noise the decision used, in words: `within and between runs, 3+2 runs: 14.1% to 25.0% at 99.9%`. */
  noiseText?: string;
  /** Advice where the baseline's noise is too thin (one run) or too wide to judge. */
  advice?: string;
  /**
   * One more timing of the candidate could change the outcome: too noisy, or the interval holds the limit (the gate
   * re-times it, at most MAX_RETIMES times). Figures without their noise: a regression (re-run once, as a flake).
   */
  retime: boolean;
}

export interface DropInput {
  baseline: readonly RunFigure[];
  candidate: readonly RunFigure[];
  maxDrop: number;
  confidence?: number;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const sampleVar = (xs: readonly number[]): number => {
  const m = mean(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1);
};

/** The log figures of samples that are valid (finite, the figure above 0). */
const validLogs = (logs: readonly number[] | undefined): number[] => (logs ?? []).filter((x) => Number.isFinite(x));

/**
 * The rounds' spread, robustly: 1.4826 x the median absolute deviation (the sd of normal samples), so that one copy
 * that ended late (a thread preempted on a loaded host) does not widen the interval as a sample sd would.
 */
function robustSd(logs: readonly number[]): number {
  const m = median(logs);
  return 1.4826 * median(logs.map((x) => Math.abs(x - m)));
}

/** One run's centre (log) and the standard error of that centre, or null where only its figure is known. */
function runCentre(r: RunFigure): { centre: number; se: number | null } | undefined {
  const logs = validLogs(r.logs);
  if (logs.length >= MIN_ROUNDS) return { centre: median(logs), se: (MEDIAN_SE * robustSd(logs)) / Math.sqrt(logs.length) };
  if (r.figure !== undefined && r.figure > 0 && Number.isFinite(r.figure)) return { centre: Math.log(r.figure), se: null };
  return undefined;
}

/** The standard normal quantile (Acklam's rational approximation, relative error under 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile: ${p} is not in (0, 1)`);
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const lowTail = (q: number): number => (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  if (p < 0.02425) return lowTail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -lowTail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) / (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1);
}

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
const fromLog = (logDrop: number): number => 1 - Math.exp(-logDrop);

/**
 * Whether a drop (a fraction of the baseline) is beyond `maxDrop`: by more than one part in a billion, so a fall of
 * exactly the limit is never one, however the division rounds (1 - 1.773 / 1.97 is 0.10000000000000009).
 */
export const beyond = (drop: number, maxDrop: number): boolean => drop - maxDrop > 1e-9;

/**
 * The decision on one figure (see the top of this file). Undefined when a side has no run with a figure. The
 * baseline's runs and the candidate's are each averaged; their spread between runs is pooled (each side about its
 * own mean, so a true drop does not widen it).
 */
export function decideDrop(input: DropInput): DropDecision | undefined {
  const confidence = input.confidence ?? DEFAULT_CONFIDENCE;
  const b = input.baseline.map(runCentre).filter((x) => x !== undefined);
  const c = input.candidate.map(runCentre).filter((x) => x !== undefined);
  if (b.length === 0 || c.length === 0) return undefined;
  const maxDrop = input.maxDrop;
  const L = -Math.log(1 - maxDrop);
  const logDrop = mean(b.map((x) => x.centre)) - mean(c.map((x) => x.centre));
  const drop = fromLog(logDrop);
  const withSamples = [...b, ...c].filter((x) => x.se !== null).length;
  const within2 = (xs: typeof b): number[] => xs.map((x) => (x.se ?? 0) ** 2);
  // between runs: each side's runs about their own mean, pooled; less the part their own noise explains
  const df = b.length - 1 + c.length - 1;
  let between2: number | null = null;
  if (df > 0) {
    const ss = (xs: typeof b): number => (xs.length > 1 ? sampleVar(xs.map((x) => x.centre)) * (xs.length - 1) : 0);
    const pooled = (ss(b) + ss(c)) / df;
    const own = mean([...(b.length > 1 ? within2(b) : []), ...(c.length > 1 ? within2(c) : [])]);
    between2 = Math.max(0, pooled - own);
  }
  const side = (xs: typeof b): number => xs.reduce((a, x) => a + (between2 ?? 0) + (x.se ?? 0) ** 2, 0) / xs.length ** 2;
  const sigma = Math.sqrt(side(b) + side(c));
  const withinRun = Math.sqrt(mean([...within2(b), ...within2(c)]));
  const used: NoiseUsed = between2 !== null ? (withSamples > 0 ? 'within and between runs' : 'between runs') : withSamples > 0 ? 'within runs' : 'none';
  const runs = { baseline: b.length, candidate: c.length, withSamples };
  const noiseBase = { sigma, withinRun, betweenRuns: between2 === null ? null : Math.sqrt(between2) };
  const thin = b.length === 1 && withSamples > 0 ? 'one baseline run: the noise between runs is not seen; a baseline of several runs judges it' : undefined;
  if (used === 'none' || !(sigma > 0)) {
    // figures without their noise: the figure against the limit, as before the samples were kept
    const outcome: DropOutcome = beyond(drop, maxDrop) ? 'regression' : 'pass';
    // the words of the figures' comparison before the rounds were kept; `noise.used` says 'none'
    const why = outcome === 'regression' ? `a drop of ${pct(drop)}, more than the ${pct(maxDrop)} allowed` : `a drop of ${pct(drop)}, within the ${pct(maxDrop)} allowed`;
    return { outcome, drop, confidence, maxDrop, runs, noise: { ...noiseBase, used }, why, ...(thin ? { advice: thin } : {}), retime: outcome === 'regression' };
  }
  const z = normalQuantile(confidence);
  const half = z * sigma;
  const interval = { low: fromLog(logDrop - half), high: fromLog(logDrop + half) };
  const judgeable = half <= L;
  const over = beyond(drop, maxDrop);
  const outcome: DropOutcome = (judgeable && over) || beyond(interval.low, maxDrop) ? 'regression' : !over && (judgeable || !beyond(interval.high, maxDrop)) ? 'pass' : 'too-noisy';
  const noiseText = `${used}, ${b.length}+${c.length} runs: ${pct(interval.low)} to ${pct(interval.high)} at ${pct(confidence)}`;
  const why =
    outcome === 'regression'
      ? `a drop of ${pct(drop)}, more than the ${pct(maxDrop)} allowed`
      : outcome === 'pass'
        ? `a drop of ${pct(drop)}, within the ${pct(maxDrop)} allowed`
        : `the host is too noisy to judge a drop of ${pct(maxDrop)}: a drop of ${pct(drop)}, ${noiseText}`;
  const advice = outcome === 'too-noisy' ? `the host's spread (±${pct(Math.exp(half) - 1)}) is wider than ${pct(maxDrop)}: a baseline of several runs, or a quieter host${thin ? `; ${thin}` : ''}` : thin;
  // timed again where the interval holds the limit (a pass or a regression that more runs could turn), or too noisy
  const straddles = !beyond(interval.low, maxDrop) && beyond(interval.high, maxDrop);
  return { outcome, drop, interval, confidence, maxDrop, runs, noise: { ...noiseBase, used }, why, noiseText, ...(advice ? { advice } : {}), retime: outcome === 'too-noisy' || straddles };
}

/**
 * The rounds a loaded host disturbed least: the faster half by the pair's own time (registered plus page-locked), at
 * least MIN_ROUNDS. A host's load only ever makes a copy slower: a round where a thread waited for a core, or another
 * copy ran, is a slow pair, whose ratio tells of the load more than of the driver (on this project's 2-core machine at
 * a load of 11, most 2-ms copies of a run ended late). A pair's sum and its ratio are uncorrelated for noise that
 * falls on both copies alike, so keeping the faster pairs does not bias the ratio.
 */
function quietRounds(times: readonly number[]): number[] {
  const keep = Math.min(times.length, Math.max(MIN_ROUNDS, Math.ceil(times.length / 2)));
  return times
    .map((t, i) => [t, i] as const)
    .sort((a, b) => a[0] - b[0])
    .slice(0, keep)
    .map(([, i]) => i)
    .sort((a, b) => a - b);
}

/** The per-round logs of registered / page-locked: each round's pair, as taken (page-locked ms over registered ms), of the quiet rounds. */
export function ratioLogs(registeredMs: readonly (number | null)[], pageLockedMs: readonly (number | null)[]): number[] {
  const valid: [number, number][] = [];
  for (let i = 0; i < registeredMs.length; i++) {
    const r = registeredMs[i];
    const p = pageLockedMs[i];
    if (r !== null && r !== undefined && p !== null && p !== undefined && r > 0 && p > 0 && Number.isFinite(r) && Number.isFinite(p)) valid.push([r, p]);
  }
  return quietRounds(valid.map(([r, p]) => r + p)).map((i) => Math.log(valid[i]![1] / valid[i]![0]));
}

/** The per-round logs of a copy's GB/s (bytes / ms / 1e6), of the quiet rounds (its faster half). */
export function gbpsLogs(bytes: number, ms: readonly (number | null)[]): number[] {
  const valid = ms.filter((t): t is number => t !== null && t > 0 && Number.isFinite(t));
  return quietRounds(valid).map((i) => Math.log(bytes / valid[i]! / 1e6));
}

/**
 * How many more rounds of the pair would bring a run's own half-width (z times the median's standard error of its
 * quiet rounds, half of them) within `target`, from the rounds taken; 0 when it is there already or cannot be told.
 */
export function roundsWanted(registeredMs: readonly number[], pageLockedMs: readonly number[], target: number, confidence = DEFAULT_CONFIDENCE): number {
  const xs = ratioLogs(registeredMs, pageLockedMs);
  if (xs.length < MIN_ROUNDS) return 0;
  const sd = robustSd(xs);
  const z = normalQuantile(confidence);
  const quiet = Math.ceil(((z * MEDIAN_SE * sd) / target) ** 2);
  return Math.max(0, 2 * quiet - registeredMs.length);
}

/**
 * The half-width (log, at the stated confidence) a run's own rounds should bring the ratio within: a quarter of
 * --max-drop's, so that the noise between runs, which more rounds cannot lower, has the rest.
 */
export const adaptiveTarget = (maxDrop: number): number => -Math.log(1 - maxDrop) / 4;

/** The most extra rounds of the pair a run takes, for --runs rounds: 3 x --runs (21 pairs of 2.6 ms at 128 MiB on the H200: some 110 ms). */
export const ADAPTIVE_MOST_FACTOR = 3;
