// The thread of the truncation child started early (./truncate-early.ts starts it, one per device): it spawns the
// child (./truncate-child.ts --early), follows its start from its `{"early": ...}` lines into the shared phase word
// (set, then notified, at each step), writes the check's arguments to the child's stdin when they come, kills the
// child after TRUNCATE_CHILD_TIMEOUT_MS of its run (the child's wait for the timing lock not counted), and posts
// its lines, status and signal to the check's port. The child ends with this thread (its parent-death signal).
// Run on its own thread only: the tests' coverage does not see it (vitest.config.ts).
import { spawn } from 'node:child_process';
import { type MessagePort, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { type EarlyLine, type EarlyStart, TRUNCATE_CHILD_TIMEOUT_MS, type TruncateArgs } from './truncate.js';

/** The child's phase, in the shared word (the thread sets it and notifies). */
export const PHASE = { spawning: 0, lock: 1, init: 2, started: 3, failed: 4, running: 5, done: 6 } as const;
export type Phase = (typeof PHASE)[keyof typeof PHASE];
export const PHASE_AT = 0;
export const PID_AT = 1;

/** The thread's messages to the check. */
export type FromThread =
  | { kind: 'started'; library: string; ms: number; lockWaitMs?: number }
  | { kind: 'failed'; reason: string; fault?: string }
  | { kind: 'done'; stdout: string; stderr: string; status: number | null; signal: NodeJS.Signals | null; timedOut: boolean; error?: string; ms: number };

export interface ThreadStart {
  role: 'truncate-early';
  script: string;
  env: Record<string, string>;
  start: EarlyStart;
  state: SharedArrayBuffer;
  port: MessagePort;
}

/** Spawns the child and follows it to its end (the thread's whole work). */
function follow(w: ThreadStart): void {
  const state = new Int32Array(w.state);
  const set = (phase: Phase): void => {
    Atomics.store(state, PHASE_AT, phase);
    Atomics.notify(state, PHASE_AT);
  };
  const post = (m: FromThread): void => w.port.postMessage(m);
  let stdout = '';
  let partial = '';
  let stderr = '';
  let args: TruncateArgs | undefined;
  let sent = false;
  let fault: string | undefined;
  let failure: string | undefined;
  let spawnError: string | undefined;
  let timedOut = false;
  let sentAt = 0;
  let lockWaitMs: number | undefined;
  /** The child said it started (its arguments are then read): else its end is a failure to start, whatever came. */
  let childStarted = false;
  // the run's clock: it stops while the child waits for the timing lock
  let timer: NodeJS.Timeout | undefined;
  let leftMs = TRUNCATE_CHILD_TIMEOUT_MS;
  let timerSince = 0;
  const child = spawn(process.execPath, [w.script, '--early', JSON.stringify(w.start)], { env: w.env, stdio: ['pipe', 'pipe', 'pipe'] });
  if (child.pid !== undefined) Atomics.store(state, PID_AT, child.pid);
  const phase = (): Phase => Atomics.load(state, PHASE_AT) as Phase;
  const runClock = (): void => {
    if (timer !== undefined || !sent || phase() === PHASE.lock) return;
    timerSince = performance.now();
    timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, leftMs);
  };
  const stopClock = (): void => {
    if (timer === undefined) return;
    clearTimeout(timer);
    timer = undefined;
    leftMs -= performance.now() - timerSince;
  };
  const early = (line: EarlyLine): void => {
    switch (line.early) {
      case 'lock':
        set(PHASE.lock);
        stopClock();
        return;
      case 'init':
        lockWaitMs = line.lockWaitMs;
        set(PHASE.init);
        runClock();
        return;
      case 'started':
        childStarted = true;
        post({ kind: 'started', library: line.library, ms: line.ms, ...(lockWaitMs !== undefined ? { lockWaitMs } : {}) });
        set(sent ? PHASE.running : PHASE.started);
        return;
      case 'fault':
        fault = line.message;
        return;
      case 'failed':
        failure = line.message;
    }
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    partial += chunk;
    for (let nl = partial.indexOf('\n'); nl >= 0; nl = partial.indexOf('\n')) {
      const line = partial.slice(0, nl + 1);
      partial = partial.slice(nl + 1);
      if (line.startsWith('{"early"')) {
        try {
          early(JSON.parse(line) as EarlyLine);
          continue;
        } catch {
          // not one: the check's
        }
      }
      stdout += line;
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    // the last of it is what a report keeps (the check keeps 2,000 characters)
    stderr = (stderr + chunk).slice(-64 * 1024);
  });
  // a child that died: its stdin's writes fail (EPIPE), which its end already says
  child.stdin.on('error', () => {});
  child.on('error', (err) => {
    spawnError = err.message;
  });
  child.on('close', (status, signal) => {
    stopClock();
    stdout += partial;
    if (!childStarted && !timedOut) {
      const how = signal ? `it died of ${signal}` : `it exited with status ${status}`;
      post({ kind: 'failed', reason: failure ?? spawnError ?? `${how} before it started${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}`, ...(fault ? { fault } : {}) });
      set(PHASE.failed);
    } else {
      post({ kind: 'done', stdout, stderr, status, signal, timedOut, ...(spawnError !== undefined ? { error: spawnError } : {}), ms: Math.round(performance.now() - sentAt) });
      set(PHASE.done);
    }
    w.port.close();
  });
  // the check's arguments come from the thread's parent
  parentPort?.on('message', (m: { args: TruncateArgs }) => {
    if (args !== undefined || phase() === PHASE.failed || phase() === PHASE.done) return;
    args = m.args;
    sent = true;
    sentAt = performance.now();
    if (phase() === PHASE.started) set(PHASE.running);
    // the child reads them once it has started (it may still be waiting for the lock)
    child.stdin.end(`${JSON.stringify(args)}\n`);
    runClock();
  });
}

if (!isMainThread && (workerData as Partial<ThreadStart> | null)?.role === 'truncate-early') follow(workerData as ThreadStart);
