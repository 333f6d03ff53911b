// The processes that check the devices (cli/device-runner.ts): a GPU in a process of its own; the devices that
// never register (OpenCL, Vulkan, the CPU: one static check each, the rest skipped) together in one. A check that
// kills its process is `crash` with the signal, one that runs past --timeout is killed and `timeout`; either way
// a new process is started for the checks of that device that have not reported yet (as deqp-runner resumes
// after a crash). A process killed from outside (SIGKILL from the OOM killer or a user; SIGTERM, SIGINT, SIGHUP
// sent to it alone) is the host's doing, not the driver's: inside a check, that check runs once more in a new
// process and is `error` if it is killed again; outside any check (starting, between two checks), a new process
// runs the checks left. A device whose processes keep dying outside any check without reporting a check gets
// MAX_BARREN_RESTARTS new ones, then its checks never run are `error` with the reason. After a shared process
// ended early, each of its devices with checks left goes on in processes of its own.
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Readable } from 'node:stream';
import { onText } from './stream-text.js';
import { takeDeviceSpare, takeSpareRunner } from './spare-runner.js';
import type { CheckStatus } from '../results/status.js';
import type { CheckResult, SuiteName } from '../results/types.js';
import {
  type DiscoveryEvent,
  EventLines,
  type PlanEvent,
  type PlannedCheck,
  type RestartEvent,
  type ResultEvent,
  RUNNER_OPTIONS_ENV,
  type RunnerEvent,
  type RunnerOptions,
  type Selection,
  type WaitEvent,
  type SuiteOptions,
  answerLine,
  decodeEvent,
  encodeRunnerOptions,
} from '../suites/protocol.js';

const runner = join(dirname(fileURLToPath(import.meta.url)), 'device-runner.js');
/** Outside any check (starting Vitest, between checks) a runner gets --timeout plus this before it counts as stuck. */
export const STALL_GRACE_S = 10;
/** New processes a device gets in a row when each one dies outside any check without reporting a check. */
export const MAX_BARREN_RESTARTS = 2;
/** Signals a driver's fault does not send (it gives SIGSEGV, SIGBUS, SIGABRT...): someone outside sent them. */
export const FROM_OUTSIDE: readonly string[] = ['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGHUP'];

export interface DeviceRun {
  device: string;
  checks: CheckResult[];
  /** Errors outside any check (a suite that failed to load, a runner that died between checks). */
  errors: string[];
  /** Processes started for this device (more than one after a crash or a timeout). */
  processes: number;
  /** The last lines the runner processes printed (for a crash's context). */
  output: string;
  /** The run was interrupted (SIGINT, SIGTERM, SIGHUP) before every check reported. */
  incomplete?: boolean;
  /** Why each process after the first was started (a crash, a timeout, a kill from outside), in order. */
  restarts?: string[];
}

/** Runner processes alive now, and whether the run was interrupted: an interrupt kills them, resumes nothing. */
const live = new Set<ChildProcess>();
let interrupted = false;
/** The pids of the runner processes of this run that have ended (closed): no folder of theirs is still being made. */
const ended = new Set<number>();

/** The runner processes of this run that have ended, by pid (for the scratch folders they may have left). */
export function endedRunners(): ReadonlySet<number> {
  return ended;
}

/** Stops every device's run: its processes are killed (the driver releases what a dead process held). */
export function interruptAll(): void {
  interrupted = true;
  for (const child of live) child.kill('SIGKILL');
}

/** What the command hears of a device: its runner's events, and the restarts the command makes. */
export type DeviceEvent = Exclude<RunnerEvent, DiscoveryEvent | PlanEvent | WaitEvent> | RestartEvent;

export interface OrchestrateOptions {
  /** Seconds one check may run before it is killed (0: never). */
  timeoutS: number;
  /** Each event of a device as it comes (progress); a process's errors and end go to each of its devices. */
  onEvent?: (device: string, event: DeviceEvent) => void;
  /** Extra environment for the runners. */
  env?: NodeJS.ProcessEnv;
}

/** A check that started and has not reported, and its waits for the host (not counted against --timeout). */
interface Unfinished {
  device: string;
  id: string;
  suite: SuiteName;
  title: string;
  startedAt: number;
  /** ms its ended waits took (each up to its limit). */
  waitedMs: number;
  /** What it waited for (the timing lock, quiet), each once. */
  waitedFor: string[];
  /** The wait going on: since when, the most it may take, what for. */
  wait?: { since: number; limitMs: number; what: string };
}

