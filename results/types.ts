// The result contract: what a run reports, as data. The command builds it, the JSON file holds it
// (results/results.schema.json), and compare, merge, the gate and every reporter read it. Nothing here loads a
// driver or knows how a check works.
import type { VerdictJson } from '../src/verdict.js';
import type { CheckStatus } from './status.js';
import type { RuntimeRecord } from './runtime.js';

export type { CheckStatus } from './status.js';
export type { VerdictJson } from '../src/verdict.js';

/**
 * The backends a device can be found on, in the order devices are listed: the one list the Backend type derives
 * from. The registry (bindings/registry.ts) has a module for each; the schema's backend enum and device id
 * pattern say the same (test/registry.test.ts holds them equal).
 */
export const BACKENDS = ['cuda', 'hip', 'opencl', 'vulkan', 'cpu'] as const;
export type Backend = (typeof BACKENDS)[number];

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
  /**
   * The library loaded, then failed to start (its init returned anything but "no device", or a later call of
   * the discovery failed): an error of the run, with or without a baseline.
   */
  readonly initError?: { readonly message: string; readonly call?: string; readonly code?: number; readonly codeName?: string };
}

export interface DeviceTiming {
  registeredGBps: number;
  stagedGBps: number;
  ratio: number;
  minRelativeSpeed: number;
  runs: number;
  bytes: number;
  linkGBps?: number;
  /** The control copy: the same size from a page-locked buffer to the same device, timed in the same rounds (schemaVersion 2). */
  pageLockedGBps?: number;
  /** registered / page-locked: what a busy machine cannot fake (it slows both alike). */
  pageLockedRatio?: number;
  /** The host's memcpy of the window, timed in the same rounds. */
  hostCopyGBps?: number;
  /**
   * Every round's durations (ms), paired as taken (schemaVersion 3): index i of each list is round i; the staged and
   * host copies are null in the extra rounds of the pair. A figure with these is judged with its noise
   * (results/decision.ts); one without them (schemaVersion 1 and 2) is a figure without its noise.
   */
  // null: a duration the clock did not give (JSON writes NaN so)
  samples?: {
    registeredMs: (number | null)[];
    pageLockedMs: (number | null)[];
    stagedMs: (number | null)[];
    hostCopyMs: (number | null)[];
    /** On the device's clock: the same uploads on the host's clock too, for comparing the clocks (absent before, and on the host's clock). */
    hostRegisteredMs?: (number | null)[];
    hostPageLockedMs?: (number | null)[];
  };
  /** The extra rounds of the pair (after --runs), and why: the ratio's own interval was wider than the decision needs. */
  extraRounds?: { rounds: number; why: string };
  /**
   * The clock the uploads were timed on: the device's (its events around each copy) or the host's (where the backend
   * has no events or they could not be made: `clockNote` says why). Absent in files written before it: the host's.
   */
  clock?: 'device' | 'host';
  clockNote?: string;
}

/** Another process with a context on the device. */
export interface GpuUser {
  pid: number;
  name: string;
  usedMiB: number | null;
}

/**
 * What the device's process saw of the machine around its timed copies (schemaVersion 2): other users of the GPU
 * and of its link, the host's copy and pressure. `busy` with its reasons, when any was seen at the last timing.
 */
export interface DeviceLoad {
  busy: boolean;
  /** Why the machine was busy, one line each (the process, the traffic, the host copy, the pressure). */
  why: string[];
  /** How many timings were made (more than 1: the machine was busy and the figures would have regressed). */
  attempts: number;
  /** Milliseconds spent waiting for quiet between timings, and waiting for the host-wide timing lock (all timings). */
  waitedForQuietMs: number;
  lockWaitMs: number;
  /** Milliseconds the timed copies took, all timings: what the lock serializes between devices and runs. */
  timedMs: number;
  /** --quiet-wait, in seconds. */
  quietWaitS: number;
  /** Other processes with a context on the GPU, seen just before or after the last timing. */
  processes: GpuUser[];
  /** The most link traffic seen just before or after the last timing (MB/s, not ours); null when it cannot be read. */
  linkMBps: number | null;
  /** What the GPU was looked at with (`nvml`, `amd-smi`), or null with why not. */
  monitor: string | null;
  monitorNote?: string;
  /** The host copy of the last timing, and the baseline's, that it is held against. */
  hostCopyGBps: number | null;
  baselineHostCopyGBps?: number;
  /** The kernel's pressure stall figures (avg10, %) at the last timing; null where not readable. */
  pressure: { cpuSome: number | null; memorySome: number | null };
}

/** The PCIe link as sysfs gives it: its current and maximum speed and width. */
export interface DeviceLink {
  gts: number;
  width: number;
  gbps: number;
  maxGts: number | null;
  maxWidth: number | null;
  /** The current speed or width is below the maximum. */
  downtrained: boolean;
  text?: string;
}

/** The GPU's NUMA node, and where the probe's memory was placed. */
export interface DeviceNuma {
  node: number | null;
  nodes: number[];
  placed: boolean;
  note?: string;
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
  /** The machine around the timed copies (schemaVersion 2). */
  load?: DeviceLoad;
  link?: DeviceLink;
  numa?: DeviceNuma;
  scratch: { dir: string; fsType: string; sizeBytes?: number; writtenAhead?: boolean; discoveryWaitMs?: number };
  /** Errors outside any check, and how many processes the device's run needed. */
  errors?: string[];
  processes?: number;
  /** Why each process after the first was started (a crash, a timeout, a kill from outside), in order. */
  restarts?: string[];
  /** Interrupted before every check of the device reported. */
  incomplete?: boolean;
}

