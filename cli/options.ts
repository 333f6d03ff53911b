// The options of every command, in one place: their yargs definitions, each value read as people write it (a
// number in words, a path given once: cli/numbers.ts, `given`), each default applied once, and what yargs gives
// turned into one checked, frozen object per command before anything runs (runCommandOptions, compareCommandOptions,
// ...). The command (cli/main.ts) only hands yargs' output here and runs what comes back; the bench (bench/bench.ts)
// shares the measuring options. Types come from yargs' inference over these definitions, never restated.
//
// A repeated option is either meant (the outputs --json, --junit, --metrics: each file named is written; the
// repeatable lists --backend, --device, --check, --skip, --require) or refused with one line (yargs alone would make
// it an array where one value is expected).
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ArgumentsCamelCase, InferredOptionTypes } from 'yargs';
import { memoryScratchProblem, scratchDirProblem } from '../bindings/scratch.js';
import { backendIds, backendModules } from '../bindings/registry.js';
import { OUTPUT_FORMATS, type OutputOption } from '../reporters/output-formats.js';
import { DEFAULT_LAST_RUNS, MAX_LAST_RUNS } from '../results/last-runs.js';
import { DEFAULT_MAX_DROP } from '../results/compare.js';
import { readExpectations, type Expectations } from '../results/expectations.js';
import { MiB } from '../results/format.js';
import { parseRequirement, type Requirement } from '../results/gate.js';
import { packageRoot } from '../results/package-root.js';
import { readResults } from '../results/read.js';
import type { Backend, RunResult } from '../results/types.js';
import { RUNTIME_BACKENDS, type RuntimeBackend } from '../results/runtime.js';
import { DEFAULT_MIN_RELATIVE_SPEED, DEFAULT_RUNS } from '../src/probe.js';
import { LOCK_WAIT_MIN_S, QUIET_WAIT } from '../suites/measure.js';
import type { Selection, SuiteOptions } from '../suites/protocol.js';
import { type NumberSpec, parseNumber } from './numbers.js';
import { checkOutputs, type OutputTarget } from './outputs.js';
import { readSkipsFile, selectChecks } from './select-checks.js';
import { UsageError } from './usage-error.js';
import { checkRunOutputs, type OutputTargets } from './write-outputs.js';

export { UsageError };

/** The environment variables that name a backend's library (MAPPED_REG_CUDA_LIBRARY, ...), from the registry: --help lists them all. */
export const LIBRARY_VARIABLES: readonly string[] = backendModules().flatMap((m) => (m.libraryEnv ? [m.libraryEnv] : []));

/** MiB of the region probed. */
export const DEFAULT_SIZE_MIB = 256;
/** The largest --size: a TiB, more than any scratch disk a CI runner has for one region. */
export const MAX_SIZE_MIB = 1024 * 1024;
/** The most --runs: each is two copies of the region; a thousand is already an hour on a slow link. */
export const MAX_RUNS = 1000;
/** Seconds one check may run before it is killed (0: no limit). */
export const DEFAULT_TIMEOUT_S = 120;
/** The largest --timeout: a day (0 is no limit at all). */
export const MAX_TIMEOUT_S = 86_400;
/** The largest --quiet-wait (s): a day. */
export const MAX_QUIET_WAIT_S = QUIET_WAIT.maxS;
/** The largest --min-relative-speed: a registered copy ten times the staged one is already a broken clock. */
export const MAX_MIN_RELATIVE_SPEED = 10;

/** The package's own scratch/. */
export const DEFAULT_SCRATCH_DIR = resolve(packageRoot(), 'scratch');

// ---- how each value is read -------------------------------------------------------------------------------------

/** yargs makes a repeated option an array: one that takes a single value is refused, in one line (a yargs `coerce`). */
export function once(option: string): (v: string | string[]) => string {
  return (v) => {
    if (!Array.isArray(v)) return v;
    throw new UsageError(`${option} was given ${v.length} times (${v.map((x) => JSON.stringify(x)).join(', ')}): give it once`);
  };
}

/** Files of a repeatable option, each once: the same run twice would count twice in the spread between runs. */
export function eachOnce(option: string, what: string): (v: string | string[]) => string[] {
  return (v) => {
    const all = Array.isArray(v) ? v : [v];
    const twice = all.find((f, i) => all.indexOf(f) !== i);
    if (twice !== undefined) throw new UsageError(`${option} ${JSON.stringify(twice)} was given ${all.filter((f) => f === twice).length} times: give each ${what} once`);
    return all;
  };
}

/** A path (or another single text value) given once. */
export const textOption = (option: string, describe: string) => ({ type: 'string', requiresArg: true, describe, coerce: once(option) }) as const;

