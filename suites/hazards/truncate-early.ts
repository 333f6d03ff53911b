// The truncation child of hazard.truncate_contained started early: as soon as the device's runner knows its device
// (cli/device-runner.ts), instead of at the check. Its start (Node.js, its imports, the driver library, the driver's
// init and the device's context: some 0.35 s of the check's 0.41 s on the H200) then runs while the runner probes.
// The child waits for its arguments on stdin (./truncate-child.ts, --early); the check hands them over when it runs
// and takes the child's lines and end as ./truncate.ts's runTruncateChild gives them.
//
// Checks are synchronous, and a child's pipes and end need an event loop: a thread of its own (node:worker_threads,
// ./truncate-early-thread.ts, started as cli/discovery-thread.ts starts its own) spawns the child and follows it. The check's
// call posts the arguments to it and sleeps in Atomics.wait on a shared phase word that the thread sets and notifies
// at each step of the child; the thread's messages (the child's lines, status, signal) are read with
// receiveMessageOnPort. The thread kills the child (SIGKILL) after TRUNCATE_CHILD_TIMEOUT_MS of its run, not
// counting the child's wait for the timing lock, which is the host's (told to the command's watchdog).
//
// Nothing is left behind: the child ends with the thread that spawned it (its parent-death signal), and when its
// stdin closes before its arguments came (the runner died, or its check never came) it exits having registered
// nothing. The file it cuts is made by the check, at the check, as before.
import { existsSync } from 'node:fs';
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { HostFault } from '../../bindings/host-fault.js';
import { addOwnChild } from '../../bindings/own-children.js';
import { backendOfDevice } from '../../bindings/registry.js';
import { type HostWait, LOCK_WAIT_MIN_S } from '../measure.js';
import type { SuiteOptions } from '../protocol.js';
import { type ChildRun, type EarlyStart, TRUNCATE_CHECK, TRUNCATE_CHILD_TIMEOUT_MS, type TruncateArgs, compiledHazardFile, parseLines, truncateChildScript } from './truncate.js';
import { type FromThread, PHASE, PHASE_AT, PID_AT, type Phase, type ThreadStart } from './truncate-early-thread.js';

/** Past the child's own bounds (its lock wait, its run), how long the check waits for the thread before it kills the child itself. */
const THREAD_GRACE_MS = 10_000;

/** What the check's data says of a child started early. */
export interface EarlyData {
  /** The child's start, from its spawn to its wait for the arguments (the lock's wait included), as it measured it. */
  startMs?: number;
  /** How long the child waited for the timing lock before its driver init. */
  lockWaitMs?: number;
  /** Whether the child had started (waiting for its arguments) when it was handed them. */
  readyAtCheck: boolean;
  /**
   * The arguments were handed over before the check, at the start of the check before it (postEarlyTruncateArgs):
   * the child's run went on beside that check.
   */
  handedOverBeforeCheck: boolean;
  /** ms the check waited for the child to get the timing lock (not counted against --timeout). */
  lockWaitAtCheckMs: number;
}

interface Early {
  device: string;
  lockLimitMs: number;
  state: Int32Array;
  port: MessagePort;
  thread: Worker;
  forget: () => void;
  /** The thread's messages read so far (receiveMessageOnPort). */
  received: FromThread[];
  /** When its arguments were posted, before the check, and the child's phase then. */
  posted?: { at: number; phase: Phase; args: TruncateArgs };
}

/** The children started early, by device id. */
const started = new Map<string, Early>();


/**
 * Starts the truncation child of `device` now, to wait for its arguments: for a runner that will run
 * hazard.truncate_contained on a device of a driver that registers. `library` is the driver library this process
 * loaded, passed to the child in `libraryEnv` (as runTruncateChild passes it). False when it cannot be started (the
 * check then starts its child as before).
 */
