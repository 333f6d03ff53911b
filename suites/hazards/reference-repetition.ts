// Repetition (hip-tests' hipHostRegister.cc registers and releases one chunk 100 times on each GPU): the same 1 MiB
// window of a file registered, copied to the device and released CYCLES times. The device's free memory
// (cuMemGetInfo / hipMemGetInfo) and the process's locked and pinned memory (VmLck, VmPin) end where they began;
// the cost of a cycle is reported, never judged. The free memory is read after each half of the cycles too: a
// leak falls in both halves, while another process allocating on the GPU at the same time (the host's doing, not
// the driver's) falls once, in one half: then the cycles are run once more, and judged on that second run. A fall
// in one half again is another process still allocating: the host's (`error`), never the driver's, and not a pass.
import type { DeviceOps } from '../../bindings/device-ops.js';
import { HostFault } from '../../bindings/host-fault.js';
import type { Host } from '../../src/index.js';
import { lockedMemory, type LockedMemory } from '../../bindings/locked-memory.js';
import { type Held, MiB, codeText, driverCall, registerServeRelease, servedText, succeeded, trialText, withHeld, withMappedFile, type Code } from './harness.js';
import { deviceBytes } from './reference-copies-harness.js';
import type { ReferenceKit } from '../../bindings/reference-kit.js';
import { referenceCheck } from './reference-harness.js';

/** The cycles timed and counted: hip-tests' 100. */
export const CYCLES = 100;
/**
 * The device's free memory may fall this much in each half of the cycles before it counts: some of the driver's own
 * bookkeeping, taken once. A leak of 64 KiB a cycle is 3.2 MiB a half; one of 20 KiB a cycle and more is seen.
 */
export const HALF_SLACK_BYTES = MiB;

type Locked = LockedMemory | { reason: string };
const lockedText = (l: Locked): string => ('reason' in l ? `not read (${l.reason})` : `VmLck ${l.lockedKiB} kB${l.pinnedKiB !== null ? `, VmPin ${l.pinnedKiB} kB` : ''}`);
/** KiB the locked and pinned memory grew from `a` to `b` (0 when either could not be read). */
function lockedGrowth(a: Locked, b: Locked): { locked: number; pinned: number } {
  if ('reason' in a || 'reason' in b) return { locked: 0, pinned: 0 };
  return { locked: b.lockedKiB - a.lockedKiB, pinned: (b.pinnedKiB ?? 0) - (a.pinnedKiB ?? 0) };
}

/** One run of the cycles: how far it got, its time, and the device's free memory before and after each half. */
interface Cycles {
  done: number;
  broke?: { cycle: number; step: string; code: Code };
  elapsedMs: number;
  memBefore: { free: number; total: number };
  /** The free memory after each half (fewer when the driver would not say, memFailed its answer, or a cycle broke). */
  halves: number[];
  memAfter?: { free: number; total: number };
  memFailed?: Code;
  /** What each half took: a leak takes in both, another process's allocation in one. */
  falls: number[];
  leaked: boolean;
  once: boolean;
}

/** CYCLES cycles of register, copy and release of `m`, or the driver's answer when it would not say its free memory. */
function runCycles(held: Held, ops: DeviceOps, kit: ReferenceKit, m: Host, flags: number): Cycles | { memFailed: Code } {
  // the device's free memory now, or the driver's answer when it would not say
  const memNow = (): { mem: { free: number; total: number } } | { failed: Code } => {
    let mem: { free: number; total: number } | undefined;
    const call = driverCall(() => {
      mem = kit.memInfo(ops);
    });
    return mem ? { mem } : { failed: call };
  };
  const before = memNow();
  if ('failed' in before) return { memFailed: before.failed };
  const memBefore = before.mem;
  const c: Cycles = { done: 0, elapsedMs: 0, memBefore, halves: [], falls: [], leaked: false, once: false };
  for (const upTo of [Math.ceil(CYCLES / 2), CYCLES]) {
    const started = performance.now();
    for (; c.done < upTo; c.done++) {
      const reg = held.register(m, flags);
      if (!succeeded(reg)) {
        c.broke = { cycle: c.done + 1, step: 'register', code: reg };
        break;
      }
      const copy = driverCall(() => ops.upload(m));
      const un = held.unregister(m);
      if (!succeeded(copy) || !succeeded(un)) {
        c.broke = { cycle: c.done + 1, step: succeeded(copy) ? 'unregister' : 'copy', code: succeeded(copy) ? un : copy };
        break;
      }
    }
    c.elapsedMs += performance.now() - started;
    const after = memNow();
    if ('failed' in after) {
      c.memAfter = undefined;
      c.memFailed = after.failed;
      break;
    }
    c.memAfter = after.mem;
    c.halves.push(after.mem.free);
    if (c.broke) break;
  }
  c.falls = c.halves.map((free, i) => (i === 0 ? memBefore.free : c.halves[i - 1]!) - free);
  c.leaked = c.falls.length === 2 && c.falls.every((f) => f >= HALF_SLACK_BYTES);
  c.once = !c.leaked && c.falls.some((f) => f >= HALF_SLACK_BYTES);
  return c;
}

const fallsText = (c: Cycles): string => c.falls.map((f) => `${(f / MiB).toFixed(2)} MiB`).join(' then ');