/** A number of a single value, read by cli/numbers.ts; `shown`: its default as --help shows it (applied in runValues). */
function number(option: string, spec: Omit<NumberSpec, 'option'>, shown: string, describe: string) {
  const one = once(option);
  return { type: 'string', requiresArg: true, describe, defaultDescription: shown, coerce: (v: string | string[]) => parseNumber(one(v), { option, ...spec }) } as const;
}

/** --json, --junit, --metrics: each may be given more than once, and every file named is written (reporters/output-formats.ts). */
const OUTPUT_OPTIONS = Object.fromEntries(
  OUTPUT_FORMATS.flatMap((f) => ('option' in f.source ? [[f.source.option, { type: 'string', requiresArg: true, describe: `${f.source.describe}; repeatable: each file named is written`, coerce: (v: string | string[]) => [v].flat() }]] : [])),
) as Record<OutputOption, { readonly type: 'string'; readonly requiresArg: true; readonly describe: string; readonly coerce: (v: string | string[]) => string[] }>;

/** --max-drop: a fraction or a percentage, in [0, 1); its default (results/compare.ts) applied by maxDropOf alone. */
const maxDropOption = (describe: string) => number('--max-drop', { what: 'a fraction in [0, 1) such as 0.1, or a percentage such as 10%', min: 0, max: 1, below: true, percent: true }, `${DEFAULT_MAX_DROP * 100}%`, describe);
const maxDropOf = (v: number | undefined): number => v ?? DEFAULT_MAX_DROP;

// ---- the definitions ---------------------------------------------------------------------------------------------

// Every option that takes a value must be given one (`--size` alone is bad usage, not 256).
/** What is measured and where: the options the command and the bench share. */
export const MEASURE_OPTIONS = {
  'scratch-dir': textOption('--scratch-dir', "folder for the scratch files, on a disk (default: the package's scratch/); tmpfs and ramfs are refused"),
  'allow-tmpfs-scratch': { type: 'boolean', default: false, describe: 'accept a --scratch-dir on tmpfs or ramfs (its files are memory: the run then tests no file on a disk)' },
  size: number('--size', { what: `a positive whole number of MiB (at most ${MAX_SIZE_MIB})`, whole: true, min: 1, max: MAX_SIZE_MIB }, String(DEFAULT_SIZE_MIB), 'MiB of the region probed'),
  device: { type: 'string', array: true, requiresArg: true, default: [] as string[], describe: 'only this device id (repeatable), e.g. cuda:0' },
  runs: number('--runs', { what: `a whole number from 1 to ${MAX_RUNS}`, whole: true, min: 1, max: MAX_RUNS }, String(DEFAULT_RUNS), 'timed runs of each copy (best of N against best of N)'),
} as const;

/** The options of `run` (and, but for those of run alone, of `list`). */
export const RUN_OPTIONS = {
  ...MEASURE_OPTIONS,
  backend: { type: 'string', array: true, requiresArg: true, default: [] as string[], describe: `only this backend (repeatable): ${backendIds().join(', ')}` },
  'min-relative-speed': number(
    '--min-relative-speed',
    { what: `a fraction of the staged speed above 0 and at most ${MAX_MIN_RELATIVE_SPEED}, such as 0.8 or 80%`, min: 0, above: true, max: MAX_MIN_RELATIVE_SPEED, percent: true },
    String(DEFAULT_MIN_RELATIVE_SPEED),
    `fraction of the staged speed the registered copy must reach, in (0, ${MAX_MIN_RELATIVE_SPEED}] (0.8 or 80%)`,
  ),
  timeout: number(
    '--timeout',
    { what: `a number of seconds from 0 (no limit) to ${MAX_TIMEOUT_S}`, min: 0, max: MAX_TIMEOUT_S },
    String(DEFAULT_TIMEOUT_S),
    `seconds one check may run before it is killed and reported as timeout (0: no limit; at most ${MAX_TIMEOUT_S}); its waits for the host (--quiet-wait) are not counted`,
  ),
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
  'skips-file': textOption('--skips-file', 'skip the checks of this file: one glob a line, # comments (checks known to hang a driver)'),
  ...OUTPUT_OPTIONS,
  baseline: {
    type: 'string',
    array: true,
    requiresArg: true,
    coerce: eachOnce('--baseline', 'run of the baseline'),
    describe:
      'the gate: compare with this earlier results file (a device gone, a status more severe, a verdict that left Usable, a figure down more than --max-drop at the stated confidence: exit 1); repeatable: several runs of the baseline, whose spread between runs the decision on the figures uses (the first is the one of statuses and verdicts)',
  },
  expectations: textOption('--expectations', 'known failures and flakes (deqp-runner style): listed failures do not fail the gate, a listed failure that passes does'),
  require: { type: 'string', array: true, requiresArg: true, describe: 'the gate: this must be present (repeatable): a backend (cuda), a device (hip:1) or an exact count (cuda=8)' },
  'max-drop': maxDropOption('the gate: the largest drop against --baseline that is not a regression (10% or 0.1), of registered / page-locked always, of the registered GB/s where the machine was quiet'),
  'quiet-wait': number(
    '--quiet-wait',
    { what: `a number of seconds from 0 (no wait) to ${MAX_QUIET_WAIT_S}`, min: 0, max: MAX_QUIET_WAIT_S },
    String(QUIET_WAIT.defaultS),
    `seconds (at most ${MAX_QUIET_WAIT_S}) to wait for a busy machine (another process on the GPU or its link, host memory loaded) to become quiet, timing again, when its figures would regress against --baseline; still busy: the host is blamed, exit 1. Also the wait for the timing lock (at least ${LOCK_WAIT_MIN_S} s). Neither wait counts against --timeout`,
  ),
} as const;

