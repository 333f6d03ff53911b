// The outputs of a run come from one list (reporters/output-formats.ts): the command's options are made from it,
// and writing a run's outputs renders and writes exactly what it lists, in its order, to the targets checked.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { RUN_OPTIONS } from '../cli/options.js';
import { checkRunOutputs, writeRunOutputs } from '../cli/write-outputs.js';
import { capSummary } from '../reporters/cap.js';
import { junitXml } from '../reporters/junit.js';
import { markdownSummary } from '../reporters/markdown.js';
import { metricsText } from '../reporters/metrics.js';
import { OUTPUT_FORMATS } from '../reporters/output-formats.js';
import { nonFiniteFigure } from '../results/finite.js';
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

describe('what the run writes, it can read back: the JSON results are checked before they are written', () => {
  /** writeRunOutputs of `result` to a JSON file (holding 'earlier' before) and a JUnit file: what it returned, wrote and said on stderr. */
  async function write(result: RunResult, name: string): Promise<{ failed: boolean; json: string; junit: string; stderr: string[] }> {
    const values = { json: join(work, `${name}.json`), junit: join(work, `${name}.xml`) };
    writeFileSync(values.json, 'earlier\n');
    const targets = checkRunOutputs({ json: [values.json], junit: [values.junit] }, false, []);
    const said: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      said.push(String(chunk));
      return true;
    });
    try {
      const failed = await writeRunOutputs(result, targets, false);
      return { failed, json: readFileSync(values.json, 'utf8'), junit: readFileSync(values.junit, 'utf8'), stderr: said };
    } finally {
      spy.mockRestore();
    }
  }

  it('a figure that is not finite (which JSON would write as null, and every command then refuse): not written, named in one line as the tool\'s or the host\'s fault; the other reports written; the run does not pass', async () => {
    const result = fixture();
    result.devices[0]!.timing!.registeredGBps = Number.POSITIVE_INFINITY;
    const r = await write(result, 'infinite');
    expect(r.failed).toBe(true);
    expect(r.json).toBe('earlier\n');
    expect(r.junit).toMatch(/<testsuite /);
    expect(r.stderr).toEqual([
      'mapped-reg-conformance: --json: the results hold a figure that is not a finite number (/devices/0/timing/registeredGBps = Infinity): a fault of this tool or of the host, not of the driver; not written (no command could read it back): the run does not pass\n',
    ]);
  });

  it('results the schema refuses: not written, with what the schema says', async () => {
    const result = fixture();
    (result.devices[0]!.verdict as { kind: string }).kind = 'Maybe';
    const r = await write(result, 'unschematic');
    expect(r.failed).toBe(true);
    expect(r.json).toBe('earlier\n');
    expect(r.stderr).toHaveLength(1);
    expect(r.stderr[0]).toMatch(/^mapped-reg-conformance: --json: the results do not pass their own checks \(not a valid results file: \/devices\/0\/verdict\/kind must be equal to one of the allowed values .*\): a fault of this tool or of the host, not of the driver; not written/);
  });

  it('results that read back are written as before', async () => {
    const result = fixture();
    const r = await write(result, 'fine');
    expect(r.failed).toBe(false);
    expect(r.stderr).toEqual([]);
    expect(r.json).toBe(`${JSON.stringify(result, null, 2)}\n`);
  });

  it('nonFiniteFigure: the first number that is not finite, as a JSON pointer; none in finite data', () => {
    expect(nonFiniteFigure({ a: [1, { b: Number.NaN }], c: Number.NEGATIVE_INFINITY })).toBe('/a/1/b = NaN');
    expect(nonFiniteFigure({ a: [1, 2.5, -3], s: 'Infinity', n: null, t: true })).toBeUndefined();
    expect(nonFiniteFigure(Number.POSITIVE_INFINITY)).toBe('/ = Infinity');
    expect(nonFiniteFigure(fixture())).toBeUndefined();
  });
});
