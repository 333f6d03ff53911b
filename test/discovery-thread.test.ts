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
      const { found, context } = await discoverOnThread(['cuda', 'cpu']);
      expect(await context).toEqual({ none: 'the thread ended with status 1' });
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
const { found } = await discoverOnThread(['cuda']);
await new Promise((r) => setTimeout(r, 200));
const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8');
console.log(JSON.stringify({ devices: found.devices.length, mapped: maps.includes(${JSON.stringify(cuda)}) }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: cuda }), encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ devices: 1, mapped: true });
  });

  it("keeps the context of the device the runner will offer, on the thread, and that one alone: the suites' lookup then finds it made", () => {
    const cuda = buildDoubles().cuda;
    const thread = join(ROOT, 'dist', 'cli', 'discovery-thread.js');
    const discovery = join(ROOT, 'dist', 'bindings', 'discovery.js');
    // a process of its own: the double's count of the contexts made on each device is the process's
    const script = `const { discoverOnThread } = await import(${JSON.stringify(thread)});
const { discover } = await import(${JSON.stringify(discovery)});
const koffi = (await import('koffi')).default;
const created = koffi.load(${JSON.stringify(cuda)}).func('int double_contexts_created(int dev)');
const { found, context } = await discoverOnThread(['cuda'], { backends: ['cuda'], devices: ['cuda:1'] });
const kept = await context;
const early = [created(0), created(1)];
const d = discover(['cuda']).devices.find((x) => x.id === 'cuda:1');
d.native.keepContext();
d.native.withOps(4096, (ops) => ops.synchronize());
console.log(JSON.stringify({ offered: found.devices.length, kept, early, after: [created(0), created(1)] }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: cuda, MAPPED_REG_DOUBLE_DEVICES: '3' }),
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ offered: 3, kept: { kept: 'cuda:1' }, early: [0, 1], after: [0, 1] });
  });

  it('keeps no context when the runner has no GPU to offer, and says why', async () => {
    vi.stubEnv('MAPPED_REG_CUDA_LIBRARY', buildDoubles().cuda);
    vi.stubEnv('MAPPED_REG_DOUBLE_DEVICES', '2');
    try {
      const { discoverOnThread } = (await import(join(ROOT, 'dist', 'cli', 'discovery-thread.js'))) as ThreadModule;
      const { context } = await discoverOnThread(['cpu'], { backends: ['cpu'], devices: [] });
      expect(await context).toEqual({ none: 'cpu has no context to keep' });
      const other = await discoverOnThread(['cuda'], { backends: ['cuda'], devices: ['cuda:7'] });
      expect(await other.context).toEqual({ none: 'no device to offer' });
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
