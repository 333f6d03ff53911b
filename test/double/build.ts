// Builds the driver doubles (test/double/*.c) into test/double/build/ with the machine's C compiler.
// Synchronous, so that a test file can call it at module load or in beforeAll.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Absolute paths of the built doubles. */
export interface DoublePaths {
  /** libcuda_double.so: the ABI of libcuda.so.1 (see test/double/README.md). */
  cuda: string;
  /** libamdhip64_double.so: the ABI of libamdhip64.so. */
  hip: string;
  /** libfake_double.so: the driver of the test-only fake backend (test/support/fake-backend.ts), with its own ABI and codes. */
  fake: string;
  /** libnvidia-ml_double.so: the ABI of libnvidia-ml.so.1 for the calls bindings/gpu-users.ts makes. */
  nvml: string;
  /** libhost_busy_double.so: an LD_PRELOAD library pacing large memmove calls ("host memory busy"). */
  hostBusy: string;
}

const here = dirname(fileURLToPath(import.meta.url));
/** Where the libraries go (git-ignored). */
export const DOUBLE_BUILD_DIR = join(here, 'build');

const FLAGS = ['-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-std=gnu11', '-fvisibility=hidden', '-pthread'];

interface Target {
  output: string;
  /** The C files compiled together. */
  sources: string[];
  /** Headers whose change means a rebuild. */
  headers: string[];
  /** Libraries linked after the sources. */
  libs: string[];
  /** -D flags: what this library file carries of its own (a runtime side by side, common.h's DBL_BUILD_*). */
  defines?: string[];
  /**
   * A library it is linked against that is then not there: the file does not load ("cannot open shared object
   * file"), as a runtime whose dependency is missing.
   */
  missingDependency?: string;
}

/** A driver double: its API's file on the shared engine (common.c, the reference checks' reference*.c). */
function engine(output: string, api: string): Target {
  // libm: the noise's log, exp, sqrt and cos (MAPPED_REG_DOUBLE_NOISE)
  return { output, sources: [api, 'common.c', 'reference.c', 'reference_copies.c', 'events.c'], headers: ['common.h', 'reference.h', 'gbps.h', 'pace.h'], libs: ['-lm'] };
}

const TARGETS: Record<keyof DoublePaths, Target> = {
  cuda: engine('libcuda_double.so', 'cuda_double.c'),
  hip: engine('libamdhip64_double.so', 'hip_double.c'),
  fake: engine('libfake_double.so', 'fake_double.c'),
  // dlsym(RTLD_NEXT) finds the real memmove: libdl, for a glibc older than 2.34
  // self-contained: it shares nothing with the driver engine
  nvml: { output: 'libnvidia-ml_double.so', sources: ['nvml_double.c'], headers: [], libs: [] },
  hostBusy: { output: 'libhost_busy_double.so', sources: ['host_busy.c'], headers: ['gbps.h', 'pace.h'], libs: ['-ldl'] },
};

/** The compiler command: env CC (may carry arguments, e.g. "ccache gcc"), else cc. */
function compiler(): { cmd: string; args: string[] } {
  const words = (process.env['CC'] ?? '').trim().split(/\s+/).filter((w) => w.length > 0);
  const [cmd, ...args] = words.length > 0 ? words : ['cc'];
  return { cmd: cmd ?? 'cc', args };
}

function sourceHash(cc: { cmd: string; args: string[] }, files: string[], libs: string[], extra: unknown = null): string {
  const h = createHash('sha256');
  h.update(JSON.stringify([cc.cmd, cc.args, FLAGS, libs, extra]));
  for (const f of files) {
    h.update(`\0${f}\0`);
    h.update(readFileSync(join(here, f)));
  }
  return h.digest('hex');
}

