// scripts/h200/junit.sh, the JUnit report of real GPU runs read as CI reads it, tried here on the CUDA double
// through the CUDA shim: the plain run passes, a driver that fails to start and a registered copy throttled by 20%
// fail, and every report agrees with its run's totals line in both readers of scripts/h200/junit-read.mjs.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv } from './support/command.js';
import { workspace } from './support/workspace.js';

const { work, doubles } = workspace('mapped-reg-junit-script-');
const SCRIPTS = join(import.meta.dirname, '..', 'scripts', 'h200');

describe('scripts/h200/junit.sh on the double', () => {
  it('each run exits as expected and its report agrees with its log; the script exits 0', () => {
    const out = mkdtempSync(join(work, 'h200-'));
    const r = spawnSync('bash', [join(SCRIPTS, 'junit.sh'), out, '--backend', 'cuda', '--size', '8', '--check', 'probe.verdict'], {
      env: cleanEnv({ MAPPED_REG_SHIM_REAL: doubles.cuda, MAPPED_REG_DOUBLE_RATES: 'registered=0.2,pinned=0.15,pageable=0.05' }),
      encoding: 'utf8',
    });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    const lines = readFileSync(join(out, 'junit.txt'), 'utf8').trim().split('\n');
    expect(lines.map((l) => l.split(':')[0])).toEqual(['plain', 'driver-start-999', 'registered-20pct', '0 run(s) with an unexpected exit status or a report that disagreed with its log']);
    expect(lines[0]).toMatch(/^plain: exit 0 \(expected 0\); .*; red: none$/);
    expect(lines[1]).toMatch(/^driver-start-999: exit 1 \(expected 1\); .*fast-xml-parser \d+\/\d+\/1\/0\/\d+, .*; red: cuda > driver\.start$/);
    expect(lines[2]).toMatch(/red: .*cuda:0 > gate\.bandwidth/);
  }, 120_000);

  it('junit-read.mjs says a report that disagrees with its log, and one that is absent (exit 1)', () => {
    const dir = mkdtempSync(join(work, 'read-'));
    const xml = join(dir, 'r.xml');
    const log = join(dir, 'r.log');
    writeFileSync(xml, '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="1" failures="1" errors="0" time="1">\n  <testsuite name="s on h" tests="1" failures="1" errors="0" skipped="0" time="1">\n    <testcase classname="cuda:0.probe" name="probe.verdict" time="1">\n      <failure message="m"/>\n    </testcase>\n  </testsuite>\n</testsuites>\n');
    writeFileSync(log, 'tests: 1: 1 passed, 0 failed, 0 errors, 0 skipped (as the JUnit report counts them)\n');
    const read = (): { status: number | null; stdout: string } => spawnSync(process.execPath, [join(SCRIPTS, 'junit-read.mjs'), xml, log], { encoding: 'utf8' });
    const bad = read();
    expect(bad.status).toBe(1);
    expect(bad.stdout).toMatch(/PROBLEM: the readers and the log disagree; a title without its device: probe\.verdict$/m);
    writeFileSync(log, 'tests: 1: 0 passed, 1 failed, 0 errors, 0 skipped (as the JUnit report counts them)\n');
    expect(read().stdout).toMatch(/PROBLEM: a title without its device: probe\.verdict$/m);
    writeFileSync(xml, readFileSync(xml, 'utf8').replace('name="probe.verdict"', 'name="cuda:0 &gt; probe.verdict"'));
    expect(read()).toMatchObject({ status: 0 });
    const gone = spawnSync(process.execPath, [join(SCRIPTS, 'junit-read.mjs'), join(dir, 'none.xml'), log], { encoding: 'utf8' });
    expect(gone.status).toBe(1);
    expect(gone.stdout).toMatch(/PROBLEM: no report; the readers and the log disagree/);
  });
});
