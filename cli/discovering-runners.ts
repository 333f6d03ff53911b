// A run's discovery, in the processes that then check what they found: one per group of backends (cli/select-devices.ts
// DISCOVERY_GROUPS), started at once, so that the command loads no driver and a GPU's driver is initialized once,
// in the process that checks it. Each process reports what it found and offers a device (cli/select-devices.ts
// pickDevice), then waits for the command's answer: the devices it checks, or none (it exits). The command
// answers once every group has reported and the selection is valid; a GPU earlier, as soon as the groups that
// could make the selection invalid have reported (validSoFar): then the other GPUs its process found are started
// too, each in a process of its own, without waiting for a slower group (an OpenCL ICD). A group of GPU drivers none of whose libraries
// can be found (bindings/library-search.ts) is answered here, without a process: it would find nothing.
import type { Backend, PlainDevice, PlainDiscovery } from '../bindings/discovery.js';
import { removeStaleScratch } from '../bindings/scratch.js';
import type { DiscoveryEvent, Selection, SuiteOptions } from '../suites/protocol.js';
import { type DeviceRun, type OrchestrateOptions, STALL_GRACE_S, endedRunners, interruptAll, runDevice, runDiscovering } from './orchestrate.js';
import { childStart } from '../bindings/process-gone.js';
import { type DeviceChoice, earlyOthers, isGpuDriver, mergeDiscoveries, reportsWithoutProcess } from './select-devices.js';
import { discoveryHookFor } from '../suites/hooks.js';
import { releaseDeviceSpares, releaseSpareRunner, startDeviceSpares } from './spare-runner.js';

/** The discovery of a run could not be made (its process died): one line, status 2, nothing written. */
export class DiscoveryError extends Error {}

/** One discovering process. */
export interface Group {
  readonly backends: Backend[];
  /** A process of its own made its discovery (false: answered here, its libraries not found). */
  readonly inProcess: boolean;
  /** What it found and the device it offers, once it reported. */
  event?: DiscoveryEvent;
  offer?: PlainDevice;
  /** The devices it checks, by their options (none: it exits); the first answer counts. */
  answer(devices: SuiteOptions[]): void;
  /** It was told to check devices. */
  started: boolean;
  /** The runs of the devices it checked (none when it checked nothing); its errors when it ended before its report. */
  runs: Promise<DeviceRun[]>;
  /**
   * The other GPUs it found, started by the discovery each in a process of its own (by device id), as soon as
   * the selection could be judged: their runs.
   */
  readonly others: Map<string, Promise<DeviceRun>>;
  /** Why it ended before it reported (its errors, and the last line it printed). */
  failure: Promise<string | undefined>;
  /** Its process's pid, once started (none for a group answered without a process), and whether it has exited. */
  pid?: number;
  exited?: boolean;
}

export interface Discovered {
  groups: Group[];
  /** Every group's discovery as one. */
  found: PlainDiscovery;
}

/**
 * Removes the scratch folders that processes killed before they could remove their own left in `scratchDir` and
 * in /dev/shm (their locks are free: bindings/scratch-lock.ts); a live run's folder is kept. Returns what it removed.
 */
export function removeScratchOfTheDead(scratchDir: string): { dir: string; names: string[] }[] {
  return [scratchDir, '/dev/shm'].map((dir) => {
    try {
      // this run's own ended runners: a folder one of them was still making when it was killed goes now, not after the grace
      return { dir, names: removeStaleScratch(dir, endedRunners()) };
    } catch {
      return { dir, names: [] }; // a folder we cannot read holds nothing of ours
    }
  });
}

/**
 * Starts a discovering process for each group of the chosen backends and waits for each to report. A GPU
 * offered while the selection can already be judged valid is told to go at once (its options from `choice`).
 * Stopped by `stop` (a signal), it returns no group: the processes are killed, none was checked. A process that
 * ended before it reported is a DiscoveryError (the others are stopped first); a selection the discovery shows to
 * be bad (DeviceChoice.problem) is the caller's to refuse, after stopGroups.
 */
export async function discoverInGroups(choice: DeviceChoice, o: OrchestrateOptions & { stop: AbortSignal }): Promise<Discovered> {
  const groups = choice.groups().map((backends) => withoutProcess(backends, choice.selection) ?? startGroup(backends, choice.selection, o));
  // the spare runner, if no group took it (none needed a process), is not kept waiting (cli/spare-runner.ts)
  releaseSpareRunner();
  // the runners of the other GPUs each driver's discovery will likely find start now, while it runs; not for a run
  // whose runners take an environment of their own (o.env: a runtime's), which a spare started here would not have
  if (!o.env) startDeviceSpares(groups.filter((g) => g.inProcess).flatMap((g) => g.backends).reduce((n, b) => n + choice.expectedOthers(b), 0));
  // A GPU offered by its process starts as soon as the selection is known to be valid, which may be before a
  // slower group (an OpenCL ICD) has reported; so do the other GPUs chosen of each group that has reported, each
  // in a process of its own (eight GPUs of one driver need not wait for PoCL's start).
  const over = new Set<Started>(); // the groups that reported, or ended without a report
  const goEarly = (): void => {
    const so = groups.map((g) => ({ backends: g.backends, ...(g.event ? { discovery: g.event.discovery } : {}) }));
    // a group that ended without its report fails the run: nothing more is started
    if (o.stop.aborted || [...over].some((g) => g.event === undefined) || !choice.validSoFar(so)) return;
    const beside = besideDiscovery(groups, o.timeoutS);
    for (const g of groups) {
      if (g.offer && isGpuDriver(g.offer)) g.answer([beside(choice.optionsOf(g.offer))]);
      for (const d of g.event ? earlyOthers(choice.chosen(g.event.discovery), g.offer) : []) {
        if (!g.others.has(d.id)) g.others.set(d.id, runDevice(beside(choice.optionsOf(d)), o));
      }
    }
  };
  await Promise.all(
    groups.map((g) =>
      g.reported.then(() => {
        over.add(g);
        goEarly();
      }),
    ),
  );
  // every GPU found has its runner by now: the device spares none took are not kept waiting
  releaseDeviceSpares();
  const failed = groups.find((g) => g.event === undefined);
  if (failed || o.stop.aborted) {
    await stopGroups(groups, choice.base.scratchDir); // a GPU that started early is stopped too: the run cannot go on
    if (o.stop.aborted) return { groups: [], found: mergeDiscoveries([]) };
    throw new DiscoveryError(`discovery failed: ${await failed!.failure}`);
  }
  return { groups, found: mergeDiscoveries(groups.flatMap((g) => (g.event ? [g.event.discovery] : []))) };
}

