// Around the probe's timed copies (src/probe.ts, TimingSection): the host-wide lock that keeps the timed copies of
// every device and every run on the host from overlapping, a look at the machine before and after them, and, on a
// busy machine whose figures would have regressed against the baseline, waiting for quiet (--quiet-wait),
// re-measuring. What was seen goes to the results (`load`); the gate judges the absolute figures only where it
// was quiet (results/compare.ts). docs/measurement.md says what "busy" means and why these thresholds.
import { type GpuUsersMonitor, type GpuUsersSample, openGpuUsers } from '../bindings/gpu-users.js';
import { readPressure } from '../bindings/pressure.js';
import { HostFault, isHostFault } from '../bindings/host-fault.js';
import { TimingLockTimeout, acquireTimingLock } from '../bindings/timing-lock.js';
import { CPU_PRESSURE_REASON, exceedsDrop, excusesRatio } from '../results/compare.js';
import type { DeviceLoad, GpuUser } from '../results/types.js';
import { type AdaptiveRounds, type CopyTimes, type TimingSection, gbps } from '../src/probe.js';
import { ADAPTIVE_MOST_FACTOR, DEFAULT_CONFIDENCE, adaptiveTarget, roundsWanted } from '../results/decision.js';

/** From what the machine counts as busy around the timed copies (docs/measurement.md says why these thresholds). */
export const BUSY_THRESHOLDS = {
  /** Link traffic not ours (MB/s, both directions) from which the link counts as busy: 2% of a Gen5 x16 link. */
  linkMBps: 1000,
  /**
   * The host's memcpy under this share of the baseline's: other copies load host memory. On the H200, 16 host-copy
   * threads put it at 0.25 to 0.55 of the baseline's, while quiet re-runs moved it between 0.81 and 1.2.
   */
  hostCopyShare: 0.7,
  /**
   * The host copy is held against the baseline's only for windows of at least this size: a smaller one is copied
   * from the CPU's caches as much as from memory, and moves with whatever else uses them (a 4 MiB window's copy
   * swung by more than 30% on the project's 2-core machine while its tests ran), which says nothing of host memory.
   */
  hostCopyMinBytes: 64 * 1024 * 1024,
  /** Pressure stall (some, avg10, %) from which the host counts as busy. */
  cpuPressure: 80,
  memoryPressure: 20,
} as const;

/** Waiting for quiet (--quiet-wait) on a busy machine whose figures would regress. */
export const QUIET_WAIT = {
  /** How long a busy machine is waited for before the copies are timed again. */
  pollMs: 2000,
  /** --quiet-wait's default: a minute, what a CI job can spare before it says the host was busy. */
  defaultS: 60,
  /** --quiet-wait's most: an hour. A machine busy for longer is not waited for by a check, it is a host to fix. */
  maxS: 3600,
  /**
   * Each timing after the first makes this many times --runs rounds: the best of more rounds comes nearer the
   * machine's quiet moments, for both copies alike.
   */
  roundsFactor: 4,
} as const;
/**
 * The least a run waits for the timing lock, whatever --quiet-wait says: the lock is taken in turn by every device
 * of the run (eight devices' timed copies took 15 s in all on this project's 2-core machine, docs/measurement.md).
 */
export const LOCK_WAIT_MIN_S = 20;

/**
 * A wait for the host, as the section tells its runner: started (what it waits for, and the most it may take), or
 * over. The command's watchdog does not count it against the check's --timeout (cli/orchestrate.ts).
 */
export type HostWait = { waiting: true; what: string; limitMs: number } | { waiting: false };

/** What the device's runner knows of the gate that will judge it (from the command: --quiet-wait, --max-drop, the baseline). */
export interface QuietOptions {
  waitS: number;
  maxDrop: number;
  /** The baseline's figures of this device, when it has them. */
  baseline?: { registeredGBps: number; hostCopyGBps?: number; pageLockedRatio?: number };
}

