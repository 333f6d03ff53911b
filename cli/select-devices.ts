// Which devices a run checks, decided from a discovery as data: by the command, and by the runner process that
// made the discovery (the device it offers to check: pickDevice). No Vitest and no driver here.
import { type Backend, type PlainDevice, type PlainDiscovery, isGpuDriver } from '../bindings/discovery.js';
import { backendGroups, backendModule, backendModules, backendRank } from '../bindings/registry.js';

export { isGpuDriver };
import type { Selection, SuiteOptions } from '../suites/protocol.js';
import type { BackendReport } from '../results/types.js';
import type { RunQuiet, SuiteBase } from './options.js';
import type { QuietOptions } from '../suites/measure.js';
import { hookFor } from '../suites/hooks.js';

export { hookFor };

/**
 * The variables naming a library that must load when set, with their backend: every backend's (a GPU driver's,
 * and OpenCL's and Vulkan's for discovery), as docs/usage.md says; one of a backend the run did not ask for is not read.
 */
const libraryEnv = (): [string, Backend][] => backendModules().flatMap((m) => (m.libraryEnv ? [[m.libraryEnv, m.id] as [string, Backend]] : []));

/**
 * Bad input a discovery shows, as one line, or undefined: a driver library the user named that did not load,
 * or a device id that was not found.
 */
export function selectionProblem(found: PlainDiscovery, s: Selection, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const [name, backend] of libraryEnv()) {
    const report = found.backends.find((b) => b.backend === backend);
    if (env[name] && report && report.library === null) return `${name}=${env[name]}: ${report.note ?? 'not loaded'}`;
  }
  if (s.devices.length > 0) {
    const known = new Set(found.devices.map((d) => d.id));
    const unknown = s.devices.filter((id) => !known.has(id));
    if (unknown.length > 0) return `unknown device ${unknown.join(', ')} (found: ${[...known].join(', ') || 'none'})`;
  }
  return undefined;
}

/** The devices the run checks, in discovery order. */
export function selectDevices(found: PlainDiscovery, s: Selection): PlainDevice[] {
  return found.devices.filter((d) => s.devices.length === 0 || s.devices.includes(d.id));
}

/**
 * The backends each discovering process of a run covers, in the registry's order (each module states its group):
 * each GPU driver in a process of its own (which then checks a device of that driver, initialized once), the rest
 * together. They discover at the same time; a process that keeps no device exits at once, with the libraries it
 * loaded (an OpenCL ICD of the GPU's vendor, a HIP runtime with no device), before any GPU's probe.
 * (The built-in backends' groups, as this module found them.)
 */
export const DISCOVERY_GROUPS: readonly (readonly Backend[])[] = backendGroups();

/** The groups a run needs for these backends (empty groups left out), from the registry as it is now. */
export function discoveryGroups(backends: readonly Backend[]): Backend[][] {
  return backendGroups(backends);
}

/**
 * The reports of a group of GPU drivers none of whose libraries can be found (or whose device node is missing),
 * told without loading anything (BackendModule.notFound): the command answers such a group without a process.
 * Undefined when a process must discover it (a library that may be found, a backend that is not a GPU driver).
 */
export function reportsWithoutProcess(backends: readonly Backend[], env: NodeJS.ProcessEnv = process.env): BackendReport[] | undefined {
  const reports: BackendReport[] = [];
  for (const b of backends) {
    const m = backendModule(b);
    const report = m?.registers ? m.notFound?.(env) : undefined;
    if (!report) return undefined;
    reports.push(report);
  }
  return reports;
}

/**
 * Whether the first discovering process of a run over every backend, the one that takes the spare runner
 * (cli/spare-runner.ts), is a GPU driver's: the first group that needs a process has one. Told before the run's
 * options are known (a run narrowed with --backend may give the spare to another group: it then loaded Vitest for
 * nothing, and works as before).
 */
export function spareLikelyRegisters(env: NodeJS.ProcessEnv = process.env): boolean {
  const first = backendGroups().find((g) => reportsWithoutProcess(g, env) === undefined);
  return first !== undefined && first.some((b) => backendModule(b)?.registers === true);
}


/**
 * The device a discovering process offers to keep, from what it found: the first CUDA or HIP device selected
 * (the longest run, started without waiting for another process), else the first device selected; none when it
 * found none of those asked for. Whether it keeps it is the command's word (`keeps`), given once every group's
 * discovery is in and the selection is valid: the process checks nothing before.
 */
export function pickDevice(found: PlainDiscovery, s: Selection): PlainDevice | undefined {
  const selected = selectDevices(found, s);
  return selected.find(isGpuDriver) ?? selected[0];
}

/**
 * Which offers the command takes: every CUDA/HIP device, and a device of another backend only when no GPU is
 * checked (then its process checks every device that never registers: cli/schedule.ts). With a GPU, those devices
 * get one process after the GPUs' probes, so that no other process lives beside a probe's region and staging buffer.
 */
export function keeps(offers: readonly (PlainDevice | undefined)[]): boolean[] {
  const gpu = offers.some((d) => d !== undefined && isGpuDriver(d));
  return offers.map((d) => d !== undefined && (isGpuDriver(d) || !gpu));
}

/**
 * Whether the selection can be judged before every group has reported: true when every group that could make it
 * invalid has reported and found nothing wrong (the groups holding the backend of a `--device` id, and those of a
 * driver library named in the environment). A GPU its discovering process offered may then start at once, while
 * a slower group (an OpenCL ICD) is still discovering. False when it cannot be told yet, or when there is a
 * problem (the command then waits for every group and refuses the run).
 */
