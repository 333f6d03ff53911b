// `npm run bench`: what the conformance suite measures, measured on its own, per CUDA/HIP device, with
// tinybench: host-to-device copies of a registered file mapping against staging, page-locked and pageable
// copies; the PCIe link's limit; what registration costs per GiB with a warm and a cold page cache; one driver
// call through koffi; the native reference (bench/native/staged.c) on the same file; and the wall time,
// phases and peak memory of a whole conformance run. docs/bench.md explains every figure and its target.
// Timings are reported, never judged: the exit status says only whether the bench could measure.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { fsyncSync, mkdtempSync, readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { hostname, release, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import koffi from 'koffi';
import { Bench, type Fn, type FnOptions } from 'tinybench';
import yargs from 'yargs';
import { INTEGRATED } from '../bindings/cuda.js';
import type { DeviceOps } from '../bindings/device-ops.js';
import { type DiscoveredDevice, discover } from '../bindings/discovery.js';
import { MAP_SHARED, PROT_READ, type Mapping, mmap, munmap } from '../bindings/libc.js';
import { makeScratchRegion } from '../bindings/scratch.js';
import { type Host, errorText, hostSlice, registrations, trackedOps, windowSize } from '../src/index.js';
import { MEASURE_OPTIONS, UsageError, measureOptions } from '../cli/options.js';
import { writeAtomically } from '../cli/outputs.js';
import { type Link, readLink } from '../suites/checks/timing.js';
import { type ProcessPeak, type TreePeak, TreeSampler, runnerDevices } from './proc.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** Targets (docs/bench.md). Reported next to the figures, never enforced. */
const TARGETS = {
  /** bench figure / native figure, for the registered and the staged copy. */
  nativeRatio: 0.98,
  /** Peak memory of the run (all its processes together, PSS) and of a device process (VmHWM): 2 x region + 200 MiB. */
  peakMiB: (regionMiB: number): number => 2 * regionMiB + 200,
  /** No GPU: the conformance run's wall time against `node -e 0`'s. */
  noGpuRunOverNodeStart: 30,
} as const;

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('bench: no package.json above the bench');
    dir = up;
  }
}
const root = packageRoot();
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string; dependencies?: Record<string, string> };

// ---- options ----

interface Options {
  runs: number;
  sizeMiB: number;
  scratchDir: string;
  json?: string;
  devices: string[];
  nativeBin?: string;
  dropCaches: boolean;
}

/** The bench's own limit on the region: its copies go through one Uint8Array (at most 2 GiB). */
const MAX_SIZE_MIB = 2048;

/**
 * The options, from the command's definitions where they are the same (cli/options.ts: --runs, --size,
 * --scratch-dir, --device, their defaults and checks), through yargs: `--help` lists them; bad usage is a
 * UsageError (one line, exit 2).
 */
async function parseOptions(argv: string[]): Promise<Options> {
  const a = await yargs(argv)
    .scriptName('npm run bench --')
    .usage('$0 [options]      (node dist/bench/bench.js [options])\n\nPer CUDA/HIP device: registered, staged, page-locked and pageable copies, the link, registration per GiB, one driver call, the native reference; then a whole conformance run, its phases and peak memory (docs/bench.md).')
    .options({
      runs: { ...MEASURE_OPTIONS.runs, describe: 'timed runs of each copy and registration: best and median of N; also given to the conformance run' },
      size: { ...MEASURE_OPTIONS.size, describe: `MiB of the file-backed region (at most ${MAX_SIZE_MIB}); the probe's window is half of it` },
      'scratch-dir': { ...MEASURE_OPTIONS['scratch-dir'], describe: "folder for the scratch file (default: the package's scratch/)" },
      device: { ...MEASURE_OPTIONS.device, describe: 'only this CUDA/HIP device (repeatable), e.g. cuda:0; also given to the conformance run' },
      json: { type: 'string', requiresArg: true, describe: 'write the results as JSON' },
      'native-bin': { type: 'string', requiresArg: true, describe: 'a built bench/native/staged.c to use when no C compiler (cc, or $CC) is found' },
      'drop-caches': { type: 'boolean', default: true, describe: 'as root, also write 1 to /proc/sys/vm/drop_caches for the cold page cache (--no-drop-caches: do not)' },
    })
    .strict()
    .version(false)
    .help()
    .epilogue(
      'Environment: MAPPED_REG_CUDA_LIBRARY, MAPPED_REG_HIP_LIBRARY (the driver to load, as for the command); CC.\n' +
        'Exit status: 0 measured (whatever the figures); 1 some figure could not be measured (see "errors"); 2 bad usage.',
    )
    .fail((msg, err) => {
      throw new UsageError(msg || err?.message || 'bad usage');
    })
    .parseAsync();
  const m = measureOptions({ ...(a.scratchDir !== undefined ? { scratchDir: a.scratchDir } : {}), size: a.size, device: a.device, runs: a.runs }, { maxSizeMiB: MAX_SIZE_MIB });
  return {
    runs: m.runs,
    sizeMiB: m.sizeMiB,
    scratchDir: m.scratchDir,
    devices: m.devices,
    dropCaches: a.dropCaches,
    ...(a.json ? { json: resolve(a.json) } : {}),
    ...(a.nativeBin ? { nativeBin: resolve(a.nativeBin) } : {}),
  };
}