/**
 * More rounds of the registered and page-locked pair while the run's own interval on their ratio is wider than the
 * gate's decision at --max-drop needs (results/decision.ts, adaptiveTarget), at most ADAPTIVE_MOST_FACTOR x --runs.
 */
export function adaptiveRounds(runs: number, maxDrop: number): AdaptiveRounds {
  const target = adaptiveTarget(maxDrop);
  return {
    most: ADAPTIVE_MOST_FACTOR * runs,
    wanted: (registered, pageLocked) => roundsWanted(registered, pageLocked, target),
    target: `the ratio's own interval held within ±${((Math.exp(target) - 1) * 100).toFixed(1)}% at ${DEFAULT_CONFIDENCE * 100}% (a quarter of --max-drop ${(maxDrop * 100).toFixed(1)}%)`,
  };
}

/** One look at the machine: the GPU's other users (when it can be looked at) and the kernel's pressure figures. */
export interface Look {
  gpu?: GpuUsersSample;
  gpuError?: string;
  pressure: { cpuSome: number | null; memorySome: number | null };
}

const fixed = (x: number, digits = 1): string => x.toFixed(digits);

/** The GPU's other users seen in any of `looks`, each once. */
export function usersOf(looks: readonly Look[]): GpuUser[] {
  const byPid = new Map<number, GpuUser>();
  for (const l of looks) for (const p of l.gpu?.processes ?? []) if (!byPid.has(p.pid)) byPid.set(p.pid, { pid: p.pid, name: p.name, usedMiB: p.usedMiB });
  return [...byPid.values()];
}

/** The most link traffic (MB/s, both ways) seen in `looks`; null when no look could read it. */
export function linkTraffic(looks: readonly Look[]): number | null {
  const seen = looks.flatMap((l) => (l.gpu && (l.gpu.pcieRxMBps !== null || l.gpu.pcieTxMBps !== null) ? [(l.gpu.pcieRxMBps ?? 0) + (l.gpu.pcieTxMBps ?? 0)] : []));
  return seen.length ? Math.max(...seen) : null;
}

/** How many of the GPU's other processes a reason names (300 made a reason of 8,000 characters); `processes` holds them all. */
export const NAMED_PROCESSES = 10;

const named = (users: readonly GpuUser[]): string => {
  const shown = users.slice(0, NAMED_PROCESSES).map((u) => `pid ${u.pid}${u.name ? ` ${u.name}` : ''}${u.usedMiB !== null ? ` (${fixed(u.usedMiB, 0)} MiB)` : ''}`).join(', ');
  return users.length > NAMED_PROCESSES ? `${shown} and ${users.length - NAMED_PROCESSES} more` : shown;
};

/**
 * Why the machine is busy, from the looks taken around one timing and its host copy; empty when it is quiet. Another
 * process on the GPU makes it busy when the link carries traffic that is not ours, or when the traffic cannot be read
 * (a process there may be copying); one that holds a context and moves nothing does not.
 */
export function busyReasons(looks: readonly Look[], hostCopyGBps: number | null, baselineHostCopyGBps: number | undefined): string[] {
  const why: string[] = [];
  const users = usersOf(looks);
  const traffic = linkTraffic(looks);
  const on = users.length ? `; on the GPU: ${named(users)}` : '';
  if (traffic !== null && traffic >= BUSY_THRESHOLDS.linkMBps) why.push(`${fixed(traffic / 1000)} GB/s of PCIe traffic not ours${on}`);
  else if (traffic === null && users.length) why.push(`another process on the GPU (${named(users)}), and its link traffic cannot be read`);
  if (hostCopyGBps !== null && baselineHostCopyGBps !== undefined && hostCopyGBps < baselineHostCopyGBps * BUSY_THRESHOLDS.hostCopyShare) {
    why.push(`the host's memcpy ran at ${fixed(hostCopyGBps, 2)} GB/s, under ${BUSY_THRESHOLDS.hostCopyShare * 100}% of the baseline's ${fixed(baselineHostCopyGBps, 2)} GB/s: other copies load host memory`);
  }
  const cpu = Math.max(0, ...looks.map((l) => l.pressure.cpuSome ?? 0));
  const memory = Math.max(0, ...looks.map((l) => l.pressure.memorySome ?? 0));
  if (cpu >= BUSY_THRESHOLDS.cpuPressure) why.push(`${CPU_PRESSURE_REASON} ${fixed(cpu)}% (some, avg10): more runnable threads than cores`);
  if (memory >= BUSY_THRESHOLDS.memoryPressure) why.push(`memory pressure ${fixed(memory)}% (some, avg10)`);
  return why;
}

