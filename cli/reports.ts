// The reports a run writes once the gate has decided: JSON, JUnit and the GitHub step summary, each from the
// same result (its `gate` included).
import { appendFileSync } from 'node:fs';
import type { RunResult } from '../results/types.js';
import { markdownSummary } from '../reporters/markdown.js';
import { writeAtomically } from './outputs.js';

export interface ReportTargets {
  json?: string;
  junit?: string;
  /** $GITHUB_STEP_SUMMARY: appended to. */
  stepSummary?: string;
}

/** Builds and writes every report asked for; returns the milliseconds spent building them (the writes follow). */
export async function writeReports(result: RunResult, to: ReportTargets): Promise<number> {
  const t0 = performance.now();
  // junit-report-builder is loaded only for --junit
  const junit = to.junit ? (await import('../reporters/junit.js')).junitXml(result) : undefined;
  const markdown = to.stepSummary ? markdownSummary(result) : undefined;
  const built = performance.now() - t0;
  if (result.phasesMs) result.phasesMs.reports = built;
  if (to.json) writeAtomically(to.json, `${JSON.stringify(result, null, 2)}\n`);
  if (to.junit && junit !== undefined) writeAtomically(to.junit, junit);
  if (to.stepSummary && markdown !== undefined) appendFileSync(to.stepSummary, `${markdown}\n`);
  return built;
}
