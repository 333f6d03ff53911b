// The package as a user gets it: `npm pack`, then `npx --yes ./mapped-reg-conformance-*.tgz` in an empty folder
// on a machine with no GPU (dependencies come from the npm registry).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ROOT, cleanEnv } from './support/command.js';

const root = ROOT;
const work = mkdtempSync(join(tmpdir(), 'mapped-reg-pack-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

it('npx runs the packed tarball in an empty folder, with no GPU', () => {
  const packs = join(work, 'packs');
  mkdirSync(packs);
  execFileSync('npm', ['pack', '--pack-destination', packs], { cwd: root, stdio: 'ignore' });
  const [tgz] = readdirSync(packs);
  expect(tgz).toMatch(/^mapped-reg-conformance-.*\.tgz$/);
  const empty = join(work, 'empty');
  mkdirSync(empty);
  copyFileSync(join(packs, tgz!), join(empty, tgz!));
  const r = spawnSync('npx', ['--yes', `./${tgz}`, '--size', '8', '--json', 'r.json'], { cwd: empty, env: cleanEnv(), encoding: 'utf8' });
  expect(r.stderr).not.toMatch(/ERR!|npm error/);
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(/no GPU driver was found/);
  expect(r.stdout).toMatch(/^cpu .*Not_needed/m);
  expect(r.stdout).toMatch(/cpu static\.verdict pass/);
  expect(readdirSync(empty).sort()).toEqual(['r.json', tgz!].sort());
}, 300_000);