/** Sleeps the thread (the probe is synchronous: nothing else of this process runs meanwhile). */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export interface MeasureOptions {
  deviceId: string;
  /** --runs: the rounds of a timing on a quiet machine. */
  runs: number;
  backend: string;
  pciBusId: string | null;
  quiet: QuietOptions;
  log: (line: string) => void;
  /** Hears each wait for the host (the lock, quiet) as it starts and ends: the check's time stops meanwhile. */
  onWait?: (w: HostWait) => void;
}

/** The lock, taken for one timing within `limitMs`: a holder that keeps it longer is the host's fault, named. */
function takeLock(deviceId: string, limitMs: number, shared = false): ReturnType<typeof acquireTimingLock> {
  try {
    return acquireTimingLock({ timeoutMs: limitMs, label: `${deviceId} of pid ${process.pid}`, shared });
  } catch (e) {
    if (!(e instanceof TimingLockTimeout)) throw e;
    throw new HostFault(`the timing lock ${e.path} was still held after ${fixed(limitMs / 1000, 0)} s of waiting, ${e.by}: the copies were not timed`);
  }
}

/** The machine looked at around timings: the GPU's other users through its vendor's management library (opened here, closed by `close`) and the kernel's pressure. */
export interface Looker {
  look(): Look;
  /** The library the GPU was looked at through; null with `note` saying why it could not be. */
  readonly source: string | null;
  readonly note?: string;
  close(): void;
}

export function openLooker(backend: string, pciBusId: string | null): Looker {
  const monitor: GpuUsersMonitor | { note: string } = pciBusId ? openGpuUsers(backend, pciBusId) : { note: 'the device has no PCI bus id' };
  const exclude = [process.pid, process.ppid];
  return {
    look() {
      const p = readPressure();
      const pressure = { cpuSome: p.cpu?.someAvg10 ?? null, memorySome: p.memory?.someAvg10 ?? null };
      if ('note' in monitor) return { pressure };
      try {
        return { gpu: monitor.sample(exclude), pressure };
      } catch (e) {
        return { gpuError: e instanceof Error ? e.message : String(e), pressure };
      }
    },
    source: 'note' in monitor ? null : monitor.source,
    ...('note' in monitor ? { note: monitor.note } : {}),
    close() {
      if (!('note' in monitor)) monitor.close();
    },
  };
}

/** One timing under the host-wide timing lock, and the looks taken just before the lock is waited for and just after it is let go. */
export interface LockedTiming<T> {
  value: T;
  looks: [Look, Look];
  lockWaitMs: number;
  timedMs: number;
}

/**
 * `f` under the timing lock (waited for at most `limitMs`: longer is the host's fault, HostFault), the machine
 * looked at outside it: the lock holds the timed copies alone (NVML's PCIe counters sample over 20 ms, both ways at
 * once, 40 ms a timing, which the other devices of the run would otherwise wait for). `waiting` hears the wait for the lock.
 * `shared`: the lock held shared (timedUnderLock says when), else exclusive, as the probe's timed copies hold it.
 */