/**
 * What gives a GPU's options the discovering processes its probe waits for before it reads its region
 * (SuiteOptions.waitFor): those of the groups of devices that never register that have not exited (with a GPU in the
 * run they check nothing: cli/select-devices.ts keeps), as the kernel has them now (read once, for every GPU told to
 * go with it). A group of GPU drivers is never waited for: its process checks a GPU of its own. The wait's limit is
 * the one past which the command ends a discovering process that reports nothing (--timeout and the grace).
 */
export function besideDiscovery(groups: readonly Group[], timeoutS: number): (options: SuiteOptions) => SuiteOptions {
  const processes = groups
    .filter((g) => g.pid !== undefined && !g.exited && !g.backends.some((backend) => isGpuDriver({ backend })))
    .flatMap((g) => childStart(g.pid!, process.pid) ?? []);
  const waitFor = { processes, limitMs: (timeoutS + STALL_GRACE_S) * 1000 };
  return (options) => (processes.length > 0 ? { ...options, waitFor } : options);
}

/**
 * Ends every discovering process for an error: those not yet answered are told to stop, those already checking
 * (a GPU that went early) are killed, and what the killed ones left in the scratch folders is removed.
 */
export async function stopGroups(groups: readonly Group[], scratchDir: string): Promise<void> {
  const early = groups.some((g) => g.started || g.others.size > 0);
  if (early) interruptAll();
  for (const g of groups) g.answer([]);
  await Promise.all([...groups.map((g) => g.runs), ...groups.flatMap((g) => [...g.others.values()])]);
  if (early) removeScratchOfTheDead(scratchDir);
}

interface Started extends Group {
  /** Resolves once it reported, or ended without a report. */
  reported: Promise<void>;
}

/**
 * The discovery of a group of GPU drivers none of whose libraries can be found, made here: the reports their
 * processes would have sent (each "not found"), no device, no offer. Undefined (a process is started) when any
 * library may be found, when a backend of the group is not a GPU driver, or for the test hooks of the discovering
 * process (MAPPED_REG_FORCE_CRASH / _HANG=@discovery[:<backend>]), which need one.
 */
export function withoutProcess(backends: readonly Backend[], selection: Readonly<Selection>, env: NodeJS.ProcessEnv = process.env): Started | undefined {
  if (discoveryHookFor(selection.forceCrash, backends) || discoveryHookFor(selection.forceHang, backends)) return undefined;
  const reports = reportsWithoutProcess(backends, env);
  if (!reports) return undefined;
  const event: DiscoveryEvent = { type: 'discovery', durationMs: 0, discovery: { devices: [], backends: reports, gpuDriverFound: false }, device: null };
  return { backends: [...backends], inProcess: false, event, answer: () => {}, started: false, runs: Promise.resolve([]), others: new Map(), failure: Promise.resolve(undefined), reported: Promise.resolve() };
}

function startGroup(backends: Backend[], selection: Readonly<Selection>, o: OrchestrateOptions): Started {
  let arrived: () => void = () => {};
  let tell: (devices: SuiteOptions[]) => void = () => {};
  const g: Started = {
    backends,
    inProcess: true,
    started: false,
    reported: new Promise<void>((resolve) => (arrived = resolve)),
    answer(devices) {
      if (devices.length > 0) g.started = true;
      tell(devices);
      tell = () => {}; // the first answer counts
    },
    runs: Promise.resolve([]),
    others: new Map(),
    failure: Promise.resolve(undefined),
  };
  const run = runDiscovering(
    { ...selection, backends },
    {
      ...o,
      onDiscovery: (e, answer) => {
        g.event = e;
        const offer = e.discovery.devices.find((d) => d.id === e.device);
        if (offer) g.offer = offer;
        tell = answer;
        arrived();
      },
      onProcess: (pid, exited) => {
        g.pid = pid;
        void exited.then(() => (g.exited = true));
      },
    },
  );
  void run.then(() => arrived());
  g.runs = run.then((r) => r.runs);
  g.failure = run.then((r) => {
    if (r.discovery) return undefined;
    const tail = r.output.trim().split('\n').slice(-1)[0];
    return `${r.errors.join('; ')}${tail ? ` (its last output: ${tail})` : ''}`;
  });
  return g;
}
