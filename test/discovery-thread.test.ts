// A discovering runner's discovery on a thread of its own (cli/discovery-thread.ts, as built in dist/: a worker
// thread loads the compiled file): the same discovery as on the runner's own thread, the driver double's devices
// with their identity and attributes, and the thread ended after it reported.
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { discover, plainDiscovery } from '../bindings/discovery.js';
import { ROOT } from './support/command.js';
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
});