// ---- timing ----

interface Stat {
  bestMs: number;
  medianMs: number;
  meanMs: number;
  samples: number;
}

/** One tinybench task, run synchronously: best (min), median (p50) and mean of its samples. */
function time(name: string, fn: Fn, o: { iterations: number; timeMs?: number; warmup?: boolean; hooks?: FnOptions }): Stat {
  const bench = new Bench({ iterations: o.iterations, time: o.timeMs ?? 0, warmup: o.warmup ?? true, warmupIterations: 1, warmupTime: 0 });
  bench.add(name, fn, { async: false, ...o.hooks });
  bench.runSync();
  const r = bench.tasks[0]!.result;
  if (r.state === 'errored') throw r.error;
  if (r.state !== 'completed') throw new Error(`${name}: tinybench ended ${r.state}`);
  return { bestMs: r.latency.min, medianMs: r.latency.p50, meanMs: r.latency.mean, samples: r.latency.samplesCount };
}

const gbps = (bytes: number, ms: number): number => bytes / (ms / 1000) / 1e9;

interface Copy extends Stat {
  label: string;
  bytes: number;
  bestGBps: number;
  medianGBps: number;
}

function copy(label: string, bytes: number, s: Stat): Copy {
  return { label, bytes, ...s, bestGBps: gbps(bytes, s.bestMs), medianGBps: gbps(bytes, s.medianMs) };
}

// ---- the page cache ----

interface Libc {
  posix_fadvise(fd: number, offset: number, len: number, advice: number): number;
  mincore(addr: bigint, length: number, vec: Buffer): number;
}
let libcExtra: Libc | undefined;
/** Two libc calls the bindings do not declare (the bench is not a suite: it may). */
function libc(): Libc {
  if (!libcExtra) {
    const lib = koffi.load('libc.so.6');
    libcExtra = {
      posix_fadvise: lib.func('int posix_fadvise(int fd, int64_t offset, int64_t len, int advice)'),
      mincore: lib.func('int mincore(void *addr, size_t length, uint8_t *vec)'),
    };
  }
  return libcExtra;
}
const POSIX_FADV_DONTNEED = 4;

/** Fraction of the mapping's pages in the page cache (mincore), or undefined when it cannot be asked. */
function residentFraction(m: Mapping): number | undefined {
  const pages = Math.ceil(m.length / 4096);
  const vec = Buffer.alloc(pages);
  if (libc().mincore(m.address, m.length, vec) !== 0) return undefined;
  let n = 0;
  for (const b of vec) n += b & 1;
  return n / pages;
}

interface Eviction {
  /** What was done, in order: always fsync and posix_fadvise(POSIX_FADV_DONTNEED); as root, drop_caches too. */
  methods: string[];
  /** Why a method did not work (posix_fadvise's error number, drop_caches' error). */
  failures: string[];
}

/** Drops the file's pages from the page cache. Pages mapped into a process (touched) cannot be dropped. */
function evict(fd: number, dropCaches: boolean): Eviction {
  const e: Eviction = { methods: [], failures: [] };
  fsyncSync(fd); // dirty pages are never dropped
  const r = libc().posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (r === 0) e.methods.push('posix_fadvise(DONTNEED)');
  else e.failures.push(`posix_fadvise(DONTNEED) returned ${r}`);
  if (dropCaches) {
    if (process.getuid?.() !== 0) e.failures.push('drop_caches: not root');
    else {
      try {
        writeFileSync('/proc/sys/vm/drop_caches', '1');
        e.methods.push('drop_caches');
      } catch (err) {
        e.failures.push(`drop_caches: ${(err as Error).message}`);
      }
    }
  }
  return e;
}

// ---- one device ----

interface RegistrationCost {
  /** ms per GiB, best and median of N. */
  registerMsPerGiB: { best: number; median: number };
  unregisterMsPerGiB: { best: number; median: number };
  totalMsPerGiB: { best: number; median: number };
  register: Stat;
  unregister: Stat;
}

interface DeviceBench {
  id: string;
  name: string;
  api: 'CUDA' | 'HIP';
  pciBusId: string | null;
  driver: { name: string; version: string };
  region: { bytes: number; fsType: string; dir: string };
  registerFlags?: number;
  copies: { registered?: Copy; staged?: Copy; pageLocked?: Copy; pageable?: Copy; stagedHalf?: Copy };
  link: (Link & { registeredShare?: number }) | { error: string };
  registration: {
    warm?: RegistrationCost;
    cold?: RegistrationCost & { eviction: { methods: string[]; failures: string[]; residentAfterMax?: number } };
  };
  driverCall?: { call: string; meanUs: number; medianUs: number; bestUs: number; callsPerSample: number; samples: number };
  native: NativeResult;
  errors: string[];
}

interface NativeResult {
  status: 'ran' | 'no-compiler' | 'build-failed' | 'failed' | 'not-run';
  message?: string;
  binary?: { path: string; how: string };
  registeredGBps?: number;
  stagedGBps?: number;
  /** bench best / native best (target >= 0.98). */
  registeredRatio?: number;
  stagedRatio?: number;
  raw?: NativeJson;
}

interface NativeJson {
  api: string;
  device: number;
  bytes: number;
  runs: number;
  flags: number;
  results: Record<string, { label: string; bestS: number; medianS: number; gbps: number; medianGBps: number }>;
}

