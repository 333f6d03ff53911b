// The file changes under its registration: a pwrite is seen by the device, and a file cut under it does not take
// the run with it (the copies from the cut tail run in a child process: ./truncate.ts). What the H200 did:
// docs/hazards.md.
import { existsSync } from 'node:fs';
import { pwrite } from '../../bindings/libc.js';
import type { CheckContext, Observation } from '../check.js';
import { MiB, hazard, hex, nothingTo, succeeded, registerOrNothingTo, serveCopy, servedText, withHeld, sizeText, codeText, withFile, withMappedFile } from './harness.js';
import { TRUNCATE_CHILD_TIMEOUT_MS, type TruncateArgs, type TruncateLine, copyOutcome, runTruncateChild, truncateChildScript } from './truncate.js';
import { hasEarlyTruncateChild, postEarlyTruncateArgs, runEarlyTruncateChild } from './truncate-early.js';
import { scratchFile } from '../context.js';
import { writeEvent } from '../protocol.js';

/** hazard.truncate_contained: the mapping, the length it is cut to, and the two copies from the cut tail. */
const TRUNCATE_FILE_BYTES = 32 * MiB;
const TRUNCATE_CUT_BYTES = 16 * MiB;
const TRUNCATE_SMALL_BYTES = 4096;

export const coherentAfterWrite = hazard('hazard.coherent_after_write', 'a pwrite into the file after registration is seen by the device', (ctx) =>
  withMappedFile(ctx, {}, (m, bytes, ops, fd) =>
    withHeld(ops, (held) => {
      const expected = "the device copies the file's new bytes";
      const reg = registerOrNothingTo(held, m, { expected, nothingTo: 'copy from' });
      if (nothingTo(reg)) return reg.refused;
      const before = serveCopy(ops, m, bytes);
      // Every byte changes, so a stale copy cannot pass for a fresh one anywhere.
      const fresh = bytes.map((b) => b ^ 0xff);
      for (let done = 0; done < fresh.length; ) done += pwrite(fd, fresh.subarray(done), done);
      const after = serveCopy(ops, m, fresh, bytes);
      const un = held.unregister(m);
      const good = before.diff === -1 && after.diff === -1 && succeeded(un);
      return {
        status: good ? 'pass' : 'fail',
        expected,
        observed: `register 0; before the write: ${servedText(before)}; after a pwrite of ${sizeText(fresh.length)}: ${after.diff === -1 ? 'the new bytes' : servedText(after)}; unregister ${codeText(un)}`,
        ...(good ? {} : { message: before.diff !== -1 ? 'wrong bytes before the write' : after.diff !== -1 ? 'the device did not see the write' : 'the release failed' }),
        data: { register: 0, before: before.diff, after: after.diff, stale: after.stale, unregister: un.code },
      };
    }),
  ),
);

/** The file handed with its arguments to a device's truncation child before its check (handOverTruncateEarly), by device id. */
const handedOver = new Map<string, ReturnType<typeof scratchFile>>();

/** The check's arguments for `file`. */
const truncateArgs = (ctx: CheckContext, path: string): TruncateArgs => ({
  device: ctx.device.id,
  file: path,
  size: TRUNCATE_FILE_BYTES,
  cut: TRUNCATE_CUT_BYTES,
  large: TRUNCATE_FILE_BYTES - TRUNCATE_CUT_BYTES,
  small: TRUNCATE_SMALL_BYTES,
});

/**
 * hazard.truncate_contained's file made, and handed with its arguments to the device's child started early, now:
 * for the check just before it (hazard.context_reset, ./reset.ts), so that the child's run (its registration, the
 * cut and the copies, some 0.1 s on the H200, in a process and a context of its own, which a reset of this
 * process's context does not touch) goes on beside that check instead of after it. The check then takes the
 * child's end, and removes the file, as before. Nothing where no child was started early in this process (the
 * check deselected, or not to run here), or where the file cannot be made now: the check makes its file and hands
 * it over itself, and a host's fault in making it is that check's, never the one before it.
 */
export function handOverTruncateEarly(ctx: CheckContext): void {
  const id = ctx.device.id;
  if (handedOver.has(id) || !hasEarlyTruncateChild(id)) return;
  let file: ReturnType<typeof scratchFile>;
  try {
    file = scratchFile(ctx.options.scratchDir, TRUNCATE_FILE_BYTES);
  } catch {
    return; // no room for it now (the host's): the check makes it itself, and says so, as its own
  }
  if (postEarlyTruncateArgs(id, truncateArgs(ctx, file.path))) handedOver.set(id, file);
  else file.remove();
}