/** The options of `run` alone: `list` registers, copies and judges nothing, so any of them given to it is bad usage. */
export const RUN_ONLY_OPTIONS = ['size', 'runs', 'min-relative-speed', 'timeout', 'baseline', 'expectations', 'require', 'max-drop', 'quiet-wait'] as const satisfies readonly (keyof typeof RUN_OPTIONS)[];

/** Where runtimes are looked for (runtimes, list --runtimes). */
const RUNTIME_ROOT = textOption('--runtime-root', 'the folder under which opt/rocm*/lib/libamdhip64.so* and usr/local/cuda*/compat/libcuda.so.1 are looked for (default: /)');

const hidden = { hidden: true } as const;
/**
 * The options of `list`: those of run, with the options of run alone hidden, kept only so that a `list --baseline
 * FILE` is told what it is (listOptionProblem), not taken as an unknown argument; and --checks.
 */
export const LIST_OPTIONS = {
  ...RUN_OPTIONS,
  size: { ...RUN_OPTIONS.size, ...hidden },
  runs: { ...RUN_OPTIONS.runs, ...hidden },
  'min-relative-speed': { ...RUN_OPTIONS['min-relative-speed'], ...hidden },
  timeout: { ...RUN_OPTIONS.timeout, ...hidden },
  baseline: { ...RUN_OPTIONS.baseline, ...hidden },
  expectations: { ...RUN_OPTIONS.expectations, ...hidden },
  require: { ...RUN_OPTIONS.require, ...hidden },
  'max-drop': { ...RUN_OPTIONS['max-drop'], ...hidden },
  'quiet-wait': { ...RUN_OPTIONS['quiet-wait'], ...hidden },
  checks: { type: 'boolean', default: false, describe: 'list every check id with its one-line title instead of the devices (--json: as JSON, to standard output when no file is named)' },
  runtimes: { type: 'boolean', default: false, describe: 'list the user-space runtimes installed side by side, with their versions, instead of the devices (as runtimes --list)' },
  'runtime-root': RUNTIME_ROOT,
} as const;

/** What --expectations and --max-drop mean to compare and history, which have no --baseline: the old results are the reference. */
export const COMPARE_OPTIONS = {
  expectations: { ...RUN_OPTIONS.expectations, describe: 'known failures and flakes (deqp-runner style): a listed failure in the new results is not a regression' },
  'max-drop': maxDropOption('the largest drop of the registered GB/s from the old results to the new that is not a regression (10% or 0.1)'),
} as const;

/** --last-runs of history compare and history report: the runs of each device its figures are judged on, on each side. */
const LAST_RUNS = number(
  '--last-runs',
  { what: `a whole number from 1 to ${MAX_LAST_RUNS}`, whole: true, min: 1, max: MAX_LAST_RUNS },
  String(DEFAULT_LAST_RUNS),
  "the runs of each device that its figures (registered GB/s, registered / page-locked) are judged on, on each side: its last N of its host and driver, their spread between runs with each one's rounds (1: the run that counts alone)",
);

/** A file the command must be given (the output, the store), once. */
const requiredFile = (option: string, describe: string) => ({ ...textOption(option, describe), demandOption: true }) as const;
/** The results files that merge and report read. */
export const RESULTS_FILES = { type: 'string', array: true, demandOption: true, describe: 'results files (JSON)' } as const;
/** The page of report and history report. */
const HTML_PAGE = requiredFile('--html', 'the page to write (- for standard output)');

