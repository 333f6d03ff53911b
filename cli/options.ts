// The options of a run, in one place: their yargs definitions (with the defaults, the model's where it has them),
// their validation, and what of them reaches the suites. The command (cli/main.ts), the bench (bench/bench.ts),
// and through the command every device runner, take them from here.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { scratchDirProblem } from '../bindings/scratch.js';
import { DEFAULT_MAX_DROP } from '../results/compare.js';
import { backendIds, backendModules } from '../bindings/registry.js';
import type { Backend } from '../results/types.js';
import { DEFAULT_MIN_RELATIVE_SPEED, DEFAULT_RUNS } from '../src/probe.js';
import type { SuiteOptions } from '../suites/protocol.js';
import { LOCK_WAIT_MIN_S, QUIET_WAIT, type QuietOptions } from '../suites/measure.js';
import type { PlainDevice } from '../bindings/discovery.js';
import type { RunResult } from '../results/types.js';
import { MiB } from '../results/format.js';
import { packageRoot } from '../results/package-root.js';
import { OUTPUT_FORMATS, type OutputOption } from '../reporters/output-formats.js';

/** The environment variables that name a backend's library (MAPPED_REG_CUDA_LIBRARY, ...), from the registry: --help lists them all. */
export const LIBRARY_VARIABLES: readonly string[] = backendModules().flatMap((m) => (m.libraryEnv ? [m.libraryEnv] : []));

/** MiB of the region probed. */
export const DEFAULT_SIZE_MIB = 256;
/** Seconds one check may run before it is killed (0: no limit). */
export const DEFAULT_TIMEOUT_S = 120;
/** The largest --min-relative-speed: a registered copy ten times the staged one is already a broken clock. */
export const MAX_MIN_RELATIVE_SPEED = 10;

/** The package's own scratch/. */
export const DEFAULT_SCRATCH_DIR = resolve(packageRoot(), 'scratch');

/** Thrown for bad input: the command prints the message on one line and exits 2 (the bench likewise). */
export class UsageError extends Error {}

/** --json, --junit, --metrics: an option for each output format that one names, its text the format's (reporters/output-formats.ts). */
const OUTPUT_OPTIONS = Object.fromEntries(
  OUTPUT_FORMATS.flatMap((f) => ('option' in f.source ? [[f.source.option, { type: 'string', requiresArg: true, describe: f.source.describe }]] : [])),
) as Record<OutputOption, { readonly type: 'string'; readonly requiresArg: true; readonly describe: string }>;

// Every option that takes a value must be given one (`--size` alone is bad usage, not 256).
/** What is measured and where: the options the command and the bench share. */
export const MEASURE_OPTIONS = {
  'scratch-dir': { type: 'string', requiresArg: true, describe: "folder for the scratch files (default: the package's scratch/)" },
  size: { type: 'number', requiresArg: true, default: DEFAULT_SIZE_MIB, describe: 'MiB of the region probed' },
  device: { type: 'string', array: true, requiresArg: true, default: [] as string[], describe: 'only this device id (repeatable), e.g. cuda:0' },
  runs: { type: 'number', requiresArg: true, default: DEFAULT_RUNS, describe: 'timed runs of each copy (best of N against best of N)' },
} as const;

/** The options of `run` and `list`. */
export const RUN_OPTIONS = {
  ...MEASURE_OPTIONS,
  backend: { type: 'string', array: true, requiresArg: true, default: [] as string[], describe: `only this backend (repeatable): ${backendIds().join(', ')}` },
  'min-relative-speed': {
    type: 'number',
    requiresArg: true,
    default: DEFAULT_MIN_RELATIVE_SPEED,
    describe: `fraction of the staged speed the registered copy must reach, in (0, ${MAX_MIN_RELATIVE_SPEED}]`,
  },
  timeout: { type: 'number', requiresArg: true, default: DEFAULT_TIMEOUT_S, describe: 'seconds one check may run before it is killed and reported as timeout (0: no limit); its waits for the host (--quiet-wait) are not counted' },
  check: {
    type: 'string',
    array: true,
    requiresArg: true,
    default: [] as string[],
    describe: 'only the checks whose id matches this glob (repeatable; * and ?), e.g. hazard.*; with what they need (probe.verdict for probe.release and timing.*)',
  },
  skip: {
    type: 'string',
    array: true,
    requiresArg: true,
    default: [] as string[],
    describe: 'skip the checks whose id matches this glob (repeatable), and the checks that need them: reported skip, "skipped by --skip GLOB"',
  },
  'skips-file': { type: 'string', requiresArg: true, describe: 'skip the checks of this file: one glob a line, # comments (checks known to hang a driver)' },
  ...OUTPUT_OPTIONS,
  baseline: {
    type: 'string',
    requiresArg: true,
    describe: 'the gate: compare with this earlier results file (a device gone, a status more severe, a verdict that left Usable, registered GB/s below --max-drop: exit 1)',
  },
  expectations: { type: 'string', requiresArg: true, describe: 'known failures and flakes (deqp-runner style): listed failures do not fail the gate, a listed failure that passes does' },
  require: {
    type: 'string',
    array: true,
    requiresArg: true,
    default: [] as string[],
    describe: 'the gate: this must be present (repeatable): a backend (cuda), a device (hip:1) or an exact count (cuda=8)',
  },
  'max-drop': {
    type: 'string',
    requiresArg: true,
    default: `${DEFAULT_MAX_DROP * 100}%`,
    describe: 'the gate: the largest drop against --baseline that is not a regression (10% or 0.1), of registered / page-locked always, of the registered GB/s where the machine was quiet',
  },
  'quiet-wait': {
    type: 'number',
    requiresArg: true,
    default: QUIET_WAIT.defaultS,
    describe: `seconds (at most ${QUIET_WAIT.maxS}) to wait for a busy machine (another process on the GPU or its link, host memory loaded) to become quiet, timing again, when its figures would regress against --baseline; still busy: the host is blamed, exit 1. Also the wait for the timing lock (at least ${LOCK_WAIT_MIN_S} s). Neither wait counts against --timeout`,
  },
} as const;