const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function benchDevice(d: DiscoveredDevice, o: Options, native: NativeBinary): DeviceBench {
  const n = d.native!;
  const bytes = o.sizeMiB * MiB;
  say(`${d.id}: scratch file of ${o.sizeMiB} MiB in ${o.scratchDir}`);
  const region = makeScratchRegion(o.scratchDir, bytes);
  const result: DeviceBench = {
    id: d.id,
    name: d.name,
    api: n.api,
    pciBusId: d.pciBusId,
    driver: d.driver,
    region: { bytes, fsType: region.fsType, dir: o.scratchDir },
    copies: {},
    link: { error: 'not read' },
    registration: {},
    native: { status: 'not-run' },
    errors: [],
  };
  const attempt = (what: string, f: () => void): void => {
    try {
      f();
    } catch (e) {
      result.errors.push(`${what}: ${errorText(e)}`);
    }
  };
  const kept: Mapping[] = [];
  try {
    n.withOps(bytes, (ops) => {
      result.registerFlags = ops.registerFlags;
      const tracked = trackedOps(ops);
      const register = (h: Host): void => tracked.register(h);
      const unregister = (h: Host): void => tracked.unregister(h);
      const perGiB = (s: Stat): { best: number; median: number } => ({ best: (s.bestMs * GiB) / bytes, median: (s.medianMs * GiB) / bytes });
      const cost = (reg: Stat, unreg: Stat): RegistrationCost => {
        const r = perGiB(reg);
        const u = perGiB(unreg);
        return { registerMsPerGiB: r, unregisterMsPerGiB: u, totalMsPerGiB: { best: r.best + u.best, median: r.median + u.median }, register: reg, unregister: unreg };
      };

      // 1. Cold page cache, before anything touches region.map: each iteration maps the file afresh, drops its
      // pages, then registers (the driver pins them, reading them from the disk), and unmaps afterwards.
      attempt('registration, cold page cache', () => {
        say(`${d.id}: registration with a cold page cache`);
        let m: Mapping | undefined;
        const methods = new Set<string>();
        const failures = new Set<string>();
        let residentAfterMax: number | undefined;
        const fresh = (): Mapping => {
          const map = mmap(bytes, PROT_READ, MAP_SHARED, region.fd, 0);
          const e = evict(region.fd, o.dropCaches);
          e.methods.forEach((x) => methods.add(x));
          e.failures.forEach((x) => failures.add(x));
          const f = residentFraction(map);
          if (f !== undefined) residentAfterMax = Math.max(residentAfterMax ?? 0, f);
          return map;
        };
        const drop = (): void => {
          if (m && !registrations.isPinned(m)) munmap(m);
          else if (m) kept.push(m);
          m = undefined;
        };
        const reg = time('register (cold)', () => register(m!), {
          iterations: o.runs,
          warmup: false,
          hooks: {
            beforeEach: () => {
              m = fresh();
            },
            afterEach: () => {
              try {
                if (m && registrations.isPinned(m)) unregister(m);
              } finally {
                drop();
              }
            },
          },
        });
        const unreg = time('unregister (cold)', () => unregister(m!), {
          iterations: o.runs,
          warmup: false,
          hooks: {
            beforeEach: () => {
              m = fresh();
              register(m);
            },
            afterEach: drop,
          },
        });
        result.registration.cold = { ...cost(reg, unreg), eviction: { methods: [...methods], failures: [...failures], ...(residentAfterMax !== undefined ? { residentAfterMax } : {}) } };
      });

      const map = region.map;
      // 2. Warm page cache: the file's pages are in memory (and mapped after the first registration).
      attempt('registration, warm page cache', () => {
        say(`${d.id}: registration with a warm page cache`);
        const reg = time('register (warm)', () => register(map), { iterations: o.runs, hooks: { afterEach: () => unregister(map) } });
        const unreg = time('unregister (warm)', () => unregister(map), { iterations: o.runs, hooks: { beforeEach: () => register(map) } });
        result.registration.warm = cost(reg, unreg);
      });

      // 3. Copies of the whole region, host to device.
      say(`${d.id}: copies, best and median of ${o.runs}`);
      let pinned: Host | undefined;
      attempt('page-locked buffer', () => {
        pinned = ops.allocHost(bytes);
      });
      attempt('pageable copy', () => {
        result.copies.pageable = copy('pageable (not registered)', bytes, time('pageable', () => ops.upload(map), { iterations: o.runs }));
      });
      if (pinned) {
        const p = pinned;
        attempt('staged copy', () => {
          result.copies.staged = copy('staged: memcpy into page-locked + copy', bytes, time('staged', () => stage(ops, map, p), { iterations: o.runs }));
        });
        attempt('page-locked copy', () => {
          result.copies.pageLocked = copy('page-locked alone', bytes, time('page-locked', () => ops.upload(p), { iterations: o.runs }));
        });
      }
      attempt('registered copy', () => {
        register(map);
        try {
          const label = n.api === 'CUDA' && ops.registerFlags & 0x08 ? 'registered (READ_ONLY)' : `registered (flags 0x${ops.registerFlags.toString(16)})`;
          result.copies.registered = copy(label, bytes, time('registered', () => ops.upload(map), { iterations: o.runs }));
        } finally {
          unregister(map);
        }
      });
      // 4. What the probe times: a window of half the region (rounded down to 64 KiB), staged, while both
      // windows are registered.
      if (pinned) {
        const p = pinned;
        attempt('staged copy of the probe window', () => {
          const w = windowSize(bytes);
          const windows = [hostSlice(map, 0, w), hostSlice(map, w, w)];
          const done: Host[] = [];
          try {
            for (const win of windows) {
              register(win);
              done.push(win);
            }
            const staging = hostSlice(p, 0, w);
            result.copies.stagedHalf = copy(`staged, ${+(w / MiB).toFixed(2)} MiB window, source registered (as the probe)`, w, time('staged half', () => stage(ops, windows[0]!, staging), { iterations: o.runs }));
          } finally {
            for (const win of done.reverse()) unregister(win);
          }
        });
        attempt('page-locked buffer release', () => ops.freeHost(p));
      }

      // 5. One driver call through koffi, in batches of 1000 (a sample is the batch's mean).
      attempt('driver call', () => {
        const BATCH = 1000;
        const [call, one] =
          n.api === 'CUDA'
            ? (['cuDeviceGetAttribute', () => n.driver.attribute(n.ordinal, INTEGRATED)] as const)
            : (['hipDeviceGetAttribute', ((attr) => () => n.driver.attribute(n.ordinal, attr))(n.driver.integratedAttribute())] as const);
        const s = time(
          call,
          () => {
            const t0 = performance.now();
            for (let i = 0; i < BATCH; i++) one();
            const t = performance.now() - t0;
            return { overriddenDuration: t / BATCH, overriddenIterationCost: t };
          },
          { iterations: 50, timeMs: 200 },
        );
        result.driverCall = { call, meanUs: s.meanMs * 1000, medianUs: s.medianMs * 1000, bestUs: s.bestMs * 1000, callsPerSample: BATCH, samples: s.samples };
      });
    });
  } catch (e) {
    result.errors.push(`device ops: ${errorText(e)}`);
  }

  // The PCIe link, and the registered copy's share of it.
  const link = d.pciBusId ? readLink(d.pciBusId) : 'the device has no PCI bus id';
  result.link = typeof link === 'string' ? { error: link } : { ...link, ...(result.copies.registered ? { registeredShare: result.copies.registered.bestGBps / link.gbps } : {}) };

  // The native reference, on the same file and size, in its own process.
  result.native = runNative(native, d, o, region.path, result);
  if (result.native.status === 'build-failed' || result.native.status === 'failed') result.errors.push(`native reference: ${result.native.message}`);
  for (const m of kept) result.errors.push(`a mapping at 0x${m.address.toString(16)} is still registered: kept mapped`);
  region.close(registrations);
  return result;
}

