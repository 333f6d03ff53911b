// The outputs of a run come from one list (reporters/output-formats.ts): the command's options are made from it,
// and writing a run's outputs renders and writes exactly what it lists, in its order, to the targets checked.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RUN_OPTIONS } from '../cli/options.js';
import { checkRunOutputs, writeRunOutputs } from '../cli/write-outputs.js';
import { capSummary } from '../reporters/cap.js';
import { junitXml } from '../reporters/junit.js';
import { markdownSummary } from '../reporters/markdown.js';
import { metricsText } from '../reporters/metrics.js';
import { OUTPUT_FORMATS } from '../reporters/output-formats.js';
import type { RunResult } from '../results/types.js';
import { ROOT } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-output-formats-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const fixture = (): RunResult => JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'cuda.json'), 'utf8')) as RunResult;

describe('the list of output formats', () => {
  it('holds JSON, JUnit, the step summary and the metrics, in the order they are written', () => {
    expect(OUTPUT_FORMATS.map((f) => f.name)).toEqual(['json', 'junit', 'summary', 'metrics']);
  });

  it('makes the options of run: each with its text, in the list order, between --skips-file and --baseline', () => {
    const keys = Object.keys(RUN_OPTIONS);
    const options = OUTPUT_FORMATS.flatMap((f) => ('option' in f.source ? [f.source] : []));
    expect(options.map((o) => o.option)).toEqual(['json', 'junit', 'metrics']);
    expect(keys.slice(keys.indexOf('skips-file') + 1, keys.indexOf('baseline'))).toEqual(['json', 'junit', 'metrics']);
    for (const o of options) {
      expect(RUN_OPTIONS[o.option as 'json']).toMatchObject({ type: 'string', requiresArg: true, describe: `${o.describe}; repeatable: each file named is written` });
      // given twice, each file named is kept (and written), not dropped
      expect(RUN_OPTIONS[o.option as 'json'].coerce(['a', 'b'])).toEqual(['a', 'b']);
      expect(RUN_OPTIONS[o.option as 'json'].coerce('a')).toEqual(['a']);
    }
  });
});

describe('writing the outputs of a run', () => {
  it('writes each format its renderer, the JSON whole, JUnit and the summary from the capped result, the summary appended', async () => {
    const summary = join(work, 'summary.md');
    writeFileSync(summary, '# earlier step\n');
    const previous = process.env.GITHUB_STEP_SUMMARY;
    process.env.GITHUB_STEP_SUMMARY = summary;
    try {
      const values = { json: join(work, 'r.json'), junit: join(work, 'r.xml'), metrics: join(work, 'r.prom') };
      const targets = checkRunOutputs({ json: [values.json], junit: [values.junit], metrics: [values.metrics] }, false, []);
      expect(Object.keys(targets)).toEqual(['json', 'junit', 'summary', 'metrics']);
      const result = fixture();
      result.phasesMs = { discovery: 1, checks: 2, reports: -1 };
      expect(await writeRunOutputs(result, targets, false, 'SIGTERM')).toBe(false);
      // the JSON holds how long the others took to build
      expect(result.phasesMs.reports).toBeGreaterThanOrEqual(0);
      expect(readFileSync(values.json, 'utf8')).toBe(`${JSON.stringify(result, null, 2)}\n`);
      expect(readFileSync(values.junit, 'utf8')).toBe(junitXml(result, { stoppedBy: 'SIGTERM' }));
      expect(readFileSync(values.metrics, 'utf8')).toBe(metricsText(result));
      expect(readFileSync(summary, 'utf8')).toBe(`# earlier step\n${capSummary(`${markdownSummary(result)}\n`)}`);
    } finally {
      if (previous === undefined) delete process.env.GITHUB_STEP_SUMMARY;
      else process.env.GITHUB_STEP_SUMMARY = previous;
    }
  });

  it('list checks and writes no step summary, only the formats it writes', async () => {
    const previous = process.env.GITHUB_STEP_SUMMARY;
    process.env.GITHUB_STEP_SUMMARY = join(work, 'list-summary.md');
    try {
      const targets = checkRunOutputs({ json: [join(work, 'list.json')] }, true, []);
      expect(Object.keys(targets)).toEqual(['json']);
      expect(await writeRunOutputs(fixture(), targets, true)).toBe(false);
      expect(() => readFileSync(join(work, 'list-summary.md'))).toThrow();
    } finally {
      if (previous === undefined) delete process.env.GITHUB_STEP_SUMMARY;
      else process.env.GITHUB_STEP_SUMMARY = previous;
    }
  });
});
