// Which process checks which device, and when. The GPUs their discovering processes offered are checked there
// (their driver initialized once); the other GPUs start at once, each in a process of its own (those the discovery
// started already, as soon as their group reported and the selection could be judged, are not started again; devices run in
// parallel); the devices that never register (OpenCL, Vulkan, the CPU) are checked together, in one process, once
// every GPU's probe is over, so that nothing else lives beside a probe's region and page-locked window. With no
// GPU, the discovering process that offered one of them checks them all at once.
import type { PlainDevice } from '../bindings/discovery.js';
import type { CheckResult } from '../results/types.js';
import type { SuiteOptions } from '../suites/protocol.js';
import type { Group } from './discovering-runners.js';
import { type DeviceRun, type OrchestrateOptions, runDevice, runTogether } from './orchestrate.js';
import { type DeviceChoice, isGpuDriver, keeps } from './select-devices.js';

export interface Checking {
  /** Every device's run, once all are over (only those started when a signal stopped the run). */
  runs: Promise<DeviceRun[]>;
  /**
   * One check of a chosen device again, alone, in a new process of that device (the gate's flake re-run), the
   * device's `otherChecks` skipped: its result (none for a device not chosen).
   */
  rerun: (deviceId: string, checkId: string, otherChecks: readonly string[]) => Promise<CheckResult | undefined>;
}

/**
 * The GPUs' probes: told of each probe.verdict result (and of each GPU run that ended, with or without one), it
 * says when every GPU's probe is over. Made before the discovery: a GPU that starts early may report first.
 */
export class Probes {
  readonly #over = new Set<string>();
  #waiting: { gpus: Set<string>; release: () => void } | undefined;

  /** `device`'s probe is over (it reported, or its run ended). */
  over(device: string): void {
    this.#over.add(device);
    const w = this.#waiting;
    if (w && w.gpus.delete(device) && w.gpus.size === 0) w.release();
  }

  /** Resolves once the probe of every one of `gpus` is over, or when `stop` is aborted. */
  allOver(gpus: readonly string[], stop: AbortSignal): Promise<void> {
    return new Promise((release) => {
      const left = new Set(gpus.filter((d) => !this.#over.has(d)));
      if (left.size === 0 || stop.aborted) return release();
      this.#waiting = { gpus: left, release };
      stop.addEventListener('abort', () => release());
    });
  }
}

/**
 * Starts the checks of the `chosen` devices: answers every discovering process (the devices it checks, or none),
 * starts the other GPUs, and the others once every GPU's probe is over (or `stop` is aborted: then they never
 * start). The devices' re-runs are made here too, with the same --timeout (and no progress, no stop).
 */
export function checkDevices(groups: readonly Group[], chosen: readonly PlainDevice[], choice: DeviceChoice, probes: Probes, o: OrchestrateOptions & { stop: AbortSignal }): Checking {
  const options = chosen.map((d) => choice.optionsOf(d));
  const gpus = options.filter((d) => isGpuDriver(d.discovered!));
  const rest = options.filter((d) => !gpus.includes(d));
  // Each discovering process offered a device: a GPU is checked there; with no GPU, the first process that
  // offered another device checks every device that never registers; the others check nothing.
  const keep = keeps(groups.map((g) => g.offer));
  const restHere = groups.findIndex((g, i) => keep[i] && g.offer && !isGpuDriver(g.offer));
  const answers = groups.map((g, i): SuiteOptions[] => (i === restHere ? rest : keep[i] ? gpus.filter((d) => d.device === g.offer?.id) : []));
  groups.forEach((g, i) => g.answer(answers[i]!));
  // each group's runs: its process's, and those of the GPUs the discovery started in processes of their own
  const firstRuns = groups.map((g) => Promise.all([g.runs, Promise.all(g.others.values())]).then(([own, others]) => [...own, ...others]));
  const started = new Set([...answers.flat().map((d) => d.device), ...groups.flatMap((g) => [...g.others.keys()])]);

  // the others wait for every GPU's probe (none reports before this returns: a report is an event of a process)
  const afterProbes = probes.allOver(gpus.map((d) => d.device), o.stop);
  const gpuRuns = o.stop.aborted ? [] : gpus.filter((d) => !started.has(d.device)).map((d) => runDevice(d, o).then((run) => [run]));
  // a GPU run that ended without a probe result (its process died before) frees the others too
  for (const r of [...firstRuns, ...gpuRuns]) void r.then((runs) => runs.forEach((run) => probes.over(run.device)));
  const others = rest.filter((d) => !started.has(d.device));
  const restRuns = afterProbes.then((): Promise<DeviceRun[]> | DeviceRun[] => (o.stop.aborted || others.length === 0 ? [] : runTogether(others, o)));
  const runs = Promise.all([...firstRuns, ...gpuRuns, restRuns]).then((all) => all.flat());
  // a re-run's process: the same --timeout, no progress drawn, no stop (the run is over)
  const rerunWith = { timeoutS: o.timeoutS };
  const rerun = async (deviceId: string, checkId: string, otherChecks: readonly string[]): Promise<CheckResult | undefined> => {
    const device = options.find((s) => s.device === deviceId);
    if (!device) return undefined;
    const run = await runDevice({ ...device, skip: otherChecks.filter((id) => id !== checkId) }, rerunWith);
    return run.checks.find((c) => c.id === checkId);
  };
  return { runs, rerun };
}