export const COMPARE_POSITIONALS = {
  old: { type: 'string', demandOption: true, describe: 'earlier results (JSON)' },
  new: { type: 'string', demandOption: true, describe: 'later results (JSON)' },
} as const;
export const COMPARE_COMMAND_OPTIONS = {
  ...COMPARE_OPTIONS,
  'also-old': {
    type: 'string',
    array: true,
    requiresArg: true,
    coerce: eachOnce('--also-old', 'run of the old side'),
    describe: 'another run of the old side (repeatable; results JSON): its figures, and the spread between the old runs, join the decision on registered / page-locked and the registered GB/s',
  },
  json: { type: 'boolean', default: false, describe: 'print the comparison as JSON' },
} as const;
export const MERGE_OPTIONS = { o: { alias: 'output', ...requiredFile('-o', 'the merged file (- for standard output)') } } as const;
export const REPORT_OPTIONS = { html: HTML_PAGE } as const;
export const HISTORY_PATHS = { type: 'string', array: true, demandOption: true, describe: 'results files (JSON) or folders' } as const;
export const HISTORY_ADD_OPTIONS = { db: requiredFile('--db', 'the store (a DuckDB file; made when missing)') } as const;
export const HISTORY_COMPARE_OPTIONS = {
  db: requiredFile('--db', 'the store'),
  old: requiredFile('--old', 'key=glob pairs: driver=, host=, device= (e.g. driver=13.0*)'),
  new: requiredFile('--new', 'key=glob pairs, as --old (e.g. driver=13.1*)'),
  ...COMPARE_OPTIONS,
  'last-runs': LAST_RUNS,
  json: { type: 'boolean', default: false, describe: 'print the regressions and counts as JSON' },
} as const;
export const HISTORY_REPORT_OPTIONS = { db: requiredFile('--db', 'the store'), html: HTML_PAGE, ...COMPARE_OPTIONS, 'last-runs': LAST_RUNS } as const;

/** The options of `run` that `runtimes` hands to each runtime's run as they were given (what is measured, and how the gate judges). */
export const RUNTIMES_FORWARDED = ['size', 'runs', 'scratch-dir', 'allow-tmpfs-scratch', 'device', 'check', 'skip', 'skips-file', 'timeout', 'min-relative-speed', 'max-drop', 'quiet-wait', 'expectations'] as const satisfies readonly (keyof typeof RUN_OPTIONS)[];
export const RUNTIMES_OPTIONS = {
  ...Object.fromEntries(RUNTIMES_FORWARDED.map((k) => [k, RUN_OPTIONS[k]])) as Pick<typeof RUN_OPTIONS, (typeof RUNTIMES_FORWARDED)[number]>,
  list: { type: 'boolean', default: false, describe: 'list the runtimes found, with their versions and whether each starts; runs nothing' },
  backend: { type: 'string', array: true, requiresArg: true, default: [] as string[], describe: `only the runtimes of this backend (repeatable): ${RUNTIME_BACKENDS.join(', ')}` },
  runtime: { type: 'string', array: true, requiresArg: true, default: [] as string[], describe: 'a runtime library to run too (repeatable): a libcuda* or libamdhip64* file' },
  'baseline-runtime': textOption('--baseline-runtime', "the runtime the others are gated against (default: the system's, the one a plain run loads)"),
  'runtime-root': RUNTIME_ROOT,
  out: textOption('--out', "the folder for each runtime's results (RUNTIME.json), its run's log (RUNTIME.log) and runtime-matrix.json (made when missing)"),
  junit: textOption('--junit', 'the matrix as JUnit XML: a testsuite per runtime and device'),
  html: textOption('--html', 'the matrix as one HTML page'),
} as const;

// ---- yargs' output, as inferred from the definitions ---------------------------------------------------------------

/** What yargs gives for a set of definitions (camel-cased keys too). */
export type Parsed<O extends Record<string, object>> = ArgumentsCamelCase<InferredOptionTypes<O>>;
export type RunArgs = Parsed<typeof RUN_OPTIONS>;
export type ListArgs = Parsed<typeof LIST_OPTIONS>;

// ---- the checked objects ---------------------------------------------------------------------------------------------

/** The measuring options, checked. */
export interface Measure {
  readonly scratchDir: string;
  readonly sizeMiB: number;
  readonly devices: readonly string[];
  readonly runs: number;
}

/** What the device runners learn of the gate: how long to wait for quiet, the largest drop, the baseline. */
export interface RunQuiet {
  readonly waitS: number;
  readonly maxDrop: number;
  readonly baseline?: RunResult;
}

/** What of a run's options every device runner passes to its suites (cli/select-devices.ts deviceOptions adds the device). */
export type SuiteBase = Readonly<Pick<SuiteOptions, 'scratchDir' | 'sizeMiB' | 'runs' | 'minRelativeSpeed' | 'deselected'>> & { readonly quiet: RunQuiet };

/** The gate's options, read and checked (the baseline and the expectations already read). */
export interface GateOptions {
  readonly baseline?: { readonly file: string; readonly result: RunResult };
  /** The other `--baseline` files: more runs of the baseline, for the decision on the figures. */
  readonly moreBaselines?: readonly { readonly file: string; readonly result: RunResult }[];
  readonly expectations?: Expectations;
  readonly requires: readonly Requirement[];
  readonly maxDrop: number;
}

