// Each device in its own process (cli/device-runner.ts), all devices at once. A check that kills its process
// is `crash` with the signal, one that runs past --timeout is killed and `timeout`; either way a new process
// is started for the checks of that device that have not reported yet (as deqp-runner resumes after a crash).
// A process killed from outside (SIGKILL from the OOM killer or a user; SIGTERM, SIGINT, SIGHUP sent to it
// alone) is the host's doing, not the driver's: inside a check, that check runs once more in a new process and
// is `error` if it is killed again; outside any check (starting, between two checks), a new process runs the
// checks left. A device whose processes keep dying outside any check without reporting a check gets
// MAX_BARREN_RESTARTS new ones, then its checks never run are `error` with the reason.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CheckStatus } from '../results/status.js';
import type { CheckResult, SuiteName } from '../results/types.js';
import type { ResultEvent, SuiteOptions } from '../suites/check.js';
import type { DiscoveryEvent, PlanEvent, RestartEvent, RunnerEvent } from '../reporters/events.js';
import { deviceOptions } from './select.js';

const runner = join(dirname(fileURLToPath(import.meta.url)), 'device-runner.js');
/**
 * Node options of a runner: V8's young generation capped at 1 MiB a semi-space (16 by default, for each of
 * the runner's two threads): some 20 MiB less resident per runner, for a process that allocates little
 * once Vitest has started.
 */
export const RUNNER_NODE_OPTIONS = ['--max-semi-space-size=1'];
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
const live = new Set<import('node:child_process').ChildProcess>();
let interrupted = false;

/** Stops every device's run: its processes are killed (the driver releases what a dead process held). */
export function interruptAll(): void {
  interrupted = true;
  for (const child of live) child.kill('SIGKILL');
}

export interface OrchestrateOptions {
  /** Seconds one check may run before it is killed (0: never). */
  timeoutS: number;
  /** Each event as it comes (progress). */
  onEvent?: (device: string, event: RunnerEvent | RestartEvent | { type: 'start'; id: string; suite: SuiteName; title: string }) => void;
  /** Extra environment for the runners. */
  env?: NodeJS.ProcessEnv;
  /**
   * The discovery of a runner started with `discover`, as soon as it arrives (before any event of the device it
   * picked). The runner checks nothing until `answer(true)`; `answer(false)` (or no answer, when the command
   * ends) makes it exit. A runner that picked no device exits by itself: its answer is ignored.
   */
  onDiscovery?: (event: DiscoveryEvent, answer: (go: boolean) => void) => void;
}

type Incoming = Exclude<RunnerEvent, DiscoveryEvent> | { type: 'start'; id: string; suite: SuiteName; title: string };

interface Attempt {
  results: ResultEvent[];
  errors: string[];
  output: string;
  /** The check that started and did not finish, if any. */
  unfinished?: { id: string; suite: SuiteName; title: string; startedAt: number };
  timedOut: boolean;
  /** Killed for making no progress outside any check (a runner stuck starting or between checks). */
  stalled: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
  ended: boolean;
  /** What a runner started with `discover` found, and the device it picked. */
  discovery?: DiscoveryEvent;
  /** The device's checks, as the runner listed them before its first check. */
  plan?: PlanEvent['checks'];
  /** A discovering runner was told to stop (its device is checked by another process, or not at all). */
  toldToStop?: boolean;
}