export function validSoFar(groups: readonly { backends: readonly Backend[]; discovery?: PlainDiscovery }[], s: Selection, env: NodeJS.ProcessEnv = process.env): boolean {
  const needed = new Set<string>(s.devices.map((id) => id.split(':')[0]!));
  for (const [name, backend] of libraryEnv()) if (env[name]) needed.add(backend);
  const relevant = groups.filter((g) => g.backends.some((b) => needed.has(b)));
  if ([...needed].some((b) => !groups.some((g) => g.backends.includes(b as Backend)))) return false; // judged at the end
  if (relevant.some((g) => g.discovery === undefined)) return false;
  const partial = mergeDiscoveries(relevant.map((g) => g.discovery!));
  return selectionProblem(partial, s, env) === undefined;
}

/**
 * The GPUs of a group's discovery that the discovery starts in processes of their own once the selection can be
 * judged: the chosen GPUs other than the one its process offered (which that process checks).
 */
export function earlyOthers(chosen: readonly PlainDevice[], offer: PlainDevice | undefined): PlainDevice[] {
  return chosen.filter((d) => isGpuDriver(d) && d.id !== offer?.id);
}

/** The discoveries of the groups as one, in the registry's order. */
export function mergeDiscoveries(parts: readonly PlainDiscovery[]): PlainDiscovery {
  const rank = backendRank;
  const backends = parts.flatMap((p) => p.backends).sort((a, b) => rank(a.backend) - rank(b.backend));
  const devices = parts.flatMap((p) => p.devices).sort((a, b) => rank(a.backend) - rank(b.backend));
  return { devices, backends, gpuDriverFound: parts.some((p) => p.gpuDriverFound) };
}

/** The quiet options of one device: the run's, with the baseline's figures of the same device (backend, PCI bus id, name). */
export function quietFor(d: PlainDevice, q: RunQuiet): QuietOptions {
  const b = q.baseline?.devices.find((x) => x.backend === d.backend && x.pciBusId === d.pciBusId && x.name === d.name)?.timing;
  return {
    waitS: q.waitS,
    maxDrop: q.maxDrop,
    ...(b
      ? {
          baseline: {
            registeredGBps: b.registeredGBps,
            ...(b.hostCopyGBps !== undefined ? { hostCopyGBps: b.hostCopyGBps } : {}),
            ...(b.pageLockedRatio !== undefined ? { pageLockedRatio: b.pageLockedRatio } : {}),
          },
        }
      : {}),
  };
}

/** The options of one device's runner: the run's (`base`, decided once by cli/options.ts) with the device's own. */
export function deviceOptions(d: PlainDevice, base: SuiteBase, s: Selection): SuiteOptions {
  const crash = hookFor(s.forceCrash, d.id);
  const hang = hookFor(s.forceHang, d.id);
  return {
    device: d.id,
    discovered: d,
    scratchDir: base.scratchDir,
    sizeMiB: base.sizeMiB,
    runs: base.runs,
    minRelativeSpeed: base.minRelativeSpeed,
    skip: [],
    quiet: quietFor(d, base.quiet),
    ...(base.deselected ? { deselected: { ...base.deselected } } : {}),
    ...(crash ? { forceCrash: crash } : {}),
    ...(hang ? { forceHang: hang } : {}),
  };
}

/**
 * The run's choice of devices, made once from its options (cli/options.ts: the selection and what every device's
 * runner gets) and handed down as one object: the discovery asks it which processes to start and whether a GPU
 * may go early, the command asks it what to refuse and what to check, the schedule asks it for each device's
 * options. Each device's options are decided once: the GPU that went early and the schedule's list hold the same.
 */
export class DeviceChoice {
  readonly #options = new Map<string, SuiteOptions>();

  constructor(
    readonly selection: Readonly<Selection>,
    readonly base: SuiteBase,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** The backends of each discovering process. */
  groups(): Backend[][] {
    return discoveryGroups(this.selection.backends);
  }

  /** Whether a GPU offered now may start (validSoFar). */
  validSoFar(groups: readonly { backends: readonly Backend[]; discovery?: PlainDiscovery }[]): boolean {
    return validSoFar(groups, this.selection, this.env);
  }

  /** Bad input the whole discovery shows, as one line (selectionProblem). */
  problem(found: PlainDiscovery): string | undefined {
    return selectionProblem(found, this.selection, this.env);
  }

  /** The devices checked. */
  chosen(found: PlainDiscovery): PlainDevice[] {
    return selectDevices(found, this.selection);
  }

  /**
   * How many GPUs of `backend` beyond the one its discovering process keeps the run will likely check, before its
   * discovery: the devices asked for by id (`--device`), else the count its device nodes give (expectedDevices); 0
   * where that cannot be told. An estimate, for starting their runners early (cli/spare-runner.ts).
   */
  expectedOthers(backend: Backend): number {
    if (!this.selection.backends.includes(backend)) return 0;
    const m = backendModule(backend);
    if (!m?.registers) return 0;
    const asked = this.selection.devices.filter((id) => id.startsWith(`${backend}:`)).length;
    const count = this.selection.devices.length > 0 ? asked : (m.expectedDevices?.(this.env) ?? 0);
    return Math.max(0, count - 1);
  }

  /** The options of a device's runner, decided the first time they are asked for. */
  optionsOf(d: PlainDevice): SuiteOptions {
    let o = this.#options.get(d.id);
    if (!o) this.#options.set(d.id, (o = deviceOptions(d, this.base, this.selection)));
    return o;
  }
}