/** What a run does, checked (the command's options of run and list), frozen. */
export interface RunOptions extends Measure {
  readonly backends: readonly Backend[];
  readonly minRelativeSpeed: number;
  readonly timeoutS: number;
  /** list: static verdicts only, nothing registered or copied. */
  readonly listOnly: boolean;
  /** The devices asked for, decided once: the discovering processes offer from it, the command chooses by it. */
  readonly selection: Readonly<Selection>;
  /** The user's selection of checks as given (--check, --skip, --skips-file), for the results. */
  readonly checkSelection?: { readonly checks: readonly string[]; readonly skips: readonly string[]; readonly skipsFile?: string };
  /** What every device's runner is given (the checks the selection leaves out among it). */
  readonly suite: SuiteBase;
  readonly gate: GateOptions;
  /** Every output named, checked: each target written once the gate has decided. */
  readonly outputs: OutputTargets;
}

/** A yargs option's name camel-cased, as its value's key. */
const camel = (k: string): string => k.replace(/-(.)/g, (_, c: string) => c.toUpperCase());

/** The option of run alone that `list` was given, as a UsageError's text; undefined when none. */
export function listOptionProblem(a: Readonly<Record<string, unknown>>): string | undefined {
  const problem = RUN_ONLY_OPTIONS.find((k) => a[camel(k)] !== undefined);
  return problem === undefined ? undefined : `list: --${problem} is an option of run alone (list registers, copies and judges nothing; see mapped-reg-conformance list --help)`;
}

/** The scratch folder: the package's scratch/ (made when missing) unless named; one that cannot take the region is refused. */
function checkScratch(named: string | undefined, sizeMiB: number, checkSpace: boolean, allowTmpfs = false): string {
  const scratchDir = named ? resolve(named) : DEFAULT_SCRATCH_DIR;
  // the package's own folder, not writable after a global install (root's): the user is told where to point instead
  const elsewhere = named ? '' : `: the package's own scratch folder; name one you can write on a disk with --scratch-dir DIR`;
  if (!named) {
    try {
      mkdirSync(scratchDir, { recursive: true });
    } catch (e) {
      throw new UsageError(`scratch folder ${scratchDir} cannot be made (${(e as NodeJS.ErrnoException).code ?? String(e)})${elsewhere}`);
    }
  }
  if (checkSpace) {
    // a folder that cannot be written first, then one in memory, then the free space (ramfs says it has none)
    const unusable = scratchDirProblem(scratchDir, 0);
    if (unusable) throw new UsageError(`${unusable}${elsewhere}`);
    const memory = allowTmpfs ? undefined : memoryScratchProblem(scratchDir);
    if (memory) throw new UsageError(`${memory}: give --scratch-dir a folder on a disk (ext4, xfs, ...), or add --allow-tmpfs-scratch to test tmpfs on purpose`);
    const problem = scratchDirProblem(scratchDir, sizeMiB * MiB);
    if (problem) throw new UsageError(`${problem}${elsewhere}`);
  }
  return scratchDir;
}

/** The measuring options as the bench takes them from yargs. */
export interface MeasureArgs {
  scratchDir?: string | undefined;
  /** --allow-tmpfs-scratch: a scratch folder on tmpfs or ramfs is meant. */
  allowTmpfsScratch?: boolean | undefined;
  size?: number | undefined;
  device: string[];
  runs?: number | undefined;
}

/** The measuring options checked: a region of at most `maxSizeMiB`, a scratch folder that can take it. */
export function measureOptions(a: MeasureArgs, o: { maxSizeMiB?: number } = {}): Measure {
  const sizeMiB = a.size ?? DEFAULT_SIZE_MIB;
  if (o.maxSizeMiB !== undefined && sizeMiB > o.maxSizeMiB) throw new UsageError(`--size ${sizeMiB}: at most ${o.maxSizeMiB} MiB`);
  return Object.freeze({ scratchDir: checkScratch(a.scratchDir, sizeMiB, true, a.allowTmpfsScratch === true), sizeMiB, devices: Object.freeze([...a.device]), runs: a.runs ?? DEFAULT_RUNS });
}

/** The backends asked for (every one of the registry's when none), each known. */
function backendsOf(asked: readonly string[]): Backend[] {
  // the registry's backends, not only the built-in ones
  const known: readonly string[] = backendIds();
  const backends = asked.length ? [...asked] : [...known];
  const unknown = backends.filter((b) => !known.includes(b));
  if (unknown.length) throw new UsageError(`unknown backend ${unknown.join(', ')} (known: ${known.join(', ')})`);
  return backends as Backend[];
}

