// A GPU driver that is not installed is answered by the command without a process (bindings/library-search.ts,
// cli/discovering-runners.ts withoutProcess): found only where the dynamic loader would not find the library
// either, and then with the very report the discovering process would have sent.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { cuda } from '../bindings/backends/cuda.js';
import { hip } from '../bindings/backends/hip.js';
import { mayBeFound } from '../bindings/library-search.js';
import { withoutProcess } from '../cli/discovering-runners.js';
import { spareLikelyRegisters } from '../cli/select-devices.js';
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
  it('HIP: a library found under any one of its default names is enough for a process, where an AMD kernel driver is there', () => {
    writeFileSync(join(work, 'libamdhip64.so.6'), '');
    for (const node of ['kfd', 'dxg']) {
      const root = mkdtempSync(join(work, 'root-'));
      mkdirSync(join(root, 'dev'));
      writeFileSync(join(root, 'dev', node), '');
      expect(hip.registers && hip.notFound!({ LD_LIBRARY_PATH: work }, root)).toBeUndefined();
    }
  });
  it('HIP: a library found under a default name with neither /dev/kfd nor /dev/dxg (a ROCm package on an NVIDIA host, as on the H200): no device, nothing loaded, no process', () => {
    writeFileSync(join(work, 'libamdhip64.so.6'), '');
    const root = mkdtempSync(join(work, 'root-'));
    mkdirSync(join(root, 'dev'));
    writeFileSync(join(root, 'dev', 'nvidia0'), '');
    const report = hip.registers ? hip.notFound!({ LD_LIBRARY_PATH: work }, root) : undefined;
    expect(report).toEqual({ backend: 'hip', library: null, devices: 0, note: 'HIP: no device here: no /dev/kfd or /dev/dxg (its kernel driver is not loaded); libamdhip64.so.6 not loaded' });
    // a library the variable names is loaded as asked, device node or not
    expect(hip.registers && hip.notFound!({ MAPPED_REG_HIP_LIBRARY: join(work, 'libamdhip64.so.6') }, root)).toBeUndefined();
    // CUDA states no device node: its library found is always loaded
    expect(cuda.registers && cuda.notFound!({ MAPPED_REG_CUDA_LIBRARY: join(work, 'libamdhip64.so.6') }, root)).toBeUndefined();
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

describe("the spare runner's guess, before the options, of whether it will be a GPU driver's discovering process", () => {
  it('yes where the first group that needs a process is a GPU driver\'s (it then makes Vitest ready at once), no where every GPU driver is answered without one', () => {
    const missing = (name: string): string => join(work, 'missing', name);
    expect(spareLikelyRegisters({ MAPPED_REG_CUDA_LIBRARY: buildDoubles().cuda, MAPPED_REG_HIP_LIBRARY: missing('libamdhip64.so') })).toBe(true);
    // CUDA's library missing, HIP's there: HIP's group is the first to need a process
    expect(spareLikelyRegisters({ MAPPED_REG_CUDA_LIBRARY: missing('libcuda.so.1'), MAPPED_REG_HIP_LIBRARY: buildDoubles().hip })).toBe(true);
    // neither: the spare goes to the OpenCL, Vulkan and CPU group, which loads no Vitest
    expect(spareLikelyRegisters({ MAPPED_REG_CUDA_LIBRARY: missing('libcuda.so.1'), MAPPED_REG_HIP_LIBRARY: missing('libamdhip64.so') })).toBe(false);
  });
});
