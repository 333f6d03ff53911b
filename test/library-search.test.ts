// A GPU driver that is not installed is answered by the command without a process (bindings/library-search.ts,
// cli/discovering-runners.ts withoutProcess): found only where the dynamic loader would not find the library
// either, and then with the very report the discovering process would have sent.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { cuda } from '../bindings/backends/cuda.js';
import { hip } from '../bindings/backends/hip.js';
import { mayBeFound } from '../bindings/library-search.js';
import { withoutProcess } from '../cli/discovering-runners.js';
import { buildDoubles } from './double/build.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-library-search-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
/** A name no system has. */
const NAME = 'libmapped_reg_nowhere.so.1';
/** A loader cache whose string table holds `names` (NUL-ended, as ldconfig writes them). */
const cacheWith = (file: string, names: string[]): string => {
  const path = join(work, file);
  writeFileSync(path, Buffer.concat([Buffer.from('glibc-ld.so.cache1.1'), ...names.map((n) => Buffer.from(`${n}\0/usr/lib/${n}\0`))]));
  return path;
};

describe('mayBeFound: whether dlopen could find a library, without loading it', () => {
  it('a path: when the file exists', () => {
    writeFileSync(join(work, NAME), '');
    expect(mayBeFound(join(work, NAME), {})).toBe(true);
    expect(mayBeFound(join(work, 'missing', NAME), {})).toBe(false);
  });
  it('a bare name: in a folder of LD_LIBRARY_PATH, or in the loader cache', () => {
    const empty = cacheWith('empty.cache', ['libc.so.6']);
    expect(mayBeFound(NAME, {}, empty)).toBe(false);
    expect(mayBeFound(NAME, { LD_LIBRARY_PATH: `/nonexistent::${work}` }, empty)).toBe(true);
    expect(mayBeFound(NAME, {}, cacheWith('has.cache', ['libc.so.6', NAME]))).toBe(true);
    // a name that only ends the same is not it
    expect(mayBeFound(NAME, {}, cacheWith('longer.cache', [`x${NAME}.2`]))).toBe(false);
  });
  it('a bare name on a host whose loader cache cannot be read: it may be found (the process is started)', () => {
    expect(mayBeFound(NAME, {}, join(work, 'no.cache'))).toBe(true);
  });
});

describe("a GPU driver's group answered without a process", () => {
  const selection = { backends: ['cuda' as const], devices: [] };
  it("when its library cannot be found: the report its process gives (the same note, no device, no offer)", async () => {
    const env = { MAPPED_REG_CUDA_LIBRARY: join(work, 'missing', 'libcuda.so.1') };
    const g = withoutProcess(['cuda'], selection, env)!;
    expect(g).toBeDefined();
    vi.stubEnv('MAPPED_REG_CUDA_LIBRARY', env.MAPPED_REG_CUDA_LIBRARY);
    try {
      expect(g.event!.discovery).toEqual({ devices: [], backends: [cuda.discover().report], gpuDriverFound: false });
    } finally {
      vi.unstubAllEnvs();
    }
    expect([g.event!.device, g.offer, g.started, await g.runs, await g.failure]).toEqual([null, undefined, false, [], undefined]);
    expect(cuda.registers && cuda.notFound!(env)!.note).toBe(`CUDA: ${env.MAPPED_REG_CUDA_LIBRARY} not found (tried ${env.MAPPED_REG_CUDA_LIBRARY})`);
  });
  it('HIP: a library found under any one of its default names is enough for a process', () => {
    writeFileSync(join(work, 'libamdhip64.so.6'), '');
    expect(hip.registers && hip.notFound!({ LD_LIBRARY_PATH: work })).toBeUndefined();
  });
  it('never when the library is there, for a group that is not only GPU drivers, or for the discovering process\'s test hooks', () => {
    const there = { MAPPED_REG_CUDA_LIBRARY: buildDoubles().cuda };
    expect(withoutProcess(['cuda'], selection, there)).toBeUndefined();
    const missing = { MAPPED_REG_CUDA_LIBRARY: join(work, 'missing.so') };
    expect(withoutProcess(['cuda', 'opencl'], selection, missing)).toBeUndefined();
    expect(withoutProcess(['cuda'], { ...selection, forceCrash: '@discovery' }, missing)).toBeUndefined();
    expect(withoutProcess(['cuda'], { ...selection, forceHang: '@discovery' }, missing)).toBeUndefined();
  });
});
