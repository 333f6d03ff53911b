#!/usr/bin/env node
// The command: `mapped-reg-conformance [run]`, `list`, `compare`, `merge`, `report` and `history`.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { htmlReport } from '../reporters/results-page.js';
import { comparisonJson, compareResults, exitStatus, formatComparison } from '../results/compare.js';
import { readExpectations, type Expectations } from '../results/expectations.js';
import { decide, gateRulesText, parseMaxDrop, parseRequirement } from '../results/gate.js';
import { mergeResults, mergeSizeProblem } from '../results/merge.js';
import { InputError, readResults } from '../results/read.js';
import type { RunResult } from '../results/types.js';
import { capGate, capResult } from '../reporters/cap.js';
import { resultsJson } from '../reporters/json.js';
import { terminalSafe } from '../reporters/safe-text.js';
import { painter } from '../reporters/look.js';
import { gateSummary, interruptedLine, runSummary } from '../reporters/summary.js';
import { duplicateDevice, duplicateInputs } from '../results/duplicates.js';
import { checkOutputs, OutputError, type OutputTarget, writeOutput } from './outputs.js';
import { DEFAULT_SIZE_MIB, DEFAULT_TIMEOUT_S, LIBRARY_VARIABLES, LIST_OPTIONS, listOptionProblem, RUN_OPTIONS, type RunOptions, runOptions } from './options.js';
import { DEFAULT_MAX_DROP } from '../results/compare.js';
import { DEFAULT_MIN_RELATIVE_SPEED, DEFAULT_RUNS } from '../src/probe.js';
import { QUIET_WAIT } from '../suites/measure.js';
import { readSkipsFile, selectChecks } from './select-checks.js';
import { checkRunOutputs, writeRunOutputs } from './write-outputs.js';
import { interruptAll } from './orchestrate.js';
import { DiscoveryError, run, UsageError } from './run.js';
import { installStopSignals, keepGoing, onStop, stoppedBy, stoppedStatus } from './signals.js';
import { colourWanted, guardStdout, listingOnly, progressRedraws, say, terminalWidth } from './stdout.js';
import { packageJson } from '../results/package-root.js';
import { plural } from '../results/format.js';

const pkg = packageJson();

// A reader that closes early (`| head`), a full disk: the run goes on, its reports are written (cli/stdout.ts).
guardStdout();

function fail(message: string): never {
  // one line, and nothing raw from a file or a driver reaches the terminal
  process.stderr.write(`mapped-reg-conformance: ${terminalSafe(message.split('\n')[0]!, false)}\n`);
  process.exit(2);
}

interface Args {
  scratchDir?: string;
  size: number;
  device: string[];
  backend: string[];
  runs: number;
  minRelativeSpeed: number;
  json?: string;
  junit?: string;
  metrics?: string;
  timeout: number;
  baseline?: string;
  expectations?: string;
  require: string[];
  maxDrop: string;
  quietWait: number;
  check: string[];
  skip: string[];
  skipsFile?: string;
  /** list: the checks instead of the devices. */
  checks?: boolean;
}

/** The options of run and list, checked (cli/options.ts), and every output checked before anything runs. */
function options(a: Args, listOnly: boolean) {
  const run = runOptions(a, listOnly);
  // every output is checked before anything runs: a name that cannot be written is refused now, not after the run
  const targets = checkRunOutputs({ ...a }, listOnly, [
    { option: '--baseline', value: a.baseline },
    { option: '--expectations', value: a.expectations },
    { option: '--skips-file', value: a.skipsFile },
  ]);
  return { run, targets };
}

/**
 * The selection of checks (--check, --skip, --skips-file) against the catalog, checked before anything runs: a
 * glob that matches no check, or a skips file that cannot be read, is bad input. The catalog is loaded only then.
 */
async function checkSelection(a: Args): Promise<Pick<RunOptions, 'selection' | 'deselected'>> {
  if (a.check.length === 0 && a.skip.length === 0 && a.skipsFile === undefined) return {};
  const skips = [...a.skip.map((glob) => ({ glob, source: '--skip' })), ...(a.skipsFile !== undefined ? readSkipsFile(a.skipsFile) : [])];
  const { checkCatalog } = await import('../suites/catalog.js');
  const deselected = selectChecks(await checkCatalog(), { checks: a.check, skips });
  return { selection: { checks: a.check, skips: a.skip, ...(a.skipsFile !== undefined ? { skipsFile: a.skipsFile } : {}) }, deselected };
}