/** The numbers of a run with their defaults, each applied here alone. */
function runValues(a: Partial<Pick<RunArgs, 'size' | 'runs' | 'minRelativeSpeed' | 'timeout' | 'quietWait' | 'maxDrop'>>) {
  return {
    sizeMiB: a.size ?? DEFAULT_SIZE_MIB,
    runs: a.runs ?? DEFAULT_RUNS,
    minRelativeSpeed: a.minRelativeSpeed ?? DEFAULT_MIN_RELATIVE_SPEED,
    timeoutS: a.timeout ?? DEFAULT_TIMEOUT_S,
    quietWaitS: a.quietWait ?? QUIET_WAIT.defaultS,
    maxDrop: maxDropOf(a.maxDrop),
  };
}

/** What run and list share of yargs' output (list has no value for the options of run alone). */
type RunOrListArgs = Partial<RunArgs> & Pick<RunArgs, 'device' | 'backend' | 'check' | 'skip'>;

/**
 * The selection of checks (--check, --skip, --skips-file) against the catalog: a glob that matches no check, or a
 * skips file that cannot be read, is bad input. The catalog is loaded only when there is a selection.
 */
async function checksOf(a: RunOrListArgs): Promise<{ checkSelection?: RunOptions['checkSelection']; deselected?: Record<string, string> }> {
  if (a.check.length === 0 && a.skip.length === 0 && a.skipsFile === undefined) return {};
  const skips = [...a.skip.map((glob) => ({ glob, source: '--skip' })), ...(a.skipsFile !== undefined ? await readSkipsFile(a.skipsFile) : [])];
  const { checkCatalog } = await import('../suites/catalog.js');
  const deselected = selectChecks(await checkCatalog(), { checks: a.check, skips });
  return { checkSelection: { checks: [...a.check], skips: [...a.skip], ...(a.skipsFile !== undefined ? { skipsFile: a.skipsFile } : {}) }, deselected };
}

/** An expectations file, read and checked (results/expectations.ts). */
/** An input's name as read: a path resolved, `-` (standard input) as it is. */
const inputPath = (file: string): string => (file === '-' ? file : resolve(file));

const expectationsOf = async (file: string | undefined): Promise<Expectations | undefined> => (file ? readExpectations(inputPath(file)) : undefined);

/** A results file given on the command line, read and checked (results/read.ts). */
export const readInputFile = (file: string): Promise<RunResult> => readResults(inputPath(file));

/**
 * The options of run (`listOnly` false) or list, checked in the order the user is told of a problem: the numbers
 * (yargs, through cli/numbers.ts), the backends, the scratch folder, every output (before anything runs: a name that
 * cannot be written is refused now, not after the run), the selection of checks, then the gate's inputs read. The
 * test hooks are read from the environment. The result is frozen: nothing after this line changes a run's options.
 */
export async function runCommandOptions(a: RunOrListArgs, listOnly: boolean, env: NodeJS.ProcessEnv = process.env): Promise<RunOptions> {
  if (listOnly) {
    const problem = listOptionProblem(a);
    if (problem) throw new UsageError(problem);
  }
  const v = runValues(a);
  const backends = backendsOf(a.backend);
  const scratchDir = checkScratch(a.scratchDir, v.sizeMiB, !listOnly, a.allowTmpfsScratch === true);
  const outputs = checkRunOutputs({ json: a.json, junit: a.junit, metrics: a.metrics }, listOnly, [
    ...(a.baseline ?? []).map((value) => ({ option: '--baseline', value })),
    { option: '--expectations', value: a.expectations },
    { option: '--skips-file', value: a.skipsFile },
  ]);
  const { checkSelection, deselected } = await checksOf(a);
  // the gate's inputs are read and checked before anything runs: a bad one is refused up front
  const baselines: { file: string; result: RunResult }[] = [];
  for (const file of listOnly ? [] : (a.baseline ?? [])) baselines.push(Object.freeze({ file, result: await readInputFile(file) }));
  const baseline = baselines[0];
  const moreBaselines = Object.freeze(baselines.slice(1));
  const expectations = await expectationsOf(a.expectations);
  const requires = (a.require ?? []).map(parseRequirement);
  const selection: Selection = {
    backends: [...backends],
    devices: [...a.device],
    ...(env.MAPPED_REG_FORCE_CRASH ? { forceCrash: env.MAPPED_REG_FORCE_CRASH } : {}),
    ...(env.MAPPED_REG_FORCE_HANG ? { forceHang: env.MAPPED_REG_FORCE_HANG } : {}),
  };
  // the device runners wait for quiet only where the gate would judge a fall: they learn its limit and baseline
  const quiet: RunQuiet = Object.freeze({ waitS: v.quietWaitS, maxDrop: v.maxDrop, ...(baseline ? { baseline: baseline.result } : {}) });
  const suite: SuiteBase = Object.freeze({
    scratchDir,
    sizeMiB: v.sizeMiB,
    runs: v.runs,
    minRelativeSpeed: v.minRelativeSpeed,
    quiet,
    ...(deselected && Object.keys(deselected).length > 0 ? { deselected: Object.freeze(deselected) } : {}),
  });
  return Object.freeze({
    scratchDir,
    sizeMiB: v.sizeMiB,
    devices: Object.freeze([...a.device]),
    runs: v.runs,
    backends: Object.freeze(backends),
    minRelativeSpeed: v.minRelativeSpeed,
    timeoutS: v.timeoutS,
    listOnly,
    selection: Object.freeze(selection),
    ...(checkSelection ? { checkSelection: Object.freeze(checkSelection) } : {}),
    suite,
    gate: Object.freeze({ ...(baseline ? { baseline } : {}), ...(moreBaselines.length ? { moreBaselines } : {}), ...(expectations ? { expectations } : {}), requires: Object.freeze(requires), maxDrop: v.maxDrop }),
    outputs: Object.freeze(outputs),
  });
}

