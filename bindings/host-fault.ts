// The host's faults, told from the driver's. A check that cannot run because of the machine it runs on (no
// space left for its scratch file, a read-only file system, no file descriptors or memory for a mapping of our
// own file) has not judged the driver: its status is `error` (results/status.ts), with the reason, never
// `fail`. Only the host's own calls are wrapped here (file system calls, mmap of our files): a driver's return
// code is never a host fault.

/** errno codes that say the host, not the driver, stopped the call. */
export const HOST_ERRNO: Readonly<Record<string, (where: string) => string>> = {
  ENOSPC: (where) => `no space left in ${where}`,
  EDQUOT: (where) => `disk quota exceeded in ${where}`,
  EROFS: (where) => `${where} is on a read-only file system`,
  EFBIG: (where) => `file too large for ${where}`,
  EMFILE: () => 'too many open files in the process',
  ENFILE: () => 'too many open files on the system',
  ENOMEM: () => 'out of memory',
  EIO: (where) => `an I/O error in ${where}`,
};

/** A check could not run for a reason of the host. Its message starts with "the host: ". */
export class HostFault extends Error {
  /** The errno name (ENOSPC, ...), or undefined for a fault found by a check of our own (free space). */
  readonly code: string | undefined;

  constructor(reason: string, code?: string) {
    super(`the host: ${reason}`);
    this.name = 'HostFault';
    this.code = code;
  }
}

/** Whether `e` is a HostFault (by name: a check may see it through another copy of this module). */
export function isHostFault(e: unknown): e is HostFault {
  return e instanceof Error && e.name === 'HostFault';
}

/** The errno name of a Node.js or libc error, if any. */
function codeOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * `e` as a HostFault when it carries a host errno code (`where`: the folder; `doing`: what was being done,
 * e.g. "making the check's file"), else `e` unchanged.
 */
export function asHostFault(e: unknown, where: string, doing: string): unknown {
  if (isHostFault(e)) return e;
  const code = codeOf(e);
  const say = code ? HOST_ERRNO[code] : undefined;
  return say ? new HostFault(`${say(where)} (${code}) while ${doing}`, code) : e;
}

/** Runs `f`, a call of the host's (files, mappings of our files); a host errno becomes a HostFault. */
export function hostCall<T>(where: string, doing: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw asHostFault(e, where, doing);
  }
}
