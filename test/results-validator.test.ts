// The results schema's validator as the build compiles it (ajv's standalone code in dist/results/, which
// results/read.ts loads) against the schema compiled here by ajv with the same options: the same verdict and the
// same errors on every results file the project keeps, whole and spoiled. A validator built from an older schema,
// or with other options, fails here.
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Ajv as AjvClass } from 'ajv';
import { describe, expect, it } from 'vitest';
import { SCHEMA_OPTIONS, resultsValidator, schemaPath } from '../results/read.js';
import { ROOT } from './support/command.js';

const { Ajv } = createRequire(import.meta.url)('ajv') as { Ajv: typeof AjvClass };
const compiled = new Ajv({ ...SCHEMA_OPTIONS }).compile(JSON.parse(readFileSync(schemaPath(), 'utf8')) as object);
const built = resultsValidator();

/** The results files of the fixtures and of the GPU machines' records. */
const files = [join(ROOT, 'test', 'fixtures'), join(ROOT, 'docs', 'results')].flatMap((dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.json') && !f.includes('bench'))
    .map((f) => join(dir, f)),
);

/** Each file as it is, then spoiled: a required field gone, a field of the wrong type, a value outside its enum, an unknown field, several of those at once. */
function cases(file: string): [string, unknown][] {
  const whole = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown> & { devices?: Record<string, unknown>[] };
  const copy = (): typeof whole => structuredClone(whole);
  const noTool = copy();
  delete noTool.tool;
  const badVersion = copy();
  badVersion.schemaVersion = 'two';
  const badVerdict = copy();
  if (badVerdict.devices?.[0]) badVerdict.devices[0].verdict = { kind: 'Maybe' };
  const unknown = copy();
  unknown.surprise = true;
  const several = copy();
  delete several.tool;
  several.schemaVersion = 'two';
  several.surprise = true;
  return [
    ['whole', whole],
    ['no tool', noTool],
    ['schemaVersion a string', badVersion],
    ['a verdict of an unknown kind', badVerdict],
    ['an unknown field', unknown],
    ['several faults at once', several],
  ];
}

describe('the built validator is the schema compiled with the same options', () => {
  it('there are results files to judge', () => {
    expect(files.length).toBeGreaterThanOrEqual(5);
  });

  it.each(files.map((f) => [f.slice(ROOT.length + 1)]))('%s: the same verdict and errors, whole and spoiled', (rel) => {
    const all = cases(join(ROOT, rel));
    for (const [what, data] of all) {
      const want = compiled(data);
      expect(built(data), `${rel}, ${what}`).toBe(want);
      expect(built.errors ?? null, `${rel}, ${what}`).toEqual(compiled.errors ?? null);
    }
    // the whole file is a valid one: the spoiled ones are told from it
    expect(compiled(all[0]![1])).toBe(true);
  });
});