/** The options as the results record them (`options` of the JSON). */
export function resultOptions(o: RunOptions): Record<string, unknown> {
  const sel = o.checkSelection;
  return {
    scratchDir: o.scratchDir,
    sizeMiB: o.sizeMiB,
    devices: [...o.devices],
    backends: [...o.backends],
    runs: o.runs,
    minRelativeSpeed: o.minRelativeSpeed,
    timeoutS: o.timeoutS,
    quietWaitS: o.suite.quiet.waitS,
    list: o.listOnly,
    // the selection of checks, when one was given
    ...(sel && sel.checks.length > 0 ? { checks: [...sel.checks] } : {}),
    ...(sel && sel.skips.length > 0 ? { skips: [...sel.skips] } : {}),
    ...(sel?.skipsFile !== undefined ? { skipsFile: sel.skipsFile } : {}),
  };
}

// ---- the other commands -------------------------------------------------------------------------------------------

/** The rules of compare, for compare and history (--expectations read, --max-drop with its default). */
export interface CompareRules {
  readonly maxDrop: number;
  readonly expectations?: Expectations;
}

async function compareRules(a: { expectations?: string | undefined; maxDrop?: number | undefined }): Promise<CompareRules> {
  const expectations = await expectationsOf(a.expectations);
  return Object.freeze({ maxDrop: maxDropOf(a.maxDrop), ...(expectations ? { expectations } : {}) });
}

/** `compare OLD NEW`. */
export async function compareCommandOptions(a: Parsed<typeof COMPARE_COMMAND_OPTIONS & typeof COMPARE_POSITIONALS>) {
  const rules = await compareRules(a);
  return Object.freeze({ old: a.old, new: a.new, alsoOld: Object.freeze([...(a.alsoOld ?? [])]), json: a.json, rules });
}

/** The one output of merge or report, checked before anything runs against the results files it reads. */
const outputBesideFiles = (option: string, value: string, files: readonly string[]): OutputTarget =>
  checkOutputs([{ option, value }], files.map((f) => ({ option: 'the results file', value: f })))[option]!;

/** `merge FILES... -o OUT`. */
export function mergeCommandOptions(a: Parsed<typeof MERGE_OPTIONS> & { files: string[] }) {
  return Object.freeze({ files: Object.freeze([...a.files]), output: a.o, target: outputBesideFiles('-o', a.o, a.files) });
}

/** `report FILES... --html OUT`. */
export function reportCommandOptions(a: Parsed<typeof REPORT_OPTIONS> & { files: string[] }) {
  return Object.freeze({ files: Object.freeze([...a.files]), html: a.html, target: outputBesideFiles('--html', a.html, a.files) });
}

/** `history add PATHS... --db FILE`. */
export function historyAddOptions(a: Parsed<typeof HISTORY_ADD_OPTIONS> & { paths: string[] }) {
  return Object.freeze({ db: a.db, paths: [...a.paths] });
}

/** `history compare --db FILE --old SEL --new SEL`. */
export async function historyCompareOptions(a: Parsed<typeof HISTORY_COMPARE_OPTIONS>) {
  return Object.freeze({ db: a.db, old: a.old, new: a.new, json: a.json, lastRuns: a.lastRuns ?? DEFAULT_LAST_RUNS, ...(await compareRules(a)) });
}

/** `history report --db FILE --html OUT`: the page checked against the store and the expectations first. */
export async function historyReportOptions(a: Parsed<typeof HISTORY_REPORT_OPTIONS>) {
  const target = checkOutputs([{ option: '--html', value: a.html }], [
    { option: 'the store --db', value: a.db },
    { option: '--expectations', value: a.expectations },
  ])['--html']!;
  return Object.freeze({ db: a.db, html: a.html, target, lastRuns: a.lastRuns ?? DEFAULT_LAST_RUNS, ...(await compareRules(a)) });
}