export function startTruncateChildEarly(o: { device: string; library: string; libraryEnv: string; lockLimitMs: number }): boolean {
  if (started.has(o.device)) return true;
  const script = truncateChildScript();
  const self = compiledHazardFile('truncate-early-thread.js');
  if (!existsSync(script) || !existsSync(self)) return false;
  const state = new Int32Array(new SharedArrayBuffer(8));
  const { port1, port2 } = new MessageChannel();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  env[o.libraryEnv] = o.library;
  const start: EarlyStart = { device: o.device, parentPid: process.pid, lockLimitMs: o.lockLimitMs };
  const data: ThreadStart = { role: 'truncate-early', script, env, start, state: state.buffer as SharedArrayBuffer, port: port2 };
  let thread: Worker;
  try {
    // no execArgv of the process's own (an --input-type, say, which a thread refuses)
    thread = new Worker(self, { workerData: data, transferList: [port2], execArgv: [] });
  } catch {
    port1.close();
    return false;
  }
  // neither keeps the runner alive: a run whose check never comes exits, and the child with it
  thread.unref();
  thread.on('error', () => {
    // a thread that failed: its child (if any) ended with it; the check finds no result and starts its own
    Atomics.store(state, PHASE_AT, PHASE.failed);
    Atomics.notify(state, PHASE_AT);
  });
  const forget = addOwnChild(() => Atomics.load(state, PID_AT));
  started.set(o.device, { device: o.device, lockLimitMs: o.lockLimitMs, state, port: port1, thread, forget, received: [] });
  return true;
}

/**
 * The runner's start hook: starts the truncation child of the device now when its check will run in this process
 * (not deselected, not reported by an earlier process) on a driver that registers, whose library this process
 * loaded (`library`, from its discovery; none: not started, the check starts its child as before). The child waits
 * for the timing lock as long as the probe would (--quiet-wait, at least LOCK_WAIT_MIN_S).
 */
export function startTruncateChildFor(options: SuiteOptions, library: string | null | undefined): boolean {
  if (!library || options.skip.includes(TRUNCATE_CHECK) || options.deselected?.[TRUNCATE_CHECK] !== undefined) return false;
  const backend = backendOfDevice(options.device);
  if (!backend?.registers || !backend.libraryEnv) return false;
  return startTruncateChildEarly({ device: options.device, library, libraryEnv: backend.libraryEnv, lockLimitMs: Math.max(options.quiet.waitS, LOCK_WAIT_MIN_S) * 1000 });
}

/** Ends the child started early for `device` (if any) and its thread, unused. */
export function stopTruncateChildEarly(device: string): void {
  const e = started.get(device);
  if (!e) return;
  started.delete(device);
  end(e);
}

function end(e: Early): void {
  const pid = Atomics.load(e.state, PID_AT);
  const phase = Atomics.load(e.state, PHASE_AT);
  if (pid > 0 && phase !== PHASE.done && phase !== PHASE.failed) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  e.forget();
  e.port.close();
  void e.thread.terminate();
}

function drain(e: Early): void {
  for (let m = receiveMessageOnPort(e.port); m; m = receiveMessageOnPort(e.port)) e.received.push(m.message as FromThread);
}

/** Whether a child was started early for `device` in this process and not yet taken by its check. */
export function hasEarlyTruncateChild(device: string): boolean {
  return started.has(device);
}

/**
 * Hands `args` to the child started early for `device` now, without waiting: its run (the registration, the cut, the
 * copies, in a process and a context of its own) then goes on while this process runs the check before
 * hazard.truncate_contained, whose runEarlyTruncateChild takes its end. False when there is no such child here, it
 * failed to start, or it was handed its arguments already.
 */
export function postEarlyTruncateArgs(device: string, args: TruncateArgs): boolean {
  const e = started.get(device);
  return e !== undefined && !e.posted && post(e, args);
}

/** Posts `args` to `e`'s thread, noting when and the child's phase then; false (nothing posted) when it failed to start. */
function post(e: Early, args: TruncateArgs): boolean {
  const phase = Atomics.load(e.state, PHASE_AT) as Phase;
  if (phase === PHASE.failed) return false;
  e.thread.postMessage({ args });
  e.posted = { at: performance.now(), phase, args };
  return true;
}

/** What the early child did with `args`, or why there is none to use (the check then starts one as before). */
export type EarlyOutcome = { run: ChildRun; early: EarlyData } | { unavailable: string };

