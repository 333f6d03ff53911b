// Every message between the command and its device runner processes (cli/device-runner.ts, cli/orchestrate.ts):
// the runner's options, in its environment; the runner's events, JSON lines on file descriptor 3 (a check's start
// and result, its plan, its discovery, errors outside any check, its end); and the command's answer to a runner that
// discovers, one JSON line on its stdin. Encoding and decoding are here and nowhere else. It sits with the suites,
// the lowest layer that knows a device's options (SuiteOptions); no Vitest and no driver is loaded here, since the
// command imports it.
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Backend, PlainDevice, PlainDiscovery } from '../bindings/discovery.js';
import type { ProcessStart } from '../bindings/process-gone.js';
import type { CheckResult, SuiteName } from '../results/types.js';
import type { HostWait, QuietOptions } from './measure.js';

// ---- what the command tells a runner ----

/**
 * The options of one device's checks. A runner process gets those of each device it checks (RunnerOptions), and
 * gives them to the suites with Vitest's provide/inject (key `mappedReg`, the devices in order).
 */
export interface SuiteOptions {
  /** The device's id. */
  device: string;
  /**
   * What the command's discovery found of a device that never registers (OpenCL, Vulkan, CPU): such a device is
   * rebuilt from this instead of being discovered again (its checks need no driver, and the process that checks
   * it need not load its ICD). CUDA and HIP devices are always discovered again, for their ops.
   */
  discovered?: PlainDevice;
  scratchDir: string;
  sizeMiB: number;
  runs: number;
  minRelativeSpeed: number;
  /** Checks not to run (already reported by an earlier process of this device's run). */
  skip: string[];
  /** --quiet-wait, --max-drop and the baseline's figures of this device: how long a busy machine is waited for (suites/measure.ts). */
  quiet: QuietOptions;
  /**
   * Checks the user's selection leaves out (--check, --skip, --skips-file: cli/select-checks.ts), each with the
   * reason it is reported `skip` with (e.g. "skipped by --skip hazard.context_reset"). Not run, not even asked
   * whether it applies.
   */
  deselected?: Record<string, string>;
  /** Which process of the device's run this is (1: the first; more after a crash, a timeout or a kill). */
  attempt?: number;
  /**
   * The run's discovering processes of devices that never register (the OpenCL, Vulkan and CPU group's: an ICD
   * may take a second on a cold page cache) still there when this GPU was told to go: its probe reads its region
   * once they are gone, or after `limitMs` (past it, the command ends such a discovery as stalled), so that no
   * other process of the run lives beside the run's fullest moment.
   */
  waitFor?: { processes: ProcessStart[]; limitMs: number };
  /** Test hook: the id of a check that must kill its process (a real SIGSEGV), to prove containment. */
  forceCrash?: string;
  /** Test hook: the id of a check that must hang (blocked for good in a native call, as a driver call that never returns); `@runner`: the runner itself, before any check. */
  forceHang?: string;
}

/** The variable that carries a runner's options (JSON). */
export const RUNNER_OPTIONS_ENV = 'MAPPED_REG_SUITE_OPTIONS';

/** What the user asked for, as the command's options give it: the devices a discovering runner may offer. */
export interface Selection {
  backends: Backend[];
  /** Device ids (`--device`); empty: every device found. */
  devices: string[];
  /** Test hooks (MAPPED_REG_FORCE_CRASH / MAPPED_REG_FORCE_HANG): `device/check-id` or `check-id`. */
  forceCrash?: string;
  forceHang?: string;
}

/** A device runner's options. */
export interface RunnerOptions {
  /**
   * The devices it checks, in this order, in one Vitest run (each with the number of this process among its
   * device's processes in `attempt`). Empty in a runner that discovers: the command's answer gives them.
   */
  devices: SuiteOptions[];
  /**
   * A runner that discovers the devices of these backends itself (the command loads no driver), reports them to
   * the command with the device it offers to check (cli/select-devices.ts pickDevice), then checks the devices the
   * command answers (none: it exits).
   */
  discover?: Selection;
}

/**
 * RUNNER_OPTIONS_ENV of a runner started before the command knew its options (a spare, cli/spare-runner.ts): they
 * come as the first line on its stdin, as encodeRunnerOptions writes them.
 */
export const OPTIONS_ON_STDIN = '-';

/**
 * RUNNER_OPTIONS_ENV of a runner started for another GPU of a driver while that driver's discovery runs (a device
 * spare, cli/spare-runner.ts startDeviceSpares): its options, a registering device's, come as the first line on its
 * stdin once the discovery has found the GPU; it makes Vitest ready meanwhile.
 */
export const DEVICE_OPTIONS_ON_STDIN = '-device';

/** A runner's options as RUNNER_OPTIONS_ENV carries them (or a spare's first line on its stdin). */
export function encodeRunnerOptions(spec: RunnerOptions): string {
  return JSON.stringify(spec);
}

