// The signals that stop a run: SIGINT (Ctrl-C), SIGTERM (Kubernetes, Slurm, a CI cancellation) and SIGHUP (the
// terminal went away) all do the same: every device's process is stopped (the driver releases what a dead
// process held), the scratch files are removed, what finished is written marked incomplete, and the command
// exits 130, 143 or 129 (128 + the signal's number). Further signals while it stops are noted and ignored, so a
// second Ctrl-C can neither lose the reports nor leave scratch files behind.
import { constants } from 'node:os';

export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** The exit status of a run stopped by `signal`: 128 + its number (SIGINT 130, SIGTERM 143, SIGHUP 129). */
export function stopStatus(signal: StopSignal): number {
  return 128 + constants.signals[signal];
}

let received: StopSignal | undefined;
const listeners = new Set<(signal: StopSignal) => void>();
let installed = false;

/** A signal before the run started: one line, and the command ends at once with its status (its exit handlers run). */
function endBeforeTheRun(signal: StopSignal): never {
  process.stderr.write(`mapped-reg-conformance: interrupted (${signal}) before any device was checked: nothing was run or written\n`);
  process.exit(stopStatus(signal));
}

/** What to do with a signal that arrives when nothing has started yet (no listener): exit at once. */
let idle: (signal: StopSignal) => void = endBeforeTheRun;

/** The handlers of installEarlyStop, removed by installStopSignals. */
const early = new Map<StopSignal, () => void>();

/**
 * From the command's first line, for a run: a stop signal ends it at once with its status and says so (Node's
 * default would end it as silently, and without the exit handlers that kill the spare runner: cli/spare-runner.ts),
 * until installStopSignals takes over once the command is loaded.
 */
export function installEarlyStop(): void {
  if (installed || early.size > 0) return;
  for (const s of STOP_SIGNALS) {
    const h = (): void => endBeforeTheRun(s);
    early.set(s, h);
    process.on(s, h);
  }
}

function handle(signal: StopSignal): void {
  if (received) {
    process.stderr.write(`mapped-reg-conformance: ${signal} while stopping (after ${received}): ignored until the reports are written\n`);
    return;
  }
  received = signal;
  if (listeners.size === 0) return idle(signal);
  for (const l of [...listeners]) l(signal);
}

/**
 * Handles SIGINT, SIGTERM and SIGHUP for the rest of the command's life. Until a listener is added, a signal
 * ends the command at once with its status (nothing has started); once `idle` is told to keep going (`keepGoing`),
 * a signal with no listener is only recorded (the reports being written are finished first).
 */
export function installStopSignals(): void {
  if (installed) return;
  installed = true;
  for (const s of STOP_SIGNALS) process.on(s, () => handle(s));
  for (const [s, h] of early) process.off(s, h);
  early.clear();
}

/** From now on a signal with no listener is recorded, not an immediate exit (the run has started). */
export function keepGoing(): void {
  idle = () => {};
}

/** Calls `f` on the first stop signal while it is registered; returns the function that unregisters it. */
export function onStop(f: (signal: StopSignal) => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

/** The stop signal received, if any. */
export function stoppedBy(): StopSignal | undefined {
  return received;
}

/** The exit status for a stopped run: that of the signal received (130 when none was, e.g. in a test). */
export function stoppedStatus(): number {
  return stopStatus(received ?? 'SIGINT');
}