/**
 * Hands `args` to the child started early for `device` and waits (synchronously) for its end. The child's wait
 * for the timing lock, if it is still waiting, is told to `onWait` (the command's watchdog does not count it); a
 * child that gave up waiting for it is the host's fault (HostFault). Unavailable: none was started in this process,
 * or it failed to start (why).
 */
export function runEarlyTruncateChild(device: string, args: TruncateArgs, onWait?: (w: HostWait) => void): EarlyOutcome {
  const e = started.get(device);
  if (!e) return { unavailable: 'no child was started early in this process' };
  started.delete(device);
  try {
    return handOver(e, args, onWait);
  } finally {
    end(e);
  }
}

function handOver(e: Early, args: TruncateArgs, onWait?: (w: HostWait) => void): EarlyOutcome {
  // handed over before the check (postEarlyTruncateArgs), else now: its run is bounded from then
  const before = e.posted !== undefined;
  if (e.posted && e.posted.args.file !== args.file) throw new Error(`the truncation child was handed ${e.posted.args.file}, not ${args.file}`);
  if (!e.posted && !post(e, args)) return failed(e);
  const { at: t0, phase: atCheck } = e.posted!;
  let waiting = false;
  let lockWaitMs = 0;
  let lockSince = 0;
  const bound = TRUNCATE_CHILD_TIMEOUT_MS + THREAD_GRACE_MS;
  for (;;) {
    const phase = Atomics.load(e.state, PHASE_AT) as Phase;
    if (phase === PHASE.done || phase === PHASE.failed) break;
    const now = performance.now();
    if (phase === PHASE.lock && !waiting) {
      waiting = true;
      lockSince = now;
      onWait?.({ waiting: true, what: 'the timing lock (the truncation child)', limitMs: e.lockLimitMs });
    } else if (phase !== PHASE.lock && waiting) {
      waiting = false;
      lockWaitMs += now - lockSince;
      onWait?.({ waiting: false });
    }
    const own = now - t0 - lockWaitMs - (waiting ? now - lockSince : 0);
    const inLock = waiting ? now - lockSince : 0;
    if (own > bound || inLock > e.lockLimitMs + THREAD_GRACE_MS) {
      // the thread should have ended it long ago: end it here, and say what is known
      const pid = Atomics.load(e.state, PID_AT);
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      if (waiting) onWait?.({ waiting: false });
      throw new Error(`the truncation child started early did not end ${Math.round((now - t0) / 1000)} s after its arguments, and its thread did not report (killed)`);
    }
    Atomics.wait(e.state, PHASE_AT, phase, 1000);
  }
  if (waiting) {
    lockWaitMs += performance.now() - lockSince;
    onWait?.({ waiting: false });
  }
  drain(e);
  const done = e.received.find((m): m is Extract<FromThread, { kind: 'done' }> => m.kind === 'done');
  if (!done) return failed(e);
  const start = e.received.find((m): m is Extract<FromThread, { kind: 'started' }> => m.kind === 'started');
  const run: ChildRun = {
    lines: parseLines(done.stdout),
    status: done.status,
    signal: done.signal,
    timedOut: done.timedOut,
    ...(done.error !== undefined ? { error: new Error(done.error) } : {}),
    stderr: done.stderr.trim(),
    ms: done.ms,
  };
  return {
    run,
    early: {
      ...(start ? { startMs: start.ms, ...(start.lockWaitMs !== undefined ? { lockWaitMs: start.lockWaitMs } : {}) } : {}),
      readyAtCheck: atCheck === PHASE.started,
      handedOverBeforeCheck: before,
      lockWaitAtCheckMs: Math.round(lockWaitMs),
    },
  };
}

/** The child failed before it started: the host's fault when it gave up on the timing lock, else unavailable (why). */
function failed(e: Early): EarlyOutcome {
  drain(e);
  const f = e.received.find((m): m is Extract<FromThread, { kind: 'failed' }> => m.kind === 'failed');
  if (f?.fault) throw new HostFault(f.fault);
  return { unavailable: `the child started early failed to start: ${f?.reason ?? 'its thread ended without a word'}` };
}