export function lockedTiming<T>(deviceId: string, limitMs: number, looker: Looker, f: () => T, waiting?: { start(): void; end(): void }, shared = false): LockedTiming<T> {
  const before = looker.look();
  waiting?.start();
  let lock: ReturnType<typeof takeLock>;
  try {
    lock = takeLock(deviceId, limitMs, shared);
  } finally {
    // a lock held past its wait is the host's fault, raised: the wait ends with it all the same
    waiting?.end();
  }
  let value: T;
  const t0 = performance.now();
  try {
    value = f();
  } finally {
    lock.release();
  }
  const timedMs = performance.now() - t0;
  return { value, looks: [before, looker.look()], lockWaitMs: lock.waitedMs, timedMs };
}

/** A looker that looks at nothing: no management library opened, no pressure read; every look quiet. */
const NOT_LOOKING: Looker = { look: () => ({ pressure: { cpuSome: null, memorySome: null } }), source: null, note: 'not looked at', close() {} };

/**
 * `f`'s timed copies under the same timing lock and looks as the probe's (for the checks that time copies of their
 * own: suites/hazards/reference-copies.ts), why the machine was busy around them (empty: quiet) and how long the lock
 * was waited for. The lock is waited for as the probe's is (--quiet-wait, at least LOCK_WAIT_MIN_S). `look: false`
 * times them under the lock without looking at the machine (busy is then empty): the looks cost an estimated 90 ms
 * on the H200 (the management library's start, and its PCIe counters sampled over 20 ms, before and
 * after), which a check spends only where a figure would fail without them. `shared: true` holds the lock shared:
 * the copies then never run beside a probe's timed copies (which hold it exclusive), but may run beside the other
 * shared holders' work (the truncation children's driver starts, other devices' shared timings), for a check whose
 * judgement is a ratio of copies interleaved in the same rounds, which such company slows alike.
 */
export function timedUnderLock<T>(o: { deviceId: string; backend: string; pciBusId: string | null; waitS: number; onWait?: (w: HostWait) => void; look?: boolean; shared?: boolean }, f: () => T): { value: T; busy: string[]; lockWaitMs: number } {
  const looker = o.look === false ? NOT_LOOKING : openLooker(o.backend, o.pciBusId);
  const limitMs = Math.max(o.waitS, LOCK_WAIT_MIN_S) * 1000;
  try {
    // the wait for the lock is told as the probe's is: the command's watchdog stops counting the check's --timeout
    const t = lockedTiming(
      o.deviceId,
      limitMs,
      looker,
      f,
      {
        start: () => o.onWait?.({ waiting: true, what: 'the timing lock', limitMs }),
        end: () => o.onWait?.({ waiting: false }),
      },
      o.shared === true,
    );
    return { value: t.value, busy: busyReasons(t.looks, null, undefined), lockWaitMs: t.lockWaitMs };
  } finally {
    looker.close();
  }
}

/**
 * The section around the timed copies of one device, and what it saw (`load()`, after the probe), and the host's
 * fault that stopped it (`fault()`: the timing lock held too long, or not a lock of ours), which the probe turned
 * into Inconclusive and the caller must raise instead. The GPU is looked at through its vendor's management
 * library, opened once here and closed when the section is done. The waits for the host (for the lock before the
 * first timing; for quiet, from the first pause to the end) are told to `onWait`.
 */
