// The self-test (spec: probe_with, probe, with_device_ops). No FFI: it drives an Ops record.
import { type Device, staticVerdict } from './device.js';
import { errorText, isFatal } from './fatal.js';
import { type DeviceClock, type Host, type Ops, type RegistrationTable, hostSlice, registrations, trackedOps } from './ops.js';
import {
  Inconclusive,
  Refused,
  Still_registered,
  Too_slow,
  Usable,
  type Verdict,
  Wrong_bytes,
  verdictToString,
} from './verdict.js';

/** The largest page size in use: windows are multiples of it, so they never share a page. */
export const UNIT = 64 * 1024;
/** The page boundary the map must start on (checked at 4 KiB only). */
export const PAGE_CHECK = 4096;
export const DEFAULT_MIN_RELATIVE_SPEED = 0.8;
/** Best of 7 against best of 7. */
export const DEFAULT_RUNS = 7;
/** How many times the probe tries each release before it counts the thing as held. */
export const RELEASE_TRIES = {
  /**
   * Tries of a window's unregister. How we read the spec's "two, or three when the probe got as far as the
   * checked release": when the self-test ran to its end (whatever verdict it reached), its checked release makes
   * one try per window and the clean-up that follows makes two more for a window still held: three in all. When
   * it stopped early (an operation raised), only the clean-up runs: two tries (`cleanup`).
   */
  checked: 3,
  cleanup: 2,
  /** Tries of freeHost for each page-locked buffer the probe allocated. */
  freeHost: 2,
} as const;

/**
 * The reference read on demand instead of held in memory: `read(offset, into)` fills `into` with the bytes at
 * `offset` of the same file region, read independently of the map (pread on the file), and throws when it
 * cannot. Each byte is read when a comparison needs it, a chunk at a time, so the probe holds a few MiB of
 * the reference instead of a whole region: the spec's `reference: host` is the Uint8Array form.
 */
export interface ReferenceReader {
  readonly length: number;
  read(offset: number, into: Uint8Array): void;
  /**
   * Optional: the same bytes as `read` would give, `length` of them at `offset` (at most REFERENCE_CHUNK), as a view
   * that holds until the next call of `view`: a reader that reads ahead (bindings/read-ahead.ts) hands out what it
   * has read, without a copy. The comparisons use it where it is there.
   */
  view?(offset: number, length: number): Uint8Array;
  /**
   * Optional: the round trips' comparisons are over (the timing reads no reference): what the reader holds to read
   * ahead may go, before the timing's page-locked buffer comes. A later view or read works as before.
   */
  rest?(): void;
}

/** The bytes of the same file region, read independently of the map: held in memory, or read on demand. */
export type Reference = Uint8Array | ReferenceReader;

/** The most of a ReferenceReader's bytes the probe holds at a time (a multiple of UNIT). */
export const REFERENCE_CHUNK = 4 * 1024 * 1024;

/**
 * The most of a window one round trip brings back (a multiple of UNIT): the round trips' page-locked buffer is
 * this size, not a window's, and a window goes through the device in as many round trips as it takes.
 */
export const ROUND_TRIP_CHUNK = REFERENCE_CHUNK;

/** One copy's samples, reduced: the best (least) and the median duration, in ms. */
export interface Timed {
  best: number;
  median: number;
}

/** The timed copies of one timing (suites/measure.ts wraps them; docs/measurement.md says why each is there). */
export interface CopyTimes {
  /** Upload of window 1, registered. */
  registered: Timed;
  /** Upload of the page-locked buffer alone (the control copy: same size, same device, no registration). */
  pageLocked: Timed;
  /** memcpy of window 1 into the page-locked buffer, then its upload: what registration would replace. */
  staged: Timed;
  /** The staged copy's memcpy, timed on its own: the host's memory, no device. */
  hostCopy: Timed;
  /** How many rounds were timed (best of that many each), the extra pairs included. */
  rounds: number;
  /** Every round's durations (ms), as taken: index i of each is round i; the staged and host copies are null in the extra rounds. */
  samples: RoundSamples;
  /** Rounds of the registered and page-locked pair taken after the first `runs`, and why (absent: none). */
  extra?: { rounds: number; why: string };
  /** The clock the uploads were timed on, and why the host's where the device has none. */
  clock: TimingClock;
}

/**
 * The clock a timing's uploads were read on: the device's (events around each copy on its stream), or the host's
 * (performance.now around the call) where the backend has no events or they could not be made (`why`). The host's
 * memcpy of the staged copy is host work: always the host's clock.
 */
export type TimingClock = { clock: 'device' } | { clock: 'host'; why: string };

/** Each round's durations (ms), paired as taken: the registered copy beside the page-locked copy of the same round. */
export interface RoundSamples {
  registeredMs: number[];
  pageLockedMs: number[];
  stagedMs: (number | null)[];
  hostCopyMs: (number | null)[];
  /**
   * On the device's clock: the same copies on the host's clock too (performance.now around the whole timed call,
   * the events' calls included), for comparing the two clocks (scripts/h200/clock.sh); absent on the host's clock.
   */
  hostRegisteredMs?: number[];
  hostPageLockedMs?: number[];
}

