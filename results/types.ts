// The result contract: what a run reports, as data. The command builds it, the JSON file holds it
// (results/results.schema.json), and compare, merge, the gate and every reporter read it. Nothing here loads a
// driver or knows how a check works.
import type { VerdictJson } from '../src/verdict.js';
import type { CheckStatus } from './status.js';

export type { CheckStatus } from './status.js';
export type { VerdictJson } from '../src/verdict.js';

/** The backends a device can be found on, in the order devices are listed. */
export type Backend = 'cuda' | 'hip' | 'opencl' | 'vulkan' | 'cpu';
export const BACKENDS: readonly Backend[] = ['cuda', 'hip', 'opencl', 'vulkan', 'cpu'];

/** The suite a check belongs to (the JUnit classname is `<device id>.<suite>`). */
export type SuiteName = 'static' | 'probe' | 'hazards' | 'timing';

/** One check's result: what the check wrote, or what the command saw of its process (crash, timeout). */
export interface CheckResult {
  id: string;
  suite: SuiteName;
  title: string;
  status: CheckStatus;
  durationMs: number;
  expected?: string;
  observed?: string;
  message?: string;
  /** Figures for the reports (bandwidths, return codes, ...). */
  data?: Record<string, unknown>;
  log?: string[];
  /** Which of the device's processes reported it (1: the first; more after a crash, a timeout or a kill). */
  process?: number;
}

/** What discovery found of one backend. */
export interface BackendReport {
  readonly backend: Backend;
  /** The library loaded, or null. */
  readonly library: string | null;
  readonly devices: number;
  /** Why there are none, or what went wrong. */
  readonly note?: string;
}

export interface DeviceTiming {
  registeredGBps: number;
  stagedGBps: number;
  ratio: number;
  minRelativeSpeed: number;
  runs: number;
  bytes: number;
  linkGBps?: number;
}

export interface DeviceResult {
  id: string;
  backend: Backend;
  name: string;
  pciBusId: string | null;
  driver: { name: string; version: string };
  integrated: boolean | null;
  attributes?: Readonly<Record<string, number | string>>;
  staticVerdict: string;
  verdict: VerdictJson;
  cacheable: boolean;
  checks: CheckResult[];
  timing?: DeviceTiming;
  scratch: { dir: string; fsType: string; sizeBytes?: number };
  /** Errors outside any check, and how many processes the device's run needed. */
  errors?: string[];
  processes?: number;
  /** Why each process after the first was started (a crash, a timeout, a kill from outside), in order. */
  restarts?: string[];
  /** Interrupted before every check of the device reported. */
  incomplete?: boolean;
}

/** The machine a run was made on (a device of a merged file carries the host of the file it came from). */
export interface Host {
  hostname: string;
  kernel: string;
  platform: string;
}

/** A device as read from a results file: a merged file adds its host. */
export type DeviceWithHost = DeviceResult & { host?: Host };

export interface RunResult {
  schemaVersion: 1;
  tool: { name: string; version: string };
  host: Host;
  startedAt: string;
  finishedAt: string;
  options: Record<string, unknown>;
  backends?: readonly BackendReport[];
  gpuDriverFound?: boolean;
  /** The run was interrupted (SIGINT): what finished is here, the rest is missing. */
  incomplete?: boolean;
  /** Wall time of the command's phases (ms): discovery, the devices' checks (all at once), the reports. */
  phasesMs?: { discovery: number; checks: number; reports: number };
  devices: DeviceResult[];
}
