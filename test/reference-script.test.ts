// scripts/h200/reference-checks.sh, the reference checks on the real H200, run here against the CUDA driver double:
// its table names every reference check of the default run and each cycles run, and its exit status is 0 only
// when every reference check passed (a fault of the double makes it 1, the failing check named).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDoubles } from './double/build.js';
import { ROOT, cleanEnv } from './support/command.js';
import { referenceChecks } from '../suites/hazards/reference.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-reference-script-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const doubles = buildDoubles();
const SCRIPT = join(ROOT, 'scripts', 'h200', 'reference-checks.sh');

function script(name: string, faults?: string): { status: number | null; text: string; said: string } {
  const out = join(work, name);
  const scratch = mkdtempSync(join(work, `scratch-${name}-`));
  const env = cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_REFERENCE_RUNS: '2', ...(faults ? { MAPPED_REG_DOUBLE_FAULTS: faults } : {}) });
  const r = spawnSync('bash', [SCRIPT, out, '--backend', 'cuda', '--size', '4', '--scratch-dir', scratch], { cwd: work, env, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, text: readFileSync(join(out, 'reference.txt'), 'utf8'), said: `${r.stdout}${r.stderr}` };
}

describe('scripts/h200/reference-checks.sh against the CUDA double', () => {
  it('the honest double: every reference check in the table, two cycles runs, exit 0', () => {
    const r = script('honest');
    expect(r.status, r.said).toBe(0);
    // one GPU: hazard.every_gpu_at_once does not apply (a skip, which the script counts as passing)
    for (const c of referenceChecks) expect(r.text).toMatch(new RegExp(`^cuda:0\\t${c.id.replace('.', '\\.')}\\t${c.id === 'hazard.every_gpu_at_once' ? 'skip' : 'pass'}\\t`, 'm'));
    expect(r.text.match(/^cycles \d\tcuda:0\tpass\t100 cycles\t[\d.]+ us a cycle\tfree (\d+) -> \1\tVmLck\/VmPin kB (\d+\/\d+) -> \2$/gm)).toHaveLength(2);
    expect(r.text.trimEnd().split('\n').at(-1)).toBe('every reference check passed');
  }, 120_000);

  it('a leak per cycle: the cycles fail, named with the fall, exit 1', () => {
    const r = script('leak', 'leak_device_per_cycle');
    expect(r.status, r.said).toBe(1);
    expect(r.text).toMatch(/^cuda:0\thazard\.register_cycles\tfail\t.*\(free device memory fell 6\.25 MiB over 100 cycles/m);
    expect(r.text.trimEnd().split('\n').at(-1)).toBe('a reference check did not pass');
  }, 120_000);
});