/** The staged copy: the bytes into page-locked memory (Uint8Array.set, a memcpy), then the copy. */
function stage(ops: DeviceOps, from: Host, pinned: Host): void {
  pinned.bytes.set(from.bytes);
  ops.upload(pinned);
}

// ---- the native reference ----

interface NativeBinary {
  path?: string;
  how?: string;
  status: NativeResult['status'];
  message?: string;
  dir?: string;
}

function compiler(): { cmd: string; args: string[] } {
  const words = (process.env.CC ?? '').trim().split(/\s+/).filter((w) => w !== '');
  const [cmd, ...args] = words.length ? words : ['cc'];
  return { cmd: cmd!, args };
}

/** Builds bench/native/staged.c into a temporary folder (or takes --native-bin when there is no compiler). */
function buildNative(o: Options): NativeBinary {
  const source = join(root, 'bench', 'native', 'staged.c');
  const cc = compiler();
  const fallback = (why: string): NativeBinary =>
    o.nativeBin ? { status: 'ran', path: o.nativeBin, how: `--native-bin (${why})` } : { status: 'no-compiler', message: `${why}: the native reference was not built` };
  if (!existsSync(source)) return fallback(`no ${source}`);
  const dir = mkdtempSync(join(tmpdir(), 'mapped-reg-bench-'));
  const out = join(dir, 'staged');
  const r = spawnSync(cc.cmd, [...cc.args, '-O2', '-o', out, source, '-ldl'], { encoding: 'utf8' });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    rmSync(dir, { recursive: true, force: true });
    return fallback(`no C compiler ('${cc.cmd}' not found)`);
  }
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { status: 'build-failed', message: `${cc.cmd} failed: ${`${r.stderr ?? ''}${r.stdout ?? ''}`.trim().split('\n').slice(0, 5).join(' | ') || r.error?.message}` };
  }
  return { status: 'ran', path: out, how: `${[cc.cmd, ...cc.args].join(' ')} -O2 bench/native/staged.c -ldl`, dir };
}

