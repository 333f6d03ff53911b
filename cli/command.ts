// The command: `mapped-reg-conformance [run]`, `list`, `compare`, `merge`, `report` and `history`. Each command's
// options are turned into one checked, frozen object by cli/options.ts before anything runs; this file runs it.
// Loaded by cli/main.ts, once a run's spare runner is started.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { comparisonJson, compareResults, exitStatus, formatComparison } from '../results/compare.js';
import { decide, gateRulesText } from '../results/gate.js';
import { mergeResults, mergeSizeProblem } from '../results/merge.js';
import { InputError } from '../results/read.js';
import type { RunResult } from '../results/types.js';
import { capGate, capResult } from '../reporters/cap.js';
import { resultsJson } from '../reporters/json.js';
import { terminalSafe } from '../reporters/safe-text.js';
import { painter } from '../reporters/look.js';
import { gateSummary, interruptedLine, runSummary, totalsLine } from '../reporters/summary.js';
import { duplicateDevice, duplicateInputs, sameHostRunsHint } from '../results/duplicates.js';
import { checkOutputList, OutputError, writeOutput } from './outputs.js';
import {
  COMPARE_COMMAND_OPTIONS,
  COMPARE_POSITIONALS,
  compareCommandOptions,
  HISTORY_ADD_OPTIONS,
  HISTORY_COMPARE_OPTIONS,
  HISTORY_PATHS,
  HISTORY_REPORT_OPTIONS,
  historyAddOptions,
  historyCompareOptions,
  historyReportOptions,
  LIBRARY_VARIABLES,
  LIST_OPTIONS,
  type ListArgs,
  MERGE_OPTIONS,
  mergeCommandOptions,
  readInputFile,
  REPORT_OPTIONS,
  reportCommandOptions,
  RESULTS_FILES,
  RUN_OPTIONS,
  RUNTIMES_OPTIONS,
  listRuntimesOptions,
  runtimesCommandOptions,
  runCommandOptions,
  type RunArgs,
} from './options.js';
import { interruptAll } from './orchestrate.js';
import { DiscoveryError, run, UsageError } from './run.js';
import { installStopSignals, keepGoing, onStop, stoppedBy, stoppedStatus } from './signals.js';
import { colourWanted, guardStdout, listingOnly, progressRedraws, say, terminalWidth } from './stdout.js';
import { usageProblem } from './usage-hints.js';
import { writeRunOutputs } from './write-outputs.js';
import { packageJson } from '../results/package-root.js';
import { plural } from '../results/format.js';

const pkg = packageJson();

// A reader that closes early (`| head`), a full disk: the run goes on, its reports are written (cli/stdout.ts).
guardStdout();

const ARGS = hideBin(process.argv);

function fail(message: string): never {
  // one line, and nothing raw from a file or a driver reaches the terminal
  process.stderr.write(`mapped-reg-conformance: ${terminalSafe(message.split('\n')[0]!, false)}\n`);
  process.exit(2);
}

/** list --checks: every check id with its title (--json: as JSON, to standard output or to each file named). */
async function listChecks(json: readonly string[] | undefined): Promise<void> {
  const { checkCatalog } = await import('../suites/catalog.js');
  const catalog = await checkCatalog();
  if (json !== undefined) {
    const targets = checkOutputList(json.map((value) => ({ option: '--json', value })));
    const text = `${JSON.stringify({ checks: catalog }, null, 2)}\n`;
    for (const t of targets) writeOutput(t, text);
    return;
  }
  const width = Math.max(...catalog.map((c) => c.id.length));
  for (const c of catalog) say(`${c.id.padEnd(width)}  ${c.title}${c.needs.length ? ` (needs ${c.needs.join(', ')})` : ''}\n`);
}

