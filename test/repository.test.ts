// What a clone holds on its own: no file names a path outside the repository (the team's checkouts sit beside
// folders a clone does not have), the licence package.json names is there, the packed files hold every file the
// README links to, and a tag publishes the package with provenance.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT, cleanEnv } from './support/command.js';

// Built from pieces so that this file does not name them itself.
const OUTSIDE = ['\\.\\./' + 'shared', 'shared/' + '(facts|spec|device|hooks)/', 'GUIDE' + '\\.md'];

it('no tracked file names a path outside the repository (package-lock.json aside)', () => {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter((f) => f && f !== 'package-lock.json');
  expect(files.length).toBeGreaterThan(50);
  const hits: string[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(join(ROOT, f), 'utf8');
    } catch {
      continue; // a tracked file deleted in the working tree
    }
    text.split('\n').forEach((line, i) => {
      if (OUTSIDE.some((p) => new RegExp(p).test(line))) hits.push(`${f}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(hits).toEqual([]);
});

it('the LICENSE file is the licence package.json names', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { license: string };
  const text = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
  expect(pkg.license).toBe('MIT');
  expect(text).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} the mapped-reg-conformance authors\n/);
  expect(text).toMatch(/THE SOFTWARE IS PROVIDED "AS IS"/);
});

it('the package holds every file of the repository the README links to (the links work in the installed package)', () => {
  const env = cleanEnv();
  for (const k of Object.keys(env)) if (k.startsWith('npm_')) delete env[k];
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', env })) as [{ files: { path: string }[] }];
  const files = new Set(packed.files.map((f) => f.path));
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
  const named = [...readme.matchAll(/`(docs\/[\w./-]+\.md)`/g)].map((m) => m[1]!);
  expect(links.length + named.length).toBeGreaterThan(3);
  for (const l of [...links, ...named]) expect(files, l).toContain(l.replace(/^\.\//, ''));
  for (const f of ['LICENSE', 'README.md', 'dist/cli/main.js', 'docs/verdicts.md', 'docs/facts-h200.md']) expect(files, f).toContain(f);
});

it('the release workflow publishes on a version tag, after the tests, with provenance', () => {
  const wf = parse(readFileSync(join(ROOT, '.github', 'workflows', 'release.yml'), 'utf8')) as {
    on: { push: { tags: string[] } } & Record<string, unknown>;
    permissions: Record<string, string>;
    jobs: Record<string, { needs?: string; permissions?: Record<string, string>; steps: { run?: string; uses?: string; with?: Record<string, unknown> }[] }>;
  };
  expect(Object.keys(wf.on)).toEqual(['push']);
  expect(Object.keys(wf.on.push)).toEqual(['tags']);
  expect(wf.permissions).toEqual({ contents: 'read' });
  const runs = (job: string): string[] => wf.jobs[job]!.steps.flatMap((s) => (s.run ? [s.run] : []));
  expect(runs('test').join('\n')).toMatch(/bash \.ci\/run/);
  expect(runs('test').join('\n')).toMatch(/GITHUB_REF_NAME" = "v\$\(node -p 'require\("\.\/package\.json"\)\.version'\)"/);
  const publish = wf.jobs.publish!;
  expect(publish.needs).toBe('test');
  expect(publish.permissions).toEqual({ contents: 'read', 'id-token': 'write' });
  expect(runs('publish').at(-1)).toBe('npm publish --provenance --access public');
  expect(runs('publish').join('\n')).toMatch(/npm pkg set repository\.type=git "repository\.url=git\+\$GITHUB_SERVER_URL\/\$GITHUB_REPOSITORY\.git"/);
  expect(publish.steps.find((s) => s.uses?.startsWith('actions/setup-node@'))!.with!['registry-url']).toBe('https://registry.npmjs.org');
});