/**
 * More rounds of the registered and page-locked pair while the run's own interval on their ratio is wider than the
 * gate's decision needs (results/decision.ts): `wanted` says how many more from the pairs' logs so far; at most `most`.
 */
export interface AdaptiveRounds {
  most: number;
  wanted: (registeredMs: readonly number[], pageLockedMs: readonly number[]) => number;
  /** Why, for the results: the target the interval was held to. */
  target: string;
}

/**
 * Runs the timed copies: called with `time`, which makes `runs` interleaved rounds of the copies (each of `bytes`;
 * `rounds` others) and returns their figures, it returns the figures to keep. It may call `time` more than once (re-measuring while the machine
 * is busy) and do what it must around it (a host-wide lock, a look at the machine); what it throws stops the
 * self-test like any operation that raised. The model knows nothing of that: the default calls `time` once.
 */
export type TimingSection = (time: (rounds?: number) => CopyTimes, bytes: number) => CopyTimes;

export interface ProbeOptions {
  log?: (message: string) => void;
  /** Around the timed copies (default: time them once). */
  timingSection?: TimingSection;
  /** Fraction of the staged copy's speed the registered copy must reach (default 0.8). A margin for noise. */
  minRelativeSpeed?: number;
  /** Timed runs of each copy; the best of each is compared (default 7). */
  runs?: number;
  /** More rounds of the pair while the ratio's interval is too wide (default: none). */
  adaptive?: AdaptiveRounds;
  /** The clock, in milliseconds (default performance.now). */
  now?: () => number;
  /** Where registrations are recorded (default: the process table). */
  table?: RegistrationTable;
  /**
   * Drops a released window's pages from the process's memory (the file keeps them): called with window 2 once
   * its release succeeded, before the timing's page-locked buffer is allocated, so that the timed copies hold one
   * window of the region and one of page-locked memory, not two and one (default: nothing dropped). What it throws
   * is logged (a fatal error rethrown); the verdict does not rest on it.
   */
  dropReleased?: (window: Host) => void;
}

export type ReleaseOutcome = 'first' | 'retry' | 'never';

export interface WindowReport {
  /** Offset of the window in the map, and its length. */
  readonly offset: number;
  readonly length: number;
  /** Round trip compared with the reference: true equal, false differed, null not compared. */
  equal: boolean | null;
  /** First differing offset within the window when `equal` is false. */
  firstDifference: number | null;
  /** null when the window was never registered. */
  release: ReleaseOutcome | null;
  releaseTries: number;
}

export interface TimingReport {
  readonly bytes: number;
  readonly runs: number;
  readonly registeredMs: number;
  readonly stagedMs: number;
  readonly registeredMedianMs: number;
  readonly stagedMedianMs: number;
  readonly registeredGBps: number;
  readonly stagedGBps: number;
  /** registered speed / staged speed (best against best): the verdict's margin is judged on it. */
  readonly ratio: number;
  readonly minRelativeSpeed: number;
  /** The control copy: the page-locked buffer's upload, timed in the same rounds. */
  readonly pageLockedMs: number;
  readonly pageLockedMedianMs: number;
  /** null: the clock gave no valid duration for it (the verdict does not rest on it). */
  readonly pageLockedGBps: number | null;
  /** registered speed / page-locked speed (best against best): a busy machine slows both copies alike, a driver's registration only the first. */
  readonly pageLockedRatio: number | null;
  /** The host's memcpy of the window: the staged copy's first half, timed on its own. */
  readonly hostCopyMs: number;
  readonly hostCopyMedianMs: number;
  readonly hostCopyGBps: number | null;
  /** Every round's durations, paired as taken (results/decision.ts judges a figure with them). */
  readonly samples: RoundSamples;
  /** The rounds of the pair taken after the first `runs`, and why (absent: none). */
  readonly extra?: { rounds: number; why: string };
  /** The clock the uploads were timed on. */
  readonly clock: TimingClock;
}

export interface ProbeReport {
  verdict: Verdict;
  /** Bytes in each window (0 when the inputs were refused). */
  windowBytes: number;
  windows: WindowReport[];
  timing: TimingReport | null;
  /** Time spent in the register calls of the windows (ms, on the probe's clock; 0 when none was made). */
  registrationMs: number;
  /** Every line passed to `log`. */
  log: string[];
}

/** Each window: half the length rounded down to a multiple of 64 KiB. */
export function windowSize(length: number): number {
  return Math.floor(length / 2 / UNIT) * UNIT;
}

/** First offset at which a and b differ, or -1 when they are equal (a length mismatch differs at the end). */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  if (Buffer.compare(a.subarray(0, n), b.subarray(0, n)) !== 0) {
    for (let off = 0; off < n; off += UNIT) {
      const end = Math.min(n, off + UNIT);
      if (Buffer.compare(a.subarray(off, end), b.subarray(off, end)) !== 0) {
        for (let i = off; i < end; i++) if (a[i] !== b[i]) return i;
      }
    }
  }
  return a.length === b.length ? -1 : n;
}

