// A discovering runner's discovery on a thread of its own (cli/discovery-thread.ts, as built in dist/: a worker
// thread loads the compiled file): the same discovery as on the runner's own thread, the driver double's devices
// with their identity and attributes, and the thread ended after it reported.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { discover, plainDiscovery } from '../bindings/discovery.js';
import { ROOT, cleanEnv } from './support/command.js';
import { buildDoubles } from './double/build.js';

type ThreadModule = typeof import('../cli/discovery-thread.js');

describe('discoverOnThread', () => {
  it('gives the discovery the runner would make on its own thread: the CUDA double and the CPU', async () => {
    vi.stubEnv('MAPPED_REG_CUDA_LIBRARY', buildDoubles().cuda);
    vi.stubEnv('MAPPED_REG_DOUBLE_DEVICES', '2');
    try {
      const { discoverOnThread } = (await import(join(ROOT, 'dist', 'cli', 'discovery-thread.js'))) as ThreadModule;
      const found = await discoverOnThread(['cuda', 'cpu']);
      expect(found.devices.map((d) => d.id)).toEqual(['cuda:0', 'cuda:1', 'cpu']);
      expect(found.gpuDriverFound).toBe(true);
      expect(found).toEqual(plainDiscovery(discover(['cuda', 'cpu'])));
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("keeps the driver the thread loaded (and initialized) loaded once the thread has ended", () => {
    const cuda = buildDoubles().cuda;
    const thread = join(ROOT, 'dist', 'cli', 'discovery-thread.js');
    // a process of its own, which loads the driver on the thread alone; after the thread's end (and a GC of its
    // heap), is the library still mapped into the process?
    const script = `const { discoverOnThread } = await import(${JSON.stringify(thread)});
const found = await discoverOnThread(['cuda']);
await new Promise((r) => setTimeout(r, 200));
const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8');
console.log(JSON.stringify({ devices: found.devices.length, mapped: maps.includes(${JSON.stringify(cuda)}) }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: cuda }), encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ devices: 1, mapped: true });
  });
});
