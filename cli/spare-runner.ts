// A device runner started as the command starts, before it loads its modules (cli/main.ts), for the run's first
// discovering process: the runner's Node start and its own modules (some 85 ms on 2 cores) then overlap the
// command's (yargs, the options, the reporters: some 0.1 s), instead of coming after them. Its options, which the
// command knows only once it has parsed its own, come as the first line on its stdin (suites/protocol.ts
// OPTIONS_ON_STDIN; cli/orchestrate.ts writes them). A command that does not run (bad usage, --help) or a run that
// needs no discovering process kills it: it has loaded no driver and done nothing. The device spares
// (startDeviceSpares) are the same for the other GPUs of a driver: started while its discovery runs, one for each
// GPU it will likely find beyond the one its discovering process keeps, each taking a GPU's options once it is found.
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEVICE_OPTIONS_ON_STDIN, OPTIONS_ON_STDIN, RUNNER_OPTIONS_ENV } from '../suites/protocol.js';

const runner = join(dirname(fileURLToPath(import.meta.url)), 'device-runner.js');

let spare: ChildProcess | undefined;

/** Whether these arguments are a run (the default command, or `run`), as far as their first word shows; not --help or --version. */
export function runsChecks(args: readonly string[]): boolean {
  if (args.some((a) => a === '--help' || a === '-h' || a === '--version' || a === '-V')) return false;
  const first = args[0];
  return first === undefined || first === 'run' || first.startsWith('-');
}

/** A runner started with its options to come on stdin (`how`), holding nothing of the command's until taken. */
function startWaiting(how: string): ChildProcess {
  const child = spawn(process.execPath, [runner], {
    // as a discovering runner's (cli/orchestrate.ts spawnRunner): stdin for its options and the command's answer
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    detached: true,
    env: { ...process.env, [RUNNER_OPTIONS_ENV]: how, MAPPED_REG_PARENT_PID: String(process.pid) },
  });
  child.on('error', () => {}); // a spare that could not start is not taken (takeSpareRunner)
  child.stdin!.on('error', () => {});
  // until it is taken, it never keeps the command alive (a command that ends without a run ends as before)
  holds(child, false);
  return child;
}

/** Starts the spare runner when `args` are a run; killed at the command's exit unless taken. */
export function startSpareRunner(args: readonly string[]): void {
  if (spare || !runsChecks(args)) return;
  spare = startWaiting(OPTIONS_ON_STDIN);
  process.on('exit', releaseSpareRunner);
}

/** The runners started for the other GPUs of a driver while its discovery runs (startDeviceSpares), not yet taken. */
const deviceSpares: ChildProcess[] = [];

/**
 * Starts `count` device spares: runners for the other GPUs a driver's discovery is expected to find (their count
 * from the device nodes, before any driver is loaded: bindings/backends/registering.ts expectedDevices), each
 * making Vitest ready while the discovery runs, then taking a GPU's options once it is found (a GPU's own runner
 * otherwise starts only then: Node.js, Vitest and the driver's start, some 0.7 s before its first check, on the
 * double's 8 devices). Those not taken are killed once the discovery is in (releaseDeviceSpares), and at the
 * command's exit: they have loaded no driver and done nothing.
 */
export function startDeviceSpares(count: number): void {
  if (deviceSpares.length === 0 && count > 0) process.on('exit', releaseDeviceSpares);
  for (let i = 0; i < count; i++) deviceSpares.push(startWaiting(DEVICE_OPTIONS_ON_STDIN));
}

/** A device spare, alive, for one GPU's runner; undefined when none is left. */
export function takeDeviceSpare(): ChildProcess | undefined {
  while (deviceSpares.length > 0) {
    const child = taken(deviceSpares.shift());
    if (child) return child;
  }
  return undefined;
}

/** Kills the device spares no GPU took. */
export function releaseDeviceSpares(): void {
  for (const child of deviceSpares.splice(0)) child.kill('SIGKILL');
}

/** Whether the process and its pipes keep the command's event loop alive (Node's ref / unref). */
function holds(child: ChildProcess, hold: boolean): void {
  for (const h of [child, ...child.stdio]) {
    // the pipes are net.Socket, which the stdio's stream types do not say
    const handle = h as unknown as { ref?: () => void; unref?: () => void } | null;
    if (hold) handle?.ref?.();
    else handle?.unref?.();
  }
}

/** The spare runner, alive, for the first discovering process (once: later calls get none). */
export function takeSpareRunner(): ChildProcess | undefined {
  const child = spare;
  spare = undefined;
  return taken(child);
}

/** `child`, held by the command from now on, when it started and has not exited; else undefined. */
function taken(child: ChildProcess | undefined): ChildProcess | undefined {
  // not exited yet, so its 'exit' and 'close' are still to come for whoever takes it
  if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return undefined;
  holds(child, true);
  return child;
}

/** Kills the spare runner if no one took it. */
export function releaseSpareRunner(): void {
  spare?.kill('SIGKILL');
  spare = undefined;
}
