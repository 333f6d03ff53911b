// What `run` and `list` do, top-down: the stop signals and what killed processes left; the discovery (for a run, in
// the processes that then check the devices: cli/discovering-runners.ts); what it found; the checks (who runs where
// and when, and the gate's re-runs: cli/schedule.ts; each device's processes: cli/orchestrate.ts); the result
// (cli/assemble.ts). The verdicts and checks come from the suites and the model; this file drives and prints.
import { deviceFromPlain, discover, plainDiscovery } from '../bindings/discovery.js';
import { statfs } from '../bindings/libc.js';
import { type Look, wrap } from '../reporters/look.js';
import { discoveryLines, Progress, type ProgressEvent, STILL_RUNNING_S } from '../reporters/terminal.js';
import { plural } from '../results/format.js';
import type { CheckResult, RunResult } from '../results/types.js';
import { deviceResult, runResult } from './assemble.js';
import { type Discovered, discoverInGroups, removeScratchOfTheDead, stopGroups } from './discovering-runners.js';
import { type RunOptions, resultOptions } from './options.js';
import { UsageError } from './usage-error.js';
import { type DeviceRun, interruptAll } from './orchestrate.js';
import { Probes, checkDevices } from './schedule.js';
import { DeviceChoice } from './select-devices.js';
import { PROBE_VERDICT } from '../suites/checks/data.js';
import { onStop } from './signals.js';

export { DiscoveryError } from './discovering-runners.js';
export { UsageError } from './usage-error.js';

/** Where a run's own text goes. */
export interface Terminal {
  out: (line: string) => void;
  /** A terminal: progress is redrawn in place rather than printed a line a check. */
  tty?: boolean;
  /** Raw output for the redrawn progress (default: through `out`, a line at a time). */
  write?: (text: string) => void;
  /** The width to fit and the colours (reporters/look.ts; none: a pipe's plain text). */
  look?: Look;
}

export interface RunOutcome {
  result: RunResult;
  /** Stopped by a signal (cli/signals.ts): what finished is in `result`, marked incomplete; no gate is made of it. */
  interrupted: boolean;
  /** Runs one check of one device again, in a new process of that device (the baseline gate's flake re-run). */
  rerun: (deviceId: string, checkId: string) => Promise<CheckResult | undefined>;
}

export async function run(o: RunOptions, term: Terminal, tool: RunResult['tool']): Promise<RunOutcome> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  // what was asked for, decided once by cli/options.ts, and the choice of devices made of it, handed down as one
  const choice = new DeviceChoice(o.selection, o.suite);
  // SIGINT, SIGTERM and SIGHUP stop the run (cli/signals.ts): every device's process is killed, nothing new starts
  const stop = new AbortController();
  const stopListening = o.listOnly
    ? () => {}
    : onStop((signal) => {
        term.out(`\ninterrupted (${signal}): stopping every device (the driver releases what their processes held)`);
        stop.abort();
        interruptAll();
      });
  try {
    if (!o.listOnly) {
      // what killed processes left (their lock is free: bindings/scratch-lock.ts); a live run's folder is kept
      for (const { dir, names } of removeScratchOfTheDead(o.scratchDir)) for (const name of names) term.out(`removed ${name}, left in ${dir} by a process that no longer runs`);
    }
    // the device processes' events, held until the progress is drawn; a GPU's probe result frees the other devices
    const probes = new Probes();
    const events = new Relay((device, e) => {
      if (e.type === 'result' && e.id === PROBE_VERDICT) probes.over(device);
    });
    const orchestrate = { timeoutS: o.timeoutS, onEvent: events.take, stop: stop.signal };

    // `list` discovers here; a run in the processes that will check the devices (this one loads no driver)
    const discovered: Discovered = o.listOnly ? { groups: [], found: plainDiscovery(discover([...o.backends])) } : await discoverInGroups(choice, orchestrate);
    const tDiscovered = performance.now();
    // Bad input the discovery shows (a driver library named that did not load, an unknown device) is refused
    // before anything runs: the discovering processes are told to stop, and have checked nothing.
    const problem = stop.signal.aborted ? undefined : choice.problem(discovered.found);
    if (problem) {
      await stopGroups(discovered.groups, o.scratchDir);
      throw new UsageError(problem);
    }
    const { found } = discovered;
    const chosen = choice.chosen(found);
    const checking = o.listOnly ? undefined : checkDevices(discovered.groups, chosen, choice, probes, orchestrate);
    const fsType = statfs(o.scratchDir).fsName;

    const inProcesses = discovered.groups.flatMap((g) => (g.event && g.inProcess ? [{ backends: g.event.discovery.backends.map((b) => b.backend), ms: g.event.durationMs }] : []));
    // on a terminal, wrapped at its width (reporters/look.ts)
    const fitted = (l: string): void => wrap(l, term.look?.width).forEach((w) => term.out(w));
    discoveryLines({ ms: tDiscovered - t0, inProcesses, found, selected: chosen, interrupted: stop.signal.aborted }).forEach(fitted);
    let runs: DeviceRun[] = [];
    if (checking) {
      if (!stop.signal.aborted) fitted(`\nchecks (each device in its own process, those that never register sharing one, --timeout ${o.timeoutS} s a check):`);
      const progress = new Progress(term.write ?? ((text: string) => text.split('\n').slice(0, -1).forEach((l) => term.out(l))), term.tty ?? false, chosen.map((d) => d.id), STILL_RUNNING_S, term.look);
      events.attach((device, e) => progress.event(device, e));
      runs = await checking.runs;
      progress.finish();
      stopListening();
      removeScratchOfTheDead(o.scratchDir);
    }
    const tChecked = performance.now();

    const devices = chosen.map((d) => deviceResult(deviceFromPlain(d), runs.find((r) => r.device === d.id), { dir: o.scratchDir, fsType }));
    const result = runResult({ tool, startedAt, options: resultOptions(o), found, devices, phasesMs: { discovery: tDiscovered - t0, checks: tChecked - tDiscovered }, incomplete: stop.signal.aborted });
    // from the run's start (options read) to its last check: the command's own start and its reports are outside
    term.out(`\n${plural(devices.length, 'device')} in ${((performance.now() - t0) / 1000).toFixed(2)} s, from discovery to the last check`);
    const rerun = async (deviceId: string, checkId: string): Promise<CheckResult | undefined> => {
      const device = devices.find((d) => d.id === deviceId);
      if (!checking || !device) return undefined;
      return checking.rerun(deviceId, checkId, device.checks.map((c) => c.id));
    };
    return { result, interrupted: stop.signal.aborted, rerun };
  } finally {
    stopListening();
  }
}

/** Events of the device processes: each seen by `first`, then held until a sink is attached, then passed on. */
class Relay {
  readonly #held: [string, ProgressEvent][] = [];
  #sink: ((device: string, e: ProgressEvent) => void) | undefined;

  constructor(private readonly first: (device: string, e: ProgressEvent) => void) {}

  readonly take = (device: string, e: ProgressEvent): void => {
    this.first(device, e);
    if (this.#sink) this.#sink(device, e);
    else this.#held.push([device, e]);
  };

  attach(sink: (device: string, e: ProgressEvent) => void): void {
    this.#sink = sink;
    for (const [device, e] of this.#held.splice(0)) sink(device, e);
  }
}