/**
 * A window of a Reference: compared with bytes, or copied into bytes. A reader's bytes go through one buffer of
 * at most REFERENCE_CHUNK, made on first use and kept for the probe.
 */
class ReferenceWindows {
  private chunk: Uint8Array | undefined;
  constructor(private readonly ref: Reference) {}

  /** First offset at which `bytes` differs from the reference's bytes at `offset`, or -1. */
  diff(bytes: Uint8Array, offset: number): number {
    const ref = this.ref;
    if (ref instanceof Uint8Array) return firstDifference(bytes, ref.subarray(offset, offset + bytes.length));
    const step = this.chunk?.length ?? Math.min(REFERENCE_CHUNK, bytes.length);
    for (let at = 0; at < bytes.length; at += step) {
      const n = Math.min(step, bytes.length - at);
      const d = firstDifference(bytes.subarray(at, at + n), this.chunkAt(ref, offset + at, n));
      if (d >= 0) return at + d;
    }
    return -1;
  }

  /** The reference's bytes at `offset` into all of `into`. */
  copy(into: Uint8Array, offset: number): void {
    const ref = this.ref;
    if (ref instanceof Uint8Array) into.set(ref.subarray(offset, offset + into.length));
    else if (!ref.view) ref.read(offset, into);
    else for (let at = 0; at < into.length; at += REFERENCE_CHUNK) into.set(ref.view(offset + at, Math.min(REFERENCE_CHUNK, into.length - at)), at);
  }

  /** The comparisons are over for now: the reader's read-ahead memory and the one buffer go. */
  rest(): void {
    this.chunk = undefined;
    if (!(this.ref instanceof Uint8Array)) this.ref.rest?.();
  }

  /** `n` bytes of a reader at `offset`: its view, or read into the one buffer. */
  private chunkAt(ref: ReferenceReader, offset: number, n: number): Uint8Array {
    if (ref.view) return ref.view(offset, n);
    const chunk = (this.chunk ??= new Uint8Array(n));
    ref.read(offset, chunk.subarray(0, n));
    return chunk.subarray(0, n);
  }
}

/** Why map and reference cannot be probed, or undefined when they can. Reads no bytes. */
export function checkInputs(map: Host, reference: Reference): string | undefined {
  const length = map.bytes.length;
  if (reference.length !== length) return `map (${length} bytes) and reference (${reference.length} bytes) differ in length`;
  if (length < 2 * UNIT) return `the region is too small: ${length} bytes, at least two units of 64 KiB (${2 * UNIT} bytes) are needed`;
  if (map.address % BigInt(PAGE_CHECK) !== 0n) return `map does not start on a 4 KiB page boundary (address 0x${map.address.toString(16)})`;
  return undefined;
}

function report(verdict: Verdict, log: string[], windowBytes = 0): ProbeReport {
  return { verdict, windowBytes, windows: [], timing: null, registrationMs: 0, log };
}

/** The least and the median of `samples` (ms). */
function reduce(samples: number[]): Timed {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  // Math.min, not sorted[0]: a NaN sample makes the best NaN (no valid duration), whatever the sort did with it
  return { best: Math.min(...samples), median };
}

/** One upload timed: its duration on the timing's clock, and on the host's where that is the device's. */
interface UploadTime {
  ms: number;
  hostMs?: number;
}

/** What one round times: the registered and the page-locked upload, and the staged copy in its two halves. */
interface RoundCopies {
  registered: () => UploadTime;
  pageLocked: () => UploadTime;
  /** Host work: timed on the host's clock. */
  stageCopy: () => void;
  stageUpload: () => UploadTime;
}

/**
 * `runs` rounds, each timing the registered and the page-locked upload back to back (which goes first alternates,
 * so neither always follows the staged copy's memcpy), then the staged copy, its memcpy timed on its own as the
 * host copy: best and median of each. (The best, not the median of the rounds' ratios: on the H200 under 16
 * host-copy threads the rounds' ratios swung by 18% where best against best moved by 3%.) Alternating rounds
 * rather than N runs of one copy then N of the next, so that a change of load during the timing falls on every
 * copy alike; tinybench times one task's runs back to back, so this loop is written here. The uploads are timed
 * by `c` (on the device's clock, or the host's: `clock`); the staged copy is its memcpy on the host's clock plus
 * its upload.
 */