/** list --runtimes: the user-space runtimes found (as runtimes --list); --backend narrows them. */
async function listRuntimes(a: Pick<ListArgs, 'backend' | 'runtimeRoot'>): Promise<void> {
  const o = listRuntimesOptions(a);
  const { runtimesCommand } = await import('./runtimes.js');
  await runtimesCommand(o, (l) => say(`${terminalSafe(l)}\n`), `${pkg.name} ${pkg.version}`);
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

/** A file's size in bytes (0 when it cannot be read: reading it says why). */
const sizeOf = (file: string): number => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

function execute(a: RunArgs | ListArgs, listOnly: boolean): Promise<void> {
  return guarded(async () => {
    // SIGINT, SIGTERM, SIGHUP: before anything runs they end the command at once; then they stop the run
    // a listing that its reader stops early (`| head -1`) just stops: there is no run to go on
    if (listOnly) listingOnly();
    if (listOnly && 'checks' in a && a.checks) return listChecks(a.json);
    if (listOnly && 'runtimes' in a && a.runtimes) return listRuntimes(a as ListArgs);
    if (!listOnly) installStopSignals();
    // every option checked, every output and input too, before anything runs (cli/options.ts)
    const o = await runCommandOptions(a, listOnly);
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
      const g = o.gate;
      result.gate = await decide(result, { ...(g.baseline ? { baseline: g.baseline } : {}), ...(g.moreBaselines ? { moreBaselines: g.moreBaselines } : {}), ...(g.expectations ? { expectations: g.expectations } : {}), requires: g.requires, maxDrop: g.maxDrop, rerun: outcome.rerun });
      stop();
    }
    // every report is tried; one that cannot be written is told in one line and the run does not pass
    const unwritten = await writeRunOutputs(result, o.outputs, listOnly, stoppedBy());
    // capped as the reports cap it (a baseline's device of a 100 kB name is not 100 kB of terminal)
    // the totals as the JUnit report counts them, then the gate's decision
    if (!listOnly) tell(['', ...totalsLine(result, { ...(stoppedBy() !== undefined ? { stoppedBy: stoppedBy() } : {}) }, look)]);
    if (result.gate) tell(['', ...gateSummary(capGate(result.gate), look)]);
    // a run's log always ends on its answer: PASS or FAIL (the gate's headline, above), or INTERRUPTED
    if (!listOnly && stoppedBy()) tell([...(result.gate ? [] : ['']), ...interruptedLine(result, stoppedBy(), look)]);
    process.exitCode = result.gate && !result.gate.pass ? 1 : unwritten ? 1 : 0;
    // a signal (during the run, or once the checks were over, while the reports were written): its status all the same
    if (stoppedBy()) process.exitCode = stoppedStatus();
  });
}

/**
 * The arguments; `list --checks --json` with no file name is `--json -` (standard output): every other option that
 * takes a value must be given one.
 */
function commandLine(args: string[]): string[] {
  if (args[0] !== 'list' || !args.includes('--checks')) return args.map(hideDash);
  return args.flatMap((arg, i) => (arg === '--json' && (i + 1 === args.length || args[i + 1]!.startsWith('--')) ? [arg, '-'] : [arg])).map(hideDash);
}

// yargs turns a positional `-` into '' or true, or drops it from a list (`compare - new.json`, `history add -`):
// each `-` is hidden from it and given back, as `-`, to every value before the commands see them
const DASH = '\u0000-';
const hideDash = (arg: string): string => (arg === '-' ? DASH : arg);
function showDash(a: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(a)) {
    if (v === DASH) a[k] = '-';
    else if (Array.isArray(v)) a[k] = v.map((x: unknown) => (x === DASH ? '-' : x));
  }
}

/** `run` (the default command) and `list`. */
function addRunAndList(y: Argv): Argv {
  return y
    .command(['run', '$0'], 'discover devices, decide static verdicts, run the conformance suites on every device', RUN_OPTIONS, (a) => execute(a, false))
    .command('list', 'devices and their static verdicts; registers and copies nothing (--checks: every check id with its title)', LIST_OPTIONS, (a) => execute(a, true));
}