function runNative(b: NativeBinary, d: DiscoveredDevice, o: Options, file: string, bench: DeviceBench): NativeResult {
  if (!b.path) return { status: b.status, ...(b.message ? { message: b.message } : {}) };
  const n = d.native!;
  say(`${d.id}: native reference (${basename(b.path)})`);
  const args = ['--json', '--api', n.api.toLowerCase(), '--device', String(n.ordinal), ...(bench.registerFlags !== undefined ? ['--flags', String(bench.registerFlags)] : []), file, String(o.sizeMiB), String(o.runs)];
  const r = spawnSync(b.path, args, { encoding: 'utf8', timeout: 600_000 });
  const binary = { path: b.path, how: b.how ?? '' };
  if (r.status !== 0) {
    const why = r.error?.message ?? (r.signal ? `killed by ${r.signal}` : `exit ${r.status}`);
    return { status: 'failed', binary, message: `${why}${r.stderr?.trim() ? `: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}` };
  }
  let raw: NativeJson;
  try {
    raw = JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as NativeJson;
  } catch {
    return { status: 'failed', binary, message: `unreadable output: ${r.stdout.slice(0, 200)}` };
  }
  const reg = raw.results.registered?.gbps;
  const staged = raw.results.staged?.gbps;
  return {
    status: 'ran',
    binary,
    ...(reg !== undefined ? { registeredGBps: reg } : {}),
    ...(staged !== undefined ? { stagedGBps: staged } : {}),
    ...(reg && bench.copies.registered ? { registeredRatio: bench.copies.registered.bestGBps / reg } : {}),
    ...(staged && bench.copies.staged ? { stagedRatio: bench.copies.staged.bestGBps / staged } : {}),
    raw,
  };
}

// ---- the conformance run ----

interface ConformanceDevice {
  id: string;
  verdict?: string;
  /** Sum of every check's durationMs. */
  checksMs: number;
  staticMs?: number;
  /** probe.verdict's data.phasesMs: making the scratch file, and the self-test. */
  scratchFileMs?: number;
  probeMs?: number;
  /** Of probeMs: the register calls of the two windows. */
  registrationMs?: number;
  /** The registered and staged GB/s the suite reported (the probe's window, best of --runs). */
  registeredGBps?: number;
  stagedGBps?: number;
  /** registeredGBps / the native reference's registered GB/s of the same device, in this bench run. */
  nativeRatio?: number;
  probeCheckMs?: number;
  hazardsMs: number;
  hazardChecks: number;
  timingMs: { margin?: number; link?: number; total: number };
  processes?: number;
}

interface Conformance {
  command: string[];
  exitCode: number | null;
  signal?: string;
  /** From the spawn to the exit: Node's start included. */
  wallMs: number;
  phasesMs?: { discovery: number; checks: number; reports: number };
  /** wallMs less the three phases: Node's start, loading the command, writing the reports. */
  outsidePhasesMs?: number;
  devices: ConformanceDevice[];
  memory: {
    intervalMs: number;
    walks: number;
    /** The whole run at its fullest walk (sum of PSS), against the target. */
    run?: TreePeak & { targetMiB: number; withinTarget: boolean };
    command?: ProcessPeak;
    runners: (ProcessPeak & { targetMiB: number; withinTarget: boolean })[];
    others: ProcessPeak[];
  };
  error?: string;
  outputTail?: string;
}

interface CheckJson {
  id: string;
  status: string;
  durationMs: number;
  data?: { phasesMs?: { scratchFile?: number; registration?: number; probe?: number } };
}

async function conformanceRun(o: Options, devices: string[]): Promise<Conformance> {
  const dir = mkdtempSync(join(tmpdir(), 'mapped-reg-bench-run-'));
  const json = join(dir, 'results.json');
  const main = join(root, 'dist', 'cli', 'main.js');
  const args = [main, '--json', json, '--size', String(o.sizeMiB), '--scratch-dir', o.scratchDir, '--runs', String(o.runs), ...devices.flatMap((id) => ['--device', id])];
  const shown = ['node', ...args.map((a) => (a === main ? 'dist/cli/main.js' : a === json ? '<tmp>/results.json' : a))];
  say(`conformance run: ${shown.join(' ')}`);
  let output = '';
  const t0 = performance.now();
  // The bench measures, it does not report: no Markdown summary appended to a CI job's page.
  const env = { ...process.env };
  delete env.GITHUB_STEP_SUMMARY;
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const sampler = child.pid !== undefined ? new TreeSampler(child.pid) : undefined;
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => {
    child.on('error', (e) => {
      output += `\n${e.message}`;
      done([null, null]);
    });
    child.on('exit', (c, s) => done([c, s]));
  });
  const wallMs = performance.now() - t0;
  const mem = sampler?.stop() ?? { intervalMs: 0, walks: 0, processes: [] };
  const target = TARGETS.peakMiB(o.sizeMiB);
  const result: Conformance = {
    command: shown,
    exitCode: code,
    ...(signal ? { signal } : {}),
    wallMs,
    devices: [],
    memory: {
      intervalMs: mem.intervalMs,
      walks: mem.walks,
      ...('tree' in mem && mem.tree ? { run: { ...mem.tree, targetMiB: target, withinTarget: mem.tree.pssKiB / 1024 <= target } } : {}),
      ...(mem.processes[0]?.role === 'command' ? { command: mem.processes[0] } : {}),
      runners: mem.processes.filter((p) => p.role === 'device-runner').map((p) => ({ ...p, targetMiB: target, withinTarget: p.peakKiB / 1024 <= target })),
      others: mem.processes.filter((p) => p.role === 'other'),
    },
  };
  try {
    const r = JSON.parse(readFileSync(json, 'utf8')) as { phasesMs?: Conformance['phasesMs']; devices: { id: string; verdict?: { text?: string; kind?: string }; checks: CheckJson[]; processes?: number; timing?: { registeredGBps?: number; stagedGBps?: number } }[] };
    if (r.phasesMs) {
      result.phasesMs = r.phasesMs;
      result.outsidePhasesMs = wallMs - r.phasesMs.discovery - r.phasesMs.checks - r.phasesMs.reports;
    }
    result.devices = r.devices.map((dev): ConformanceDevice => {
      const checks = dev.checks ?? [];
      const ms = (id: string): number | undefined => checks.find((c) => c.id === id)?.durationMs;
      const probe = checks.find((c) => c.id === 'probe.verdict');
      const hazards = checks.filter((c) => c.id.startsWith('hazard.'));
      const timing = checks.filter((c) => c.id.startsWith('timing.'));
      const out: ConformanceDevice = {
        id: dev.id,
        ...(dev.verdict?.text ?? dev.verdict?.kind ? { verdict: dev.verdict.text ?? dev.verdict.kind } : {}),
        checksMs: checks.reduce((a, c) => a + (c.durationMs ?? 0), 0),
        hazardsMs: hazards.reduce((a, c) => a + (c.durationMs ?? 0), 0),
        hazardChecks: hazards.length,
        timingMs: { total: timing.reduce((a, c) => a + (c.durationMs ?? 0), 0) },
        ...(dev.processes !== undefined ? { processes: dev.processes } : {}),
      };
      const st = ms('static.verdict');
      if (st !== undefined) out.staticMs = st;
      if (probe) out.probeCheckMs = probe.durationMs;
      if (probe?.data?.phasesMs?.scratchFile !== undefined) out.scratchFileMs = probe.data.phasesMs.scratchFile;
      if (probe?.data?.phasesMs?.probe !== undefined) out.probeMs = probe.data.phasesMs.probe;
      if (probe?.data?.phasesMs?.registration !== undefined) out.registrationMs = probe.data.phasesMs.registration;
      if (dev.timing?.registeredGBps !== undefined) out.registeredGBps = dev.timing.registeredGBps;
      if (dev.timing?.stagedGBps !== undefined) out.stagedGBps = dev.timing.stagedGBps;
      const margin = ms('timing.margin');
      const link = ms('timing.link');
      if (margin !== undefined) out.timingMs.margin = margin;
      if (link !== undefined) out.timingMs.link = link;
      return out;
    });
    // each process named by the devices it checked (a discovering runner's become known from the results); a
    // runner of several devices is listed under each of them
    const ids = r.devices.map((d) => d.id);
    for (const p of [...result.memory.others, ...(result.memory.run?.processes ?? [])]) {
      const devices = runnerDevices(p.device, ids);
      if (devices.length) p.device = devices.join('+');
    }
    result.memory.runners = result.memory.runners.flatMap((p) => {
      const devices = runnerDevices(p.device, ids);
      return devices.length ? devices.map((device) => ({ ...p, device })) : [p];
    });
  } catch (e) {
    result.error = `no results from the conformance run (exit ${code ?? signal}): ${(e as Error).message}`;
    result.outputTail = output.slice(-1500);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

/** `node -e 0`, N times: what starting Node.js alone costs here. */
function nodeStart(runs: number): Stat {
  return time(
    'node -e 0',
    () => {
      const r = spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore' });
      if (r.status !== 0) throw new Error(`node -e 0 exited ${r.status ?? r.signal}`);
    },
    { iterations: Math.max(runs, 3) },
  );
}

// ---- the report ----

interface BenchResult {
  schemaVersion: 1;
  tool: { name: string; version: string; tinybench?: string };
  host: { hostname: string; kernel: string; platform: string; node: string; root: boolean };
  startedAt: string;
  finishedAt: string;
  options: { runs: number; sizeMiB: number; scratchDir: string; devices: string[]; dropCaches: boolean };
  targets: { nativeRatio: number; peakMiB: number; noGpuRunOverNodeStart: number };
  gpu: { found: boolean; message?: string; backends: { backend: string; library: string | null; devices: number; note?: string }[] };
  devices: DeviceBench[];
  conformance: Conformance;
  nodeStart: Stat;
  /** conformance.wallMs / nodeStart.medianMs. */
  runOverNodeStart: number;
  errors: string[];
}

const f2 = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(2));
const f1 = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(1));
const f0 = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(0));
const pct = (x: number | undefined): string => (x === undefined ? '-' : `${(x * 100).toFixed(1)}%`);

function table(rows: string[][], indent = '  '): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => `${indent}${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')}`.trimEnd());
}

function render(r: BenchResult): string[] {
  const out: string[] = [];
  out.push(`mapped-reg-conformance bench: region ${r.options.sizeMiB} MiB, best and median of ${r.options.runs} (tinybench ${r.tool.tinybench ?? ''}), scratch ${r.options.scratchDir}`);
  if (!r.gpu.found) out.push(`no CUDA/HIP device was found: ${r.gpu.message ?? ''}`);
  for (const d of r.devices) {
    out.push('', `${d.id}  ${d.name}  [${d.driver.name} ${d.driver.version}${d.pciBusId ? `, ${d.pciBusId}` : ''}]  scratch on ${d.region.fsType}`);
    const c = d.copies;
    const row = (x: Copy | undefined, fallbackLabel: string, note = ''): string[] => [x?.label ?? fallbackLabel, f0(x ? x.bytes / MiB : undefined), f2(x?.bestGBps), f2(x?.medianGBps), note];
    out.push(
      ...table([
        ['host to device', 'MiB', 'best GB/s', 'median GB/s', ''],
        row(c.registered, 'registered'),
        row(c.staged, 'staged: memcpy into page-locked + copy'),
        row(c.pageLocked, 'page-locked alone'),
        row(c.pageable, 'pageable (not registered)'),
        row(c.stagedHalf, 'staged, probe window', 'what the probe times'),
      ]),
    );
    if ('error' in d.link) out.push(`  PCIe link: ${d.link.error}`);
    else out.push(`  PCIe link: ${d.link.gts} GT/s x${d.link.width} = ${f2(d.link.gbps)} GB/s; the registered copy reached ${pct(d.link.registeredShare)} of it`);
    const reg = d.registration;
    const costRow = (label: string, x: RegistrationCost | undefined): string[] => [
      label,
      `${f1(x?.registerMsPerGiB.best)} / ${f1(x?.registerMsPerGiB.median)}`,
      `${f1(x?.unregisterMsPerGiB.best)} / ${f1(x?.unregisterMsPerGiB.median)}`,
      `${f1(x?.totalMsPerGiB.best)} / ${f1(x?.totalMsPerGiB.median)}`,
    ];
    out.push(...table([['registration, ms per GiB (best / median)', 'register', 'unregister', 'total'], costRow('warm page cache', reg.warm), costRow('cold page cache', reg.cold)]));
    if (reg.cold) {
      const e = reg.cold.eviction;
      out.push(`    cold: evicted by ${e.methods.join(' + ') || 'nothing'}${e.residentAfterMax !== undefined ? `; at most ${pct(e.residentAfterMax)} of the pages still cached after` : ''}${e.failures.length ? ` (${e.failures.join('; ')})` : ''}`);
    }
    out.push(d.driverCall ? `  one driver call through koffi: ${d.driverCall.call} ${d.driverCall.meanUs.toFixed(3)} us (tinybench mean; median ${d.driverCall.medianUs.toFixed(3)} us)` : '  one driver call through koffi: -');
    const nat = d.native;
    if (nat.status === 'ran') {
      out.push(
        `  native reference (${nat.binary?.how}): registered ${f2(nat.registeredGBps)} GB/s, bench/native ${f2(nat.registeredRatio)}; staged ${f2(nat.stagedGBps)} GB/s, bench/native ${f2(nat.stagedRatio)} (target >= ${r.targets.nativeRatio})`,
      );
    } else out.push(`  native reference: ${nat.status}${nat.message ? `: ${nat.message}` : ''}`);
    for (const e of d.errors) out.push(`  error: ${e}`);
  }
  const k = r.conformance;
  out.push('', `conformance run: ${k.command.join(' ')}`, `  exit ${k.exitCode ?? k.signal}${k.error ? `; ${k.error}` : ''}`);
  const rows: string[][] = [['phase', 'ms']];
  rows.push(['whole, spawn to exit (Node start included)', f0(k.wallMs)]);
  if (k.phasesMs) {
    rows.push(['discovery', f0(k.phasesMs.discovery)], ['checks (every device at once)', f0(k.phasesMs.checks)]);
    for (const d of k.devices) {
      if (d.probeMs === undefined) {
        rows.push([`  ${d.id}: every check (no self-test)`, f0(d.checksMs)]);
        continue;
      }
      rows.push(
        [`  ${d.id}: scratch file`, f0(d.scratchFileMs)],
        [`  ${d.id}: probe`, f0(d.probeMs)],
        [`    of which registration (both windows)`, f1(d.registrationMs)],
        [`  ${d.id}: hazards (${d.hazardChecks} checks)`, f0(d.hazardsMs)],
      );
      rows.push([`  ${d.id}: timing checks (margin ${f1(d.timingMs.margin)}, link ${f1(d.timingMs.link)})`, f1(d.timingMs.total)]);
    }
    rows.push(['reports', f1(k.phasesMs.reports)], ['outside the phases (Node start, loading, writing)', f0(k.outsidePhasesMs)]);
  }
  out.push(...table(rows));
  for (const d of k.devices) {
    if (d.registeredGBps === undefined) continue;
    const against = d.nativeRatio === undefined ? '' : `: ${f2(d.nativeRatio)} of the native reference's registered copy in this run (target >= ${r.targets.nativeRatio})`;
    out.push(`  ${d.id}: the suite reported registered ${f2(d.registeredGBps)} GB/s, staged ${f2(d.stagedGBps)} GB/s${against}`);
  }
  out.push(
    `  node -e 0: ${f0(r.nodeStart.medianMs)} ms (median of ${r.nodeStart.samples}; best ${f0(r.nodeStart.bestMs)}); the run took ${f1(r.runOverNodeStart)} x that${r.gpu.found ? '' : ` (target with no GPU: <= ${r.targets.noGpuRunOverNodeStart})`}`,
  );
  const parts = (p: ProcessPeak): string =>
    p.rssAnonMaxKiB === undefined ? '' : `; at most anon ${f0(p.rssAnonMaxKiB / 1024)}, file ${f0((p.rssFileMaxKiB ?? 0) / 1024)}, shmem ${f0((p.rssShmemMaxKiB ?? 0) / 1024)} MiB`;
  const mib = (p: ProcessPeak): string => `${f0(p.peakKiB / 1024)} MiB (${p.source}${parts(p)})`;
  out.push(`  peak memory, sampled every ${k.memory.intervalMs} ms (${k.memory.walks} walks of /proc):`);
  const run = k.memory.run;
  if (run) {
    const each = run.processes.map((p) => `${p.role === 'device-runner' ? `runner ${p.device ?? '?'}` : p.role}${p.role === 'other' && p.device ? ` (${p.device})` : ''} ${f0(p.pssKiB / 1024)}`).join(', ');
    out.push(`    the whole run at its fullest: ${f0(run.pssKiB / 1024)} MiB PSS (${each}; resident sets summed ${f0(run.rssSumKiB / 1024)}); target <= ${run.targetMiB} MiB: ${run.withinTarget ? 'within' : 'OVER'}`);
  }
  if (k.memory.command) out.push(`    command, pid ${k.memory.command.pid}: ${mib(k.memory.command)}`);
  // a runner of several devices is listed under each in the JSON, once here
  const runners = [...new Map(k.memory.runners.map((p) => [p.pid, { ...p, device: k.memory.runners.filter((q) => q.pid === p.pid).map((q) => q.device ?? '?').join(', ') }])).values()];
  for (const p of runners) out.push(`    device runner ${p.device}, pid ${p.pid}: ${mib(p)}; target <= ${p.targetMiB} MiB: ${p.withinTarget ? 'within' : 'OVER'}`);
  for (const p of k.memory.others) out.push(`    other, pid ${p.pid}${p.device ? ` (${p.device})` : ''}: ${mib(p)}  ${p.command.slice(0, 80)}`);
  if (k.outputTail) out.push('  its output ended with:', ...k.outputTail.split('\n').map((l) => `    ${l}`));
  if (r.errors.length) out.push('', 'errors:', ...r.errors.map((e) => `  ${e}`));
  return out;
}

async function main(argv: string[]): Promise<number> {
  let o: Options;
  try {
    o = await parseOptions(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`bench: ${e.message.split('\n')[0]}\n`);
      return 2;
    }
    throw e;
  }
  const startedAt = new Date().toISOString();
  const found = discover(['cuda', 'hip']);
  const gpus = found.devices.filter((d) => d.native);
  const unknown = o.devices.filter((id) => !gpus.some((d) => d.id === id));
  if (unknown.length) {
    process.stderr.write(`bench: unknown device ${unknown.join(', ')} (CUDA/HIP devices found: ${gpus.map((d) => d.id).join(', ') || 'none'})\n`);
    return 2;
  }
  const selected = gpus.filter((d) => o.devices.length === 0 || o.devices.includes(d.id));
  const notes = found.backends.map((b) => `${b.backend}: ${b.note ?? (b.library ? `${b.library}, ${b.devices} device(s)` : 'no library')}`);
  const errors: string[] = [];
  const devices: DeviceBench[] = [];
  if (selected.length) {
    const native = buildNative(o);
    try {
      for (const d of selected) {
        try {
          devices.push(benchDevice(d, o, native));
        } catch (e) {
          errors.push(`${d.id}: ${errorText(e)}`);
        }
      }
    } finally {
      if (native.dir) rmSync(native.dir, { recursive: true, force: true });
    }
  } else say(`no CUDA/HIP device was found (${notes.join('; ')}): only the conformance run and node -e 0 are measured`);
  for (const d of devices) errors.push(...d.errors.map((e) => `${d.id}: ${e}`));

  // Nothing of ours holds the device now (withOps released it): the conformance run has it to itself.
  // a default run (every device the command finds) unless --device chose some
  const conformance = await conformanceRun(o, o.devices);
  if (conformance.error) errors.push(`conformance run: ${conformance.error}`);
  // the suite's registered copy against the native reference of the same device, both measured in this run
  for (const k of conformance.devices) {
    const native = devices.find((d) => d.id === k.id)?.native.registeredGBps;
    if (k.registeredGBps !== undefined && native) k.nativeRatio = k.registeredGBps / native;
  }
  say('node -e 0');
  const start = nodeStart(o.runs);
  const result: BenchResult = {
    schemaVersion: 1,
    tool: { name: `${pkg.name} bench`, version: pkg.version, ...(pkg.dependencies?.tinybench ? { tinybench: pkg.dependencies.tinybench } : {}) },
    host: { hostname: hostname(), kernel: release(), platform: `${process.platform}-${process.arch}`, node: process.version, root: process.getuid?.() === 0 },
    startedAt,
    finishedAt: new Date().toISOString(),
    options: { runs: o.runs, sizeMiB: o.sizeMiB, scratchDir: o.scratchDir, devices: o.devices, dropCaches: o.dropCaches },
    targets: { nativeRatio: TARGETS.nativeRatio, peakMiB: TARGETS.peakMiB(o.sizeMiB), noGpuRunOverNodeStart: TARGETS.noGpuRunOverNodeStart },
    gpu: { found: selected.length > 0, ...(selected.length ? {} : { message: notes.join('; ') }), backends: found.backends },
    devices,
    conformance,
    nodeStart: start,
    runOverNodeStart: conformance.wallMs / start.medianMs,
    errors,
  };
  process.stdout.write(`${render(result).join('\n')}\n`);
  if (o.json) writeAtomically(o.json, `${JSON.stringify(result, null, 2)}\n`);
  return errors.length ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
