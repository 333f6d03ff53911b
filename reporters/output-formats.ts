// Every output a run writes, one format each, in one list: where the user names its file (a command-line option,
// whose --help text is here, or an environment variable), how it is written, and how it renders the RunResult (its
// gate included) to text. Each renderer reads the model alone, never the command line: the command checks the
// targets before anything runs and writes what the list renders (cli/write-outputs.ts), and its options are made
// from this list (cli/options.ts). A new format is a renderer and an entry here.
import type { RunResult } from '../results/types.js';
import { capSummary } from './cap.js';
import type { RunEnd } from './junit.js';
import { resultsJson } from './json.js';
import { markdownSummary } from './markdown.js';
import { metricsText } from './metrics.js';

/** One output format of a run. */
export interface OutputFormat {
  /** Its name: the key of its target. */
  name: string;
  /** The command-line option that names its file (`json`: --json FILE), with its --help text; or the environment variable that does. */
  source: { option: string; describe: string } | { variable: string };
  /** Appended to, as GitHub expects of its step summary; the others are replaced. */
  append: boolean;
  /** Written by `list` too (which decides nothing: the step summary is of a run). */
  list: boolean;
  /** Renders the capped result (reporters/cap.ts): what it repeats of names and messages is cut; the others have everything. */
  capped: boolean;
  /** Holds the run's timings, the building of the other outputs among them: rendered after those are built. */
  holdsTimings: boolean;
  render(result: RunResult, end: RunEnd): string | Promise<string>;
}

/** The outputs of a run, in the order they are written. */
export const OUTPUT_FORMATS = [
  {
    name: 'json',
    source: { option: 'json', describe: 'write the results as JSON to this file (- for standard output)' },
    append: false,
    list: true,
    capped: false,
    holdsTimings: true,
    render: resultsJson,
  },
  {
    name: 'junit',
    source: { option: 'junit', describe: 'write JUnit XML to this file (- for standard output): one testsuite per device, with its verdict' },
    append: false,
    list: true,
    capped: true,
    holdsTimings: false,
    // the XML writer is loaded only when JUnit is asked for
    render: async (result, end) => (await import('./junit.js')).junitXml(result, end),
  },
  {
    name: 'summary',
    source: { variable: 'GITHUB_STEP_SUMMARY' },
    append: true,
    list: false,
    capped: true,
    holdsTimings: false,
    render: (result) => capSummary(`${markdownSummary(result)}\n`),
  },
  {
    name: 'metrics',
    source: {
      option: 'metrics',
      describe:
        "write OpenMetrics text to this file for node_exporter's textfile collector (e.g. /var/lib/node_exporter/textfile/mapped-reg.prom): per device its verdict, GB/s and checks by status; the gate; the run's time",
    },
    append: false,
    list: true,
    capped: false,
    holdsTimings: false,
    render: metricsText,
  },
] as const satisfies readonly OutputFormat[];

/** The name of an output format: json, junit, summary, metrics. */
export type OutputName = (typeof OUTPUT_FORMATS)[number]['name'];

/** The formats whose file a command-line option names: json, junit, metrics. */
export type OutputOption = Extract<(typeof OUTPUT_FORMATS)[number]['source'], { option: string }>['option'];