export const registerCycles = referenceCheck(
  'hazard.register_cycles',
  `register, copy and release the same 1 MiB window ${CYCLES} times: free device memory and locked memory end where they began`,
  [],
  (ctx, kit) =>
    withMappedFile(ctx, { size: MiB }, (m, bytes, ops) =>
      withHeld(ops, (held) => {
        const flags = ops.registerFlags;
        const expected = `${CYCLES} cycles of register 0, copy 0, unregister 0; the last copy's bytes equal; free device memory down by less than ${HALF_SLACK_BYTES / MiB} MiB in at least one half of them; VmLck and VmPin not grown`;
        // one cycle first, its bytes checked: what a driver sets up once at its first registration is not a leak
        const first = registerServeRelease(held, m, bytes, flags);
        if (!succeeded(first.register) || first.served?.diff !== -1 || !succeeded(first.unregister)) {
          return { status: 'fail', expected, observed: `the first cycle: ${trialText(first)}`, message: 'the first cycle did not register, serve and release' };
        }
        const lockedBefore = lockedMemory();
        let c = runCycles(held, ops, kit, m, flags);
        // a fall in one half only: another process's allocation, or something the driver took once; the cycles again
        // tell them apart (a leak falls in both halves of any run)
        let earlier: Cycles | undefined;
        if ('done' in c && c.once && !c.broke && !c.memFailed) {
          earlier = c;
          c = runCycles(held, ops, kit, m, flags);
        }
        if (!('done' in c)) return { status: 'fail', expected, observed: `free device memory: ${codeText(c.memFailed)}`, message: 'the driver would not say its free memory' };
        if (earlier && c.once && !c.broke && !c.memFailed) {
          // in one half of each run: another process allocating on this GPU all the while; a leak cannot be told from it
          throw new HostFault(
            `free device memory fell ${fallsText(earlier)}, then in the cycles run again ${fallsText(c)}, over the two halves of each: in one half only each time, not steady as a leak is: another process allocating on this GPU at the same time; a leak per cycle could not be judged (free device memory ${[earlier.memBefore.free, ...earlier.halves].join(' -> ')}, then ${[c.memBefore.free, ...c.halves].join(' -> ')} bytes)`,
          );
        }
        const lockedAfter = lockedMemory();
        const { done, broke, elapsedMs, memBefore, halves, memAfter, memFailed, falls, leaked } = c;
        // the last copy's bytes, read back after the figures (the page-locked buffer is not theirs)
        const got = done > 0 ? deviceBytes(ops, bytes) : undefined;
        const back = got?.download;
        const last = got?.diff ?? null;
        const fell = memAfter ? memBefore.free - memAfter.free : 0;
        const grew = lockedGrowth(lockedBefore, lockedAfter);
        const perCycleUs = done > 0 ? (elapsedMs * 1000) / done : null;
        const problems = [
          broke ? `cycle ${broke.cycle}: ${broke.step} ${codeText(broke.code)}` : undefined,
          memFailed ? `free device memory after ${done} cycles: ${codeText(memFailed)}` : undefined,
          leaked ? `free device memory fell ${(fell / MiB).toFixed(2)} MiB over ${done} cycles, in both halves (${falls.map((f) => `${(f / MiB).toFixed(2)} MiB`).join(', ')}; ${Math.round(fell / Math.max(done, 1))} bytes a cycle)` : undefined,
          grew.locked > 0 ? `VmLck grew ${grew.locked} kB over ${done} cycles` : undefined,
          grew.pinned > 0 ? `VmPin grew ${grew.pinned} kB over ${done} cycles` : undefined,
          done > 0 && last !== -1 ? `the last copy's bytes: ${back && !succeeded(back) ? `read back ${codeText(back)}` : `differ at offset ${last}`}` : undefined,
        ].filter((p): p is string => p !== undefined);
        const unread = 'reason' in lockedBefore || 'reason' in lockedAfter;
        const memText = `free device memory ${[memBefore.free, ...halves].join(' -> ')} bytes`;
        // the first run's fall in one half, gone in the second: another process's allocation, or the driver's once
        const earlierText = earlier ? `; before them, ${earlier.done} cycles whose free device memory fell ${fallsText(earlier)} over the two halves (in one half only: run again)` : '';
        return {
          status: problems.length > 0 ? 'fail' : unread ? 'warn' : 'pass',
          expected,
          observed: `${done} cycles in ${elapsedMs.toFixed(1)} ms${perCycleUs !== null ? ` (${perCycleUs.toFixed(0)} us a cycle)` : ''}; ${memText}; ${lockedText(lockedBefore)} -> ${lockedText(lockedAfter)}; the last copy: ${last === -1 ? servedText({ copy: back!, diff: -1, zeros: false, stale: false }) : last === null ? 'not read' : `bytes differ at offset ${last}`}${earlierText}`,
          ...(problems.length > 0 ? { message: problems.join('; ') } : unread ? { message: 'the locked memory could not be read: only the device memory was judged' } : {}),
          data: {
            cycles: done,
            elapsedMs,
            perCycleUs,
            freeBefore: memBefore.free,
            freeHalves: halves,
            ...(memAfter ? { freeAfter: memAfter.free, totalBytes: memAfter.total } : {}),
            lockedBefore,
            lockedAfter,
            ...(earlier ? { runAgain: { cycles: earlier.done, freeBefore: earlier.memBefore.free, freeHalves: earlier.halves } } : {}),
            ...(broke ? { broke: { cycle: broke.cycle, step: broke.step, code: broke.code.code, name: broke.code.name } } : {}),
          },
        };
      }),
    ),
);
