// Finding the user-space runtimes installed side by side (docs/runtimes.md): the system's (what the default search
// loads, or MAPPED_REG_*_LIBRARY), ROCm's /opt/rocm*/lib/libamdhip64.so*, CUDA's compat drivers
// /usr/local/cuda*/compat/libcuda.so.1, and those the user names; each probed in a process of its own
// (cli/runtime-probe-child.ts) for its version and whether it starts. One file found under several names (the
// /opt/rocm link, libamdhip64.so and .so.7) is one runtime.
import { spawnSync } from 'node:child_process';
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RuntimeBackend, RuntimeProbe } from '../results/runtime.js';
import { UsageError } from './usage-error.js';

const child = join(dirname(fileURLToPath(import.meta.url)), 'runtime-probe-child.js');
/** Seconds a probe may take (a runtime that hangs in its init is a row that says so). */
const PROBE_TIMEOUT_S = 60;

/** The variable that makes a process load this runtime (the backend's MAPPED_REG_*_LIBRARY). */
export const RUNTIME_ENV: Record<RuntimeBackend, string> = { cuda: 'MAPPED_REG_CUDA_LIBRARY', hip: 'MAPPED_REG_HIP_LIBRARY' };

/** A runtime found: where, how it is called, and what its probe said. */
export interface FoundRuntime {
  readonly backend: RuntimeBackend;
  readonly label: string;
  /** The system's (the default search), one installed under the roots, or one named by --runtime. */
  readonly source: 'system' | 'installed' | 'named';
  /** The path loaded (the system's: the file its probe mapped, or its default name when it did not load). */
  readonly path: string;
  readonly probe: RuntimeProbe;
}

/** The backend a named library is of, by its file's name. */
function backendOfLibrary(path: string): RuntimeBackend | undefined {
  const name = basename(path);
  if (name.startsWith('libcuda')) return 'cuda';
  if (name.startsWith('libamdhip64')) return 'hip';
  return undefined;
}

const list = (dir: string): string[] => {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
};

const real = (p: string): string | undefined => {
  try {
    return statSync(p).isFile() ? realpathSync(p) : undefined;
  } catch {
    return undefined;
  }
};

/** The runtimes installed under `root` (/ on a machine; a fake tree in tests): path and label, one per real file. */
function installedRuntimes(root: string, backends: readonly RuntimeBackend[]): { backend: RuntimeBackend; path: string; label: string }[] {
  const out: { backend: RuntimeBackend; path: string; label: string }[] = [];
  if (backends.includes('hip')) {
    for (const d of list(join(root, 'opt')).filter((n) => n.startsWith('rocm'))) {
      const lib = join(root, 'opt', d, 'lib');
      for (const f of list(lib).filter((n) => /^libamdhip64\.so(\.|$)/.test(n))) {
        const file = real(join(lib, f));
        // the folder's real name and path: /opt/rocm, a link to /opt/rocm-7.2.4, is rocm-7.2.4
        const dir = realpathSync(join(root, 'opt', d));
        if (file) out.push({ backend: 'hip', path: join(dir, 'lib', f), label: basename(dir) });
      }
    }
  }
  if (backends.includes('cuda')) {
    for (const d of list(join(root, 'usr', 'local')).filter((n) => n.startsWith('cuda'))) {
      const path = join(root, 'usr', 'local', d, 'compat', 'libcuda.so.1');
      if (real(path)) out.push({ backend: 'cuda', path, label: `${basename(realpathSync(join(root, 'usr', 'local', d)))}-compat` });
    }
  }
  return out.sort((a, b) => (a.backend === b.backend ? (a.label < b.label ? -1 : a.label > b.label ? 1 : 0) : 0));
}

/** The probe of one runtime, in a process of its own; a probe that crashed or hung is a runtime that did not start. */
function probeInChild(backend: RuntimeBackend, library: string | undefined, env: NodeJS.ProcessEnv = process.env): RuntimeProbe {
  const r = spawnSync(process.execPath, [child, backend, library ?? ''], {
    env: library ? { ...env, [RUNTIME_ENV[backend]]: library } : env,
    encoding: 'utf8',
    timeout: PROBE_TIMEOUT_S * 1000,
    killSignal: 'SIGKILL',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const named = library ?? env[RUNTIME_ENV[backend]] ?? (backend === 'cuda' ? 'libcuda.so.1' : 'libamdhip64.so');
  const last = r.stdout.trim().split('\n').pop() ?? '';
  try {
    if (r.status === 0) return JSON.parse(last) as RuntimeProbe;
  } catch {
    // not a probe's line: told below
  }
  const how = r.error ? `${r.error.message}` : r.signal ? `its process ended by ${r.signal}` : `its process exited ${r.status}`;
  const said = r.stderr.trim().split('\n').pop();
  return { backend, library: named, loaded: false, started: false, reason: `did not load: ${how}${said ? `: ${said}` : ''}` };
}

/** Unique labels within a backend: a second `rocm-7.2.4` is `rocm-7.2.4#2` (each backend has its `system`). */
function uniqueLabels<T extends { label: string; backend: string }>(items: T[]): T[] {
  const seen = new Map<string, number>();
  return items.map((x) => {
    const key = `${x.backend}\0${x.label}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    return n === 1 ? x : { ...x, label: `${x.label}#${n}` };
  });
}

/**
 * Every runtime of `backends`: the system's first, then those under `root`, then those `named`; each probed once
 * (one real file, one runtime). A named path that is not a file, or not of a runtime's name, is bad input.
 * The system's runtime of a backend that has none here is left out.
 */
export function findRuntimes(o: { backends: readonly RuntimeBackend[]; root: string; named: readonly string[] }, env: NodeJS.ProcessEnv = process.env): FoundRuntime[] {
  const named = o.named.map((p) => {
    const backend = backendOfLibrary(p);
    if (!backend) throw new UsageError(`--runtime ${p}: not a runtime's library by its name (libcuda*, libamdhip64*)`);
    if (!real(p)) throw new UsageError(`--runtime ${p}: no such file`);
    return { backend, path: p, label: p };
  });
  const found: FoundRuntime[] = [];
  const files = new Set<string>();
  const add = (backend: RuntimeBackend, path: string | undefined, label: string, source: FoundRuntime['source']): void => {
    const file = path ? real(path) : undefined;
    if (file && files.has(file)) return;
    const probe = probeInChild(backend, path, env);
    if (probe.file && files.has(probe.file)) return;
    if (source === 'system' && !probe.loaded && !env[RUNTIME_ENV[backend]]) return;
    if (probe.file) files.add(probe.file);
    if (file) files.add(file);
    found.push({ backend, label, source, path: path ?? probe.file ?? probe.library, probe });
  };
  for (const b of o.backends) add(b, undefined, 'system', 'system');
  for (const r of installedRuntimes(o.root, o.backends)) add(r.backend, r.path, r.label, 'installed');
  for (const r of named) if (o.backends.includes(r.backend)) add(r.backend, r.path, r.label, 'named');
  return uniqueLabels(found);
}
