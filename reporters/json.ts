// The results as JSON (--json, merge -o): the whole RunResult, uncapped, two-space indented, ending with a line feed.
import type { RunResult } from '../results/types.js';

/** `result` as the JSON results file holds it. */
export const resultsJson = (result: RunResult): string => `${JSON.stringify(result, null, 2)}\n`;
