// Each refusal says in plain words why, and where to read more; the page it points to explains each, the
// Vulkan refusal with its source.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REFUSALS_DOC, refusalInPlainWords } from '../reporters/refusals.js';
import { runSummary } from '../reporters/summary.js';
import type { RunResult } from '../results/types.js';
import { staticVerdict } from '../src/device.js';
import { Device_kind_unknown, Integrated_gpu, Kernel_hazard, Not_measured, Refused, Usable, verdictJson, Wrong_bytes } from '../src/verdict.js';
import { ROOT } from './support/command.js';

const REFUSALS = [Integrated_gpu, Device_kind_unknown, Kernel_hazard('r'), Not_measured('r'), Wrong_bytes];
const doc = readFileSync(join(ROOT, 'docs', 'verdicts.md'), 'utf8');
/** The section REFUSALS_DOC names, up to the next heading of its level. */
const section = (): string => {
  const title = /"(.*)"/.exec(REFUSALS_DOC)![1]!;
  const start = doc.indexOf(`## ${title}\n`);
  expect(start).toBeGreaterThan(0);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
};

describe('refusals in plain words', () => {
  it.each(REFUSALS.map((r) => [r.kind, r] as const))('%s: a sentence without the model\'s names, and where to read more', (_kind, refusal) => {
    const text = refusalInPlainWords(verdictJson(Refused(refusal)))!;
    expect(text).toMatch(/^refused: [a-z].{40,} \(read more: docs\/verdicts\.md, "Refusals in plain words"\)$/);
    expect(text).not.toMatch(/Integrated_gpu|Device_kind_unknown|Kernel_hazard|Not_measured|Wrong_bytes/);
  });

  it('each sentence is its own', () => {
    const texts = REFUSALS.map((r) => refusalInPlainWords(verdictJson(Refused(r))));
    expect(new Set(texts).size).toBe(REFUSALS.length);
  });

  it('a verdict that is not a refusal has none', () => {
    expect(refusalInPlainWords(verdictJson(Usable))).toBeUndefined();
  });

  it('the page explains every refusal in its section', () => {
    const s = section();
    for (const r of REFUSALS) expect(s).toMatch(new RegExp(`^- \\*\\*\`${r.kind}\``, 'm'));
  });

  it('the Vulkan refusal: the page names its source (Sarek, the SPOC project, issues #503 and #504, a kernel oops on AMD)', () => {
    const vulkan = section().split('\n- ').find((b) => b.startsWith('**`Kernel_hazard`'))!;
    expect(vulkan.replace(/\s+/g, ' ')).toMatch(/kernel oopses, recorded in issues #503 and #504 of \*\*Sarek\*\*, the GPU programming framework of the SPOC project/);
    expect(vulkan).toMatch(/AMD GPUs/);
  });

  it('the Vulkan verdict\'s own reason says why in plain words', () => {
    const v = staticVerdict({ id: 'vulkan:0', name: 'llvmpipe', framework: 'Vulkan', type: 'gpu' });
    expect(v.kind === 'Decided' && v.verdict.kind === 'Refused' && v.verdict.refusal.kind === 'Kernel_hazard' && v.verdict.refusal.reason).toMatch(
      /^registering host memory through Vulkan crashed the Linux kernel on AMD GPUs \(kernel oopses, Sarek issues #503\/#504\), so it is never tried$/,
    );
  });

  it('the terminal summary tells it under the table once, for the refused device only: its own reason where it has one', () => {
    const r = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'cuda.json'), 'utf8')) as RunResult;
    const refused = structuredClone(r.devices[0]!);
    refused.id = 'vulkan:0';
    refused.verdict = verdictJson(Refused(Kernel_hazard('registering host memory through Vulkan crashed the Linux kernel')));
    r.devices.push(refused);
    const lines = runSummary(r);
    const told = lines.filter((l) => l.includes('read more'));
    expect(told).toEqual([expect.stringMatching(/^vulkan:0: refused: registering host memory through Vulkan crashed the Linux kernel \(read more: docs\/verdicts\.md, "Refusals in plain words"\)$/)]);
    // said once: no other line under the table speaks of it
    expect(lines.filter((l) => l.startsWith('vulkan:0: '))).toHaveLength(1);
    // a refusal with no reason of its own: the plain words
    refused.verdict = verdictJson(Refused(Integrated_gpu));
    expect(runSummary(r).filter((l) => l.startsWith('vulkan:0: '))).toEqual([`vulkan:0: ${refusalInPlainWords(refused.verdict)}`]);
  });
});