/**
 * ms of the check's own time at `now`: since it started, less its waits for the host (the timing lock, quiet),
 * each counted up to its own limit; beyond that limit a wait is the check's time again (a timing that hangs while
 * the machine is waited for is still killed).
 */
function checkOwnMs(u: Unfinished, now: number): number {
  return now - u.startedAt - waitedMs(u, now);
}

/** ms the check spent waiting for the host by `now` (each wait up to its limit). */
function waitedMs(u: Unfinished, now: number): number {
  return u.waitedMs + (u.wait ? Math.min(now - u.wait.since, u.wait.limitMs) : 0);
}

/** How one runner process went. */
interface Attempt {
  /** The devices it checked (a discovering runner's: those the command answered). */
  devices: SuiteOptions[];
  results: ResultEvent[];
  errors: string[];
  output: string;
  /** The check that started and did not finish, if any. */
  unfinished?: Unfinished;
  timedOut: boolean;
  /** Killed for making no progress outside any check (a runner stuck starting or between checks). */
  stalled: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
  ended: boolean;
  /** What a discovering runner found, and the device it offered. */
  discovery?: DiscoveryEvent;
  /** The checks of each of its devices, as the runner listed them before its first check. */
  plan?: PlannedCheck[];
}

/** Hears a discovering runner's discovery, with the function that answers it (the devices it checks; none: it exits). */
type OnDiscovery = (event: DiscoveryEvent, answer: (devices: SuiteOptions[]) => void) => void;
/** A discovering runner's process started: its pid, and when it exits. */
type OnProcess = (pid: number, exited: Promise<void>) => void;

/**
 * Starts a runner process with `spec`, in a session of its own, counted among the live ones. A discovering one is
 * the spare runner the command started before it loaded its modules, when it is there, and a device's one a device
 * spare started while its driver's discovery ran, when one is left (cli/spare-runner.ts): their options go on their
 * stdin.
 */
function spawnRunner(spec: RunnerOptions, o: OrchestrateOptions): ChildProcess {
  const spare = o.env ? undefined : spec.discover ? takeSpareRunner() : takeDeviceSpare();
  if (spare) {
    // a discovering runner's stdin stays open for the command's answer; a device's runner has nothing more to hear
    if (spec.discover) spare.stdin!.write(`${encodeRunnerOptions(spec)}\n`);
    else spare.stdin!.end(`${encodeRunnerOptions(spec)}\n`);
    live.add(spare);
    if (interrupted) spare.kill('SIGKILL');
    return spare;
  }
  const child = spawn(process.execPath, [runner], {
    // a discovering runner waits for the command's word on its stdin
    stdio: [spec.discover ? 'pipe' : 'ignore', 'pipe', 'pipe', 'pipe'],
    // a session of its own: a Ctrl-C at the terminal reaches the command alone, which stops its runners itself
    // (and a runner ends itself when the command dies: MAPPED_REG_PARENT_PID, cli/device-runner.ts)
    detached: true,
    env: { ...process.env, ...o.env, [RUNNER_OPTIONS_ENV]: encodeRunnerOptions(spec), MAPPED_REG_PARENT_PID: String(process.pid) },
  });
  live.add(child);
  if (interrupted) child.kill('SIGKILL');
  return child;
}

/** Keeps the last lines a runner prints (stdout and stderr) in its attempt, for a crash's context. */
function keepOutput(child: ChildProcess, a: Attempt): void {
  const keep = (text: string): void => {
    a.output = (a.output + text).slice(-8000);
  };
  onText(child.stdout!, keep);
  onText(child.stderr!, keep);
}

/** Hands a discovering runner's discovery to `onDiscovery` with the function that answers it once (no one to hear it: none). */
function answerDiscovery(child: ChildProcess, a: Attempt, e: DiscoveryEvent, onDiscovery: OnDiscovery | undefined): void {
  a.discovery = e;
  let answered = false;
  const answer = (devices: SuiteOptions[]): void => {
    if (answered) return;
    answered = true;
    a.devices = devices;
    child.stdin?.end(answerLine(devices));
  };
  child.stdin?.on('error', () => {}); // a runner that exited first: nothing to tell it
  if (onDiscovery) onDiscovery(e, answer);
  else answer([]);
}

