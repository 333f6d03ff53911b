// A user-space runtime as data (docs/runtimes.md): what a probe of one library file found (its version, whether
// it loaded and started, and why not), and what a run of the suite under it records in its results (`runtime`).
// Nothing here loads a library: bindings/runtime-probe.ts probes, in a process of its own per runtime.

/** The backends whose user-space runtime can be swapped for another (MAPPED_REG_CUDA_LIBRARY, MAPPED_REG_HIP_LIBRARY). */
export const RUNTIME_BACKENDS = ['cuda', 'hip'] as const;
export type RuntimeBackend = (typeof RUNTIME_BACKENDS)[number];

/** What one process that loaded one runtime found. */
export interface RuntimeProbe {
  readonly backend: RuntimeBackend;
  /** The library as named: a path, or the default name the system's loader resolves (libcuda.so.1, libamdhip64.so). */
  readonly library: string;
  /** The file the loader mapped (its real path), where it loaded. */
  readonly file?: string;
  readonly loaded: boolean;
  /** The runtime's own version (cuDriverGetVersion, hipRuntimeGetVersion), e.g. "13.0", "7.2.4". */
  readonly version?: string;
  readonly versionRaw?: number;
  /** Its init succeeded (devices or "no device"). */
  readonly started: boolean;
  readonly devices?: number;
  /** Why it did not load or start, one line. */
  readonly reason?: string;
  /** The init's result code and its name, where init failed. */
  readonly code?: number;
  readonly codeName?: string;
  /** CUDA: the user-space driver's release, from its file's name (libcuda.so.580.95.05), where it says. */
  readonly release?: string;
  /** CUDA: the kernel module's version (/sys/module/nvidia/version), where readable. */
  readonly kernelModule?: string;
}

/** What a results file records of the runtime it was run under (`runtime`, optional: a plain run has none). */
export interface RuntimeRecord {
  readonly backend: RuntimeBackend;
  /** The short name in the matrix: `system`, `rocm-7.2.4`, `cuda-13.0-compat`, or the path named. */
  readonly label: string;
  /** The library file (as loaded). */
  readonly path: string;
  readonly version?: string;
  /** The baseline, or a candidate gated against it. */
  readonly role: 'baseline' | 'candidate';
  /** The baseline's label (a candidate's). */
  readonly baseline?: string;
  readonly release?: string;
  readonly kernelModule?: string;
}

/** Dotted numbers compared part by part (580.95.05 < 580.159.04); undefined when either is not one. */
export function compareReleases(a: string, b: string): number | undefined {
  const parts = (s: string): number[] | undefined => (/^\d+(\.\d+)*$/.test(s) ? s.split('.').map(Number) : undefined);
  const x = parts(a);
  const y = parts(b);
  if (!x || !y) return undefined;
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/**
 * Why a runtime did not start, in words, beyond its code: a CUDA user-space driver (a compat libcuda) of another
 * release than the kernel module's. The kernel driver is shared: a side-by-side user-space driver runs over it only
 * where NVIDIA's forward compatibility allows (a newer user-space driver over an older kernel module, on the GPUs
 * and branches that support it); an older one never does.
 */
export function whyNotStarted(p: RuntimeProbe): string | undefined {
  if (p.started || !p.loaded) return undefined;
  if (p.backend === 'cuda' && p.code === 803) {
    const order = p.release && p.kernelModule ? compareReleases(p.release, p.kernelModule) : undefined;
    const sides = p.release && p.kernelModule ? `this user-space driver is release ${p.release}, the kernel module ${p.kernelModule}` : 'this user-space driver is not of the kernel module\'s release';
    if (order !== undefined && order < 0) return `${sides}: a compat driver older than the kernel module never runs over it (forward compatibility runs only a newer user-space driver over an older kernel module)`;
    if (order !== undefined && order > 0) return `${sides}: forward compatibility (a newer user-space driver over an older kernel module) is refused for this GPU or branch`;
    return `${sides}: the user-space driver and the kernel module must be of one release, or the user-space driver a newer compat driver where forward compatibility is supported`;
  }
  if (p.backend === 'hip' && p.code === 35) return 'the runtime is newer than the kernel driver (amdgpu) supports';
  return undefined;
}
