// Peak memory of a process tree, sampled from /proc while it runs (Linux). A process's peak resident set is
// VmHWM in /proc/<pid>/status, which the kernel keeps up to date while the process lives but which is gone
// once it exits; so the bench polls: every `intervalMs` it walks /proc for the descendants of the root process
// and keeps, per process, the last VmHWM it read (VmHWM never decreases; where the kernel does not report it,
// as under some sandboxes, the largest VmRSS seen instead). A peak reached in the last interval of a process's
// life can be missed; device runners hold their region for seconds, so the interval is far shorter.
import { readFileSync, readdirSync } from 'node:fs';
import { procStat } from '../bindings/process-gone.js';
import { backendOfDevice } from '../bindings/registry.js';
import { OPTIONS_ON_STDIN, RUNNER_OPTIONS_ENV, decodeRunnerOptions } from '../suites/protocol.js';

export interface ProcessPeak {
  pid: number;
  ppid: number;
  /** The command line, arguments joined by spaces (shortened to 300 characters). */
  command: string;
  /** 'command' for the root, 'device-runner' for a dist/cli/device-runner.js process, else 'other'. */
  role: 'command' | 'device-runner' | 'other';
  /**
   * The device a runner checks (from its MAPPED_REG_SUITE_OPTIONS; the devices joined by '+' for a runner of
   * several), or the runner a descendant belongs to.
   */
  device?: string;
  /** Peak resident set in KiB. */
  peakKiB: number;
  source: 'VmHWM' | 'VmRSS';
  /**
   * The largest of each part of the resident set seen (KiB; absent where the kernel does not split it): anonymous
   * memory (the heap, buffers, page-locked memory the driver allocated), file pages (a mapped file's page cache,
   * shared and reclaimable: the region once touched), shared memory (tmpfs, memfd). Each is a maximum over the
   * samples, not a part of the peak: they need not add up to it.
   */
  rssAnonMaxKiB?: number;
  rssFileMaxKiB?: number;
  rssShmemMaxKiB?: number;
  /** How many times it was read. */
  samples: number;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

interface Memory {
  kib: number;
  source: 'VmHWM' | 'VmRSS';
  anon?: number;
  file?: number;
  shmem?: number;
  /** VmRSS now. */
  rss?: number;
}

function memoryOf(pid: number): Memory | undefined {
  const status = readText(`/proc/${pid}/status`);
  if (status === undefined) return undefined;
  const field = (name: string): number | undefined => {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(status);
    return m ? Number(m[1]) : undefined;
  };
  const hwm = field('VmHWM');
  const rss = field('VmRSS');
  if (hwm === undefined && rss === undefined) return undefined;
  const parts = { anon: field('RssAnon'), file: field('RssFile'), shmem: field('RssShmem') };
  return { kib: hwm ?? rss!, source: hwm !== undefined ? 'VmHWM' : 'VmRSS', ...parts, ...(rss !== undefined ? { rss } : {}) };
}

/** A process's proportional set size (KiB) and its parts, where the kernel splits it (Pss_Anon, Pss_File, Pss_Shmem: Linux 5.9 on). */
export interface PssParts {
  pssKiB: number;
  /** Anonymous memory: the heaps (V8's, the driver's), page-locked memory the driver allocated from the heap. */
  pssAnonKiB?: number;
  /** Pages of mapped files: the probe's region once touched, Node.js's and the driver's code. */
  pssFileKiB?: number;
  /** Shared memory (tmpfs, memfd, SysV): where a driver's page-locked allocations show (the H200's cuMemHostAlloc). */
  pssShmemKiB?: number;
}

/** Proportional set size (KiB) and its parts from the text of /proc/<pid>/smaps_rollup: shared pages split among the processes mapping them. */
export function pssParts(rollup: string): PssParts | undefined {
  const field = (name: string): number | undefined => {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(rollup);
    return m ? Number(m[1]) : undefined;
  };
  const pssKiB = field('Pss');
  if (pssKiB === undefined) return undefined;
  const anon = field('Pss_Anon');
  const file = field('Pss_File');
  const shmem = field('Pss_Shmem');
  return { pssKiB, ...(anon !== undefined ? { pssAnonKiB: anon } : {}), ...(file !== undefined ? { pssFileKiB: file } : {}), ...(shmem !== undefined ? { pssShmemKiB: shmem } : {}) };
}

/**
 * The whole run at the walk where its processes together held the most: the sum of their proportional set sizes
 * (PSS: a page mapped by several of them, such as Node's own code, is counted once in all; the region's
 * pages, mapped by its runner only, in full), the sum of their resident sets (which counts shared pages once
 * per process), and what each process held then.
 */
export interface TreePeak {
  pssKiB: number;
  rssSumKiB: number;
  /** What each process held then, its PSS split where the kernel splits it (PssParts). */
  processes: ({ pid: number; role: ProcessPeak['role']; device?: string; rssKiB: number } & PssParts)[];
}

const maxOf = (a: number | undefined, b: number | undefined): number | undefined => (b === undefined ? a : Math.max(a ?? 0, b));

/** The device of a discovering runner, as the sampler names it: this, then its backends joined by '+'. */
export const DISCOVERING = 'discovering:';

/**
 * The spare runner's name (cli/spare-runner.ts): its options came on its stdin, not in its environment; it is the
 * run's first discovering process, whose backends are the first group's that needed one (CUDA's, when its library is there).
 */
export const SPARE = `${DISCOVERING}first`;

/** A runner's device(s) from its options (suites/protocol.ts RunnerOptions): the ids joined by '+', or DISCOVERING and its backends, or SPARE. */
function deviceOfRunner(pid: number): string | undefined {
  const environ = readText(`/proc/${pid}/environ`);
  const entry = environ?.split('\0').find((e) => e.startsWith(`${RUNNER_OPTIONS_ENV}=`));
  if (!entry) return undefined;
  if (entry === `${RUNNER_OPTIONS_ENV}=${OPTIONS_ON_STDIN}`) return SPARE;
  try {
    // another process's environment: its shape is checked, not trusted
    const o = decodeRunnerOptions(entry.slice(RUNNER_OPTIONS_ENV.length + 1)) as { devices?: { device?: unknown }[]; discover?: { backends?: unknown } };
    // a discovering runner is given its devices later: named by its backends until the caller knows which they were
    if (Array.isArray(o.discover?.backends)) return `${DISCOVERING}${o.discover.backends.join('+')}`;
    const ids = (o.devices ?? []).map((d) => d.device).filter((d): d is string => typeof d === 'string');
    return ids.length ? ids.join('+') : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The devices a runner checked, from its name and the devices of the run's results, as the command decides them
 * (cli/schedule.ts): a discovering runner checked the first device of its backends whose driver registers (CUDA, HIP) if it found one; with
 * no GPU in the run, the first discovering runner that found another device checked every device of the run; else
 * nothing (its name stays). A runner started for devices is named by them. The spare runner's group is the first that
 * needed a process: it is taken to have checked the first GPU of the run, or with none every device.
 */
export function runnerDevices(name: string | undefined, devices: readonly string[]): string[] {
  if (name === undefined) return [];
  if (!name.startsWith(DISCOVERING)) return name.split('+');
  const gpu = (id: string): boolean => backendOfDevice(id)?.registers === true;
  const group = name === SPARE ? undefined : name.slice(DISCOVERING.length).split('+');
  const offer = devices.filter((id) => group === undefined || group.includes(id.split(':')[0]!)).sort((a, b) => Number(gpu(b)) - Number(gpu(a)))[0];
  if (offer === undefined) return [];
  if (gpu(offer)) return [offer];
  return devices.some(gpu) ? [] : [...devices];
}

/** Samples the peak memory of `root` and of every process descended from it, until stop(). */
export class TreeSampler {
  readonly #root: number;
  readonly #peaks = new Map<number, ProcessPeak>();
  readonly #timer: NodeJS.Timeout;
  #ticks = 0;
  #tree: TreePeak | undefined;

  constructor(root: number, readonly intervalMs = 25) {
    this.#root = root;
    this.sample();
    this.#timer = setInterval(() => this.sample(), intervalMs);
  }

  /** One walk of /proc: the root's descendants and their memory. */
  sample(): void {
    this.#ticks += 1;
    const parents = new Map<number, number>();
    let names: string[];
    try {
      names = readdirSync('/proc');
    } catch {
      return;
    }
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      const pid = Number(name);
      const ppid = procStat(pid)?.ppid;
      if (ppid !== undefined) parents.set(pid, ppid);
    }
    const inTree = (pid: number): boolean => {
      for (let p: number | undefined = pid, hops = 0; p !== undefined && hops < 64; p = parents.get(p), hops++) if (p === this.#root) return true;
      return false;
    };
    const now: TreePeak = { pssKiB: 0, rssSumKiB: 0, processes: [] };
    for (const [pid, ppid] of parents) {
      if (!inTree(pid)) continue;
      const mem = memoryOf(pid);
      if (!mem) continue;
      const rss = mem.rss;
      const pss = pssParts(readText(`/proc/${pid}/smaps_rollup`) ?? '');
      // Read every time: between fork and exec a child still shows its parent's command line and memory, so
      // a process whose command line changed starts afresh.
      const command = (readText(`/proc/${pid}/cmdline`) ?? '').split('\0').filter((a) => a !== '').join(' ').slice(0, 300);
      // an exiting process (a zombie) has no command line any more, and nothing left to measure
      if (command === '') continue;
      let peak = this.#peaks.get(pid);
      if (!peak || peak.command !== command) {
        const role = pid === this.#root ? 'command' : command.includes('device-runner.js') ? 'device-runner' : 'other';
        const device = role === 'device-runner' ? deviceOfRunner(pid) : this.#peaks.get(ppid)?.device;
        peak = { pid, ppid, command, role, ...(device ? { device } : {}), peakKiB: 0, source: mem.source, samples: 0 };
        this.#peaks.set(pid, peak);
      }
      peak.samples += 1;
      peak.source = mem.source;
      peak.peakKiB = Math.max(peak.peakKiB, mem.kib);
      const anon = maxOf(peak.rssAnonMaxKiB, mem.anon);
      const file = maxOf(peak.rssFileMaxKiB, mem.file);
      const shmem = maxOf(peak.rssShmemMaxKiB, mem.shmem);
      if (anon !== undefined) peak.rssAnonMaxKiB = anon;
      if (file !== undefined) peak.rssFileMaxKiB = file;
      if (shmem !== undefined) peak.rssShmemMaxKiB = shmem;
      if (pss !== undefined && rss !== undefined) {
        now.pssKiB += pss.pssKiB;
        now.rssSumKiB += rss;
        now.processes.push({ pid, role: peak.role, ...(peak.device ? { device: peak.device } : {}), rssKiB: rss, ...pss });
      }
    }
    if (now.processes.length > 0 && now.pssKiB > (this.#tree?.pssKiB ?? -1)) this.#tree = now;
  }

  /** Stops sampling; every process seen, the root first, then in the order they were first seen. */
  stop(): { intervalMs: number; walks: number; processes: ProcessPeak[]; tree?: TreePeak } {
    clearInterval(this.#timer);
    const processes = [...this.#peaks.values()].sort((a, b) => (a.pid === this.#root ? -1 : b.pid === this.#root ? 1 : 0));
    return { intervalMs: this.intervalMs, walks: this.#ticks, processes, ...(this.#tree ? { tree: this.#tree } : {}) };
  }
}