/** Records one of a runner's events in its attempt, and passes on what the command hears of each device. */
function hear(e: RunnerEvent, a: Attempt, o: OrchestrateOptions, onDiscoveryEvent: (e: DiscoveryEvent) => void): void {
  /** A process's own event (an error outside any check, its end): each of its devices hears it. */
  const toEach = (d: DeviceEvent): void => a.devices.forEach((x) => o.onEvent?.(x.device, d));
  switch (e.type) {
    case 'plan':
      a.plan = e.checks;
      return;
    case 'discovery':
      onDiscoveryEvent(e);
      return;
    case 'start':
      a.unfinished = { device: e.device, id: e.id, suite: e.suite, title: e.title, startedAt: performance.now(), waitedMs: 0, waitedFor: [] };
      o.onEvent?.(e.device, e);
      return;
    case 'result':
      a.results.push(e);
      if (a.unfinished?.id === e.id && a.unfinished.device === e.device) delete a.unfinished;
      o.onEvent?.(e.device, e);
      return;
    case 'error':
      a.errors.push(e.message);
      toEach(e);
      return;
    case 'end':
      a.ended = true;
      toEach(e);
      return;
    case 'wait':
      hearWait(e, a.unfinished);
  }
}

/** A wait for the host of the check going on starts or ends (the command's own record: nothing is passed on). */
function hearWait(e: WaitEvent, u: Unfinished | undefined): void {
  if (!u || u.device !== e.device) return;
  const now = performance.now();
  if (u.wait) {
    u.waitedMs += Math.min(now - u.wait.since, u.wait.limitMs);
    delete u.wait;
  }
  if (!e.waiting) return;
  u.wait = { since: now, limitMs: e.limitMs, what: e.what };
  if (!u.waitedFor.includes(e.what)) u.waitedFor.push(e.what);
}

/**
 * Kills a runner whose check runs past --timeout (not counting its waits for the host), or that makes no progress
 * outside any check for --timeout plus STALL_GRACE_S (starting Vitest, between two checks); none when --timeout is 0.
 */
function watchdog(child: ChildProcess, a: Attempt, timeoutS: number, lastEvent: () => number): NodeJS.Timeout | undefined {
  if (timeoutS <= 0) return undefined;
  return setInterval(() => {
    const now = performance.now();
    if (a.unfinished && checkOwnMs(a.unfinished, now) > timeoutS * 1000) {
      a.timedOut = true;
      child.kill('SIGKILL');
    } else if (!a.unfinished && !a.ended && now - lastEvent() > (timeoutS + STALL_GRACE_S) * 1000) {
      a.stalled = true;
      child.kill('SIGKILL');
    }
  }, 100);
}

/**
 * Starts a runner with `spec` and follows it to its end. A discovering runner's discovery goes to `onDiscovery`
 * with the function that answers it (the devices it checks, with their options; none: it exits).
 */
function attempt(spec: RunnerOptions, o: OrchestrateOptions, onDiscovery?: OnDiscovery, onProcess?: OnProcess): Promise<Attempt> {
  return new Promise((resolve) => {
    const child = spawnRunner(spec, o);
    if (onProcess && child.pid !== undefined) onProcess(child.pid, new Promise((exited) => child.once('exit', () => exited())));
    const a: Attempt = { devices: spec.devices, results: [], errors: [], output: '', timedOut: false, stalled: false, code: null, signal: null, ended: false };
    keepOutput(child, a);
    let lastEvent = performance.now();
    const onDiscoveryEvent = (e: DiscoveryEvent): void => {
      if (!spec.discover || a.discovery) a.errors.push('a discovery from a runner that was not asked for one');
      else answerDiscovery(child, a, e, onDiscovery);
    };
    const lines = new EventLines((line) => {
      const e = decodeEvent(line);
      if ('unreadable' in e) {
        a.errors.push(e.unreadable);
        return;
      }
      lastEvent = performance.now();
      hear(e, a, o, onDiscoveryEvent);
    });
    onText(child.stdio[3] as Readable, (text) => lines.push(text));
    const timer = watchdog(child, a, o.timeoutS, () => lastEvent);
    child.on('close', (code, signal) => {
      live.delete(child);
      if (child.pid !== undefined) ended.add(child.pid);
      if (timer) clearInterval(timer);
      lines.end();
      a.code = code;
      a.signal = signal;
      resolve(a);
    });
  });
}

/** One device's run as it goes: what it reported, in which process, and what it has left. */
class DeviceState {
  readonly run: DeviceRun;
  /** Checks reported (or skipped from the start). */
  readonly reported: Set<string>;
  /** Checks whose process was killed from outside while they ran, and that process's number. */
  readonly killedOnce = new Map<string, number>();
  /** How the processes that died outside any check without reporting a check ended, in a row. */
  barren: string[] = [];
  plan: PlannedCheck[] | undefined;