/** list --checks: every check id with its title (--json: as JSON, to standard output or to the file named). */
async function listChecks(a: Args): Promise<void> {
  const { checkCatalog } = await import('../suites/catalog.js');
  const catalog = await checkCatalog();
  if (a.json !== undefined) {
    const text = `${JSON.stringify({ checks: catalog }, null, 2)}\n`;
    if (a.json === '-') say(text);
    else writeOutput(checkOutputs([{ option: '--json', value: a.json }])['--json']!, text);
    return;
  }
  const width = Math.max(...catalog.map((c) => c.id.length));
  for (const c of catalog) say(`${c.id.padEnd(width)}  ${c.title}${c.needs.length ? ` (needs ${c.needs.join(', ')})` : ''}\n`);
}

/** Bad usage and bad input files end the command with one line on stderr and status 2. */
async function guarded(body: () => Promise<void> | void): Promise<void> {
  try {
    await body();
  } catch (e) {
    if (e instanceof UsageError || e instanceof InputError || e instanceof DiscoveryError || e instanceof OutputError) fail(e.message);
    throw e;
  }
}

const expectationsOf = (file: string | undefined): Expectations | undefined => (file ? readExpectations(resolve(file)) : undefined);

/** A file's size in bytes (0 when it cannot be read: reading it says why). */
const sizeOf = (file: string): number => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

/** A results file given on the command line, read and checked (results/read.ts: one that lists a device twice is refused). */
const readInputFile = (file: string): RunResult => readResults(resolve(file));

function execute(a: Args, listOnly: boolean): Promise<void> {
  return guarded(async () => {
    // SIGINT, SIGTERM, SIGHUP: before anything runs they end the command at once; then they stop the run
    // a listing that its reader stops early (`| head -1`) just stops: there is no run to go on
    if (listOnly) listingOnly();
    if (listOnly && a.checks) return listChecks(a);
    if (!listOnly) installStopSignals();
    const { run: options_, targets } = options(a, listOnly);
    // the selection of checks is checked before anything runs, for list too (it lists no checks, but a bad glob is bad input)
    const o: RunOptions = { ...options_, ...(await checkSelection(a)) };
    // the gate's inputs are read and checked before anything runs: a bad one is refused up front
    const baseline = !listOnly && a.baseline ? { file: a.baseline, result: readInputFile(a.baseline) } : undefined;
    const expectations = expectationsOf(a.expectations);
    const requires = a.require.map(parseRequirement);
    const maxDrop = parseMaxDrop(a.maxDrop);
    // the device runners wait for quiet only where the gate would judge a fall: they learn its limit and baseline
    o.quiet = { waitS: o.quietWaitS, maxDrop, ...(baseline ? { baseline: baseline.result } : {}) };
    if (!listOnly) keepGoing();
    const out = (l: string): void => say(`${terminalSafe(l)}\n`);
    // the terminal's width and colours (a pipe: the whole table, no colour), decided once
    const width = terminalWidth();
    const look = { ...(width !== undefined ? { width } : {}), paint: painter(colourWanted()) };
    const outcome = await run(o, { out, tty: progressRedraws(), write: say, look }, { name: pkg.name, version: pkg.version });
    const { result } = outcome;
    // the summaries' lines are safe for the terminal already, and may carry colours: printed as they are
    const tell = (lines: string[]): void => lines.forEach((l) => say(`${l}\n`));
    tell(['', ...runSummary(result, listOnly, look)]);
    if (!listOnly && !stoppedBy()) {
      // the gate decides (re-running once what may be a flake) before any report is written: each report tells its decision
      const stop = onStop(() => interruptAll()); // the gate's re-runs are stopped like the run's
      result.gate = await decide(result, { ...(baseline ? { baseline } : {}), ...(expectations ? { expectations } : {}), requires, maxDrop, rerun: outcome.rerun });
      stop();
    }
    // every report is tried; one that cannot be written is told in one line and the run does not pass
    const unwritten = await writeRunOutputs(result, targets, listOnly, stoppedBy());
    // capped as the reports cap it (a baseline's device of a 100 kB name is not 100 kB of terminal)
    if (result.gate) tell(['', ...gateSummary(capGate(result.gate), look)]);
    // a run's log always ends on its answer: PASS or FAIL (the gate's headline, above), or INTERRUPTED
    if (!listOnly && stoppedBy()) tell([...(result.gate ? [] : ['']), ...interruptedLine(result, stoppedBy(), look)]);
    process.exitCode = result.gate && !result.gate.pass ? 1 : unwritten ? 1 : 0;
    // a signal (during the run, or once the checks were over, while the reports were written): its status all the same
    if (stoppedBy()) process.exitCode = stoppedStatus();
  });
}