function truncateContained(ctx: CheckContext): Observation {
  const native = ctx.device.native!;
  const expected = 'the run survives a file cut under its registration, and what the copies from the cut tail did is recorded';
  const script = truncateChildScript();
  if (!existsSync(script)) {
    return { status: 'fail', expected, observed: 'not run', message: `the child ${script} does not exist: build with tsc -p tsconfig.build.json` };
  }
  const size = TRUNCATE_FILE_BYTES;
  const cut = TRUNCATE_CUT_BYTES;
  // The parent makes and removes the file: a child killed by a signal leaves nothing behind. A file handed over
  // before the check (handOverTruncateEarly) is this check's to remove.
  const before = handedOver.get(ctx.device.id);
  handedOver.delete(ctx.device.id);
  const withOwnFile = <T>(f: (file: { path: string }) => T): T => {
    if (!before) return withFile(ctx.options.scratchDir, size, f);
    try {
      return f(before);
    } finally {
      before.remove();
    }
  };
  return withOwnFile((file) => {
    const args = truncateArgs(ctx, file.path);
    // the child started while the probe ran (./truncate-early.ts), else one started now, as it always was
    const early = runEarlyTruncateChild(ctx.device.id, args, (w) => writeEvent({ type: 'wait', device: ctx.device.id, ...w }));
    const r = 'run' in early ? early.run : runTruncateChild(script, native, args);
    const how = 'run' in early ? { childStartedEarly: true, early: early.early } : { childStartedEarly: false, notEarly: early.unavailable };
    const { lines, stderr, timedOut } = r;
    if (r.error) return { status: 'fail', expected, observed: `the child did not run: ${r.error.message}`, data: how };
    const end = timedOut ? `timed out after ${TRUNCATE_CHILD_TIMEOUT_MS / 1000} s (killed)` : r.signal ? `the child died of ${r.signal}` : `the child exited with status ${r.status}`;
    const child = { status: r.status, signal: r.signal, timedOut, ms: r.ms, ...(stderr ? { stderr: stderr.slice(-2000) } : {}) };
    const reg = lines.find((l): l is Extract<TruncateLine, { step: 'register' }> => l.step === 'register');
    const truncated = lines.some((l) => l.step === 'truncate');
    const error = lines.find((l): l is Extract<TruncateLine, { step: 'error' }> => l.step === 'error');
    if (!truncated) {
      const why = error ? error.message : reg && reg.code !== 0 ? `register ${reg.code} ${reg.name}: nothing to cut under` : `${end}${stderr ? `: ${stderr.split('\n').slice(-3).join(' | ')}` : ''}`;
      return { status: timedOut ? 'warn' : 'fail', expected, observed: `the file was not cut under a registration: ${why}`, data: { child, lines, ...how } };
    }
    const large = copyOutcome(lines, 'large', end);
    const small = copyOutcome(lines, 'small', end);
    const un = lines.find((l): l is Extract<TruncateLine, { step: 'unregister' }> => l.step === 'unregister');
    const unText = un ? `unregister ${un.code === 0 ? '0' : `${un.code} ${un.name}`}` : 'unregister not reached';
    const childText = timedOut ? end : r.signal ? `child killed by ${r.signal}` : `child exit ${r.status}`;
    const observed = `register 0 (flags ${hex(reg?.flags ?? 0)}); cut to ${sizeText(cut)}; ${sizeText(size - cut)} copy from the cut tail: ${large.text}; ${sizeText(TRUNCATE_SMALL_BYTES)} copy: ${small.text}; ${unText}; ${childText}; the run went on`;
    return {
      status: timedOut ? 'warn' : 'pass',
      expected,
      observed,
      ...(timedOut ? { message: 'the child hung and was killed: the hazard is contained but what the copy does is not known' } : {}),
      data: { child, large: large.data, small: small.data, ...(un ? { unregister: un.code, unregisterName: un.name } : {}), lines, ...how },
    };
  });
}

export const truncateContainedCheck = hazard('hazard.truncate_contained', 'a file cut under its registration: copies from the cut tail are contained (in a child process)', truncateContained);
