// The reports a run writes once the gate has decided: JSON, JUnit, the GitHub step summary and the metrics, each from the
// same result (its `gate` included), to the targets checked before the run (cli/outputs.ts).
import type { RunResult } from '../results/types.js';
import { capResult, capSummary } from '../reporters/cap.js';
import { markdownSummary } from '../reporters/markdown.js';
import { metricsText } from '../reporters/metrics.js';
import { type OutputTargets, writeReports } from './outputs.js';

/**
 * Builds and writes every report asked for (`list` writes no step summary); each one is tried whatever happened
 * to the others. Returns true when any could not be written (each told on stderr in one line).
 */
export async function writeRunReports(result: RunResult, targets: OutputTargets, listOnly: boolean, stoppedBy?: string): Promise<boolean> {
  const t0 = performance.now();
  // what JUnit and the summary repeat is capped (reporters/cap.ts), the summary as a whole too; the JSON keeps everything
  const capped = targets.junit || targets.summary ? capResult(result) : result;
  // junit-report-builder is loaded only for --junit
  const junit = targets.junit ? (await import('../reporters/junit.js')).junitXml(capped, stoppedBy !== undefined ? { stoppedBy } : {}) : undefined;
  const summary = targets.summary && !listOnly ? capSummary(`${markdownSummary(capped)}\n`) : undefined;
  if (result.phasesMs) result.phasesMs.reports = performance.now() - t0; // building them; the writes follow
  const metrics = targets.metrics ? metricsText(result) : undefined;
  return writeReports(targets, { json: targets.json ? `${JSON.stringify(result, null, 2)}\n` : undefined, junit, summary, metrics });
}