function timeRounds(c: RoundCopies, runs: number, now: () => number, clock: TimingClock, adaptive?: AdaptiveRounds): CopyTimes {
  const samples: RoundSamples = { registeredMs: [], pageLockedMs: [], stagedMs: [], hostCopyMs: [], ...(clock.clock === 'device' ? { hostRegisteredMs: [], hostPageLockedMs: [] } : {}) };
  const pair = (r: number): void => {
    let registered: UploadTime;
    let pageLocked: UploadTime;
    if (r % 2 === 0) {
      registered = c.registered();
      pageLocked = c.pageLocked();
    } else {
      pageLocked = c.pageLocked();
      registered = c.registered();
    }
    samples.registeredMs.push(registered.ms);
    samples.pageLockedMs.push(pageLocked.ms);
    if (registered.hostMs !== undefined) samples.hostRegisteredMs?.push(registered.hostMs);
    if (pageLocked.hostMs !== undefined) samples.hostPageLockedMs?.push(pageLocked.hostMs);
  };
  for (let r = 0; r < runs; r++) {
    pair(r);
    const t0 = now();
    c.stageCopy();
    const hostCopy = now() - t0;
    const upload = c.stageUpload();
    samples.stagedMs.push(hostCopy + upload.ms);
    samples.hostCopyMs.push(hostCopy);
  }
  // the pair alone (a few ms at 128 MiB), while the ratio's own interval is wider than the decision needs
  let extra = 0;
  while (adaptive && extra < adaptive.most && adaptive.wanted(samples.registeredMs, samples.pageLockedMs) > 0) {
    pair(runs + extra);
    samples.stagedMs.push(null);
    samples.hostCopyMs.push(null);
    extra++;
  }
  const valid = (xs: (number | null)[]): number[] => xs.filter((x): x is number => x !== null);
  return {
    registered: reduce(samples.registeredMs),
    pageLocked: reduce(samples.pageLockedMs),
    staged: reduce(valid(samples.stagedMs)),
    hostCopy: reduce(valid(samples.hostCopyMs)),
    rounds: runs + extra,
    samples,
    ...(extra > 0 ? { extra: { rounds: extra, why: `${extra} more round${extra === 1 ? '' : 's'} of the registered and page-locked pair: ${adaptive!.target}${extra === adaptive!.most ? ` (the most allowed, ${adaptive!.most})` : ''}` } } : {}),
    clock,
  };
}

/** How the log names each copy. */
const COPY_NAMES: Record<'registered' | 'pageLocked' | 'staged' | 'hostCopy', string> = { registered: 'registered', pageLocked: 'page-locked', staged: 'staged', hostCopy: 'host copy' };

const validDuration = (ms: number): boolean => Number.isFinite(ms) && ms > 0;
/** A copy's speed: its bytes / seconds / 10^9. */
export const gbps = (bytes: number, ms: number): number => bytes / (ms / 1000) / 1e9;

/**
 * The probe's log. `log`, for the self-test: a log that throws is an exception like any other there (the self-test
 * stops: Inconclusive). `say`, from the clean-up on: the releases must run whatever the log does, so what it throws
 * is kept, a fatal error rethrown once everything is released, any other turns the verdict into Inconclusive
 * (save Still_registered).
 */
class ProbeLog {
  readonly lines: string[] = [];
  failure: unknown;
  failed = false;
  constructor(private readonly options: ProbeOptions) {}

  readonly log = (message: string): void => {
    this.lines.push(message);
    this.options.log?.(message);
  };

  readonly say = (message: string): void => {
    this.lines.push(message);
    try {
      this.options.log?.(message);
    } catch (e) {
      if (!this.failed) this.failure = e;
      this.failed = true;
    }
  };

  trouble(): string {
    return `the log callback raised: ${errorText(this.failure)}`;
  }
}

/** The first fatal error seen while releasing: rethrown once everything is released. */
interface FatalSeen {
  error?: unknown;
}

/** The margin and the runs, checked: a RangeError for a value that makes no sense. */
function checkedSettings(options: ProbeOptions): { minRelativeSpeed: number; runs: number } {
  const minRelativeSpeed = options.minRelativeSpeed ?? DEFAULT_MIN_RELATIVE_SPEED;
  const runs = options.runs ?? DEFAULT_RUNS;
  if (!(Number.isFinite(minRelativeSpeed) && minRelativeSpeed > 0)) throw new RangeError(`minRelativeSpeed must be a positive number, not ${minRelativeSpeed}`);
  if (!(Number.isInteger(runs) && runs >= 1)) throw new RangeError(`runs must be a positive integer, not ${runs}`);
  return { minRelativeSpeed, runs };
}

/**
 * Why nothing may be registered, or undefined when the self-test may start. The reference is checked against the
 * map before anything is registered: a reference that differs is the caller's fault, and nothing is registered or
 * allocated. So is one that cannot be read, and a map that overlaps a range registered in this process.
 */
function refusalBeforeRegistering(map: Host, windows: readonly [Host, Host], refs: ReferenceWindows, table: RegistrationTable): string | undefined {
  const w = windows[0].bytes.length;
  try {
    for (const i of [0, 1] as const) {
      const d = refs.diff(windows[i].bytes, i * w);
      if (d >= 0) return `the reference differs from the map at offset ${i * w + d}: nothing was registered`;
    }
    // the reference's two windows, compared through the map's (just found equal to them): no second read
    if (firstDifference(windows[0].bytes, windows[1].bytes) < 0) {
      return 'the two windows hold the same bytes, so a stale copy could not be told from a good one: pick another region';
    }
  } catch (e) {
    if (isFatal(e)) throw e;
    return `the reference could not be read: ${errorText(e)}: nothing was registered`;
  }
  const live = table.overlapping(map.address, map.bytes.length);
  if (live.length > 0) return `the map overlaps ${live.length} range(s) registered in this process (the driver cannot tell): nothing was registered`;
  return undefined;
}

