// Results files taken once and holding each device once; nothing raw from a file reaches the
// terminal; the reports cap what they repeat.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { markdownSummary } from '../reporters/markdown.js';
import type { RunResult } from '../results/types.js';
import { MAIN, ROOT, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-files-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const fixture = join(ROOT, 'test', 'fixtures', 'cuda.json');
const base = (): RunResult => JSON.parse(readFileSync(fixture, 'utf8')) as RunResult;

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv(), encoding: 'utf8', cwd: work });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function write(name: string, r: RunResult): string {
  const file = join(work, name);
  writeFileSync(file, JSON.stringify(r));
  return file;
}

describe('item 7: each run once, each device once', () => {
  it('merge a.json a.json is refused, naming the file (exit 2, nothing written)', () => {
    const out = join(work, 'twice.json');
    const r = cli(['merge', fixture, fixture, '-o', out]);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/cuda\.json is the same file as .*cuda\.json/)]);
    expect(() => statSync(out)).toThrow();
  });

  it('merge of a copy of the same run is refused too (same host and start time)', () => {
    const copy = join(work, 'copy.json');
    copyFileSync(fixture, copy);
    const r = cli(['merge', fixture, copy, '-o', join(work, 'copy-merged.json')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/copy\.json holds the same run as .*cuda\.json/);
  });

  it('a file listing a device twice is refused by compare in both directions, and by merge and report, naming the device', () => {
    const twice = base();
    twice.devices = [twice.devices[0]!, twice.devices[0]!];
    const file = write('device-twice.json', twice);
    for (const args of [
      ['compare', fixture, file],
      ['compare', file, fixture],
      ['merge', file, '-o', join(work, 'm.json')],
      ['report', file, '--html', join(work, 'm.html')],
    ]) {
      const r = cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/device-twice\.json: device cuda:0 \("Double CUDA Device", 0000:00:00\.0, host .*\) is listed twice/)]);
    }
  });
});

describe('item 7: nothing raw from a file reaches the terminal', () => {
  it('a device name and a message with escape sequences are shown with their control characters as \\xNN', () => {
    const evil = base();
    const d = evil.devices[0]!;
    d.name = 'GPU\x1b]0;owned\x07\x1b[2J\x9b31m';
    d.checks[0]!.status = 'fail';
    d.checks[0]!.observed = 'bad\x1b[31m red';
    const file = write('evil.json', evil);
    const r = cli(['compare', fixture, file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/\\x1b\]0;owned\\x07\\x1b\[2J\\x9b31m/);
    expect(r.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });
});

describe('item 7: the reports cap what they repeat', () => {
  it('a 2 MB device name and a 2 MB message make a page of a few hundred KB, showing how much was cut', () => {
    const big = base();
    const d = big.devices[0]!;
    d.name = `H200-${'x'.repeat(2_000_000)}`;
    d.checks[1]!.status = 'fail';
    d.checks[1]!.message = `m${'y'.repeat(2_000_000)}`;
    const file = write('big.json', big);
    const html = join(work, 'big.html');
    const r = cli(['report', file, '--html', html]);
    expect(r.code).toBe(0);
    const page = readFileSync(html, 'utf8');
    expect(page.length).toBeLessThan(300_000);
    expect(page).toContain(`…(${2_000_005 - 200} more characters)`);
  });

  it('the step summary caps names at 200 characters and messages at 2000', async () => {
    const { capResult } = await import('../reporters/cap.js');
    const big = base();
    const d = big.devices[0]!;
    d.name = 'n'.repeat(5000);
    d.checks[1]!.status = 'fail';
    d.checks[1]!.message = 'm'.repeat(50_000);
    const md = markdownSummary(capResult(big));
    expect(md.length).toBeLessThan(10_000);
    expect(md).toContain(`${'n'.repeat(200)}…(4800 more characters)`);
    expect(md).toContain(`${'m'.repeat(2000)}…(48000 more characters)`);
    // the results themselves keep everything
    expect(big.devices[0]!.name).toHaveLength(5000);
  });
});
