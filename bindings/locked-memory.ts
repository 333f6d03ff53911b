// The process's locked and pinned memory, as the kernel counts it in /proc/self/status: VmLck (mlock'd pages,
// mm->locked_vm) and VmPin (pages pinned long-term by a driver, mm->pinned_vm). A driver that pins a page per
// registration and never unpins it makes one of them grow. Read without blocking (small-file.ts); what cannot be
// read is a reason, never a throw.
import { readSmallFile } from './small-file.js';

export interface LockedMemory {
  /** VmLck, in KiB (the kernel's "kB"). */
  lockedKiB: number;
  /** VmPin, in KiB; null on a kernel that does not report it. */
  pinnedKiB: number | null;
}

/** The figures of a /proc/<pid>/status text; a reason when VmLck is not in it. */
export function parseLockedMemory(status: string): LockedMemory | { reason: string } {
  const field = (name: string): number | null => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status);
    return m ? Number(m[1]) : null;
  };
  const lockedKiB = field('VmLck');
  if (lockedKiB === null) return { reason: 'no VmLck line' };
  return { lockedKiB, pinnedKiB: field('VmPin') };
}

/** This process's locked and pinned memory now, or why it cannot be read. */
export function lockedMemory(statusPath = '/proc/self/status'): LockedMemory | { reason: string } {
  const read = readSmallFile(statusPath);
  if (!('text' in read)) return { reason: `${statusPath}: ${read.reason}` };
  return parseLockedMemory(read.text);
}