/** How far the self-test got: what it registered and allocated (for the clean-up), and its verdict. */
interface SelfTestRun {
  verdict: Verdict;
  registered: number[];
  buffers: Host[];
  reachedCheckedRelease: boolean;
  fatal: FatalSeen;
  /** What window 2's first try of its release threw, when it was made after the round trips and failed. */
  earlyFailure?: unknown;
}

const windowText = (win: WindowReport, i: number): string => `window ${i + 1} (offset ${win.offset}, ${win.length} bytes)`;

/** Allocates the page-locked buffer, registers the windows and runs the self-test; what raises stops it (Inconclusive). */
function registerAndTest(
  t: Ops,
  windows: readonly [Host, Host],
  refs: ReferenceWindows,
  result: ProbeReport,
  plog: ProbeLog,
  o: SelfTestOptions,
): SelfTestRun {
  const run: SelfTestRun = { verdict: Usable, registered: [], buffers: [], reachedCheckedRelease: false, fatal: {} };
  try {
    // The round trips' page-locked buffer: a chunk of a window (ROUND_TRIP_CHUNK), or a whole window when it is
    // smaller; the timing's, a window, is allocated once window 2 is released (selfTest)
    const pinned = t.allocHost(Math.min(result.windowBytes, ROUND_TRIP_CHUNK));
    run.buffers.push(pinned);
    const clock = o.now ?? (() => performance.now());
    for (const i of [0, 1] as const) {
      const before = clock();
      try {
        t.register(windows[i]);
      } finally {
        result.registrationMs += clock() - before;
      }
      run.registered.push(i);
    }
    run.verdict = selfTest(t, windows, refs, pinned, result, o, run, plog);
    run.reachedCheckedRelease = true;
  } catch (e) {
    if (isFatal(e)) run.fatal.error = e;
    run.verdict = Inconclusive(`an operation raised: ${errorText(e)}`);
    plog.say(`probe stopped early: ${errorText(e)}`);
  }
  return run;
}

/** Releases the registered windows in reverse order of registration, `tries` tries each: what was never released, and what only on a retry. */
function releaseWindows(
  t: Ops,
  windows: readonly [Host, Host],
  result: ProbeReport,
  run: SelfTestRun,
  plog: ProbeLog,
): { notReleased: string[]; retried: string[] } {
  const tries = run.reachedCheckedRelease ? RELEASE_TRIES.checked : RELEASE_TRIES.cleanup;
  const notReleased: string[] = [];
  const retried: string[] = [];
  for (const i of [...run.registered].reverse()) {
    const win = result.windows[i]!;
    const what = windowText(win, i);
    let last: unknown = i === 1 ? run.earlyFailure : undefined;
    // window 2's first try may have been made already, after the round trips (releaseSecondWindow)
    for (let k = win.releaseTries + 1; k <= tries; k++) {
      win.releaseTries = k;
      try {
        t.unregister(windows[i as 0 | 1]);
        win.release = k === 1 ? 'first' : 'retry';
        break;
      } catch (e) {
        if (isFatal(e)) run.fatal.error ??= e;
        last = e;
        plog.say(`unregister of ${what} failed (try ${k} of ${tries}): ${errorText(e)}`);
      }
    }
    if (win.release === null) {
      win.release = 'never';
      notReleased.push(`${what} after ${tries} tries (${errorText(last)})`);
    } else if (win.release === 'retry') {
      retried.push(what);
    }
  }
  return { notReleased, retried };
}

/** Frees the page-locked buffers, last allocated first, RELEASE_TRIES.freeHost tries each: what was freed late or never. */
function freeBuffers(t: Ops, run: SelfTestRun, plog: ProbeLog): string[] {
  const unfreed: string[] = [];
  for (const buffer of run.buffers.reverse()) {
    for (let k = 1; k <= RELEASE_TRIES.freeHost; k++) {
      try {
        t.freeHost(buffer);
        if (k > 1) unfreed.push(`a page-locked buffer of ${buffer.bytes.length} bytes was freed only on try ${k}`);
        break;
      } catch (e) {
        if (isFatal(e)) run.fatal.error ??= e;
        plog.say(`freeHost of a buffer of ${buffer.bytes.length} bytes failed (try ${k} of ${RELEASE_TRIES.freeHost}): ${errorText(e)}`);
        if (k === RELEASE_TRIES.freeHost) unfreed.push(`a page-locked buffer of ${buffer.bytes.length} bytes could not be freed (${errorText(e)})`);
      }
    }
  }
  return unfreed;
}

/** The verdict once everything is released: Still_registered for a window never released, else the self-test's, made Inconclusive by any trouble. */
function verdictAfterRelease(verdict: Verdict, released: { notReleased: string[]; retried: string[] }, unfreed: string[], plog: ProbeLog): Verdict {
  if (released.notReleased.length > 0) {
    return Still_registered(
      `could not release ${released.notReleased.join('; ')}; the range stays registered: never unmap, register again or probe again the map in this process`,
    );
  }
  const troubles = [
    ...released.retried.map((what) => `the release of ${what} failed and succeeded on a retry`),
    ...unfreed,
    ...(plog.failed ? [plog.trouble()] : []),
  ];
  return troubles.length > 0 ? inconclusiveAfter(verdict, troubles) : verdict;
}

