// A run narrowed by --backend or --device against a baseline of more devices (results/compare.ts notAskedBy):
// the devices it did not ask for are "not compared (not asked for)", listed by the gate and by compare, never
// missing; a device of a backend it asked for that is gone is still missing; --require demands a device.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareResults, formatComparison, notAskedBy } from '../results/compare.js';
import { decide, parseRequirement } from '../results/gate.js';
import { parseResults, resultsValidator } from '../results/read.js';
import type { RunResult } from '../results/types.js';
import { gateSummary } from '../reporters/summary.js';
import { markdownSummary } from '../reporters/markdown.js';

const fixture = (name: string): RunResult => {
  const file = join(import.meta.dirname, 'fixtures', `${name}.json`);
  return parseResults(readFileSync(file, 'utf8'), file);
};
/** The baseline: the H200 machine's run of every backend (cuda:0, opencl:0, opencl:1, cpu). */
const full = (): RunResult => fixture('h200');
/** The same machine's run narrowed: only `ids` kept, with the options that asked for them. */
function narrowed(ids: string[], options: { backends?: string[]; devices?: string[] }): RunResult {
  const r = structuredClone(full());
  r.devices = r.devices.filter((d) => ids.includes(d.id));
  r.options = { ...r.options, ...options };
  return r;
}
const baseline = { file: 'full.json', result: full() };

describe('--backend cuda against a baseline that also had OpenCL and the CPU', () => {
  const run = narrowed(['cuda:0'], { backends: ['cuda'] });

  it('the gate passes: the other devices are not compared (not asked for), listed, never missing', async () => {
    const g = await decide(run, { baseline });
    expect(g.reasons).toEqual([]);
    expect(g.missing).toEqual([]);
    expect(g.pass).toBe(true);
    expect(g.notAskedFor!.map((d) => [d.id, d.asked])).toEqual([
      ['opencl:0', '--backend cuda'],
      ['opencl:1', '--backend cuda'],
      ['cpu', '--backend cuda'],
    ]);
    expect(g.counts.missing).toBe(0);
    // the results JSON that records it validates
    expect(resultsValidator()({ ...run, gate: g })).toBe(true);
    // the terminal and the step summary list them
    const lines = gateSummary(g);
    expect(lines.find((l) => l.includes('not compared'))).toMatch(/^ {2}not compared \(not asked for: the run gave --backend cuda\): opencl:0 .*, opencl:1 .*, cpu /);
    expect(markdownSummary({ ...run, gate: g })).toMatch(/not compared \(not asked for/);
  });

  it('compare of the two files says the same, with no missing device', () => {
    const c = compareResults(full(), run);
    expect(c.counts.missing).toBe(0);
    expect(c.devices.map((d) => d.id.old ?? d.id.new)).toEqual(['cuda:0']);
    expect(c.notAskedFor!.map((d) => d.id)).toEqual(['opencl:0', 'opencl:1', 'cpu']);
    expect(formatComparison(c)).toMatch(/\nnot compared \(not asked for: the run gave --backend cuda\): opencl:0 /);
  });

  it('--require opencl still demands the device: unmet', async () => {
    const g = await decide(run, { baseline, requires: [parseRequirement('opencl')] });
    expect(g.pass).toBe(false);
    expect(g.reasons.map((r) => r.kind)).toEqual(['requirement']);
  });
});

describe('--device cuda:0 against the same baseline', () => {
  it('the devices not named are not compared (not asked for)', async () => {
    const run = narrowed(['cuda:0'], { devices: ['cuda:0'] });
    const g = await decide(run, { baseline });
    expect(g.pass).toBe(true);
    expect(g.notAskedFor!.map((d) => [d.id, d.asked])).toEqual([
      ['opencl:0', '--device cuda:0'],
      ['opencl:1', '--device cuda:0'],
      ['cpu', '--device cuda:0'],
    ]);
  });
});

describe('what stays missing', () => {
  it('a device of a backend the run asked for that is gone', async () => {
    const run = narrowed(['cuda:0', 'opencl:0'], { backends: ['cuda', 'opencl'] });
    const g = await decide(run, { baseline });
    expect(g.pass).toBe(false);
    expect(g.missing.map((m) => m.id)).toEqual(['opencl:1']);
    expect(g.notAskedFor!.map((d) => d.id)).toEqual(['cpu']);
  });

  it('a run of every backend that lacks a device: missing, and nothing is "not asked for"', async () => {
    const run = narrowed(['cuda:0', 'opencl:0', 'opencl:1'], {});
    const g = await decide(run, { baseline });
    expect(g.missing.map((m) => m.id)).toEqual(['cpu']);
    expect(g.notAskedFor).toBeUndefined();
  });

  it('a merged file (a fleet) asks for every device: notAskedBy says nothing of it', () => {
    const m = structuredClone(full());
    m.devices = m.devices.map((d) => ({ ...d, host: { hostname: 'node-1', kernel: 'k', platform: 'p' } }));
    m.options = { ...m.options, backends: ['cuda'] };
    expect(notAskedBy(m, { id: 'cpu', backend: 'cpu' })).toBeUndefined();
    expect(notAskedBy(narrowed([], { backends: ['cuda'] }), { id: 'cpu', backend: 'cpu' })).toBe('--backend cuda');
  });
});