/** A runner's options from RUNNER_OPTIONS_ENV's text (throws on text that is not JSON). */
export function decodeRunnerOptions(text: string): RunnerOptions {
  return JSON.parse(text) as RunnerOptions;
}

// ---- what a runner tells the command ----

export interface StartEvent {
  type: 'start';
  /** The device whose check it is. */
  device: string;
  id: string;
  suite: SuiteName;
  title: string;
}

/** A check's result, as its process writes it on the event channel (with the device whose check it is). */
export type ResultEvent = { type: 'result'; device: string } & CheckResult;

/** One check of the plan: what the command needs to name a check its process never reached. */
export interface PlannedCheck {
  id: string;
  suite: SuiteName;
  title: string;
}

/** The checks of each device a process checks (every check, in order), sent before the first one starts. */
export interface PlanEvent {
  type: 'plan';
  checks: PlannedCheck[];
}

/** An error outside any check (a suite file that failed to load, an unhandled error): the process's, not a device's. */
export interface ErrorEvent {
  type: 'error';
  message: string;
}

export interface EndEvent {
  type: 'end';
  durationMs: number;
}

/** A discovering runner's discovery (before any check): what it found, and the device it offers to check (null: none, it exits). */
export interface DiscoveryEvent {
  type: 'discovery';
  durationMs: number;
  discovery: PlainDiscovery;
  device: string | null;
}

/**
 * A wait for the host within the check going on (the timing lock, quiet: suites/measure.ts) started, with the
 * most it may take, or ended. The command's watchdog does not count it against the check's --timeout.
 */
export type WaitEvent = { type: 'wait'; device: string } & HostWait;

/** Every line a runner writes on its event channel. */
export type RunnerEvent = StartEvent | ResultEvent | ErrorEvent | EndEvent | DiscoveryEvent | PlanEvent | WaitEvent;

/** Not from a runner: the command started a new process for a device's checks left (cli/orchestrate.ts), and why. */
export interface RestartEvent {
  type: 'restart';
  message: string;
}

// ---- encode: a runner's events, and the command's answer ----

/** One event as its line on the channel. */
export function encodeEvent(event: RunnerEvent): string {
  return `${JSON.stringify(event)}\n`;
}

let channel: number | null | undefined;

/**
 * fd 3 in a runner the command started (its options are in RUNNER_OPTIONS_ENV: the command opened fd 3 for it);
 * elsewhere, MAPPED_REG_EVENTS's file when it is set (closed at exit), else none: events are not written (a plain
 * `vitest run suites/`). Not probed with fstatSync: fd 3 of a process that was given none is one of Node's own, and
 * in a runner an fstatSync before Vitest is loaded makes Vite's start fail ("pm is not a function").
 */
function eventChannel(): number | null {
  if (channel !== undefined) return channel;
  const path = process.env.MAPPED_REG_EVENTS;
  if (process.env[RUNNER_OPTIONS_ENV] !== undefined) channel = 3;
  else if (path) {
    const fd = openSync(path, 'a');
    process.on('exit', () => closeSync(fd));
    channel = fd;
  } else channel = null;
  return channel;
}

/**
 * Writes an event on the run's channel, synchronously: a check that kills its process still leaves the lines it
 * wrote before behind.
 */
export function writeEvent(event: RunnerEvent): void {
  const fd = eventChannel();
  if (fd !== null) writeSync(fd, encodeEvent(event));
}

/** The command's answer to a discovering runner: the devices it checks (none: it exits). */
export function answerLine(devices: readonly SuiteOptions[]): string {
  return `${JSON.stringify({ devices })}\n`;
}

// ---- decode: the command reads the events, a runner its answer ----

/** A runner's line as its event, or the reason it is not one (blank lines are skipped before: see EventLines). */
export function decodeEvent(line: string): RunnerEvent | { unreadable: string } {
  try {
    return JSON.parse(line) as RunnerEvent;
  } catch {
    return { unreadable: `unreadable event: ${line.slice(0, 200)}` };
  }
}

/** Splits a runner's channel, as it comes in chunks, into its non-blank lines. */
export class EventLines {
  #pending = '';

  constructor(private readonly onLine: (line: string) => void) {}

  /** A chunk as read: each line it completes goes to onLine. */
  push(chunk: string): void {
    const lines = (this.#pending + chunk).split('\n');
    this.#pending = lines.pop()!;
    for (const line of lines) this.#take(line);
  }

  /** The channel closed: a last line without its newline still counts. */
  end(): void {
    const last = this.#pending;
    this.#pending = '';
    this.#take(last);
  }

  #take(line: string): void {
    if (line.trim()) this.onLine(line);
  }
}

/** The devices an answer line gives (none for anything else: an empty line when the command closed stdin first). */
export function readAnswer(line: string): SuiteOptions[] {
  try {
    const answer = JSON.parse(line) as { devices?: unknown };
    return Array.isArray(answer.devices) ? (answer.devices as SuiteOptions[]) : [];
  } catch {
    return [];
  }
}