/** Logs the verdict; when that line itself raises, everything is released, so only the verdict changes (and is logged again). */
function logVerdict(result: ProbeReport, plog: ProbeLog): void {
  const failedBefore = plog.failed;
  plog.say(`verdict: ${verdictToString(result.verdict)}`);
  if (plog.failed && !failedBefore) {
    if (isFatal(plog.failure)) throw plog.failure;
    if (result.verdict.kind !== 'Still_registered') {
      result.verdict = inconclusiveAfter(result.verdict, [plog.trouble()]);
      plog.lines.push(`verdict: ${verdictToString(result.verdict)}`);
    }
  }
}

/**
 * The self-test without the static check, with everything it saw. `map` is registered in two disjoint windows,
 * copied to the device and back, compared with `reference` (the same file region read independently), timed
 * against a staged copy, and released.
 */
export function probeWithReport(ops: Ops, map: Host, reference: Reference, options: ProbeOptions = {}): ProbeReport {
  const plog = new ProbeLog(options);
  const { minRelativeSpeed, runs } = checkedSettings(options);
  const table = options.table ?? registrations;

  const invalid = checkInputs(map, reference);
  if (invalid !== undefined) return report(Inconclusive(invalid), plog.lines);
  const w = windowSize(map.bytes.length);
  const windows = [hostSlice(map, 0, w), hostSlice(map, w, w)] as const;
  const refs = new ReferenceWindows(reference);
  const refused = refusalBeforeRegistering(map, windows, refs, table);
  if (refused !== undefined) return report(Inconclusive(refused), plog.lines, w);

  const result: ProbeReport = {
    verdict: Usable,
    windowBytes: w,
    windows: windows.map((_, i) => ({ offset: i * w, length: w, equal: null, firstDifference: null, release: null, releaseTries: 0 })),
    timing: null,
    registrationMs: 0,
    log: plog.lines,
  };
  const t = trackedOps(ops, table);
  const run = registerAndTest(t, windows, refs, result, plog, { runs, minRelativeSpeed, now: options.now, log: plog.log, timingSection: options.timingSection, adaptive: options.adaptive, dropReleased: options.dropReleased });

  // Release whatever happened: windows in reverse order of registration, then the buffers.
  const released = releaseWindows(t, windows, result, run, plog);
  const unfreed = freeBuffers(t, run, plog);
  if (plog.failed && isFatal(plog.failure)) run.fatal.error ??= plog.failure;
  if (run.fatal.error !== undefined) throw run.fatal.error;
  result.verdict = verdictAfterRelease(run.verdict, released, unfreed, plog);
  logVerdict(result, plog);
  return result;
}

/** Inconclusive for `troubles` (a release retried, a buffer not freed, the log raised), keeping the verdict reached before. */
function inconclusiveAfter(verdict: Verdict, troubles: string[]): Verdict {
  const before = verdict.kind === 'Inconclusive' ? `${verdict.reason}; ` : verdict.kind === 'Usable' ? '' : `${verdictToString(verdict)} before: `;
  return Inconclusive(before + troubles.join('; '));
}

interface SelfTestOptions {
  runs: number;
  minRelativeSpeed: number;
  now: (() => number) | undefined;
  log: (message: string) => void;
  timingSection: TimingSection | undefined;
  adaptive: AdaptiveRounds | undefined;
  dropReleased: ProbeOptions['dropReleased'];
}

/**
 * Round trips each window (roundTripWindow: a chunk at a time) into the same buffer, first filled with the OTHER
 * window's bytes: a copy that does nothing, or serves the previous window again, leaves bytes that differ from the
 * reference. Refused(Wrong_bytes) when a window came back wrong (Inconclusive when the map itself changed),
 * undefined when both came back equal.
 */
function roundTripVerdict(t: Ops, windows: readonly [Host, Host], refs: ReferenceWindows, pinned: Host, result: ProbeReport, log: (message: string) => void): Verdict | undefined {
  const w = windows[0].bytes.length;
  for (const i of [0, 1] as const) {
    const d = roundTripWindow(t, windows, i, refs, pinned);
    result.windows[i]!.equal = d < 0;
    result.windows[i]!.firstDifference = d < 0 ? null : d;
    log(`window ${i + 1}: ${d < 0 ? 'bytes equal' : `bytes differ from offset ${d}`}`);
  }
  if (result.windows.some((w) => w.equal === false)) {
    for (const i of [0, 1] as const) {
      const d = refs.diff(windows[i].bytes, i * w);
      if (d >= 0) return Inconclusive(`the map changed during the probe (window ${i + 1} differs from the reference at offset ${d})`);
    }
    return Refused(Wrong_bytes);
  }
  return undefined;
}

/**
 * Round trips each window through the device, a chunk of `pinned`'s size at a time, into that buffer, first filled
 * with the OTHER window's bytes at the same offset: a copy that does nothing, or serves the previous chunk or
 * window again, leaves bytes that differ from the reference. The first difference in the window, or -1.
 */
