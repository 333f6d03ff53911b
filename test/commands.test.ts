// compare, merge, report and run --baseline, as a user runs them (the built command), on fixtures made by real
// runs against the driver double (test/fixtures, scripts/make-fixtures.mjs).
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROCM724_FAILS } from './support/profiles.js';
import { MAIN, ROOT } from './support/command.js';
import { readResults } from '../results/read.js';
import { type Ran, runScript, workspace } from './support/workspace.js';

const root = ROOT;
const main = MAIN;
const fixtures = join(root, 'test', 'fixtures');
const { work, doubles } = workspace('mapped-reg-commands-');

function cli(args: string[], env: Record<string, string> = {}): Ran {
  return runScript(main, args, work, env);
}
const fx = (name: string): string => join(fixtures, `${name}.json`);
const FIVE = ROCM724_FAILS;

describe('compare', () => {
  it('ROCm 7.2.4 -> fixed: exactly the five checks, as fixes, exit 0; the reverse: regressions, exit 1', () => {
    const fwd = cli(['compare', fx('rocm724'), fx('rocm-fixed')]);
    expect(fwd.code).toBe(0);
    for (const id of FIVE) expect(fwd.stdout).toMatch(new RegExp(`fix\\s+${id.replace('.', '\\.')}\\s+fail -> pass`));
    expect(fwd.stdout).toMatch(/0 regressions, 5 fixes/);
    expect(fwd.stdout).toMatch(/HIP 7\.2\.4000 -> 7\.2\.5000/);
    const back = cli(['compare', fx('rocm-fixed'), fx('rocm724')]);
    expect(back.code).toBe(1);
    expect(back.stdout).toMatch(/5 regressions, 0 fixes/);
    const json = JSON.parse(cli(['compare', '--json', fx('rocm-fixed'), fx('rocm724')]).stdout) as { devices: { changes: { kind: string; check: string }[] }[] };
    const regressions = json.devices.flatMap((d) => d.changes.filter((c) => c.kind === 'regression').map((c) => c.check));
    expect(regressions.sort()).toEqual([...FIVE].sort());
  });

  it('a verdict that falls from Usable to Refused Wrong_bytes is a regression named as such', () => {
    const r = cli(['compare', fx('cuda'), fx('cuda-wrong-bytes')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/REGRESSION\s+verdict\s+Usable -> Refused \(Wrong_bytes\)/);
  });

  it('known failures in an expectations file are not regressions', () => {
    const exp = join(work, 'expected.txt');
    writeFileSync(exp, `# ROCm 7.2.4's false successes\n${FIVE.map((id) => `fail ${id} driver=7.2.4*`).join('\n')}\n`);
    const r = cli(['compare', '--expectations', exp, fx('rocm-fixed'), fx('rocm724')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/0 regressions/);
  });

  const bad: [string, string, RegExp][] = [
    ['not JSON', 'this is not json', /not valid JSON/],
    ['an unknown schemaVersion', JSON.stringify({ schemaVersion: 4, devices: [] }), /unknown schemaVersion 4/],
    ['required fields missing', JSON.stringify({ schemaVersion: 1 }), /not a valid results file/],
  ];
  for (const [what, text, reason] of bad) {
    it(`a file that is ${what}: exit 2, one line naming the file`, () => {
      const file = join(work, `bad-${what.replace(/\W+/g, '-')}.json`);
      writeFileSync(file, text);
      const r = cli(['compare', fx('cuda'), file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(reason);
      expect(r.stderr).toContain(file);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stdout).toBe('');
    });
  }
});

describe('merge and report', () => {
  it('merge writes one file that validates, with the devices of all', async () => {
    const out = join(work, 'fleet.json');
    const r = cli(['merge', fx('cuda'), fx('rocm724'), '-o', out]);
    expect(r.code).toBe(0);
    const merged = await readResults(out);
    expect(merged.devices.map((d) => d.id).sort()).toEqual(['cuda:0', 'hip:0']);
  });

  it('report writes a self-contained HTML page', () => {
    const out = join(work, 'report.html');
    const r = cli(['report', fx('rocm724'), fx('rocm-fixed'), fx('cuda'), '--html', out]);
    expect(r.code).toBe(0);
    const html = readFileSync(out, 'utf8');
    expect(html).toMatch(/^<!DOCTYPE html>/i);
    expect(html).not.toMatch(/<script[^>]+src=|https?:\/\//);
  });

  it('report of a bad file: exit 2 and no page written', () => {
    const out = join(work, 'none.html');
    const r = cli(['report', join(work, 'missing.json'), '--html', out]);
    expect(r.code).toBe(2);
    expect(existsSync(out)).toBe(false);
  });
});

describe('run --baseline', () => {
  it('gates a run against a baseline: the five ROCm 7.2.4 regressions exit 1; known failures let it pass', () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    // paced as the fixtures were made (scripts/make-fixtures.mjs), so that the registered GB/s compares
    const env = { MAPPED_REG_HIP_LIBRARY: doubles.hip, MAPPED_REG_DOUBLE_PROFILE: 'rocm724', MAPPED_REG_DOUBLE_RATES: 'registered=2,pinned=2,pageable=0.5' };
    const gated = cli(['--backend', 'hip', '--size', '8', '--scratch-dir', scratch, '--baseline', fx('rocm-fixed')], env);
    expect(gated.code).toBe(1);
    const regressions = gated.stdout.split('\n').filter((l) => /^ {2}REGRESSION {2}hip:0 Double HIP Device \(0000:00:00\.0\): hazard\./.test(l));
    expect(regressions.map((l) => /(hazard\.\S+) pass -> fail/.exec(l)?.[1]).sort()).toEqual([...FIVE].sort());
    expect(gated.stdout.trimEnd().split('\n').at(-1)).toMatch(/^FAIL: hip:0 Double HIP Device \(0000:00:00\.0\): hazard\.\S+ pass -> fail.* \(and 4 more\)$/);
    const exp = join(work, 'known.txt');
    writeFileSync(exp, FIVE.map((id) => `fail ${id}`).join('\n'));
    const known = cli(['--backend', 'hip', '--size', '8', '--scratch-dir', scratch, '--baseline', fx('rocm-fixed'), '--expectations', exp], env);
    expect(known.code).toBe(0);
    expect(known.stdout.trimEnd().split('\n').at(-1)).toMatch(/^PASS: 1 device \(1 Usable\), no regression against .*rocm-fixed\.json .*; 5 known failure\(s\)$/);
  });

  it('a corrupt baseline is refused before anything runs: exit 2, nothing written', () => {
    const corrupt = join(work, 'corrupt.json');
    writeFileSync(corrupt, '{"schemaVersion": 1, "devices": [');
    const json = join(work, 'never.json');
    const r = cli(['--backend', 'cpu', '--baseline', corrupt, '--json', json]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/corrupt\.json: not valid JSON/);
    expect(r.stdout).toBe('');
    expect(existsSync(json)).toBe(false);
  });

  it('a bad expectations line is refused with its line number', () => {
    const exp = join(work, 'bad-exp.txt');
    writeFileSync(exp, 'fail static.verdict\nwhatever x\n');
    const r = cli(['compare', '--expectations', exp, fx('cuda'), fx('cuda')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/bad-exp\.txt:2/);
  });
});
