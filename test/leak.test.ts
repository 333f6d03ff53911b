// No leak: discovery and probe, 50 times over, against the CUDA double through the real bindings, leave the
// open descriptors, the mappings and the double's registrations where they started.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { discover } from '../bindings/discovery.js';
import { mappingCount, openFdCount } from '../bindings/libc.js';
import { makeScratchRegion } from '../bindings/scratch.js';
import { probeReport, registrations } from '../src/index.js';
import { loadDouble } from './support/drivers.js';

it('discovery + probe 50 times leaves descriptors, mappings and registrations where they started', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'mapped-reg-leak-'));
  try {
    const cuda = loadDouble('cuda', { profile: 'cuda' });
    process.env.MAPPED_REG_CUDA_LIBRARY = cuda.path; // the same copy: discover() below reuses its driver
    const round = (): string => {
      const found = discover();
      const d = found.devices.find((x) => x.backend === 'cuda')!;
      const region = makeScratchRegion(scratch, 4 * 1024 * 1024);
      try {
        const r = probeReport(d.device, region.map, region.reference);
        // the timing verdict may flicker on a loaded machine; what matters here is the bytes and the releases
        return r.windows.map((w) => `${w.equal}/${w.release}`).join(' ');
      } finally {
        region.close();
      }
    };
    // one round first: libraries are loaded and their first descriptors opened once, by design
    expect(round()).toBe('true/first true/first');
    // V8 maps and unmaps heap pages as it likes, so the exact count is kept for the mappings that are ours: the
    // scratch files (by path), and the double's page-locked buffers and device memory (allocs against frees).
    const state = () => ({
      fds: openFdCount(),
      scratchMaps: mappingCount(scratch),
      double: cuda.registrationCount(),
      table: registrations.size,
      pinned: cuda.calls('cuMemHostAlloc') - cuda.calls('cuMemFreeHost'),
      device: cuda.calls('cuMemAlloc_v2') - cuda.calls('cuMemFree_v2'),
    });
    const before = state();
    const mapsBefore = mappingCount();
    const verdicts = new Set<string>();
    for (let i = 0; i < 50; i++) verdicts.add(round());
    expect([...verdicts]).toEqual(['true/first true/first']);
    expect(state()).toEqual(before);
    expect(before).toMatchObject({ scratchMaps: 0, double: 0, table: 0, pinned: 0, device: 0 });
    expect(cuda.calls('cuMemHostAlloc')).toBeGreaterThanOrEqual(51); // one page-locked buffer a probe
    // one leaked mapping per round would add at least 50; V8's own heap moves by less
    expect(mappingCount() - mapsBefore).toBeLessThan(50);
    expect(readdirSync(scratch)).toEqual([]);
  } finally {
    delete process.env.MAPPED_REG_CUDA_LIBRARY;
    rmSync(scratch, { recursive: true, force: true });
  }
});
