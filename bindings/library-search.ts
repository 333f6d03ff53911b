// Whether the dynamic loader could find a library, asked without loading it: so that the command answers a
// discovery of a GPU driver that is not installed without starting a process for it (a Node.js start, koffi and
// the bindings: some 50 ms of a no-GPU run on 2 cores). Conservative: "cannot be found" only where dlopen(3)
// would not find it either; anything unsure (no ld.so.cache to read: musl, another loader) is "may be found", and
// then the process is started and loads it as before.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** glibc's cache of the libraries in the folders ld.so.conf names (what ldconfig wrote). */
export const LD_SO_CACHE = '/etc/ld.so.cache';

/** The folders glibc's loader searches after its cache (the trusted folders), and the usual multiarch ones. */
export const TRUSTED_DIRS: readonly string[] = ['/lib', '/usr/lib', '/lib64', '/usr/lib64', `/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`, `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`];

/** The cache's bytes, read once per process; null when there is none to read (then every name may be found). */
let cache: Buffer | null | undefined;

function ldCache(path: string): Buffer | null {
  if (path !== LD_SO_CACHE) return readOrNull(path);
  if (cache === undefined) cache = readOrNull(path);
  return cache;
}

function readOrNull(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch {
    return null;
  }
}

/**
 * True when dlopen(`name`) may find a library: a path (with a '/') that exists; a bare name that is in a folder of
 * LD_LIBRARY_PATH, in the loader's cache (its string table holds every name it knows, each ended by a NUL), or in
 * a trusted folder; or a bare name on a host whose cache cannot be read. False only when none of these holds.
 */
export function mayBeFound(name: string, env: NodeJS.ProcessEnv = process.env, cacheFile = LD_SO_CACHE): boolean {
  if (name.includes('/')) return existsSync(name);
  const dirs = [...(env.LD_LIBRARY_PATH ?? '').split(':').filter((d) => d !== ''), ...TRUSTED_DIRS];
  if (dirs.some((d) => existsSync(join(d, name)))) return true;
  const bytes = ldCache(cacheFile);
  return bytes === null || bytes.includes(Buffer.from(`${name}\0`));
}