/** What --expectations and --max-drop mean to compare and history, which have no --baseline: the old results are the reference. */
const COMPARE_OPTIONS = {
  expectations: { ...RUN_OPTIONS.expectations, describe: 'known failures and flakes (deqp-runner style): a listed failure in the new results is not a regression' },
  'max-drop': { ...RUN_OPTIONS['max-drop'], describe: 'the largest drop of the registered GB/s from the old results to the new that is not a regression (10% or 0.1)' },
} as const;

/** The rules of compare as the commands give them (--expectations read, --max-drop parsed), for compare and history. */
function compareRules(a: { expectations?: string | undefined; maxDrop: string }): { maxDrop: number; expectations?: Expectations } {
  const expectations = expectationsOf(a.expectations);
  return { maxDrop: parseMaxDrop(a.maxDrop), ...(expectations ? { expectations } : {}) };
}

/** A file the command must be given (the output, the store). */
const requiredFile = (describe: string) => ({ type: 'string', requiresArg: true, demandOption: true, describe }) as const;
/** The results files that merge and report read. */
const RESULTS_FILES = { type: 'string', array: true, demandOption: true, describe: 'results files (JSON)' } as const;
/** The page of report and history report. */
const HTML_PAGE = requiredFile('the page to write (- for standard output)');

/** The one output of merge or report, checked before anything runs against the results files it reads. */
const outputBesideFiles = (option: string, value: string, files: string[]): OutputTarget =>
  checkOutputs([{ option, value }], files.map((f) => ({ option: 'the results file', value: f })))[option]!;

/**
 * The arguments; `list --checks --json` with no file name is `--json -` (standard output): every other option that
 * takes a value must be given one.
 */
function commandLine(args: string[]): string[] {
  if (args[0] !== 'list' || !args.includes('--checks')) return args;
  return args.flatMap((arg, i) => (arg === '--json' && (i + 1 === args.length || args[i + 1]!.startsWith('--')) ? [arg, '-'] : [arg]));
}

/** `run` (the default command) and `list`. */
function addRunAndList(y: Argv): Argv {
  return y.command(['run', '$0'], 'discover devices, decide static verdicts, run the conformance suites on every device', RUN_OPTIONS, (a) => execute(a as unknown as Args, false)).command(
    'list',
    'devices and their static verdicts; registers and copies nothing (--checks: every check id with its title)',
    { ...LIST_OPTIONS, checks: { type: 'boolean', default: false, describe: 'list every check id with its one-line title instead of the devices (--json: as JSON, to standard output when no file is named)' } } as const,
    (a) =>
      guarded(() => {
        // the options of run alone are refused (list --baseline FILE would otherwise pass, the baseline unread)
        const problem = listOptionProblem(a);
        if (problem) throw new UsageError(problem);
        const defaults = { size: DEFAULT_SIZE_MIB, runs: DEFAULT_RUNS, minRelativeSpeed: DEFAULT_MIN_RELATIVE_SPEED, timeout: DEFAULT_TIMEOUT_S, require: [], maxDrop: `${DEFAULT_MAX_DROP * 100}%`, quietWait: QUIET_WAIT.defaultS };
        const given = Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined));
        return execute({ ...defaults, ...given } as unknown as Args, true);
      }),
  );
}

/** `compare OLD NEW`. */
function addCompare(y: Argv): Argv {
  return y.command(
    'compare <old> <new>',
    'regressions, fixes, unchanged, new and missing checks, per device (matched by PCI bus id and name); exit 1 on a regression',
    (z) =>
      z
        .positional('old', { type: 'string', demandOption: true, describe: 'earlier results (JSON)' })
        .positional('new', { type: 'string', demandOption: true, describe: 'later results (JSON)' })
        .options(COMPARE_OPTIONS)
        .option('json', { type: 'boolean', default: false, describe: 'print the comparison as JSON' }),
    (a) =>
      guarded(() => {
        const c = compareResults(readInputFile(a.old), readInputFile(a.new), compareRules(a));
        say(a.json ? `${comparisonJson(c)}\n` : `${terminalSafe(formatComparison(c, { old: a.old, new: a.new }))}\n`);
        process.exitCode = exitStatus(c);
      }),
  );
}