/** `compare OLD NEW`. */
function addCompare(y: Argv): Argv {
  return y.command(
    'compare <old> <new>',
    'regressions, fixes, unchanged, new and missing checks, per device (matched by PCI bus id and name); exit 1 on a regression',
    (z) => z.positional('old', COMPARE_POSITIONALS.old).positional('new', COMPARE_POSITIONALS.new).options(COMPARE_COMMAND_OPTIONS),
    (a) =>
      guarded(async () => {
        const o = await compareCommandOptions(a);
        const moreBaselines: RunResult[] = [];
        for (const f of o.alsoOld) moreBaselines.push(await readInputFile(f));
        const c = compareResults(await readInputFile(o.old), await readInputFile(o.new), { ...o.rules, ...(moreBaselines.length ? { moreBaselines } : {}) });
        say(o.json ? `${comparisonJson(c)}\n` : `${terminalSafe(formatComparison(c, { old: o.old, new: o.new }))}\n`);
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
    (z) => z.positional('files', RESULTS_FILES).options(MERGE_OPTIONS),
    (a) =>
      guarded(async () => {
        const o = mergeCommandOptions(a);
        const files = o.files.map((f) => (f === '-' ? f : resolve(f)));
        // refused before anything is read when the merged file could not be written (V8's string limit)
        const tooLarge = mergeSizeProblem(files.map(sizeOf));
        if (tooLarge) throw new InputError(tooLarge);
        const results: RunResult[] = [];
        for (const f of o.files) results.push(await readInputFile(f));
        const twice = duplicateInputs(results, [...o.files]);
        if (twice) throw new InputError(twice);
        const merged = mergeResults(results, files);
        const again = duplicateDevice(merged);
        const instead = again ? sameHostRunsHint(results, [...o.files]) : undefined;
        if (again) throw new InputError(`merge: ${again}${instead ? `: ${instead}` : ''}`);
        writeOutput(o.target, mergedJson(merged, files.length));
        say(`merged ${plural(files.length, 'file')}, ${plural(merged.devices.length, 'device')} into ${terminalSafe(o.output, false)}\n`);
      }),
  );
}

/** `report FILES... --html OUT`. */
function addReport(y: Argv): Argv {
  return y.command(
    'report <files..>',
    'one self-contained HTML page: devices x driver versions, verdicts, check statuses, GB/s charts',
    (z) => z.positional('files', RESULTS_FILES).options(REPORT_OPTIONS),
    (a) =>
      guarded(async () => {
        const o = reportCommandOptions(a);
        const results: RunResult[] = [];
        for (const f of o.files) results.push(await readInputFile(f));
        const twice = duplicateInputs(results, [...o.files]);
        if (twice) throw new InputError(twice);
        // what the page repeats is capped (reporters/cap.ts): a 100 MB name does not make a 500 MB page. The page's
        // module is loaded here only: it costs every other command some 25 ms of its start
        const { htmlReport } = await import('../reporters/results-page.js');
        writeOutput(o.target, htmlReport(results.map(capResult)));
        say(`report of ${plural(results.length, 'file')} written to ${terminalSafe(o.html, false)}\n`);
      }),
  );
}

/** `runtimes`: the user-space runtimes side by side (docs/runtimes.md). */
function addRuntimes(y: Argv): Argv {
  return y.command(
    'runtimes',
    "the user-space runtimes installed side by side (the system's, /opt/rocm*, /usr/local/cuda*/compat, --runtime): each runs the suite in processes of its own, then one matrix of runtime x device; each candidate gated against the baseline runtime; exit 1 when one regressed",
    RUNTIMES_OPTIONS,
    (a) =>
      guarded(async () => {
        installStopSignals();
        const o = await runtimesCommandOptions(a);
        keepGoing();
        const { runtimesCommand } = await import('./runtimes.js');
        process.exitCode = await runtimesCommand(o, (l) => say(`${terminalSafe(l)}\n`), `${pkg.name} ${pkg.version}`);
      }),
  );
}

/** `history add PATHS... --db FILE`. */
function addHistoryAdd(y: Argv): Argv {
  return y.command(
    'add <paths..>',
    'add results files, or folders of them (read recursively), to the store; a run already there is not added again',
    (z) => z.positional('paths', HISTORY_PATHS).options(HISTORY_ADD_OPTIONS),
    (a) =>
      guarded(async () => {
        const o = historyAddOptions(a);
        const { historyAdd } = await import('../history/commands.js');
        process.exitCode = await historyAdd(o, say, (t) => process.stderr.write(t));
      }),
  );
}

/** `history compare --db FILE --old SEL --new SEL`. */
function addHistoryCompare(y: Argv): Argv {
  return y.command(
    'compare',
    'compare two selections of the store (per host, its latest run of each; the figures judged on each device\'s last runs of its driver, --last-runs a side, with their noise), by the rules of compare; exit 1 on a regression',
    (z) => z.options(HISTORY_COMPARE_OPTIONS),
    (a) =>
      guarded(async () => {
        const o = await historyCompareOptions(a);
        const { historyCompare } = await import('../history/commands.js');
        process.exitCode = await historyCompare(o, say);
      }),
  );
}

/** `history report --db FILE --html OUT`. */
function addHistoryReport(y: Argv): Argv {
  return y.command(
    'report',
    'one self-contained HTML page of the fleet: per driver version, devices by verdict, GB/s percentiles, check failures, the regressed devices',
    (z) => z.options(HISTORY_REPORT_OPTIONS),
    (a) =>
      guarded(async () => {
        const o = await historyReportOptions(a);
        const { historyReportCommand } = await import('../history/commands.js');
        await historyReportCommand(o, (_file, text) => writeOutput(o.target, text), say);
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
  'Values: a number in decimal, with % where it is a fraction (--max-drop 10%, --min-relative-speed 80%); empty, blank, hex, exponents, ' +
  'infinite and out-of-range values are refused. --json, --junit and --metrics may be repeated: each file named is written; ' +
  'any other option of one value is given once.\n\n' +
  'Exit status: 0 the gate passed; 1 the gate failed (a failed check, a regression, a check the host could not run (status error: no ' +
  'scratch space, a process killed from outside), ...), or a report could not be written; 2 bad usage or bad input, including an output that cannot be written or that names an input, an input that is neither a file nor a pipe (- is standard input; a named pipe with no writer is refused after 3 s), ' +
  'and any error of the history store (every output is checked before anything runs); 130, 143, 129 stopped by SIGINT, SIGTERM, SIGHUP (every device process stopped, scratch files removed, ' +
  'the JSON marked incomplete; further signals are ignored until the reports are written). ' +
  'runtimes: 0 every candidate runtime is at least as good as its baseline, 1 one regressed (or did not load or start), 2 bad input (docs/runtimes.md).\n\n' +
  'Scratch files: in --scratch-dir, and in /dev/shm for the tmpfs check, in .mapped-reg-<pid>-* folders held locked while ' +
  'their process lives; a run removes those whose lock is free (left by a killed process).';

await [addRunAndList, addCompare, addMerge, addReport, addRuntimes, addHistory]
  .reduce((y, add) => add(y), yargs(commandLine(ARGS)).middleware(showDash, true).scriptName('mapped-reg-conformance'))
  .usage('$0 [run|list|compare|merge|report|runtimes|history] [options]\n\nCan each GPU copy straight from a registered file-backed host mapping, and is that faster than staging?')
  .strict()
  .fail((msg, err) => {
    // yargs' own complaints (an option without its value, an unknown one: YError; a value refused while it is read)
    // are bad usage too: one line, in words, naming the command's usage and --help
    if (err && !(err instanceof UsageError) && err.name !== 'YError') throw err;
    fail(usageProblem(msg || err?.message || 'bad usage', ARGS));
  })
  .epilogue(EPILOGUE)
  .version(pkg.version)
  .alias('version', 'V')
  .help()
  .alias('help', 'h')
  .parseAsync();
