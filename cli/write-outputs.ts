// The outputs of a run (reporters/output-formats.ts: JSON, JUnit, the GitHub step summary, the metrics): their
// files checked before anything runs (cli/outputs.ts), then, once the gate has decided, each rendered from the
// same result (its `gate` included) and written.
import { nonFiniteFigure } from '../results/finite.js';
import { InputError, parseResults } from '../results/read.js';
import type { RunResult } from '../results/types.js';
import { capResult } from '../reporters/cap.js';
import { OUTPUT_FORMATS, type OutputName, type OutputOption } from '../reporters/output-formats.js';
import { checkOutputList, type InputRequest, type OutputTarget, writeEveryOutput } from './outputs.js';

/** The outputs of a run, checked: the targets of each format asked for (an option given twice names two files). */
export type OutputTargets = Partial<Record<OutputName, readonly OutputTarget[]>>;

/** How the command and its errors name a format's target: `--json`, `GITHUB_STEP_SUMMARY`. */
const labelOf = (f: (typeof OUTPUT_FORMATS)[number]): string => ('option' in f.source ? `--${f.source.option}` : f.source.variable);

/**
 * Checks the outputs asked for (`values`: the files each option named; the environment for a variable) against
 * the command's `inputs`, before anything runs (cli/outputs.ts says what is refused); `list` checks only what it
 * writes. The options are checked first, in the order given, then the environment's outputs.
 */
export function checkRunOutputs(values: Partial<Record<OutputOption, readonly string[] | undefined>>, listOnly: boolean, inputs: InputRequest[]): OutputTargets {
  const formats = OUTPUT_FORMATS.filter((f) => !listOnly || f.list);
  const ordered = [...formats.filter((f) => 'option' in f.source), ...formats.filter((f) => 'variable' in f.source)];
  const requests = ordered.flatMap((f) => {
    const named = 'option' in f.source ? (values[f.source.option] ?? []) : [process.env[f.source.variable] || undefined];
    return named.map((value) => ({ option: labelOf(f), value, append: f.append }));
  });
  const checked = checkOutputList(requests, inputs);
  return Object.fromEntries(OUTPUT_FORMATS.flatMap((f) => {
    const mine = checked.filter((t) => t.name === labelOf(f));
    return mine.length > 0 ? [[f.name, mine]] : [];
  }));
}

/**
 * Why the JSON results `text` of `result` could not be read back by the commands that read results (compare,
 * report, --baseline, history): a figure that is not a finite number, or anything else the schema refuses. A
 * fault of this tool or of the host, never of the driver. Undefined when it reads back.
 */
export function unreadableResults(result: RunResult, text: string): string | undefined {
  const figure = nonFiniteFigure(result);
  if (figure !== undefined) return `the results hold a figure that is not a finite number (${figure})`;
  try {
    parseResults(text, 'the results');
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    return `the results do not pass their own checks (${e.message.replace(/^the results: /, '')})`;
  }
  return undefined;
}

/**
 * Renders and writes every output asked for (`list` writes no step summary); each one is tried whatever happened
 * to the others. The JSON results are first read back as the commands that read them would (unreadableResults):
 * results that could not be are not written, told in one line as a fault of the tool or the host. Returns true
 * when any could not be written (each told on stderr in one line).
 */
export async function writeRunOutputs(result: RunResult, targets: OutputTargets, listOnly: boolean, stoppedBy?: string): Promise<boolean> {
  const t0 = performance.now();
  const asked = OUTPUT_FORMATS.filter((f) => targets[f.name] && (!listOnly || f.list));
  // what JUnit and the summary repeat is capped (reporters/cap.ts), the summary as a whole too; the JSON keeps everything
  const capped = asked.some((f) => f.capped) ? capResult(result) : result;
  const end = stoppedBy !== undefined ? { stoppedBy } : {};
  const texts = new Map<OutputName, string>();
  const render = async (f: (typeof asked)[number]): Promise<void> => {
    texts.set(f.name, await f.render(f.capped ? capped : result, end));
  };
  for (const f of asked.filter((f) => !f.holdsTimings)) await render(f);
  if (result.phasesMs) result.phasesMs.reports = performance.now() - t0; // building them; the writes follow
  for (const f of asked.filter((f) => f.holdsTimings)) await render(f);
  const json = texts.get('json');
  const unreadable = json !== undefined ? unreadableResults(result, json) : undefined;
  if (unreadable !== undefined) {
    process.stderr.write(`mapped-reg-conformance: --json: ${unreadable}: a fault of this tool or of the host, not of the driver; not written (no command could read it back): the run does not pass\n`);
  }
  const written = asked.filter((f) => !(f.name === 'json' && unreadable !== undefined));
  return writeEveryOutput(written.flatMap((f) => targets[f.name]!.map((target) => ({ target, text: texts.get(f.name)!, append: f.append })))) || unreadable !== undefined;
}