/** merge's one JSON text; a merge too large for one string is refused with what to use instead. */
function mergedJson(merged: RunResult, files: number): string {
  try {
    return resultsJson(merged);
  } catch (e) {
    if (e instanceof RangeError) throw new InputError(`merge: the merged file of ${files} files is too large for one JSON text (at most 512 MiB in Node.js): for a fleet, use a history store instead: history add --db FILE RESULTS..., then history compare and history report`);
    throw e;
  }
}

/** `merge FILES... -o OUT`. */
function addMerge(y: Argv): Argv {
  return y.command(
    'merge <files..>',
    'results from many machines into one file, for compare and report',
    (z) => z.positional('files', RESULTS_FILES).option('o', { alias: 'output', ...requiredFile('the merged file (- for standard output)') }),
    (a) =>
      guarded(() => {
        const out = outputBesideFiles('-o', a.o, a.files);
        const files = a.files.map((f) => resolve(f));
        // refused before anything is read when the merged file could not be written (V8's string limit)
        const tooLarge = mergeSizeProblem(files.map(sizeOf));
        if (tooLarge) throw new InputError(tooLarge);
        const results = files.map((f, i) => readInputFile(a.files[i]!));
        const twice = duplicateInputs(results, a.files);
        if (twice) throw new InputError(twice);
        const merged = mergeResults(results, files);
        const again = duplicateDevice(merged);
        if (again) throw new InputError(`merge: ${again}`);
        writeOutput(out, mergedJson(merged, files.length));
        say(`merged ${plural(files.length, 'file')}, ${plural(merged.devices.length, 'device')} into ${terminalSafe(a.o, false)}\n`);
      }),
  );
}

/** `report FILES... --html OUT`. */
function addReport(y: Argv): Argv {
  return y.command(
    'report <files..>',
    'one self-contained HTML page: devices x driver versions, verdicts, check statuses, GB/s charts',
    (z) => z.positional('files', RESULTS_FILES).option('html', HTML_PAGE),
    (a) =>
      guarded(() => {
        const out = outputBesideFiles('--html', a.html, a.files);
        const results: RunResult[] = a.files.map((f) => readInputFile(f));
        const twice = duplicateInputs(results, a.files);
        if (twice) throw new InputError(twice);
        // what the page repeats is capped (reporters/cap.ts): a 100 MB name does not make a 500 MB page
        writeOutput(out, htmlReport(results.map(capResult)));
        say(`report of ${plural(results.length, 'file')} written to ${terminalSafe(a.html, false)}\n`);
      }),
  );
}

/** `history add PATHS... --db FILE`. */
function addHistoryAdd(y: Argv): Argv {
  return y.command(
    'add <paths..>',
    'add results files, or folders of them (read recursively), to the store; a run already there is not added again',
    (z) =>
      z
        .positional('paths', { type: 'string', array: true, demandOption: true, describe: 'results files (JSON) or folders' })
        .option('db', requiredFile('the store (a DuckDB file; made when missing)')),
    (a) =>
      guarded(async () => {
        const { historyAdd } = await import('../history/commands.js');
        process.exitCode = await historyAdd({ db: a.db, paths: a.paths }, say, (t) => process.stderr.write(t));
      }),
  );
}

/** `history compare --db FILE --old SEL --new SEL`. */
function addHistoryCompare(y: Argv): Argv {
  return y.command(
    'compare',
    'compare two selections of the store (per host, its latest run of each), by the rules of compare; exit 1 on a regression',
    (z) =>
      z
        .option('db', requiredFile('the store'))
        .option('old', requiredFile('key=glob pairs: driver=, host=, device= (e.g. driver=13.0*)'))
        .option('new', requiredFile('key=glob pairs, as --old (e.g. driver=13.1*)'))
        .options(COMPARE_OPTIONS)
        .option('json', { type: 'boolean', default: false, describe: 'print the regressions and counts as JSON' }),
    (a) =>
      guarded(async () => {
        const rules = compareRules(a);
        const { historyCompare } = await import('../history/commands.js');
        process.exitCode = await historyCompare({ db: a.db, old: a.old, new: a.new, json: a.json, ...rules }, say);
      }),
  );
}

