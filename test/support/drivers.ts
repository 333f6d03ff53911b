// Loads the C driver double through the real bindings. Each configuration gets its own copy of the library
// (its own dlopen handle, so its own driver state and its own binding cache: cuInit reads the profile once).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';
import { buildDoubles } from '../double/build.js';
import { discover, type Backend, type Discovery } from '../../bindings/discovery.js';

const copies = mkdtempSync(join(tmpdir(), 'mapped-reg-doubles-'));
process.on('exit', () => rmSync(copies, { recursive: true, force: true }));
let serial = 0;

export interface DoubleConfig {
  profile?: string;
  faults?: string;
  hipVersion?: number;
}

export interface Loaded {
  discovery: Discovery;
  /** The library copy loaded, for the test-only exports. */
  path: string;
  registrationCount(): number;
  calls(name: string): number;
  /** CUDA: how many times device `dev`'s primary context was created (0 for HIP, which has no such count). */
  contextsCreated(dev: number): number;
}

const ENV = ['MAPPED_REG_DOUBLE_PROFILE', 'MAPPED_REG_DOUBLE_FAULTS', 'MAPPED_REG_DOUBLE_HIP_VERSION'] as const;

/** Discovers `backend` through a fresh copy of its double configured as asked; the environment is restored. */
export function loadDouble(backend: 'cuda' | 'hip', config: DoubleConfig = {}): Loaded {
  const built = buildDoubles();
  const path = join(copies, `${backend}-${serial++}.so`);
  copyFileSync(backend === 'cuda' ? built.cuda : built.hip, path);
  const libraryEnv = backend === 'cuda' ? 'MAPPED_REG_CUDA_LIBRARY' : 'MAPPED_REG_HIP_LIBRARY';
  const saved = Object.fromEntries([libraryEnv, ...ENV].map((k) => [k, process.env[k]]));
  process.env[libraryEnv] = path;
  if (config.profile) process.env.MAPPED_REG_DOUBLE_PROFILE = config.profile;
  else delete process.env.MAPPED_REG_DOUBLE_PROFILE;
  if (config.faults) process.env.MAPPED_REG_DOUBLE_FAULTS = config.faults;
  else delete process.env.MAPPED_REG_DOUBLE_FAULTS;
  if (config.hipVersion) process.env.MAPPED_REG_DOUBLE_HIP_VERSION = String(config.hipVersion);
  else delete process.env.MAPPED_REG_DOUBLE_HIP_VERSION;
  let discovery: Discovery;
  try {
    discovery = discover([backend as Backend]);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  const lib = koffi.load(path);
  const count = lib.func('int double_registration_count(void)') as () => number;
  const calls = lib.func('int double_calls(const char *name)') as (name: string) => number;
  const created = backend === 'cuda' ? (lib.func('int double_contexts_created(int dev)') as (dev: number) => number) : () => 0;
  return { discovery, path, registrationCount: () => count(), calls: (name) => calls(name), contextsCreated: (dev) => created(dev) };
}
