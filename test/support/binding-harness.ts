// What the binding tests (test/cuda.test.ts, test/hip.test.ts) set up around a driver double loaded by path: the
// double's test-only counters, the environment variables a test sets and must give back, and file-backed
// mappings unmapped after each test.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { buildDoubles } from '../double/build.js';
import { keepEnv } from './kept-env.js';
import { MAP, OPEN_ACCESS, OPEN_FLAGS, PROT, closeFd, mmap, munmap, openFile, pwrite, type Mapping } from '../../bindings/libc.js';

/** The double's test-only exports (test/double/common.c) of one loaded copy. */
export interface DoubleExports {
  registrations(): number;
  calls(name: string): number;
}

export function exportsOf(path: string): DoubleExports {
  const lib = koffi.load(path);
  const count = lib.func('int double_registration_count(void)');
  const calls = lib.func('int double_calls(const char *name)');
  return { registrations: () => count() as number, calls: (name) => calls(name) as number };
}

export interface FileMappings {
  /** A read-only MAP_SHARED mapping of a new file holding `content`. */
  map(content: Uint8Array): Mapping;
  /** Unmaps every mapping made so far. */
  unmapAll(): void;
}

/** Mappings of files made in the folder `dir()` names (read when a mapping is made, so it may be set later). */
export function fileMappings(dir: () => string): FileMappings {
  const made: Mapping[] = [];
  let serial = 0;
  return {
    map(content) {
      const fd = openFile(join(dir(), `data-${++serial}.bin`), OPEN_ACCESS.RDWR | OPEN_FLAGS.CREAT);
      try {
        pwrite(fd, content, 0);
        const m = mmap(content.length, PROT.READ, MAP.SHARED, fd, 0);
        made.push(m);
        return m;
      } finally {
        closeFd(fd);
      }
    },
    unmapAll: () => made.splice(0).forEach((m) => munmap(m)),
  };
}

/** `n` bytes that differ from their neighbours and from another `seed`'s. */
export function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed + (i >> 8)) & 0xff;
  return b;
}

/** What a binding test file has once its fixture's beforeAll ran. */
export interface BindingState {
  /** The test file's own temp folder. */
  dir: string;
  /** The double of the backend under test, and the other backend's (a library without this one's symbols). */
  doublePath: string;
  otherDoublePath: string;
  /** The test-only exports of the double at doublePath. */
  exports: DoubleExports;
}

export interface BindingFixture {
  /** Filled in before the test file's own beforeAll hooks run. */
  state: BindingState;
  fileMapping(content: Uint8Array): Mapping;
  restoreEnv(key: string): void;
  /** A copy of the double in the temp folder, `<name>_<n>.so`: loaded, a separate instance with its own state. */
  freshCopy(name: string): string;
}

/**
 * Registers a binding test file's hooks: before all, `envKeys` unset, the doubles built and a temp folder
 * `<backend>-binding-XXXXXX` made; after each test, its mappings unmapped; after all, the variables given back and
 * the folder removed.
 */
export function bindingFixture(backend: 'cuda' | 'hip', envKeys: string[]): BindingFixture {
  const kept = keepEnv(envKeys);
  const state = {} as BindingState; // filled in by beforeAll, before any test reads it
  const mappings = fileMappings(() => state.dir);
  beforeAll(() => {
    kept.clear();
    const built = buildDoubles();
    state.doublePath = backend === 'cuda' ? built.cuda : built.hip;
    state.otherDoublePath = backend === 'cuda' ? built.hip : built.cuda;
    state.dir = mkdtempSync(join(tmpdir(), `${backend}-binding-`));
    state.exports = exportsOf(state.doublePath);
  });
  afterEach(() => mappings.unmapAll());
  afterAll(() => {
    kept.restoreAll();
    if (state.dir) rmSync(state.dir, { recursive: true, force: true });
  });
  let copies = 0;
  const freshCopy = (name: string): string => {
    const path = join(state.dir, `${name}_${++copies}.so`);
    copyFileSync(state.doublePath, path);
    return path;
  };
  return { state, fileMapping: mappings.map, restoreEnv: kept.restore, freshCopy };
}
