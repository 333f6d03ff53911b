// What a clone holds on its own: no file names a path outside the repository (the team's checkouts sit beside
// folders a clone does not have), and the licence package.json names is there.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from './support/command.js';

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