/** The options of `run` alone: `list` registers, copies and judges nothing, so any of them given to it is bad usage. */
export const RUN_ONLY_OPTIONS = ['size', 'runs', 'min-relative-speed', 'timeout', 'baseline', 'expectations', 'require', 'max-drop', 'quiet-wait'] as const satisfies readonly (keyof typeof RUN_OPTIONS)[];

/**
 * The options of `list`: those of run, with the options of run alone kept (hidden, no default) only so that a
 * `list --baseline FILE` is told what it is (listOptionProblem), not taken as an unknown argument.
 */
export const LIST_OPTIONS = Object.fromEntries(
  Object.entries(RUN_OPTIONS).map(([k, v]) => {
    if (!(RUN_ONLY_OPTIONS as readonly string[]).includes(k)) return [k, v];
    const { default: _default, ...rest } = v as typeof v & { default?: unknown };
    return [k, { ...rest, hidden: true }];
  }),
) as { [K in keyof typeof RUN_OPTIONS]: Omit<(typeof RUN_OPTIONS)[K], 'default'> & { hidden?: boolean } };

/** The option of run alone that `list` was given (`a`: yargs' arguments, camel-cased), as a UsageError's text; undefined when none. */
export function listOptionProblem(a: Record<string, unknown>): string | undefined {
  const given = RUN_ONLY_OPTIONS.find((k) => a[k.replace(/-(.)/g, (_, c: string) => c.toUpperCase())] !== undefined);
  return given === undefined ? undefined : `list: --${given} is an option of run alone (list registers, copies and judges nothing)`;
}

/** The measuring options as yargs gives them. */
export interface MeasureArgs {
  scratchDir?: string;
  size: number;
  device: string[];
  runs: number;
}

/** The measuring options, checked. */
export interface Measure {
  scratchDir: string;
  sizeMiB: number;
  devices: string[];
  runs: number;
}

/** What a run does, checked (the command's options of run and list). */
export interface RunOptions extends Measure {
  backends: Backend[];
  minRelativeSpeed: number;
  timeoutS: number;
  /** list: static verdicts only, nothing registered or copied. */
  listOnly: boolean;
  /** The user's selection of checks as given (--check, --skip, --skips-file), for the results. */
  selection?: { checks: string[]; skips: string[]; skipsFile?: string };
  /** The checks the selection leaves out, with the reason each is skipped (cli/select-checks.ts). */
  deselected?: Record<string, string>;
  /** Test hooks: a check that must crash its process or hang (MAPPED_REG_FORCE_CRASH / MAPPED_REG_FORCE_HANG = device/check-id or check-id). */
  forceCrash?: string;
  forceHang?: string;
  /** --quiet-wait (s); with the gate's --max-drop and baseline once they are read (cli/main.ts). */
  quietWaitS: number;
  quiet?: RunQuiet;
}