function roundTripWindow(t: Ops, windows: readonly [Host, Host], i: 0 | 1, refs: ReferenceWindows, pinned: Host): number {
  const w = windows[0].bytes.length;
  const c = pinned.bytes.length;
  for (let at = 0; at < w; at += c) {
    const n = Math.min(c, w - at);
    const into = n === c ? pinned : hostSlice(pinned, 0, n);
    refs.copy(into.bytes, (1 - i) * w + at);
    t.roundTrip(hostSlice(windows[i], at, n), into);
    const d = refs.diff(into.bytes, i * w + at);
    if (d >= 0) return at + d;
  }
  return -1;
}

/**
 * Window 2's checked release, as soon as the round trips found both windows right: the timed copies read window 1
 * alone, so window 2 is released before them (still the reverse order of registration) and its pages leave the
 * process's memory (dropReleased) before the timing's page-locked buffer is allocated. One try here; a window
 * still held gets the rest of its tries at the end, with window 1 (releaseWindows), and is never dropped. Logged
 * as the releases are (`say`): a log that raises does not stop them.
 */
function releaseSecondWindow(t: Ops, windows: readonly [Host, Host], result: ProbeReport, run: SelfTestRun, plog: ProbeLog, drop: ProbeOptions['dropReleased']): void {
  const win = result.windows[1]!;
  win.releaseTries = 1;
  try {
    t.unregister(windows[1]);
  } catch (e) {
    if (isFatal(e)) throw e;
    run.earlyFailure = e;
    plog.say(`unregister of ${windowText(win, 1)} failed (try 1 of ${RELEASE_TRIES.checked}): ${errorText(e)}`);
    return;
  }
  win.release = 'first';
  run.registered = run.registered.filter((i) => i !== 1);
  try {
    drop?.(windows[1]);
  } catch (e) {
    if (isFatal(e)) throw e;
    plog.say(`window 2's pages were not dropped from memory: ${errorText(e)}`);
  }
}

/**
 * The device's clock of `t` for one timing, or why the host's times it: the backend has none, or its events could
 * not be made (the driver's error, logged; a fatal error is rethrown).
 */
function openClock(t: Ops, log: (message: string) => void): { device?: DeviceClock; clock: TimingClock } {
  if (!t.deviceClock) return { clock: { clock: 'host', why: 'the backend has no device clock (events)' } };
  try {
    return { device: t.deviceClock(), clock: { clock: 'device' } };
  } catch (e) {
    if (isFatal(e)) throw e;
    const why = `the device clock could not be opened: ${errorText(e)}`;
    log(`${why}: the copies are timed on the host's clock`);
    return { clock: { clock: 'host', why } };
  }
}

/** Gives the device clock back; a failure there is logged (the figures were read before it), a fatal error rethrown. */
function closeClock(device: DeviceClock | undefined, log: (message: string) => void): void {
  try {
    device?.close();
  } catch (e) {
    if (isFatal(e)) throw e;
    log(`the device clock's events could not be given back: ${errorText(e)}`);
  }
}

/** The timed copies of window 1, through the timing section when there is one; each timing on the device's clock where it has one. */
function timeCopies(t: Ops, window: Host, pinned: Host, o: SelfTestOptions): CopyTimes {
  const bytes = window.bytes.length;
  const buffer = pinned.bytes;
  const now = o.now ?? (() => performance.now());
  const time = (rounds = o.runs): CopyTimes => {
    const { device, clock } = openClock(t, o.log);
    const upload = (host: Host) => (): UploadTime => {
      const t0 = now();
      if (!device) {
        t.upload(host);
        return { ms: now() - t0 };
      }
      const ms = device.timeUpload(host);
      return { ms, hostMs: now() - t0 };
    };
    try {
      return timeRounds({ registered: upload(window), pageLocked: upload(pinned), stageCopy: () => buffer.set(window.bytes), stageUpload: upload(pinned) }, rounds, now, clock, o.adaptive);
    } finally {
      closeClock(device, o.log);
    }
  };
  return o.timingSection ? o.timingSection(time, bytes) : time();
}

/** The timing's figures; the registered and staged copies' durations must be valid (the caller checks). */
function timingReport(bytes: number, times: CopyTimes, minRelativeSpeed: number): TimingReport {
  const { registered: reg, staged, pageLocked, hostCopy } = times;
  const registeredGBps = gbps(bytes, reg.best);
  const stagedGBps = gbps(bytes, staged.best);
  const figure = (t: Timed): number | null => (validDuration(t.best) ? gbps(bytes, t.best) : null);
  const pageLockedGBps = figure(pageLocked);
  return {
    bytes,
    runs: times.rounds,
    registeredMs: reg.best,
    stagedMs: staged.best,
    registeredMedianMs: reg.median,
    stagedMedianMs: staged.median,
    registeredGBps,
    stagedGBps,
    ratio: registeredGBps / stagedGBps,
    minRelativeSpeed,
    pageLockedMs: pageLocked.best,
    pageLockedMedianMs: pageLocked.median,
    pageLockedGBps,
    pageLockedRatio: pageLockedGBps === null ? null : registeredGBps / pageLockedGBps,
    hostCopyMs: hostCopy.best,
    hostCopyMedianMs: hostCopy.median,
    hostCopyGBps: figure(hostCopy),
    samples: times.samples,
    ...(times.extra ? { extra: times.extra } : {}),
    clock: times.clock,
  };
}

