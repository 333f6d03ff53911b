// Whether another process of the run is gone, from the kernel's own /proc (never MAPPED_REG_PROC_ROOT, the machine
// as the looks at it see it: the run's own processes are the kernel's; a test gives another folder): a process is its pid with the time it started (/proc/<pid>/stat, field 22, in clock ticks since
// boot), so that a pid the kernel gave to a newer process is not taken for it. A zombie has given its memory back,
// and counts as gone. Read without blocking (bindings/small-file.ts); what cannot be read is gone.
import { readSmallFile } from './small-file.js';

/** A process as the run knows it: its pid, and when it started. */
export interface ProcessStart {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: its start, in clock ticks since boot. */
  startTicks: number;
}

/** Between two looks at a process that is still there. */
export const GONE_POLL_MS = 5;

/** What /proc/<pid>/stat says of the process: its state letter, its parent and its start, or undefined when it cannot be read. */
export function procStat(pid: number, procRoot = '/proc'): { state: string; ppid: number; startTicks: number } | undefined {
  const read = readSmallFile(`${procRoot}/${pid}/stat`, 4096);
  if (!('text' in read)) return undefined;
  // "<pid> (<comm>) <state> <ppid> ...": the command may hold spaces and parentheses, so the fields are counted
  // from the last ')': the state is field 3, the parent field 4, the start field 22
  const fields = read.text.slice(read.text.lastIndexOf(')') + 2).split(' ');
  const ppid = Number(fields[1]);
  const startTicks = Number(fields[19]);
  return fields[0] && Number.isSafeInteger(ppid) && Number.isSafeInteger(startTicks) ? { state: fields[0], ppid, startTicks } : undefined;
}

/**
 * The process `pid`, a child of `parent`, as it is now; undefined when it is gone, cannot be read, or is not that
 * process's child (a /proc of another PID namespace than the pid's: never a stranger waited for).
 */
export function childStart(pid: number, parent: number, procRoot = '/proc'): ProcessStart | undefined {
  const s = procStat(pid, procRoot);
  return s && !dead(s.state) && s.ppid === parent ? { pid, startTicks: s.startTicks } : undefined;
}

/** Z: a zombie, its memory given back, waiting to be reaped; X: dead. */
const dead = (state: string): boolean => state === 'Z' || state === 'X';

/** The process has ended: no such pid, a pid of a later process, or a zombie. */
export function processGone(p: ProcessStart, procRoot = '/proc'): boolean {
  const s = procStat(p.pid, procRoot);
  return s === undefined || s.startTicks !== p.startTicks || dead(s.state);
}

/**
 * Waits on this thread (asleep in Atomics.wait between looks, never a busy spin) until every one of `processes`
 * is gone, or `limitMs` has passed. Returns how long it waited and those still there.
 */
export function waitUntilGone(processes: readonly ProcessStart[], limitMs: number): { waitedMs: number; left: ProcessStart[] } {
  const t0 = performance.now();
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  let left = processes.filter((p) => !processGone(p));
  for (let waited = 0; left.length > 0 && waited < limitMs; waited = performance.now() - t0) {
    Atomics.wait(sleeper, 0, 0, Math.min(GONE_POLL_MS, limitMs - waited));
    left = left.filter((p) => !processGone(p));
  }
  return { waitedMs: performance.now() - t0, left };
}