function tempName(path: string): string {
  return `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function lockIsStale(lock: string): boolean {
  try {
    if (Date.now() - statSync(lock).mtimeMs > 120_000) return true;
    const pid = Number.parseInt(readFileSync(lock, 'utf8'), 10);
    if (!Number.isInteger(pid) || pid <= 0) return false; // being written
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Runs fn holding a lock file in the build folder, so that test processes started together build once. */
function withBuildLock<T>(fn: () => T): T {
  mkdirSync(DOUBLE_BUILD_DIR, { recursive: true });
  const lock = join(DOUBLE_BUILD_DIR, '.lock');
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      const fd = openSync(lock, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (lockIsStale(lock)) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`buildDoubles: timed out waiting for the build lock ${lock}`);
      sleepMs(50);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

function upToDate(output: string, stamp: string, hash: string): boolean {
  return existsSync(output) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === hash;
}

function buildOne(target: Target, cc: { cmd: string; args: string[] }): string {
  const output = join(DOUBLE_BUILD_DIR, target.output);
  const stamp = `${output}.sha256`;
  const hash = sourceHash(cc, [...target.sources, ...target.headers], target.libs, [target.defines ?? [], target.missingDependency ?? null]);
  if (upToDate(output, stamp, hash)) return output;
  return withBuildLock(() => (upToDate(output, stamp, hash) ? output : compile(target, cc, output, stamp, hash)));
}

function compile(
  target: Target,
  cc: { cmd: string; args: string[] },
  output: string,
  stamp: string,
  hash: string,
): string {
  // Compile under a temporary name and rename: a process that loads the library (or builds it at the
  // same time, from another test file) never sees a half-written file.
  const tmp = tempName(output);
  // a dependency built beside it for the link alone, then removed: the library names a file that is not there
  const depDir = target.missingDependency ? `${tmp}.dep` : undefined;
  try {
    const link: string[] = [];
    if (depDir && target.missingDependency) {
      mkdirSync(depDir);
      const stub = join(depDir, target.missingDependency);
      execFileSync(cc.cmd, [...cc.args, '-shared', '-fPIC', `-Wl,-soname,${target.missingDependency}`, '-o', stub, '-x', 'c', '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
      link.push('-Wl,--no-as-needed', stub);
    }
    execFileSync(cc.cmd, [...cc.args, ...FLAGS, ...(target.defines ?? []), '-o', tmp, ...target.sources.map((s) => join(here, s)), ...target.libs, ...link], {
      cwd: here,
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
    if (depDir) rmSync(depDir, { recursive: true, force: true });
  } catch (err) {
    rmSync(tmp, { force: true });
    if (depDir) rmSync(depDir, { recursive: true, force: true });
    const e = err as NodeJS.ErrnoException & { stderr?: string; stdout?: string };
    if (e.code === 'ENOENT') {
      throw new Error(
        `buildDoubles: no C compiler: '${cc.cmd}' was not found (set CC, or install one: ` +
          `apt-get install gcc libc6-dev). The driver double cannot be built, so these tests cannot run.`,
      );
    }
    const detail = `${e.stderr ?? ''}${e.stdout ?? ''}`.trim() || e.message;
    throw new Error(`buildDoubles: ${cc.cmd} failed to build ${target.output}:\n${detail}`);
  }
  renameSync(tmp, output);
  const stampTmp = tempName(stamp);
  writeFileSync(stampTmp, `${hash}\n`);
  renameSync(stampTmp, stamp);
  return output;
}

/**
 * Compiles the CUDA and the HIP driver doubles, the NVML double and the host-busy library (when their sources, the compiler or the flags changed
 * since the last build) and returns the paths of the libraries. Throws when no C compiler is there or the
 * build fails: the tests that need a double then fail rather than skip.
 */
export function buildDoubles(): DoublePaths {
  const cc = compiler();
  return { cuda: buildOne(TARGETS.cuda, cc), hip: buildOne(TARGETS.hip, cc), fake: buildOne(TARGETS.fake, cc), nvml: buildOne(TARGETS.nvml, cc), hostBusy: buildOne(TARGETS.hostBusy, cc) };
}

/** The runtimes side by side (docs/runtimes.md): library files that each behave as one runtime with no variable set. */
export interface RuntimeDoublePaths {
  /** The HIP double, honest (profile rocm-fixed), reporting HIP 6.4.0: the runtime in use. */
  hipOld: string;
  /** The HIP double, honest (rocm-fixed), reporting HIP 7.3.0: a new release that fixed 7.2.4. */
  hipFixed: string;
  /** The HIP double with ROCm 7.2.4's lies (rocm724), reporting HIP 7.2.4. */
  hip724: string;
  /** A HIP double linked against libhsa-runtime64.so.1, which is not there: it cannot start (does not load). */
  hipBroken: string;
  /** The CUDA double as a compat driver of another release than the kernel module's: cuInit returns 803. */
  cudaCompat: string;
}

// the engine of the HIP and CUDA doubles above: each runtime differs only by its defines
const RUNTIME_TARGETS: Record<keyof RuntimeDoublePaths, Target> = {
  hipOld: { ...engine('libamdhip64_runtime_6.4.0.so', 'hip_double.c'), defines: ['-DDBL_BUILD_PROFILE="rocm-fixed"', '-DDBL_BUILD_HIP_VERSION=60400000L'] },
  hipFixed: { ...engine('libamdhip64_runtime_7.3.0.so', 'hip_double.c'), defines: ['-DDBL_BUILD_PROFILE="rocm-fixed"', '-DDBL_BUILD_HIP_VERSION=70300000L'] },
  hip724: { ...engine('libamdhip64_runtime_7.2.4.so', 'hip_double.c'), defines: ['-DDBL_BUILD_PROFILE="rocm724"', '-DDBL_BUILD_HIP_VERSION=70200004L'] },
  hipBroken: { ...engine('libamdhip64_runtime_broken.so', 'hip_double.c'), defines: ['-DDBL_BUILD_HIP_VERSION=70100000L'], missingDependency: 'libhsa-runtime64.so.1' },
  cudaCompat: { ...engine('libcuda_compat_double.so', 'cuda_double.c'), defines: ['-DDBL_BUILD_INIT_MISMATCH=1', '-DDBL_BUILD_CUDA_VERSION=13000'] },
};

/** Compiles the runtime doubles (when their sources, flags or defines changed) and returns their paths. */
export function buildRuntimeDoubles(): RuntimeDoublePaths {
  const cc = compiler();
  const out = {} as RuntimeDoublePaths;
  for (const k of Object.keys(RUNTIME_TARGETS) as (keyof RuntimeDoublePaths)[]) out[k] = buildOne(RUNTIME_TARGETS[k], cc);
  return out;
}