// ---- runtimes ------------------------------------------------------------------------------------------------------

/** `runtimes`, checked: what to look for, where the runs go, and each run's own options (as arguments of `run`). */
export interface RuntimesOptions {
  readonly list: boolean;
  readonly backends: readonly RuntimeBackend[];
  readonly root: string;
  /** --runtime, and --baseline-runtime (a runtime too). */
  readonly named: readonly string[];
  readonly baselineRuntime?: string;
  readonly out?: string;
  readonly junit?: OutputTarget;
  readonly html?: OutputTarget;
  /** The arguments of `run` that each runtime's run is given. */
  readonly forward: readonly string[];
}

/** `list --runtimes`: the runtimes of the backends asked for that have one (cuda, hip), under --runtime-root. */
export function listRuntimesOptions(a: { backend: readonly string[]; runtimeRoot?: string | undefined }): RuntimesOptions {
  const backends = a.backend.filter((b): b is RuntimeBackend => (RUNTIME_BACKENDS as readonly string[]).includes(b));
  if (a.backend.length > 0 && backends.length === 0) throw new UsageError(`list --runtimes: --backend ${a.backend.join(', ')}: only ${RUNTIME_BACKENDS.join(' and ')} have a user-space runtime to list`);
  return Object.freeze({ list: true, backends: Object.freeze(backends.length ? [...new Set(backends)] : [...RUNTIME_BACKENDS]), root: resolve(a.runtimeRoot ?? '/'), named: Object.freeze([]), forward: Object.freeze([]) });
}

/** The forwarded options' values as arguments again: `--size 64`, `--check a --check b`, `--allow-tmpfs-scratch`. */
function forwardedArgs(a: Readonly<Record<string, unknown>>): string[] {
  return RUNTIMES_FORWARDED.flatMap((k) => {
    const v = a[camel(k)];
    if (v === undefined || v === false || (Array.isArray(v) && v.length === 0)) return [];
    if (v === true) return [`--${k}`];
    return [v].flat().flatMap((x) => [`--${k}`, String(x)]);
  });
}

/**
 * `runtimes`, checked before anything runs: the backends, the scratch folder and the selection of checks (as a run
 * checks them), the expectations read, the output folder made, the pages' files checked.
 */
export async function runtimesCommandOptions(a: Parsed<typeof RUNTIMES_OPTIONS>): Promise<RuntimesOptions> {
  const unknown = a.backend.filter((b) => !(RUNTIME_BACKENDS as readonly string[]).includes(b));
  if (unknown.length) throw new UsageError(`runtimes: --backend ${unknown.join(', ')}: a runtime is of ${RUNTIME_BACKENDS.join(' or ')}`);
  const backends = (a.backend.length ? [...new Set(a.backend)] : [...RUNTIME_BACKENDS]) as RuntimeBackend[];
  const root = resolve(a.runtimeRoot ?? '/');
  const named = [...a.runtime, ...(a.baselineRuntime !== undefined ? [a.baselineRuntime] : [])].map((p) => resolve(p));
  const base = { list: a.list, backends: Object.freeze(backends), root, named: Object.freeze(named), ...(a.baselineRuntime !== undefined ? { baselineRuntime: resolve(a.baselineRuntime) } : {}) };
  if (a.list) return Object.freeze({ ...base, forward: Object.freeze([]) });
  if (a.out === undefined) throw new UsageError('runtimes: --out DIR is needed (each runtime\'s results go there), or --list to only list the runtimes');
  measureOptions({ scratchDir: a.scratchDir, allowTmpfsScratch: a.allowTmpfsScratch, size: a.size, device: a.device, runs: a.runs });
  await checksOf({ device: a.device, backend: [], check: a.check, skip: a.skip, skipsFile: a.skipsFile });
  await expectationsOf(a.expectations);
  const targets = checkOutputs(
    [
      { option: '--junit', value: a.junit },
      { option: '--html', value: a.html },
    ],
    [{ option: '--expectations', value: a.expectations }],
  );
  // made by the command once the baseline is known to start (cli/runtimes.ts): bad input leaves no folder behind
  const out = resolve(a.out);
  if (existsSync(out) && !statSync(out).isDirectory()) throw new UsageError(`--out ${a.out}: not a folder`);
  return Object.freeze({
    ...base,
    out,
    ...(targets['--junit'] ? { junit: targets['--junit'] } : {}),
    ...(targets['--html'] ? { html: targets['--html'] } : {}),
    forward: Object.freeze(forwardedArgs(a)),
  });
}
