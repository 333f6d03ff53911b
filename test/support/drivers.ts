// Loads the C driver double through the real bindings. Each configuration gets its own copy of the library
// (its own dlopen handle, so its own driver state and its own binding cache: cuInit reads the profile once).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';
import { afterAll } from 'vitest';
import { buildDoubles } from '../double/build.js';
import { discover, type Backend, type Discovery } from '../../bindings/discovery.js';
import { capturingStderr } from './stderr.js';

const copies = mkdtempSync(join(tmpdir(), 'mapped-reg-doubles-'));
// after the importing test file's tests: Vitest ends its worker processes without their 'exit' handlers running
afterAll(() => rmSync(copies, { recursive: true, force: true }));
let serial = 0;

export interface DoubleConfig {
  profile?: string;
  faults?: string;
  hipVersion?: number;
  /** MAPPED_REG_DOUBLE_DEVICES. */
  devices?: number;
  /** MAPPED_REG_DOUBLE_RATES, e.g. `registered=0.1,pinned=0.05`. */
  rates?: string;
  /** MAPPED_REG_DOUBLE_RATES_<N>, by physical device index. */
  ratesOf?: Record<number, string>;
  /** MAPPED_REG_DOUBLE_ORDER, e.g. `1,0`. */
  order?: string;
  /** MAPPED_REG_DOUBLE_NOISE, e.g. `sd=2.6%,drift=1%,seed=3`. */
  noise?: string;
  /** MAPPED_REG_DOUBLE_ATTRIBUTES, e.g. `host_pointer=0` (test/double/README.md). */
  attributes?: string;
}

export interface Loaded {
  discovery: Discovery;
  /** The library copy loaded, for the test-only exports. */
  path: string;
  registrationCount(): number;
  calls(name: string): number;
  /** How many copies from a source of `kind` were paced so far on API ordinal `device` (test/double/common.c). */
  paced(device: number, kind: 'registered' | 'pinned' | 'pageable'): number;
  /** The GB/s that `kind` is paced at on API ordinal `device` (0: not paced). */
  rate(device: number, kind: 'registered' | 'pinned' | 'pageable'): number;
  /** CUDA: how many times device `dev`'s primary context was created (0 for HIP, which has no such count). */
  contextsCreated(dev: number): number;
}

const ENV = [
  'MAPPED_REG_DOUBLE_PROFILE',
  'MAPPED_REG_DOUBLE_FAULTS',
  'MAPPED_REG_DOUBLE_HIP_VERSION',
  'MAPPED_REG_DOUBLE_DEVICES',
  'MAPPED_REG_DOUBLE_RATES',
  'MAPPED_REG_DOUBLE_ORDER',
  'MAPPED_REG_DOUBLE_NOISE',
  'MAPPED_REG_DOUBLE_ATTRIBUTES',
  ...Array.from({ length: 16 }, (_, i) => `MAPPED_REG_DOUBLE_RATES_${i}`),
];

/** The double's environment for `config` (every variable of ENV: a value, or undefined for unset). */
export function doubleEnv(config: DoubleConfig): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = Object.fromEntries(ENV.map((k) => [k, undefined]));
  if (config.profile) env.MAPPED_REG_DOUBLE_PROFILE = config.profile;
  if (config.faults) env.MAPPED_REG_DOUBLE_FAULTS = config.faults;
  if (config.hipVersion) env.MAPPED_REG_DOUBLE_HIP_VERSION = String(config.hipVersion);
  if (config.devices !== undefined) env.MAPPED_REG_DOUBLE_DEVICES = String(config.devices);
  if (config.rates !== undefined) env.MAPPED_REG_DOUBLE_RATES = config.rates;
  if (config.order !== undefined) env.MAPPED_REG_DOUBLE_ORDER = config.order;
  if (config.noise !== undefined) env.MAPPED_REG_DOUBLE_NOISE = config.noise;
  if (config.attributes !== undefined) env.MAPPED_REG_DOUBLE_ATTRIBUTES = config.attributes;
  for (const [n, rates] of Object.entries(config.ratesOf ?? {})) env[`MAPPED_REG_DOUBLE_RATES_${n}`] = rates;
  return env;
}

/** Discovers `backend` through a fresh copy of its double configured as asked; the environment is restored. */
export function loadDouble(backend: 'cuda' | 'hip', config: DoubleConfig = {}): Loaded {
  const built = buildDoubles();
  const path = join(copies, `${backend}-${serial++}.so`);
  copyFileSync(backend === 'cuda' ? built.cuda : built.hip, path);
  const libraryEnv = backend === 'cuda' ? 'MAPPED_REG_CUDA_LIBRARY' : 'MAPPED_REG_HIP_LIBRARY';
  const saved = Object.fromEntries([libraryEnv, ...ENV].map((k) => [k, process.env[k]]));
  process.env[libraryEnv] = path;
  for (const [k, v] of Object.entries(doubleEnv(config))) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  let discovery: Discovery;
  try {
    // a setting the double refuses is said in one line on stderr (test/double-rates.test.ts reads it from a child process)
    discovery = capturingStderr(() => discover([backend as Backend])).value;
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
  const paced = lib.func('int double_paced(int device, const char *kind)') as (device: number, kind: string) => number;
  const rate = lib.func('double double_rate(int device, const char *kind)') as (device: number, kind: string) => number;
  return { discovery, path, registrationCount: () => count(), calls: (name) => calls(name), paced: (d, k) => paced(d, k), rate: (d, k) => rate(d, k), contextsCreated: (dev) => created(dev) };
}