  constructor(
    readonly options: SuiteOptions,
    private readonly o: OrchestrateOptions,
  ) {
    this.run = { device: options.device, checks: [], errors: [], processes: 0, output: '' };
    this.reported = new Set(options.skip);
  }

  /** The options of its next process (counted). */
  next(): SuiteOptions {
    this.run.processes += 1;
    return { ...this.options, skip: [...this.reported], attempt: this.run.processes };
  }

  left(): number {
    return this.plan ? this.plan.filter((c) => !this.reported.has(c.id)).length : 0;
  }

  restart(message: string): void {
    (this.run.restarts ??= []).push(message);
    this.o.onEvent?.(this.run.device, { type: 'restart', message });
  }

  /** A check reported by the command for its process (crash, timeout, error). */
  report(c: CheckResult): void {
    this.run.checks.push(c);
    this.o.onEvent?.(this.run.device, { type: 'result', device: this.run.device, id: c.id, suite: c.suite, title: c.title, status: c.status, durationMs: c.durationMs, ...(c.message ? { message: c.message } : {}) });
    this.reported.add(c.id);
  }

  /**
   * What process `a` (this device's latest) did for it: its checks recorded, and whether the device needs another
   * process (the process ended before all its checks reported) or is done.
   */
  settle(a: Attempt): 'again' | 'done' {
    const { o, run } = this;
    const n = run.processes;
    run.output = a.output;
    this.plan ??= a.plan;
    const mine = a.results.filter((r) => r.device === run.device);
    for (const r of mine) {
      const { type: _type, device: _device, ...result } = r;
      const killedIn = this.killedOnce.get(r.id);
      const note = killedIn ? [`run again in process ${n}: process ${killedIn} was killed during this check from outside, not by this command`] : [];
      run.checks.push({ ...result, process: n, ...(note.length ? { log: [...(result.log ?? []), ...note] } : {}) });
      this.reported.add(r.id);
    }
    run.errors.push(...a.errors);
    if (interrupted) {
      run.incomplete = true;
      return 'done';
    }
    const fromOutside = !a.timedOut && !a.stalled && a.signal !== null && FROM_OUTSIDE.includes(a.signal);
    const u = a.unfinished;
    if (u && u.device !== run.device) {
      // another device's check ended the shared process: this one's checks left go on in a process of its own
      this.barren = [];
      if (this.plan && this.left() === 0) return 'done';
      const how = a.timedOut ? `timed out (--timeout ${o.timeoutS} s)` : a.signal ? `killed by ${a.signal}` : `exited with status ${a.code}`;
      this.restart(`process ${n} ended during ${u.device}'s ${u.id} (${how}): ${this.plan ? `the ${this.left()} checks left` : 'the checks'} run in process ${n + 1}`);
      return 'again';
    }
    if (u) {
      this.barren = [];
      const { id, suite, title, startedAt } = u;
      if (fromOutside && !this.killedOnce.has(id)) {
        // the OOM killer or a user, not the driver: the check runs once more before anything is concluded
        this.killedOnce.set(id, n);
        this.restart(`process ${n} was killed by ${a.signal} during ${id}, not by this command (the OOM killer, a user, a scheduler): ${id} and the ${Math.max(0, this.left() - 1)} checks after it run in process ${n + 1}`);
        return 'again';
      }
      const status: CheckStatus = a.timedOut ? 'timeout' : fromOutside ? 'error' : 'crash';
      const waited = waitedMs(u, performance.now());
      const message = a.timedOut
        ? `no result after ${o.timeoutS} s: the check was killed${waited >= 1000 ? ` (not counting the ${(waited / 1000).toFixed(0)} s it waited for the host: ${u.waitedFor.join(', ')})` : ''}`
        : fromOutside
          ? `the host: the check's process was killed by ${a.signal} from outside twice (processes ${this.killedOnce.get(id)} and ${n}), not by this command and not by a fault of the driver (the OOM killer, a user, a scheduler)`
          : a.signal
            ? `the check killed its process: ${a.signal}`
            : `the process exited with status ${a.code} during the check`;
      this.report({ id, suite, title, status, durationMs: performance.now() - startedAt, message, process: n, ...(status === 'crash' && a.signal ? { data: { signal: a.signal } } : {}) });
      if (this.plan && this.left() === 0) return 'done';
      this.restart(`process ${n} ended during ${id} (${status}${a.signal ? `, ${a.signal}` : ''}): the ${this.left()} checks after it run in process ${n + 1}`);
      return 'again'; // the checks after it still run, in a new process
    }
    if (a.ended) return 'done';
    if (a.stalled) {
      run.errors.push(`the device's process made no progress for ${o.timeoutS + STALL_GRACE_S} s outside any check and was killed`);
      return 'done';
    }
    const how = a.signal ? `killed by ${a.signal}${fromOutside ? ' (not by this command)' : ''}` : `exited with status ${a.code}`;
    // a process that reported checks of this device before it died made progress: only the deaths after the last progress count
    this.barren = mine.length > 0 ? [] : [...this.barren, how];
    if (this.barren.length > MAX_BARREN_RESTARTS) {
      const why = `the device's process died outside any check ${this.barren.length} times in a row without reporting a check (${this.barren.join('; ')})`;
      run.errors.push(`${why}: the checks left were not run`);
      for (const c of this.plan ?? []) if (!this.reported.has(c.id)) this.report({ ...c, status: 'error', durationMs: 0, message: `never run: ${why}` });
      return 'done';
    }
    const last = mine.at(-1)?.id;
    this.restart(`process ${n} was ${how} outside any check${last ? ` (after ${last})` : ''}: ${this.plan ? `the ${this.left()} checks left` : 'the checks'} run in process ${n + 1}`);
    return 'again';
  }
}

