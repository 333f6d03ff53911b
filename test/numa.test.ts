// bindings/numa.ts on this machine's real kernel (one NUMA node, node 0): the thread's policy set, read back and
// reset through set_mempolicy/get_mempolicy, a range bound with mbind (seen in /proc/self/numa_maps), a node the
// kernel lacks refused with the errno's text; placeOnGpuNode against a fake sysfs, where it changes the policy in
// a child process of its own (the built module), so that this process's policy is left as it was.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAP, PROT, mmap, munmap, pageSize, setMempolicy } from '../bindings/libc.js';
import { MPOL_DEFAULT, MPOL_PREFERRED, bindRange, currentPolicy, placeOnGpuNode, preferNode, resetPolicy } from '../bindings/numa.js';
import { ROOT, cleanEnv } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-numa-'));
/** This process's policy before the tests, put back after each. */
let before = { mode: MPOL_DEFAULT, nodes: [] as number[] };
beforeAll(() => {
  before = currentPolicy();
});
afterEach(() => {
  setMempolicy(before.mode, before.nodes);
  delete process.env.MAPPED_REG_SYSFS_ROOT;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A fake sysfs: the nodes online, and a GPU at `bus` on `node` (undefined: no numa_node file). */
function sysfs(online: string, bus: string, node: string | undefined): string {
  const root = mkdtempSync(join(work, 'sysfs-'));
  mkdirSync(join(root, 'devices/system/node'), { recursive: true });
  writeFileSync(join(root, 'devices/system/node/online'), online);
  mkdirSync(join(root, 'bus/pci/devices', bus), { recursive: true });
  if (node !== undefined) writeFileSync(join(root, 'bus/pci/devices', bus, 'numa_node'), node);
  return root;
}

describe('the thread policy', () => {
  it('preferNode(0): MPOL_PREFERRED on node 0; resetPolicy(): MPOL_DEFAULT, no nodes', () => {
    expect(preferNode(0)).toEqual({ ok: true });
    expect(currentPolicy()).toEqual({ mode: MPOL_PREFERRED, nodes: [0] });
    expect(resetPolicy()).toEqual({ ok: true });
    expect(currentPolicy()).toEqual({ mode: MPOL_DEFAULT, nodes: [] });
  });

  it('a node this kernel lacks is ok:false with the errno text, never a throw, and the policy is unchanged', () => {
    expect(resetPolicy()).toEqual({ ok: true });
    expect(preferNode(5)).toEqual({ ok: false, error: 'set_mempolicy: Invalid argument (EINVAL)' });
    expect(currentPolicy()).toEqual({ mode: MPOL_DEFAULT, nodes: [] });
    expect(preferNode(-1)).toEqual({ ok: false, error: 'node -1 is not in 0..1023' });
    expect(preferNode(1024)).toEqual({ ok: false, error: 'node 1024 is not in 0..1023' });
  });
});

describe('bindRange', () => {
  /**
   * The policy /proc/self/numa_maps shows for the mapping that holds `address` ("default", "prefer:0", ...). The
   * kernel may merge a new anonymous mapping with its neighbour, so the mapping is found in /proc/self/maps by
   * range, and numa_maps read at its start.
   */
  function mapsPolicy(address: bigint): string | undefined {
    const start = readFileSync('/proc/self/maps', 'utf8')
      .split('\n')
      .map((l) => /^([0-9a-f]+)-([0-9a-f]+) /.exec(l))
      .find((m) => m !== null && BigInt(`0x${m[1]}`) <= address && address < BigInt(`0x${m[2]}`))?.[1];
    if (start === undefined) return undefined;
    const line = readFileSync('/proc/self/numa_maps', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${start} `));
    return line?.split(' ')[1];
  }

  it('an anonymous mapping bound to node 0 prefers node 0; its pages are still usable', () => {
    const length = 4 * pageSize();
    const m = mmap(length, PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
    try {
      expect(mapsPolicy(m.address)).toBe('default');
      expect(bindRange(m.address, length, 0)).toEqual({ ok: true });
      expect(mapsPolicy(m.address)).toBe('prefer:0');
      m.bytes.fill(7);
      expect(m.bytes[length - 1]).toBe(7);
    } finally {
      munmap(m);
    }
  });

  it('a node this kernel lacks, or an address off a page boundary, is ok:false with the errno text', () => {
    const length = 2 * pageSize();
    const m = mmap(length, PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
    try {
      expect(bindRange(m.address, length, 5)).toEqual({ ok: false, error: 'mbind: Invalid argument (EINVAL)' });
      expect(bindRange(m.address + 1n, pageSize(), 0)).toEqual({ ok: false, error: 'mbind: Invalid argument (EINVAL)' });
      expect(mapsPolicy(m.address)).toBe('default');
    } finally {
      munmap(m);
    }
  });
});

describe('placeOnGpuNode', () => {
  const BUS = '0000:41:00.0';

  it('a host of one node: nothing done, "one NUMA node"', () => {
    process.env.MAPPED_REG_SYSFS_ROOT = sysfs('0\n', BUS, '0\n');
    expect(placeOnGpuNode(BUS)).toEqual({ node: 0, nodes: [0], placed: false, note: 'one NUMA node' });
    expect(currentPolicy()).toEqual(before);
  });

  it("a host of two nodes where the GPU's node is not known (-1): nothing done, says so", () => {
    process.env.MAPPED_REG_SYSFS_ROOT = sysfs('0-1\n', BUS, '-1\n');
    expect(placeOnGpuNode(BUS)).toEqual({ node: null, nodes: [0, 1], placed: false, note: `the NUMA node of ${BUS} is not known` });
    expect(currentPolicy()).toEqual(before);
  });

  /** placeOnGpuNode in a child process (the built module) with this sysfs root: its answer and the policy after. */
  function inChild(root: string): { placement: unknown; policy: unknown; reset: unknown; after: unknown } {
    const script = `
      import { placeOnGpuNode, currentPolicy, resetPolicy } from ${JSON.stringify(join(ROOT, 'dist/bindings/numa.js'))};
      const placement = placeOnGpuNode(${JSON.stringify(BUS.toUpperCase())});
      const policy = currentPolicy();
      const reset = resetPolicy();
      console.log(JSON.stringify({ placement, policy, reset, after: currentPolicy() }));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: cleanEnv({ MAPPED_REG_SYSFS_ROOT: root }),
      encoding: 'utf8',
    });
    return JSON.parse(out) as { placement: unknown; policy: unknown; reset: unknown; after: unknown };
  }

  it('a host of two nodes with the GPU on node 0: the thread prefers node 0 (in a child process)', () => {
    const r = inChild(sysfs('0-1\n', BUS, '0\n'));
    expect(r.placement).toEqual({ node: 0, nodes: [0, 1], placed: true });
    expect(r.policy).toEqual({ mode: MPOL_PREFERRED, nodes: [0] });
    expect(r.reset).toEqual({ ok: true });
    expect(r.after).toEqual({ mode: MPOL_DEFAULT, nodes: [] });
  });

  it('a host of two nodes with the GPU on a node this kernel lacks: not placed, the reason, the policy as it was', () => {
    const r = inChild(sysfs('0,3\n', BUS, '3\n'));
    expect(r.placement).toEqual({ node: 3, nodes: [0, 3], placed: false, note: 'node 3: set_mempolicy: Invalid argument (EINVAL)' });
    expect(r.policy).toEqual({ mode: MPOL_DEFAULT, nodes: [] });
  });
});