/** `history report --db FILE --html OUT`. */
function addHistoryReport(y: Argv): Argv {
  return y.command(
    'report',
    'one self-contained HTML page of the fleet: per driver version, devices by verdict, GB/s percentiles, check failures, the regressed devices',
    (z) => z.option('db', requiredFile('the store')).option('html', HTML_PAGE).options(COMPARE_OPTIONS),
    (a) =>
      guarded(async () => {
        const page = checkOutputs([{ option: '--html', value: a.html }], [
          { option: 'the store --db', value: a.db },
          { option: '--expectations', value: a.expectations },
        ])['--html']!;
        const rules = compareRules(a);
        const { historyReportCommand } = await import('../history/commands.js');
        await historyReportCommand({ db: a.db, html: a.html, ...rules }, (_file, text) => writeOutput(page, text), say);
      }),
  );
}

/** `history add|compare|report`. */
function addHistory(y: Argv): Argv {
  return y.command('history', 'the history store of a fleet (DuckDB): history add, history compare, history report', (z) =>
    [addHistoryAdd, addHistoryCompare, addHistoryReport].reduce((w, add) => add(w), z).demandCommand(1, 'history needs a command: add, compare or report'),
  );
}

// yargs wraps each line to the terminal: a paragraph is one line here
const EPILOGUE =
  `The gate (docs/gate.md): after the run one decision, told by every report, ending the output with one PASS/FAIL line. ${gateRulesText()} ` +
  'An expectations file, deqp-runner style:\n' +
  '  fail  hazard.tmpfs_bytes  driver=7.2.4*\n' +
  '  flake timing.margin       device="NVIDIA H200"\n\n' +
  'Check selection: --check GLOB runs only the checks whose id matches (with the checks they need: probe.verdict for probe.release and timing.*); ' +
  '--skip GLOB and --skips-file FILE (one glob a line, # comments) skip the checks that match and those that need them, each reported skip with its reason ' +
  '(skipped by --skip GLOB, skipped by FILE:LINE GLOB); a glob that matches no check is bad input (exit 2). ' +
  'A device whose probe.verdict is skipped is never Usable: its verdict is Inconclusive (not probed), which against a baseline where it was Usable is a regression. ' +
  'list --checks prints every check id with its title (--json: as JSON).\n\n' +
  `Environment: ${LIBRARY_VARIABLES.join(', ')}: the name or path of that backend's library, loaded instead of the default search. ` +
  'Progress is redrawn in place only on a terminal, and not when TERM=dumb or NO_COLOR is set; elsewhere one line per check, and a line every 10 s for a check still running. ' +
  'On a terminal the summary fits its width (COLUMNS, else the terminal\'s; a pipe gets every column) and is coloured (NO_COLOR: never; FORCE_COLOR: in a pipe too, 0 or false: never); ' +
  'the last line is always PASS, FAIL or INTERRUPTED.\n\n' +
  'Exit status: 0 the gate passed; 1 the gate failed (a failed check, a regression, a check the host could not run (status error: no ' +
  'scratch space, a process killed from outside), ...), or a report could not be written; 2 bad usage or bad input, including an output that cannot be written or that names an input, an input that is not a regular file, ' +
  'and any error of the history store (every output is checked before anything runs); 130, 143, 129 stopped by SIGINT, SIGTERM, SIGHUP (every device process stopped, scratch files removed, ' +
  'the JSON marked incomplete; further signals are ignored until the reports are written).\n\n' +
  'Scratch files: in --scratch-dir, and in /dev/shm for the tmpfs check, in .mapped-reg-<pid>-* folders held locked while ' +
  'their process lives; a run removes those whose lock is free (left by a killed process).';

await [addRunAndList, addCompare, addMerge, addReport, addHistory]
  .reduce((y, add) => add(y), yargs(commandLine(hideBin(process.argv))).scriptName('mapped-reg-conformance'))
  .usage('$0 [run|list|compare|merge|report|history] [options]\n\nCan each GPU copy straight from a registered file-backed host mapping, and is that faster than staging?')
  .strict()
  .fail((msg, err) => {
    // yargs' own complaints (an option without its value: YError) are bad usage too
    if (err && !(err instanceof UsageError) && err.name !== 'YError') throw err;
    fail(msg || err?.message || 'bad usage');
  })
  .epilogue(EPILOGUE)
  .version(pkg.version)
  .alias('version', 'V')
  .help()
  .alias('help', 'h')
  .parseAsync();
