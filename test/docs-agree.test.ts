// What the documents say of the package agrees with what exists and with the code: no document promises a
// package on the npm registry before one is published (the way to install is the packed tarball or a clone,
// docs/ci.md "Installing"); docs/fleet.md says how merge takes files of two schema versions as merge does;
// docs/development.md names the action's inputs as action.yml does.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { mergeResults } from '../results/merge.js';
import type { RunResult } from '../results/types.js';
import { ROOT } from './support/command.js';

const docs = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'mutations.md').map((f) => `docs/${f}`)];
const read = (f: string): string => readFileSync(join(ROOT, f), 'utf8');
/** Paragraphs (blank-line separated), each on one line, with the file that holds them. */
const paragraphs = docs.flatMap((f) => read(f).split(/\n\s*\n/).map((p) => ({ file: f, text: p.replace(/\s+/g, ' ') })));

/** Commands that fetch the package by name from the npm registry (a tarball's path, ./x.tgz, is not a name). */
const REGISTRY_INSTALL = [
  /\bnpm (?:i|install)(?: (?:-g|--global))* mapped-reg-conformance\b/,
  /\bnpx (?:--yes )?mapped-reg-conformance@/,
  /\bnpx (?:--yes )?(?:-p|--package)[ =]mapped-reg-conformance\b/,
];
/** A paragraph that says the package is not published yet, or what to do once it is. */
const SAYS_UNPUBLISHED = /not on the npm registry yet|[Oo]nce (?:a version|the package) is published|until a release is published/;

describe('no document promises a published package', () => {
  it('every command that installs it from the registry is in a paragraph that says it is not published yet', () => {
    const promised = paragraphs.filter((p) => REGISTRY_INSTALL.some((re) => re.test(p.text)) && !SAYS_UNPUBLISHED.test(p.text));
    expect(promised.map((p) => `${p.file}: ${p.text.slice(0, 160)}`)).toEqual([]);
  });

  it('the Slurm and matrix recipes of docs/fleet.md say how to install it until then (the packed tarball)', () => {
    const fleet = read('docs/fleet.md').replace(/\s+/g, ' ');
    expect(fleet).toMatch(/npm install \.\/mapped-reg-conformance-0\.1\.0\.tgz`? in the project folder/);
    expect(fleet).toMatch(/"mapped-reg-conformance": "file:vendor\/mapped-reg-conformance-0\.1\.0\.tgz"/);
  });
});

describe('docs/fleet.md on merging schema versions agrees with merge', () => {
  it('files of 1 and 2 are merged into 2, as the code does, and the page says so', () => {
    const fixture = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'cuda.json'), 'utf8')) as RunResult;
    const two = { ...structuredClone(fixture), schemaVersion: 2, host: { ...fixture.host, hostname: 'other' } } as RunResult;
    expect(fixture.schemaVersion).toBe(1);
    expect(mergeResults([fixture, two]).schemaVersion).toBe(2);
    const fleet = read('docs/fleet.md').replace(/\s+/g, ' ');
    expect(fleet).not.toMatch(/different schema versions are not merged/);
    expect(fleet).toMatch(/files of schema versions 1 and 2 are merged into a file of version 2/);
  });
});

describe("docs/development.md names the action's inputs as action.yml does", () => {
  it('each `x` input of `action.yml` it names is an input', () => {
    const inputs = Object.keys((parse(read('action.yml')) as { inputs: Record<string, unknown> }).inputs);
    const named = [...read('docs/development.md').matchAll(/`(\w+)` input of `action\.yml`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((n) => !inputs.includes(n))).toEqual([]);
  });
});
