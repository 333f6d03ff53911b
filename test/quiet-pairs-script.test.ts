// scripts/h200/quiet-pairs.sh, the gate's false-alarm rate on a real GPU (issue 37), tried here on the CUDA double
// through the script's CUDA shim: the lead runs it on the H200; here its mechanics are held (the runs, every ordered
// pair, the 10-run baseline, the slower driver, the summary line and the exit status that agrees with it).
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv } from './support/command.js';
import { workspace } from './support/workspace.js';

const { work, doubles } = workspace('mapped-reg-quiet-pairs-', 'now');

/** Copies of 42 ms (4 MiB windows at 0.1 GB/s): a late wake-up of a loaded machine is a small part of one. */
const QUIET = 'registered=0.1,pinned=0.1,pageable=0.05';

describe('scripts/h200/quiet-pairs.sh, the false-alarm rate on a real GPU, tried here on the double through its CUDA shim', () => {
  const script = join(import.meta.dirname, '..', 'scripts', 'h200', 'quiet-pairs.sh');

  it('refuses a count of runs under 11, before it runs anything', () => {
    const out = join(work, 'qp-bad');
    const r = spawnSync('bash', [script, out], { env: cleanEnv({ MAPPED_REG_QUIET_RUNS: '10' }), encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^quiet-pairs\.sh: MAPPED_REG_QUIET_RUNS must be a whole number of at least 11/);
  });

  it('11 quiet runs, every ordered pair compared (110), the 10-run baseline, and the slower driver caught by run --baseline and compare', () => {
    const out = join(work, 'qp');
    const r = spawnSync('bash', [script, out, '--backend', 'cuda', '--size', '8', '--check', 'probe.verdict'], {
      env: cleanEnv({ MAPPED_REG_QUIET_RUNS: '11', MAPPED_REG_SHIM_REAL: doubles.cuda, MAPPED_REG_DOUBLE_RATES: QUIET, MAPPED_REG_TIMING_LOCK: join(work, 'qp.lock') }),
      encoding: 'utf8',
      timeout: 280_000,
    });
    const text = readFileSync(join(out, 'quiet-pairs.txt'), 'utf8');
    const runs = text.split('\n').filter((l) => /^run-\d+\t/.test(l));
    expect(runs.map((l) => l.split('\t')[0])).toEqual(Array.from({ length: 11 }, (_, i) => `run-${i + 1}`));
    for (const l of runs) expect(l, l).toMatch(/^run-\d+\t0\t0\.1\d\t0\.1\d\t\d\.\d{4}\t\d+( \(\+\d+\))?\t\d+$/);
    expect(text).toMatch(/^compare of every ordered pair: 110 pairs, \d+ false regressions \(the driver's\), \d+ the host's \(too noisy or busy\), 0 with an exit status other than 0 or 1$/m);
    expect(text).toMatch(/^against a baseline of 10 runs \(compare --also-old\): 1 comparisons, /m);
    // the slower driver never passes: the driver's registration (the host's only on a machine too noisy to judge)
    for (const name of ['slower-vs-run-1', 'slower-vs-10-runs']) expect(text).toMatch(new RegExp(`^${name}: exit 1, gate reasons [a-z,]*(registration|noisy)`, 'm'));
    expect(text).toMatch(/^compare run-1 slower: exit 1, [a-z,]*(registration|noisy)/m);
    expect(text).toMatch(/^compare \(10 runs\) slower: exit 1, [a-z,]*(registration|noisy)/m);
    const summary = /^quiet-pairs: 11 quiet runs \(0 did not exit 0\); 110 ordered pairs: (\d+) false regressions, \d+ the host's; 10-run baseline: (\d+) of 1 false, \d+ the host's; a 20% slower registration caught (\d) of 4 \(run --baseline one run, ten runs; compare one run, ten runs\): (yes|no)$/m.exec(text);
    expect(summary, text).not.toBeNull();
    const [, pairsFalse, tenFalse, caught, ok] = summary!;
    // the script's answer agrees with its counts, and its exit status with its answer
    expect(ok).toBe(pairsFalse === '0' && tenFalse === '0' && caught === '4' ? 'yes' : 'no');
    expect(r.status, r.stderr).toBe(ok === 'yes' ? 0 : 1);
    expect(readdirSync(out).sort()).toEqual(['quiet-pairs.tgz', 'quiet-pairs.txt']);
  }, 300_000);
});
