// The committed results: every results JSON under docs/results/ and test/fixtures/ validates against the schema of
// its schemaVersion, with the command's own reader (results/read.ts); the bench's JSON (not a results file) has
// the bench's top-level shape; and docs/results/README.md, the index, names every file of docs/results/ and
// no file that is not there.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { READ_VERSIONS, parseResults, readResults } from '../results/read.js';
import { ROOT } from './support/command.js';

const RESULTS = join(ROOT, 'docs', 'results');
const FIXTURES = join(ROOT, 'test', 'fixtures');

/** Every file under `dir`, recursively, as paths relative to it. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** The reader of each schemaVersion this version of the command knows: it throws with the file's problems. */
const READERS: Record<number, (file: string) => Promise<unknown>> = Object.fromEntries(READ_VERSIONS.map((v) => [v, readResults]));

/** The top level of `npm run bench -- --json` (docs/bench.md, "The JSON"). */
const BENCH_KEYS = ['schemaVersion', 'tool', 'host', 'startedAt', 'finishedAt', 'options', 'targets', 'gpu', 'devices', 'conformance', 'nodeStart', 'runOverNodeStart', 'errors'];

describe('committed results files', () => {
  const json = [...files(RESULTS).map((f) => join(RESULTS, f)), ...files(FIXTURES).map((f) => join(FIXTURES, f))].filter((f) => f.endsWith('.json'));

  it('there are some: the H200 run, the two-H200 run, the HTML fixture and the double fixtures', () => {
    const names = json.map((f) => relative(ROOT, f));
    expect(names).toEqual(
      expect.arrayContaining([
        'docs/results/h200-cuda13.0-580.159.04.json',
        'docs/results/h200x2-cuda13.0-580.159.04.json',
        'docs/results/h200-bench.json',
        'test/fixtures/h200.json',
        'test/fixtures/cuda.json',
      ]),
    );
  });

  it.each(json.map((f) => [relative(ROOT, f), f]))('%s validates against the schema of its schemaVersion', async (_name, file) => {
    const data = JSON.parse(readFileSync(file, 'utf8')) as { schemaVersion?: unknown; tool?: { name?: unknown } };
    if (data.tool?.name === 'mapped-reg-conformance bench') {
      // the bench's own JSON: no schema file; its shape is the bench's and docs/bench.md's
      expect(data.schemaVersion).toBe(1);
      expect(Object.keys(data)).toEqual(BENCH_KEYS);
      return;
    }
    expect(typeof data.schemaVersion, 'a results file carries its schemaVersion').toBe('number');
    const read = READERS[data.schemaVersion as number];
    expect(read, `schemaVersion ${String(data.schemaVersion)}: no reader`).toBeDefined();
    await expect(read!(file)).resolves.toBeDefined();
  });

  it('a results file that lacks a required field is refused by the same reader (so these can fail)', () => {
    const broken = JSON.parse(readFileSync(join(RESULTS, 'h200-cuda13.0-580.159.04.json'), 'utf8')) as { devices: { scratch?: unknown }[] };
    delete broken.devices[0]!.scratch;
    expect(() => parseResults(JSON.stringify(broken), 'broken.json')).toThrow(/broken\.json: not a valid results file: \/devices\/0\/scratch is required/);
  });
});

describe('docs/results/README.md, the index', () => {
  const index = readFileSync(join(RESULTS, 'README.md'), 'utf8');
  const present = files(RESULTS).filter((f) => f !== 'README.md');

  it('names every file of docs/results/', () => {
    const unnamed = present.filter((f) => !index.includes(`\`${f}\``));
    expect(unnamed, 'files of docs/results/ the index does not name').toEqual([]);
  });

  it('lists in its tables only files that are there, each once', () => {
    // the first cell of each table row that names a file
    const listed = [...index.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!);
    expect(listed.length).toBeGreaterThan(0);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.filter((f) => !present.includes(f))).toEqual([]);
    expect([...listed].sort()).toEqual(present);
  });
});