function attempt(options: SuiteOptions, o: OrchestrateOptions): Promise<Attempt> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...RUNNER_NODE_OPTIONS, runner], {
      // a discovering runner waits for the command's word on its stdin
      stdio: [options.discover ? 'pipe' : 'ignore', 'pipe', 'pipe', 'pipe'],
      // a session of its own: a Ctrl-C at the terminal reaches the command alone, which stops its runners itself
      // (and a runner ends itself when the command dies: MAPPED_REG_PARENT_PID, cli/device-runner.ts)
      detached: true,
      env: { ...process.env, ...o.env, MAPPED_REG_SUITE_OPTIONS: JSON.stringify(options), MAPPED_REG_PARENT_PID: String(process.pid) },
    });
    live.add(child);
    if (interrupted) child.kill('SIGKILL');
    const a: Attempt = { results: [], errors: [], output: '', timedOut: false, stalled: false, code: null, signal: null, ended: false };
    let lastEvent = performance.now();
    let device = options.device; // '' until a discovering runner has picked its device
    const keep = (chunk: Buffer): void => {
      a.output = (a.output + chunk.toString()).slice(-8000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    let pending = '';
    const events = child.stdio[3] as NodeJS.ReadableStream;
    const take = (line: string): void => {
      if (!line.trim()) return;
      let e: Incoming | DiscoveryEvent;
      try {
        e = JSON.parse(line) as Incoming | DiscoveryEvent;
      } catch {
        a.errors.push(`unreadable event: ${line.slice(0, 200)}`);
        return;
      }
      lastEvent = performance.now();
      if (e.type === 'plan') {
        a.plan = e.checks;
        return;
      }
      if (e.type === 'discovery') {
        if (!options.discover || a.discovery) {
          a.errors.push('a discovery from a runner that was not asked for one');
          return;
        }
        a.discovery = e;
        device = e.device ?? '';
        let answered = false;
        const answer = (go: boolean): void => {
          if (answered) return;
          answered = true;
          if (!go) a.toldToStop = true;
          child.stdin?.end(go ? 'go\n' : 'stop\n');
        };
        child.stdin?.on('error', () => {}); // a runner that exited first: nothing to tell it
        if (o.onDiscovery) o.onDiscovery(e, answer);
        else answer(true);
        return;
      }
      o.onEvent?.(device, e);
      if (e.type === 'start') a.unfinished = { id: e.id, suite: e.suite, title: e.title, startedAt: performance.now() };
      else if (e.type === 'result') {
        a.results.push(e);
        if (a.unfinished?.id === e.id) delete a.unfinished;
      } else if (e.type === 'error') a.errors.push(e.message);
      else if (e.type === 'end') a.ended = true;
    };
    events.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      lines.forEach(take);
    });
    const watchdog =
      o.timeoutS > 0
        ? setInterval(() => {
            const now = performance.now();
            if (a.unfinished && now - a.unfinished.startedAt > o.timeoutS * 1000) {
              a.timedOut = true;
              child.kill('SIGKILL');
            } else if (!a.unfinished && !a.ended && now - lastEvent > (o.timeoutS + STALL_GRACE_S) * 1000) {
              // stuck outside any check (starting Vitest, between two checks): the same limit applies
              a.stalled = true;
              child.kill('SIGKILL');
            }
          }, 100)
        : undefined;
    child.on('close', (code, signal) => {
      live.delete(child);
      if (watchdog) clearInterval(watchdog);
      take(pending);
      a.code = code;
      a.signal = signal;
      resolve(a);
    });
  });
}

/**
 * Runs the suites of one device, resuming after crashes, timeouts and kills until every check has reported. With
 * `options.discover`, the first process discovers and picks the device (o.onDiscovery hears of it); the run then
 * carries that discovery, and no device ('' and no checks) when the runner picked none or ended before its
 * discovery (`discovery` absent: the errors and the output say why). Each check carries the number of the
 * process that reported it (1 for the first).
 */