function selfTest(
  t: Ops,
  windows: readonly [Host, Host],
  refs: ReferenceWindows,
  pinned: Host,
  result: ProbeReport,
  o: SelfTestOptions,
  run: SelfTestRun,
  plog: ProbeLog,
): Verdict {
  const wrong = roundTripVerdict(t, windows, refs, pinned, result, o.log);
  if (wrong !== undefined) return wrong;
  // the reference is not read again: what its reader holds goes before the timing's buffer comes
  refs.rest();

  releaseSecondWindow(t, windows, result, run, plog, o.dropReleased);
  // the timing's page-locked buffer, a window (the control copy and the staged copy are one copy of a window each)
  let staging = pinned;
  if (pinned.bytes.length !== windows[0].bytes.length) {
    staging = t.allocHost(windows[0].bytes.length);
    run.buffers.push(staging);
  }
  const times = timeCopies(t, windows[0], staging, o);
  // the verdict rests on the registered and staged copies alone (spec: probe_with); the control figures are
  // reported, and left out (null) when their clock gave no valid duration
  const invalid = (['registered', 'staged'] as const).filter((k) => !validDuration(times[k].best));
  if (invalid.length > 0) {
    return Inconclusive(`the clock gave no valid duration (${invalid.map((k) => `${COPY_NAMES[k]} ${times[k].best} ms`).join(', ')})`);
  }
  const timing = timingReport(windows[0].bytes.length, times, o.minRelativeSpeed);
  result.timing = timing;
  const { registeredGBps, stagedGBps, ratio } = timing;
  const shown = (x: number | null, digits = 2): string => (x === null ? '-' : x.toFixed(digits));
  o.log(
    `registered ${registeredGBps.toFixed(2)} GB/s, staged ${stagedGBps.toFixed(2)} GB/s (best of ${o.runs}), ratio ${ratio.toFixed(3)}; ` +
      `page-locked ${shown(timing.pageLockedGBps)} GB/s (registered / page-locked ${shown(timing.pageLockedRatio, 3)}), host copy ${shown(timing.hostCopyGBps)} GB/s`,
  );
  if (ratio >= o.minRelativeSpeed) return Usable;
  return Too_slow(
    `registered ${registeredGBps.toFixed(2)} GB/s is ${ratio.toFixed(3)} of staged ${stagedGBps.toFixed(2)} GB/s, below the margin ${o.minRelativeSpeed}`,
  );
}

/** The self-test's verdict (spec: probe_with). */
export function probeWith(ops: Ops, map: Host, reference: Reference, options: ProbeOptions = {}): Verdict {
  return probeWithReport(ops, map, reference, options).verdict;
}

/** Thrown by withDeviceOps for a device whose static verdict is Refused: registration is unreachable. */
export class RegistrationUnreachable extends Error {
  constructor(
    readonly device: Device,
    readonly verdict: Verdict,
  ) {
    super(`${device.id}: registration is unreachable on a device whose static verdict is ${verdictToString(verdict)}`);
    this.name = 'RegistrationUnreachable';
  }
}

function openOps<T>(device: Device, bytes: number, table: RegistrationTable, f: (ops: Ops) => T): T {
  if (!device.withOps) throw new Error(`${device.id}: the ${device.framework} backend has no registration ops`);
  return device.withOps(bytes, (ops) => f(trackedOps(ops, table)));
}

/**
 * Runs f on the device's registration ops (recorded in `table`), with a device buffer of `bytes` bytes that is
 * released when f returns or throws. Throws RegistrationUnreachable, before any op exists, for a device whose
 * static verdict is Refused.
 */
export function withDeviceOps<T>(device: Device, bytes: number, f: (ops: Ops) => T, table: RegistrationTable = registrations): T {
  const s = staticVerdict(device);
  if (s.kind === 'Decided' && s.verdict.kind === 'Refused') throw new RegistrationUnreachable(device, s.verdict);
  return openOps(device, bytes, table, f);
}

/**
 * The capability with everything the self-test saw: the static verdict, then, if it asks for it, the self-test
 * on the device. A device decided statically is answered without reading map or reference and without any op.
 */
export function probeReport(device: Device, map: Host, reference: Reference, options: ProbeOptions = {}): ProbeReport {
  const s = staticVerdict(device);
  if (s.kind === 'Decided') return report(s.verdict, []);
  const invalid = checkInputs(map, reference);
  if (invalid !== undefined) return report(Inconclusive(invalid), []);
  try {
    return openOps(device, windowSize(map.bytes.length), options.table ?? registrations, (ops) => probeWithReport(ops, map, reference, options));
  } catch (e) {
    if (isFatal(e)) throw e;
    return report(Inconclusive(`the device's ops could not be opened or closed: ${errorText(e)}`), []);
  }
}

/** The capability (spec: probe). */
export function probe(device: Device, map: Host, reference: Reference, options: ProbeOptions = {}): Verdict {
  return probeReport(device, map, reference, options).verdict;
}