/** What the device runners learn of the gate: how long to wait for quiet, the largest drop, the baseline. */
export interface RunQuiet {
  waitS: number;
  maxDrop: number;
  baseline?: RunResult;
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

function checkNumbers(a: MeasureArgs, maxSizeMiB?: number): void {
  if (!Number.isSafeInteger(a.size) || a.size <= 0) throw new UsageError(`--size must be a positive whole number of MiB, not ${String(a.size)}`);
  if (maxSizeMiB !== undefined && a.size > maxSizeMiB) throw new UsageError(`--size ${a.size}: at most ${maxSizeMiB} MiB`);
  if (!Number.isSafeInteger(a.runs) || a.runs < 1) throw new UsageError(`--runs must be a whole number of at least 1, not ${String(a.runs)}`);
}

/** The scratch folder: the package's scratch/ (made when missing) unless named; one that cannot take the region is refused. */
function checkScratch(a: MeasureArgs, checkSpace: boolean): string {
  const scratchDir = a.scratchDir ? resolve(a.scratchDir) : DEFAULT_SCRATCH_DIR;
  if (!a.scratchDir) mkdirSync(scratchDir, { recursive: true });
  if (checkSpace) {
    const problem = scratchDirProblem(scratchDir, a.size * MiB);
    if (problem) throw new UsageError(problem);
  }
  return scratchDir;
}

/** The measuring options checked: a region of a positive whole number of MiB (at most `maxSizeMiB`), at least one run, a scratch folder that can take the region. */
export function measureOptions(a: MeasureArgs, o: { maxSizeMiB?: number } = {}): Measure {
  checkNumbers(a, o.maxSizeMiB);
  return { scratchDir: checkScratch(a, true), sizeMiB: a.size, devices: a.device, runs: a.runs };
}

/** The options of run and list checked (`list` needs no room for a region); the test hooks read from the environment. */
export function runOptions(
  a: MeasureArgs & { backend: string[]; minRelativeSpeed: number; timeout: number; quietWait?: number },
  listOnly: boolean,
  env: NodeJS.ProcessEnv = process.env,
): RunOptions {
  checkNumbers(a);
  if (!(a.timeout >= 0) || !Number.isFinite(a.timeout)) throw new UsageError(`--timeout must be a number of seconds (0: none), not ${String(a.timeout)}`);
  const quietWait = a.quietWait ?? QUIET_WAIT.defaultS;
  if (!(quietWait >= 0 && quietWait <= QUIET_WAIT.maxS)) throw new UsageError(`--quiet-wait must be a number of seconds from 0 (no wait) to ${QUIET_WAIT.maxS}, not ${String(a.quietWait)}`);
  if (!(a.minRelativeSpeed > 0 && a.minRelativeSpeed <= MAX_MIN_RELATIVE_SPEED)) {
    throw new UsageError(`--min-relative-speed must be in (0, ${MAX_MIN_RELATIVE_SPEED}], not ${String(a.minRelativeSpeed)}`);
  }
  // the registry's backends, not only the built-in ones
  const known: readonly string[] = backendIds();
  const backends = a.backend.length ? a.backend : [...known];
  const unknown = backends.filter((b) => !known.includes(b));
  if (unknown.length) throw new UsageError(`unknown backend ${unknown.join(', ')} (known: ${known.join(', ')})`);
  return {
    scratchDir: checkScratch(a, !listOnly),
    sizeMiB: a.size,
    devices: a.device,
    runs: a.runs,
    backends: backends as Backend[],
    minRelativeSpeed: a.minRelativeSpeed,
    timeoutS: a.timeout,
    quietWaitS: quietWait,
    listOnly,
    ...(env.MAPPED_REG_FORCE_CRASH ? { forceCrash: env.MAPPED_REG_FORCE_CRASH } : {}),
    ...(env.MAPPED_REG_FORCE_HANG ? { forceHang: env.MAPPED_REG_FORCE_HANG } : {}),
  };
}

/** What of a run's options every device runner passes to its suites (cli/select-devices.ts deviceOptions adds the device). */
export type SuiteBase = Pick<SuiteOptions, 'scratchDir' | 'sizeMiB' | 'runs' | 'minRelativeSpeed' | 'deselected'> & { quiet?: RunQuiet };

export function suiteBase(o: RunOptions): SuiteBase {
  return {
    scratchDir: o.scratchDir,
    sizeMiB: o.sizeMiB,
    runs: o.runs,
    minRelativeSpeed: o.minRelativeSpeed,
    quiet: o.quiet ?? { waitS: o.quietWaitS, maxDrop: DEFAULT_MAX_DROP },
    ...(o.deselected && Object.keys(o.deselected).length > 0 ? { deselected: o.deselected } : {}),
  };
}

/** The options as the results record them (`options` of the JSON). */
export function resultOptions(o: RunOptions): Record<string, unknown> {
  const sel = o.selection;
  return {
    scratchDir: o.scratchDir,
    sizeMiB: o.sizeMiB,
    devices: o.devices,
    backends: o.backends,
    runs: o.runs,
    minRelativeSpeed: o.minRelativeSpeed,
    timeoutS: o.timeoutS,
    quietWaitS: o.quietWaitS,
    list: o.listOnly,
    // the selection of checks, when one was given
    ...(sel && sel.checks.length > 0 ? { checks: sel.checks } : {}),
    ...(sel && sel.skips.length > 0 ? { skips: sel.skips } : {}),
    ...(sel?.skipsFile !== undefined ? { skipsFile: sel.skipsFile } : {}),
  };
}