export function measureSection(o: MeasureOptions): { section: TimingSection; load: () => DeviceLoad | undefined; fault: () => HostFault | undefined } {
  let load: DeviceLoad | undefined;
  let fault: HostFault | undefined;
  // how long the lock is waited for: --quiet-wait (another run timing is the machine busy), at least LOCK_WAIT_MIN_S
  const lockLimitMs = Math.max(o.quiet.waitS, LOCK_WAIT_MIN_S) * 1000;
  const section: TimingSection = (time, bytes) => {
    const looker = openLooker(o.backend, o.pciBusId);
    /** The wait for the host going on (told to onWait), if any: the lock's, or quiet's, which lasts to the end. */
    let waiting: string | undefined;
    const startWait = (what: string, limitMs: number): void => {
      if (waiting !== undefined) return;
      waiting = what;
      o.onWait?.({ waiting: true, what, limitMs });
    };
    const endWait = (): void => {
      if (waiting === undefined) return;
      waiting = undefined;
      o.onWait?.({ waiting: false });
    };
    const started = performance.now();
    let attempts = 0;
    let lockWaitMs = 0;
    let waitedForQuietMs = 0;
    let timedMs = 0;
    try {
      for (;;) {
        attempts += 1;
        // the first wait for the lock is the host's; later ones fall within the wait for quiet
        const timing = lockedTiming(o.deviceId, lockLimitMs, looker, () => time(attempts === 1 ? o.runs : o.runs * QUIET_WAIT.roundsFactor), {
          start: () => startWait('the timing lock', lockLimitMs),
          end: () => {
            if (waiting === 'the timing lock') endWait();
          },
        });
        lockWaitMs += timing.lockWaitMs;
        timedMs += timing.timedMs;
        const times: CopyTimes = timing.value;
        const looks: Look[] = timing.looks;
        const hostCopy = times.hostCopy.best > 0 && Number.isFinite(times.hostCopy.best) ? gbps(bytes, times.hostCopy.best) : null;
        const baseline = o.quiet.baseline;
        const why = busyReasons(looks, bytes >= BUSY_THRESHOLDS.hostCopyMinBytes ? hostCopy : null, baseline?.hostCopyGBps);
        const gpuNote = looker.note ?? looks.find((l) => l.gpuError)?.gpuError;
        load = {
          busy: why.length > 0,
          why,
          attempts,
          waitedForQuietMs,
          lockWaitMs,
          timedMs,
          quietWaitS: o.quiet.waitS,
          processes: usersOf(looks),
          linkMBps: linkTraffic(looks),
          monitor: looker.source,
          ...(gpuNote ? { monitorNote: gpuNote } : {}),
          hostCopyGBps: hostCopy,
          ...(baseline?.hostCopyGBps !== undefined ? { baselineHostCopyGBps: baseline.hostCopyGBps } : {}),
          pressure: looks[looks.length - 1]!.pressure,
        };
        // busy only matters to figures that would regress: a busy machine can only make them lower (registered /
        // page-locked too: on the H200 a busy machine moved it by up to 12% where it moved the copies by 50%); a
        // fall of that ratio is never excused by CPU pressure alone (excusesRatio), so no quiet is waited for it
        const registered = gbps(bytes, times.registered.best);
        const lockedMs = times.pageLocked.best;
        const ratio = lockedMs > 0 && Number.isFinite(lockedMs) && times.registered.best > 0 ? lockedMs / times.registered.best : null;
        const wouldRegress =
          baseline !== undefined &&
          (exceedsDrop(baseline.registeredGBps, registered, o.quiet.maxDrop) ||
            (baseline.pageLockedRatio !== undefined && ratio !== null && excusesRatio(load) && exceedsDrop(baseline.pageLockedRatio, ratio, o.quiet.maxDrop)));
        const left = o.quiet.waitS * 1000 - (performance.now() - started);
        if (why.length === 0 || !wouldRegress || left <= 0) return times;
        // from here to the end, the host's time: the pauses, the timings again (of a busy machine) and their locks
        startWait('quiet', left + lockLimitMs);
        o.log(`the machine is busy (${why.join('; ')}): registered ${fixed(registered, 2)} GB/s against the baseline's ${fixed(baseline.registeredGBps, 2)}; timing again in ${fixed(Math.min(QUIET_WAIT.pollMs, left) / 1000)} s (${fixed(left / 1000, 0)} s left of --quiet-wait)`);
        const pause = Math.min(QUIET_WAIT.pollMs, left);
        sleep(pause);
        waitedForQuietMs += pause;
      }
    } catch (e) {
      // the probe makes any throw Inconclusive: the host's fault is kept, for the caller to raise as the host's
      if (isHostFault(e)) fault = e;
      throw e;
    } finally {
      endWait();
      looker.close();
    }
  };
  return { section, load: () => load, fault: () => fault };
}
