// One user-space runtime probed in this process (the caller's process is one of its own: a process loads one
// runtime only, cli/runtime-discovery.ts): the file the loader mapped, the version the library reports of itself
// (cuDriverGetVersion, hipRuntimeGetVersion: neither needs an init), then whether its init starts, and why not.
import { readFileSync, realpathSync } from 'node:fs';
import { basename } from 'node:path';
import type { RuntimeBackend, RuntimeProbe } from '../results/runtime.js';
import { CUDA_LIBRARY, type CudaDriver, cudaVersionText, loadCuda, nvidiaModuleVersion } from './cuda.js';
import { DriverError } from './errors.js';
import { HIP_LIBRARIES, type HipDriver, hipVersionText, loadHip } from './hip.js';
import { errorText } from '../src/fatal.js';

/** The start of the library file's name, as the loader mapped it. */
const FILE_PREFIX: Record<RuntimeBackend, string> = { cuda: 'libcuda', hip: 'libamdhip64' };

/** The real path of the library of `backend` this process mapped (/proc/self/maps), or of `named` when it is a path. */
function mappedFile(backend: RuntimeBackend, named: string): string | undefined {
  if (named.includes('/')) {
    try {
      return realpathSync(named);
    } catch {
      return undefined;
    }
  }
  let maps = '';
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of maps.split('\n')) {
    const path = line.slice(line.indexOf('/'));
    if (line.includes('/') && basename(path).startsWith(FILE_PREFIX[backend])) return path;
  }
  return undefined;
}

/** libcuda.so.580.95.05: the release its file's name carries. */
const releaseOf = (file: string | undefined): string | undefined => (file ? /\.so\.(\d+\.\d+(?:\.\d+)?)$/.exec(file)?.[1] : undefined);

/** Probes the runtime of `backend` at `library` (undefined: the system's, as the default search finds it). */
export function probeRuntime(backend: RuntimeBackend, library: string | undefined): RuntimeProbe {
  const named = library ?? (backend === 'cuda' ? CUDA_LIBRARY : HIP_LIBRARIES[0]!);
  let loaded: { backend: 'cuda'; driver: CudaDriver } | { backend: 'hip'; driver: HipDriver };
  try {
    loaded = backend === 'cuda' ? { backend, driver: loadCuda(library) } : { backend, driver: loadHip(library) };
  } catch (e) {
    return { backend, library: named, loaded: false, started: false, reason: `did not load: ${errorText(e)}` };
  }
  const { driver } = loaded;
  const file = mappedFile(backend, driver.path) ?? driver.path;
  const shown = library ?? driver.path;
  // CUDA's release (its file's name) and kernel module, each read once
  const release = backend === 'cuda' ? releaseOf(file) : undefined;
  const kernelModule = backend === 'cuda' ? nvidiaModuleVersion() : undefined;
  const facts = { ...(release ? { release } : {}), ...(kernelModule ? { kernelModule } : {}) };
  let version: { text: string; raw: number } | undefined;
  try {
    if (loaded.backend === 'cuda') {
      const raw = loaded.driver.driverVersion();
      version = { text: cudaVersionText(raw), raw };
    } else {
      const v = loaded.driver.runtimeVersion();
      version = { text: hipVersionText(v), raw: v.raw };
    }
  } catch {
    version = undefined;
  }
  const base = { backend, library: shown, file, loaded: true, ...(version ? { version: version.text, versionRaw: version.raw } : {}), ...facts };
  try {
    const { count } = driver.devices();
    return { ...base, started: true, devices: count };
  } catch (e) {
    const code = e instanceof DriverError ? { code: e.code, codeName: e.codeName } : {};
    return { ...base, started: false, reason: `did not start: ${errorText(e)}`, ...code };
  }
}
