// The bench's JSON (`--json`; docs/bench.md, "The JSON"), as types: what the measurements fill and what the
// renderers read.
import type { DriverApi } from '../bindings/errors.js';
import type { Link } from '../bindings/pci.js';
import type { ProcessPeak, TreePeak } from './proc.js';
import type { Copy, Stat } from './timing.js';

export interface RegistrationCost {
  /** ms per GiB, best and median of N. */
  registerMsPerGiB: { best: number; median: number };
  unregisterMsPerGiB: { best: number; median: number };
  totalMsPerGiB: { best: number; median: number };
  register: Stat;
  unregister: Stat;
}

export interface DeviceBench {
  id: string;
  name: string;
  api: DriverApi;
  pciBusId: string | null;
  driver: { name: string; version: string };
  region: { bytes: number; fsType: string; dir: string };
  registerFlags?: number;
  copies: { registered?: Copy; staged?: Copy; pageLocked?: Copy; pageable?: Copy; stagedHalf?: Copy };
  link: (Link & { registeredShare?: number }) | { error: string };
  registration: {
    warm?: RegistrationCost;
    cold?: RegistrationCost & { eviction: { methods: string[]; failures: string[]; residentAfterMax?: number } };
  };
  driverCall?: { call: string; meanUs: number; medianUs: number; bestUs: number; callsPerSample: number; samples: number };
  native: NativeResult;
  errors: string[];
}

export interface NativeResult {
  status: 'ran' | 'no-compiler' | 'build-failed' | 'failed' | 'not-run';
  message?: string;
  binary?: { path: string; how: string };
  registeredGBps?: number;
  stagedGBps?: number;
  /** bench best / native best (target >= 0.98). */
  registeredRatio?: number;
  stagedRatio?: number;
  raw?: NativeJson;
}

/** What `staged --json` prints (bench/native/staged.c). */
export interface NativeJson {
  api: string;
  device: number;
  bytes: number;
  runs: number;
  flags: number;
  results: Record<string, { label: string; bestS: number; medianS: number; gbps: number; medianGBps: number }>;
}

export interface ConformanceDevice {
  id: string;
  verdict?: string;
  /** Sum of every check's durationMs. */
  checksMs: number;
  staticMs?: number;
  /** probe.verdict's data.phasesMs: making the scratch file, and the self-test. */
  scratchFileMs?: number;
  probeMs?: number;
  /** Of probeMs: the register calls of the two windows. */
  registrationMs?: number;
  /** Of probeMs: the wait for the discovering processes beside it to end, before reading its region (the device's scratch.discoveryWaitMs). */
  discoveryWaitMs?: number;
  /** The registered and staged GB/s the suite reported (the probe's window, best of --runs). */
  registeredGBps?: number;
  stagedGBps?: number;
  /** registeredGBps / the native reference's registered GB/s of the same device, in this bench run. */
  nativeRatio?: number;
  probeCheckMs?: number;
  hazardsMs: number;
  hazardChecks: number;
  timingMs: { margin?: number; link?: number; total: number };
  processes?: number;
}

export interface Conformance {
  command: string[];
  exitCode: number | null;
  signal?: string;
  /** From the spawn to the exit: Node's start included. */
  wallMs: number;
  phasesMs?: { discovery: number; checks: number; reports: number };
  /** wallMs less the three phases: Node's start, loading the command, writing the reports. */
  outsidePhasesMs?: number;
  devices: ConformanceDevice[];
  memory: {
    intervalMs: number;
    walks: number;
    /** The whole run at its fullest walk (sum of PSS), against the target. */
    run?: TreePeak & { targetMiB: number; withinTarget: boolean };
    command?: ProcessPeak;
    runners: (ProcessPeak & { targetMiB: number; withinTarget: boolean })[];
    others: ProcessPeak[];
  };
  error?: string;
  outputTail?: string;
}

/** One run of --repeat / --against: which build, its place in the call, and what it took. */
export interface RepeatRun {
  /** This package's build, or the one --against named. */
  build: 'this' | 'against';
  /** 1 for the first run of the call (the detailed `conformance` run), and so on. */
  order: number;
  wallMs: number;
  exitCode: number | null;
  peakPssKiB?: number;
  phasesMs?: { discovery: number; checks: number; reports: number };
}

/** The conformance run repeated (--repeat N), alternating with another build (--against DIR). */
export interface Repeats {
  rounds: number;
  runs: RepeatRun[];
  this: { medianMs: number; bestMs: number; maxPeakPssKiB?: number };
  against?: { main: string; medianMs: number; bestMs: number; maxPeakPssKiB?: number };
}

/** The run's time against the GPU count (--scale). */
export interface Scaling {
  counts: number[];
  /** Counts larger than the GPUs found, not run. */
  skipped?: string;
  runs: { gpus: number; wallMs: number; exitCode: number | null; phasesMs?: { discovery: number; checks: number; reports: number }; peakPssKiB?: number; registeredGBps: Record<string, number> }[];
  /** Each GPU of the largest run, its registered GB/s in a run of its own. */
  alone: Record<string, number>;
  /** wallMs of the run over the most GPUs / that of the run over one. */
  mostOverOne?: number;
  /** The largest |figure in the largest run / figure alone - 1| of its devices. */
  maxAloneDeviation?: number;
  targets: { overOne: number; aloneDeviation: number };
}

export interface BenchResult {
  schemaVersion: 1;
  tool: { name: string; version: string; tinybench?: string };
  host: { hostname: string; kernel: string; platform: string; node: string; root: boolean };
  startedAt: string;
  finishedAt: string;
  options: { runs: number; sizeMiB: number; scratchDir: string; devices: string[]; dropCaches: boolean; repeat: number; against?: string; scale?: number[] };
  targets: { nativeRatio: number; peakMiB: number; runnerPeakMiB: number; noGpuRunOverNodeStart: number; gpuRunWallMs: number };
  gpu: { found: boolean; message?: string; backends: { backend: string; library: string | null; devices: number; note?: string }[] };
  devices: DeviceBench[];
  conformance: Conformance;
  /** With --repeat N (N > 1) or --against DIR. */
  repeats?: Repeats;
  /** With --scale. */
  scaling?: Scaling;
  nodeStart: Stat;
  /** conformance.wallMs / nodeStart.medianMs. */
  runOverNodeStart: number;
  errors: string[];
}
