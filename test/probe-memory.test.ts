// The probe as a device's process runs it (suites/context.ts probeOnce), through the real bindings against the
// driver double: window 2's pages leave the process (bindings/libc.ts dropPages) once it is released, after the
// round trips and before the timed copies, with window 1 still registered; never a window the driver may hold.
// What is seen is the call and the registration table at that moment, never a memory figure (that is the bench's).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { DiscoveredDevice } from '../bindings/discovery.js';
import type { CheckContext } from '../suites/check.js';

interface Drop {
  address: bigint;
  length: number;
  /** The ranges registered in the process's table at the call: [address, length]. */
  live: [bigint, number][];
}
const seen = vi.hoisted(() => ({ drops: [] as Drop[] }));

vi.mock('../bindings/libc.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../bindings/libc.js')>();
  const { registrations } = await import('../src/ops.js');
  return {
    ...real,
    dropPages: (h: import('../src/ops.js').Host) => {
      seen.drops.push({ address: h.address, length: h.bytes.length, live: registrations.entries().map((e) => [e.address, e.length]) });
      real.dropPages(h);
    },
  };
});

const { probeOnce, whenProbeDone } = await import('../suites/context.js');
const { windowSize } = await import('../src/index.js');
const { loadDouble } = await import('./support/drivers.js');

const scratch = mkdtempSync(join(tmpdir(), 'mapped-reg-probe-memory-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const SIZE_MIB = 16;

function context(device: DiscoveredDevice): CheckContext {
  return { device, options: { device: device.id, scratchDir: scratch, sizeMiB: SIZE_MIB, runs: 2, minRelativeSpeed: 0.8, skip: [], quiet: { waitS: 0, maxDrop: 0.1 } }, log: () => {} };
}

describe("the device's probe drops window 2's pages before the timed copies", () => {
  it('window 2, released, is dropped once, while window 1 alone is registered; the verdict Usable', () => {
    const device = loadDouble('cuda', { rates: 'registered=0.2,pinned=0.2' }).discovery.devices.find((d) => d.id === 'cuda:0')!;
    seen.drops.length = 0;
    const { report } = probeOnce(context(device));
    expect(report.verdict.kind).toBe('Usable');
    const w = windowSize(SIZE_MIB * 1024 * 1024);
    expect(seen.drops).toHaveLength(1);
    const [drop] = seen.drops;
    expect(drop!.length).toBe(w);
    // window 1, just before window 2 in the same mapping, is the one range registered then
    expect(drop!.live).toEqual([[drop!.address - BigInt(w), w]]);
  }, 60_000);

  it('window 2 never released (the driver keeps it): never dropped; Still_registered', () => {
    const device = loadDouble('cuda', { devices: 2, faults: 'stuck_registration=2' }).discovery.devices.find((d) => d.id === 'cuda:1')!;
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    seen.drops.length = 0;
    const { report } = probeOnce(context(device));
    warn.mockRestore();
    expect(report.verdict.kind).toBe('Still_registered');
    expect(report.windows[1]).toMatchObject({ release: 'never' });
    expect(seen.drops).toEqual([]);
  }, 60_000);
});

describe("what waits for the device's probe (whenProbeDone: the truncation child's start)", () => {
  it('runs once the probe is over (its region unmapped), not before; at once for a device already probed, or whose probe does not run here', () => {
    const device = loadDouble('cuda', { devices: 3, rates: 'registered=0.2,pinned=0.2' }).discovery.devices.find((d) => d.id === 'cuda:2')!;
    const ran: string[] = [];
    whenProbeDone(device.id, true, () => ran.push('waited'));
    whenProbeDone('cuda:7', false, () => ran.push('no probe here'));
    expect(ran).toEqual(['no probe here']);
    // the waiting work runs when the probe is over (its region closed in its finally), once
    const { report } = probeOnce(context(device));
    expect(report.verdict.kind).toBe('Usable');
    expect(ran).toEqual(['no probe here', 'waited']);
    probeOnce(context(device));
    expect(ran).toEqual(['no probe here', 'waited']);
    whenProbeDone(device.id, true, () => ran.push('after'));
    expect(ran).toEqual(['no probe here', 'waited', 'after']);
  }, 60_000);
});