/**
 * The devices' runs from a first process of them all (started, or `first`): each device with checks left after it
 * goes on in processes of its own, until every check of it has reported (or it is given up).
 */
async function runFrom(states: DeviceState[], o: OrchestrateOptions, first?: Attempt): Promise<void> {
  const a = first ?? (await attempt({ devices: states.map((s) => s.next()) }, o));
  const left = states.filter((s) => s.settle(a) === 'again');
  await Promise.all(
    left.map(async (s) => {
      while (s.settle(await attempt({ devices: [s.next()] }, o)) === 'again');
    }),
  );
}

/**
 * Runs the checks of `devices` in one process (one Vitest run, the devices in order in each suite), resuming
 * after crashes, timeouts and kills until every check has reported. Each check carries the number of the process
 * that reported it among its device's processes (1 for the first).
 */
export async function runTogether(devices: readonly SuiteOptions[], o: OrchestrateOptions): Promise<DeviceRun[]> {
  const states = devices.map((d) => new DeviceState(d, o));
  await runFrom(states, o);
  return states.map((s) => s.run);
}

/** Runs the suites of one device in a process of its own (runTogether of one). */
export async function runDevice(options: SuiteOptions, o: OrchestrateOptions): Promise<DeviceRun> {
  return (await runTogether([options], o))[0]!;
}

/** What a discovering runner did: its discovery (absent when it ended first), and the runs of the devices it checked. */
export interface DiscoveringRun {
  discovery?: DiscoveryEvent;
  runs: DeviceRun[];
  /** Why it ended before its discovery (its errors), and the last lines it printed. */
  errors: string[];
  output: string;
}

/**
 * A runner that discovers `selection`'s backends, offers a device (`onDiscovery` hears it, with the function that
 * answers: the devices it checks, with their options, or none), then checks the devices answered as runTogether
 * does, its process counting as their first.
 */
export async function runDiscovering(selection: Selection, o: OrchestrateOptions & { onDiscovery: OnDiscovery; onProcess?: OnProcess }): Promise<DiscoveringRun> {
  let states: DeviceState[] = [];
  const a = await attempt(
    { devices: [], discover: selection },
    o,
    (e, answer) =>
      o.onDiscovery(e, (devices) => {
        states = devices.map((d) => new DeviceState(d, o));
        answer(states.map((s) => s.next()));
      }),
    o.onProcess,
  );
  if (!a.discovery) {
    const who = `the discovering process (${selection.backends.join(', ')})`;
    const why = a.stalled
      ? `${who} reported nothing for ${o.timeoutS + STALL_GRACE_S} s and was killed`
      : a.signal
        ? `${who} was killed by ${a.signal} before it reported`
        : `${who} exited with status ${a.code} before it reported`;
    return { runs: [], errors: [...a.errors, why], output: a.output };
  }
  await runFrom(states, o, a);
  return { discovery: a.discovery, runs: states.map((s) => s.run), errors: a.errors, output: a.output };
}
