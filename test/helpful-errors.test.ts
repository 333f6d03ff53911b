// Errors and counts that say what to do: merge of two runs of one host points to report and history; history
// compare names what it counts as missing (capped). (The package's own scratch folder that cannot be written
// names --scratch-dir: test/scratch-options.test.ts.)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../results/types.js';
import { MAIN, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-helpful-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(), encoding: 'utf8', cwd: work });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const fixture = join(import.meta.dirname, 'fixtures', 'cuda.json');
const base = (): RunResult => JSON.parse(readFileSync(fixture, 'utf8')) as RunResult;
/** A later run of the fixture's host: another start time, the driver `version`, its first `keep` checks. */
function later(name: string, version: string, keep?: number): string {
  const r = base();
  r.startedAt = '2026-12-02T00:00:00.000Z';
  r.finishedAt = '2026-12-02T00:01:00.000Z';
  const d = r.devices[0]!;
  d.driver = { ...d.driver, version };
  if (keep !== undefined) d.checks = d.checks.slice(0, keep);
  const file = join(work, name);
  writeFileSync(file, JSON.stringify(r));
  return file;
}

describe('merge of two runs of one host', () => {
  it('is refused in one line that names both files and points to report and history', () => {
    const second = later('second-run.json', base().devices[0]!.driver.version);
    const r = cli(['merge', fixture, second, '-o', join(work, 'merged.json')]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/is listed twice/);
    expect(lines[0]).toContain(`${fixture} and ${second} are two runs of host "fixture-host"`);
    expect(lines[0]).toContain(`use report ${fixture} ${second} --html OUT.html, or history add --db FILE ${fixture} ${second} (then history compare, history report)`);
  });
});

describe('history compare names what it counts as missing', () => {
  const checks = base().devices[0]!.checks.map((c) => c.id);

  it('each missing check of a device, after the device', () => {
    const db = join(work, 'four.db');
    expect(cli(['history', 'add', '--db', db, fixture, later('four-fewer.json', '99.0', checks.length - 4)]).code).toBe(0);
    const r = cli(['history', 'compare', '--db', db, '--old', 'driver=13*', '--new', 'driver=99*']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/, 4 missing, /);
    expect(r.stdout).toContain(`\nmissing (OLD had them, NEW has not): fixture-host cuda:0 Double CUDA Device (0000:00:00.0): ${checks.slice(-4).join(', ')}\n`);
  });

  it('at most 20 named, the rest counted', () => {
    // OLD: the fixture with 25 more checks; NEW: the fixture
    const old = base();
    const extra = Array.from({ length: 25 }, (_, i) => `extra.check_${String(i).padStart(2, '0')}`);
    old.devices[0]!.checks.push(...extra.map((id) => ({ ...old.devices[0]!.checks[0]!, id })));
    const oldFile = join(work, 'more-checks.json');
    writeFileSync(oldFile, JSON.stringify(old));
    const db = join(work, 'many.db');
    expect(cli(['history', 'add', '--db', db, oldFile, later('fixture-again.json', '99.0')]).code).toBe(0);
    const r = cli(['history', 'compare', '--db', db, '--old', 'driver=13*', '--new', 'driver=99*']);
    expect(r.stdout).toMatch(/, 25 missing, /);
    const line = r.stdout.split('\n').find((l) => l.startsWith('missing ('))!;
    expect(line).toBe(`missing (OLD had them, NEW has not): fixture-host cuda:0 Double CUDA Device (0000:00:00.0): ${extra.slice(0, 20).join(', ')}; and 5 more`);
  });

  it('nothing missing: no such line', () => {
    const db = join(work, 'none.db');
    expect(cli(['history', 'add', '--db', db, fixture, later('all.json', '99.0')]).code).toBe(0);
    const r = cli(['history', 'compare', '--db', db, '--old', 'driver=13*', '--new', 'driver=99*']);
    expect(r.stdout).toMatch(/, 0 missing, /);
    expect(r.stdout).not.toMatch(/^missing/m);
  });
});