export async function runDevice(options: SuiteOptions, o: OrchestrateOptions): Promise<DeviceRun> {
  const run: DeviceRun = { device: options.device, checks: [], errors: [], processes: 0, output: '' };
  const reported = new Set<string>(options.skip);
  /** Checks whose process was killed from outside while they ran, and that process's number. */
  const killedOnce = new Map<string, number>();
  /** How the processes that died outside any check without reporting a check ended, in a row. */
  let barren: string[] = [];
  let plan: PlanEvent['checks'] | undefined;
  let current = options;
  const restart = (message: string): void => {
    (run.restarts ??= []).push(message);
    o.onEvent?.(run.device, { type: 'restart', message });
  };
  const left = (): number => (plan ? plan.filter((c) => !reported.has(c.id)).length : 0);
  for (;;) {
    run.processes += 1;
    const n = run.processes;
    const a = await attempt({ ...current, skip: [...reported], attempt: n }, o);
    run.output = a.output;
    if (current.discover) {
      const chosen = a.discovery?.device ? a.discovery.discovery.devices.find((d) => d.id === a.discovery!.device) : undefined;
      if (!chosen) {
        run.errors.push(...a.errors);
        if (!a.discovery) {
          run.errors.push(
            a.stalled
              ? `the discovering process (${current.discover.backends.join(', ')}) reported nothing for ${o.timeoutS + STALL_GRACE_S} s and was killed`
              : a.signal
                ? `the discovering process (${current.discover.backends.join(', ')}) was killed by ${a.signal} before it reported`
                : `the discovering process (${current.discover.backends.join(', ')}) exited with status ${a.code} before it reported`,
          );
        }
        if (interrupted) run.incomplete = true;
        return run;
      }
      current = deviceOptions(chosen, current, current.discover);
      run.device = chosen.id;
      // told to stop: its device is not this process's to check (its run is not used)
      if (a.toldToStop) return run;
    }
    plan ??= a.plan;
    for (const r of a.results) {
      const { type: _type, ...result } = r;
      const killedIn = killedOnce.get(r.id);
      const note = killedIn ? [`run again in process ${n}: process ${killedIn} was killed during this check from outside, not by this command`] : [];
      run.checks.push({ ...result, process: n, ...(note.length ? { log: [...(result.log ?? []), ...note] } : {}) });
      reported.add(r.id);
    }
    run.errors.push(...a.errors);
    if (interrupted) {
      run.incomplete = true;
      return run;
    }
    const fromOutside = !a.timedOut && !a.stalled && a.signal !== null && FROM_OUTSIDE.includes(a.signal);
    if (a.unfinished) {
      barren = [];
      const { id, suite, title, startedAt } = a.unfinished;
      if (fromOutside && !killedOnce.has(id)) {
        // the OOM killer or a user, not the driver: the check runs once more before anything is concluded
        killedOnce.set(id, n);
        restart(`process ${n} was killed by ${a.signal} during ${id}, not by this command (the OOM killer, a user, a scheduler): ${id} and the ${Math.max(0, left() - 1)} checks after it run in process ${n + 1}`);
        continue;
      }
      const durationMs = performance.now() - startedAt;
      const status: CheckStatus = a.timedOut ? 'timeout' : fromOutside ? 'error' : 'crash';
      const message = a.timedOut
        ? `no result after ${o.timeoutS} s: the check was killed`
        : fromOutside
          ? `the host: the check's process was killed by ${a.signal} from outside twice (processes ${killedOnce.get(id)} and ${n}), not by this command and not by a fault of the driver (the OOM killer, a user, a scheduler)`
          : a.signal
            ? `the check killed its process: ${a.signal}`
            : `the process exited with status ${a.code} during the check`;
      run.checks.push({ id, suite, title, status, durationMs, message, process: n, ...(status === 'crash' && a.signal ? { data: { signal: a.signal } } : {}) });
      o.onEvent?.(run.device, { type: 'result', id, suite, title, status, durationMs, message });
      reported.add(id);
      if (plan && left() === 0) return run;
      restart(`process ${n} ended during ${id} (${status}${a.signal ? `, ${a.signal}` : ''}): the ${left()} checks after it run in process ${n + 1}`);
      continue; // the checks after it still run, in a new process
    }
    if (!a.ended) {
      if (a.stalled) {
        run.errors.push(`the device's process made no progress for ${o.timeoutS + STALL_GRACE_S} s outside any check and was killed`);
        return run;
      }
      const how = a.signal ? `killed by ${a.signal}${fromOutside ? ' (not by this command)' : ''}` : `exited with status ${a.code}`;
      // a process that reported checks before it died made progress: only the deaths after the last progress count
      barren = a.results.length > 0 ? [] : [...barren, how];
      if (barren.length > MAX_BARREN_RESTARTS) {
        const why = `the device's process died outside any check ${barren.length} times in a row without reporting a check (${barren.join('; ')})`;
        run.errors.push(`${why}: the checks left were not run`);
        for (const c of plan ?? []) {
          if (reported.has(c.id)) continue;
          const message = `never run: ${why}`;
          run.checks.push({ ...c, status: 'error', durationMs: 0, message });
          o.onEvent?.(run.device, { type: 'result', ...c, status: 'error', durationMs: 0, message });
          reported.add(c.id);
        }
        return run;
      }
      const last = a.results.at(-1)?.id;
      restart(`process ${n} was ${how} outside any check${last ? ` (after ${last})` : ''}: ${plan ? `the ${left()} checks left` : 'the checks'} run in process ${n + 1}`);
      continue;
    }
    return run;
  }
}

/** Every device at once, each in its own processes. */
export function runDevices(devices: SuiteOptions[], o: OrchestrateOptions): Promise<DeviceRun[]> {
  return Promise.all(devices.map((d) => runDevice(d, o)));
}