/** The machine a run was made on (a device of a merged file carries the host of the file it came from). */
export interface Machine {
  hostname: string;
  kernel: string;
  platform: string;
}

/** A device as read from a results file: a merged file adds its host. */
export type DeviceWithHost = DeviceResult & { host?: Machine };

export interface RunResult {
  /**
   * 3 since each timed figure keeps its rounds (timing.samples); 2 since the control copy and the look at the
   * machine; files of 1 and 2 are still read (their new fields absent: figures without their noise).
   */
  schemaVersion: 1 | 2 | 3;
  tool: { name: string; version: string };
  host: Machine;
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
  /** The gate's decision on this run (results/gate.ts): written by `run`, read by every report. */
  gate?: GateDecision;
  /** The user-space runtime the run loaded, written by `runtimes` (results/runtime.ts); absent in a plain run. */
  runtime?: RuntimeRecord;
}

// ---- the gate's decision, as data ----

/** How a check (or the verdict, or the registered GB/s) of a device compares with the baseline (results/compare.ts). */
export type ChangeKind = 'regression' | 'unexpected-pass' | 'error' | 'expected' | 'flaky' | 'fix' | 'changed' | 'new' | 'missing' | 'unchanged';

/** The registered GB/s of both sides and the drop (a fraction of the baseline's; negative: a rise). */
export interface BandwidthFigures {
  old: number;
  new: number;
  drop: number;
  maxDrop: number;
  /** The staged copy's figures: shown, never judged. */
  staged?: { old?: number; new?: number };
  /** The control copy's figures (page-locked GB/s), where both sides have them. */
  pageLocked?: { old?: number; new?: number };
}

/**
 * What a failing change is: a check's `status`, the `verdict`, the `bandwidth`, a `missing` device, an
 * `unexpected-pass`, a host `error`, a machine that stayed `busy`, or a host too `noisy` to judge a figure at
 * --max-drop (results/decision.ts): the last three the host's.
 */
export type RegressionKind = 'status' | 'verdict' | 'bandwidth' | 'registration' | 'missing' | 'unexpected-pass' | 'error' | 'busy' | 'noisy';

export type GateReasonKind = RegressionKind | 'requirement' | 'driver-init' | 'run-error';

/** Why the gate is red: one line each, in full. */
export interface GateReason {
  kind: GateReasonKind;
  /** The device's id in this run (or in the baseline, for a missing device), its name and PCI bus id. */
  device?: string;
  name?: string;
  pciBusId?: string | null;
  check?: string;
  old?: string;
  new?: string;
  /** The host failed, not the driver. */
  host?: boolean;
  text: string;
}

/** What the gate says of one check (or of the verdict, `verdict`, or the registered GB/s, `bandwidth`) of one device. */
export interface GateNote {
  /** The device's id in this run; for a missing device, its id in the baseline. */
  device: string;
  check: string;
  kind: ChangeKind;
  old?: string;
  new?: string;
  /** Why: "known failure (exp.txt:3: fail hazard.tmpfs_bytes driver=7.2.4*)", "flaky, passed on re-run", ... */
  note?: string;
  detail?: string;
  expectation?: { source: string; line: string };
  figures?: BandwidthFigures;
  /** For `bandwidth` and `registration`: the decision with the figures' noise (results/decision.ts). */
  decision?: FigureDecision;
}

/** The decision on a figure with its noise, as the results record it (results/decision.ts, DropDecision). */
export interface FigureDecision {
  outcome: 'regression' | 'pass' | 'too-noisy';
  drop: number;
  interval?: { low: number; high: number };
  confidence: number;
  maxDrop: number;
  runs: { baseline: number; candidate: number; withSamples: number };
  noise: { used: string; sigma: number; withinRun: number; betweenRuns: number | null };
  why: string;
  noiseText?: string;
  advice?: string;
  retime: boolean;
}

/** A device of the baseline that this run does not have. */
export interface MissingDevice {
  id: string;
  name: string;
  backend: string;
  pciBusId: string | null;
  verdict?: string;
  driver?: string;
  /** What this run's discovery said of that backend (why it is gone, when it knows). */
  why?: string;
}

/** A device of the baseline that the run did not ask for (its --backend or --device left it out). */
export interface NotAskedDevice {
  id: string;
  name: string;
  backend: string;
  pciBusId: string | null;
  /** What the run asked for instead, e.g. `--backend cuda`. */
  asked: string;
}

/** The gate's decision, as the results JSON records it (`gate`) and every report shows it. */
export interface GateDecision {
  pass: boolean;
  /** One line: PASS or FAIL, and why. */
  headline: string;
  baseline?: string;
  expectations?: string;
  maxDrop: number;
  requires: string[];
  reasons: GateReason[];
  /** Every change that is not `unchanged`, `new` or `missing`: regressions, expected failures, flakes, fixes... */
  notes: GateNote[];
  /** The devices of the baseline this run does not have. */
  missing: MissingDevice[];
  /** The devices of the baseline this run did not ask for (--backend, --device): not compared, never missing; absent when none. */
  notAskedFor?: NotAskedDevice[];
  counts: Record<ChangeKind, number>;
  /** Every figure the gate decided with its noise (registration, bandwidth), of every device, passes too (schemaVersion 3). */
  figures?: { device: string; check: string; decision: FigureDecision }[];
}
