// The machine check around the timed copies (suites/measure.ts, measureSection) at each of its thresholds, in each
// direction, with copy times given by hand (no device, no clock in what is judged): whether the device waits for
// quiet and times again, for the registered GB/s and for registered / page-locked just inside and just past
// --max-drop, on a machine busy with memory pressure, with CPU pressure alone, and quiet; the pressure at its
// limits; and the host copy, held against the baseline's only from 64 MiB windows. The pressure files are a fake
// /proc (MAPPED_REG_PROC_ROOT) and the timing lock a file of this test's own.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CopyTimes } from '../src/probe.js';
import type { DeviceLoad } from '../results/types.js';
import { BUSY_THRESHOLDS, type QuietOptions, measureSection } from '../suites/measure.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-machine-check-'));
const saved = { proc: process.env.MAPPED_REG_PROC_ROOT, lock: process.env.MAPPED_REG_TIMING_LOCK };
beforeAll(() => {
  process.env.MAPPED_REG_PROC_ROOT = join(work, 'proc');
  process.env.MAPPED_REG_TIMING_LOCK = join(work, 'timing.lock');
  mkdirSync(join(work, 'proc', 'pressure'), { recursive: true });
});
afterAll(() => {
  for (const [k, v] of [['MAPPED_REG_PROC_ROOT', saved.proc], ['MAPPED_REG_TIMING_LOCK', saved.lock]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(work, { recursive: true, force: true });
});

/** The fake /proc/pressure: CPU and memory `some avg10` in percent. */
function pressure(cpu: number, memory: number): void {
  const line = (kind: string, x: number): string => `${kind} avg10=${x.toFixed(2)} avg60=0.00 avg300=0.00 total=0`;
  writeFileSync(join(work, 'proc', 'pressure', 'cpu'), `${line('some', cpu)}\n`);
  writeFileSync(join(work, 'proc', 'pressure', 'memory'), `${line('some', memory)}\n${line('full', 0)}\n`);
}

const MIB = 1024 * 1024;
const WINDOW = 64 * MIB;
/** ms for `bytes` at `gbps` (10^9 bytes a second). */
const ms = (bytes: number, gbps: number): number => bytes / (gbps * 1e6);

interface Figures {
  registered: number;
  /** registered / page-locked. */
  ratio: number;
  hostCopy?: number;
}

/** The baseline: registered 10 GB/s, registered / page-locked 1, host copy 10 GB/s; a drop of 10% allowed. */
const BASELINE = { registeredGBps: 10, pageLockedRatio: 1, hostCopyGBps: 10 };

/** Runs the section with copies that give `f` each time; returns the rounds each timing was asked for, and the load. */
function measure(f: Figures, o: { bytes?: number; baseline?: QuietOptions['baseline'] | null; waitS?: number } = {}): { rounds: number[]; load: DeviceLoad } {
  const bytes = o.bytes ?? WINDOW;
  const rounds: number[] = [];
  const time = (r = 7): CopyTimes => {
    rounds.push(r);
    const reg = ms(bytes, f.registered);
    return {
      registered: { best: reg, median: reg },
      pageLocked: { best: reg * f.ratio, median: reg * f.ratio },
      staged: { best: reg * 4, median: reg * 4 },
      hostCopy: { best: ms(bytes, f.hostCopy ?? 10), median: ms(bytes, f.hostCopy ?? 10) },
      rounds: r,
      samples: { registeredMs: [reg], pageLockedMs: [reg * f.ratio], stagedMs: [reg * 4], hostCopyMs: [ms(bytes, f.hostCopy ?? 10)] },
      clock: { clock: 'device' },
    };
  };
  const baseline = o.baseline === null ? undefined : (o.baseline ?? BASELINE);
  const { section, load } = measureSection({
    deviceId: 'cuda:0',
    runs: 7,
    backend: 'cuda',
    pciBusId: null,
    quiet: { waitS: o.waitS ?? 0.3, maxDrop: 0.1, ...(baseline ? { baseline } : {}) },
    log: () => {},
  });
  section(time, bytes);
  return { rounds, load: load()! };
}

/** Timed once, or timed again (with 4 x the rounds) after waiting for quiet. */
const ONCE = [7];
const AGAIN = [7, 28];

describe('waiting for quiet: only on a busy machine, only for a figure that would regress past --max-drop', () => {
  it('memory pressure (busy): the registered GB/s 9% down is timed once, 11% down is timed again', () => {
    pressure(0, 25);
    expect(measure({ registered: 9.1, ratio: 1 }).rounds).toEqual(ONCE);
    const again = measure({ registered: 8.9, ratio: 1 });
    expect(again.rounds).toEqual(AGAIN);
    expect(again.load).toMatchObject({ busy: true, attempts: 2, why: ['memory pressure 25.0% (some, avg10)'] });
    expect(again.load.waitedForQuietMs).toBeGreaterThan(0);
  });

  it('memory pressure (busy): registered / page-locked 9% down is timed once, 11% down is timed again', () => {
    pressure(0, 25);
    expect(measure({ registered: 10, ratio: 0.91 }).rounds).toEqual(ONCE);
    expect(measure({ registered: 10, ratio: 0.89 }).rounds).toEqual(AGAIN);
  });

  it('CPU pressure alone: the registered GB/s 11% down is waited for (it excuses that figure); the ratio 25% down is not (it excuses no fall of it)', () => {
    pressure(95, 0);
    const registered = measure({ registered: 8.9, ratio: 1 });
    expect(registered.rounds).toEqual(AGAIN);
    expect(registered.load.why).toEqual(['CPU pressure 95.0% (some, avg10): more runnable threads than cores']);
    const ratio = measure({ registered: 10, ratio: 0.75 });
    expect(ratio.rounds).toEqual(ONCE);
    expect(ratio.load).toMatchObject({ busy: true, attempts: 1, waitedForQuietMs: 0 });
  });

  it('a quiet machine is never waited for, whatever fell; nor a busy one with no baseline', () => {
    pressure(0, 0);
    const quiet = measure({ registered: 5, ratio: 0.5 });
    expect(quiet.rounds).toEqual(ONCE);
    expect(quiet.load).toMatchObject({ busy: false, why: [] });
    pressure(0, 25);
    expect(measure({ registered: 5, ratio: 0.5 }, { baseline: null }).rounds).toEqual(ONCE);
  });

  it('--quiet-wait 0: a busy machine whose figures would regress is timed once', () => {
    pressure(0, 25);
    expect(measure({ registered: 5, ratio: 1 }, { waitS: 0 }).rounds).toEqual(ONCE);
  });
});

describe('the pressure and the host copy at their thresholds, through the section', () => {
  it('CPU 79.99% and memory 19.99% are quiet; 80% and 20% are busy', () => {
    pressure(BUSY_THRESHOLDS.cpuPressure - 0.01, BUSY_THRESHOLDS.memoryPressure - 0.01);
    expect(measure({ registered: 10, ratio: 1 }).load).toMatchObject({ busy: false, pressure: { cpuSome: 79.99, memorySome: 19.99 } });
    pressure(80, 20);
    expect(measure({ registered: 10, ratio: 1 }).load.why).toEqual(['CPU pressure 80.0% (some, avg10): more runnable threads than cores', 'memory pressure 20.0% (some, avg10)']);
  });

  it("the host copy at half the baseline's: busy from a 64 MiB window, not from one a page smaller (recorded all the same)", () => {
    pressure(0, 0);
    const small = measure({ registered: 10, ratio: 1, hostCopy: 5 }, { bytes: WINDOW - 4096 });
    expect(small.load.busy).toBe(false);
    expect(small.load.hostCopyGBps).toBeCloseTo(5, 6);
    expect(small.load.baselineHostCopyGBps).toBe(10);
    const full = measure({ registered: 10, ratio: 1, hostCopy: 5 });
    expect(full.load.why).toEqual(["the host's memcpy ran at 5.00 GB/s, under 70% of the baseline's 10.00 GB/s: other copies load host memory"]);
  });

  it("the host copy at 70.1% of the baseline's is quiet, at 69.9% busy", () => {
    pressure(0, 0);
    expect(measure({ registered: 10, ratio: 1, hostCopy: 7.01 }).load.busy).toBe(false);
    expect(measure({ registered: 10, ratio: 1, hostCopy: 6.99 }).load.busy).toBe(true);
  });
});
