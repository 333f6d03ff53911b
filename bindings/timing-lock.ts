// The host-wide lock held only around timed copies: the timed copies of different devices, and of two runs of the
// command on one host, never overlap, so that one device's copies do not slow another's figure. It is an
// exclusive flock(2) on one file (in os.tmpdir(), shared by every user's runs): a holder that dies releases it,
// whatever PID namespace it runs in. Waiting is synchronous (the probe is): LOCK_EX|LOCK_NB polled every few ms,
// asleep in Atomics.wait between tries. The holder writes its pid and a label into the file, for the message of
// a run that gives up waiting; a run that may only read the file (another user's, mode 0644) locks it all the same
// and writes nothing.
import { fchmodSync, fstatSync, lstatSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostFault, asHostFault, isHostFault } from './host-fault.js';
import {
  LOCK_EX,
  LOCK_NB,
  LOCK_UN,
  LibcError,
  OPEN_ACCESS,
  OPEN_FLAGS,
  closeFd,
  flock,
  ftruncate,
  openFile,
  preadFully,
  pwrite,
} from './libc.js';
import { once } from './once.js';

/** Between two tries for a held lock. */
export const TIMING_LOCK_POLL_MS = 5;
/** The file's name in os.tmpdir() when env MAPPED_REG_TIMING_LOCK does not name one. */
export const TIMING_LOCK_FILE = 'mapped-reg-conformance-timing.lock';
/** The label written when the caller gives none. */
export const DEFAULT_LABEL = 'mapped-reg-conformance';

export interface TimingLock {
  readonly path: string;
  /** ms spent waiting for it */
  readonly waitedMs: number;
  /** Releases the lock (and clears the holder written). Idempotent. */
  release(): void;
}

/** Waited timeoutMs and the lock is still held; `holder` when the holder wrote who it is. */
export class TimingLockTimeout extends Error {
  readonly path: string;
  readonly timeoutMs: number;
  readonly holder?: { pid: number; label: string };

  constructor(path: string, timeoutMs: number, holder?: { pid: number; label: string }) {
    const by = holder ? `by pid ${holder.pid} (${holder.label})` : 'by a process that did not say which';
    super(`the timing lock ${path} is still held after ${timeoutMs} ms, ${by}`);
    this.name = 'TimingLockTimeout';
    this.path = path;
    this.timeoutMs = timeoutMs;
    if (holder) this.holder = holder;
  }
}

/** The lock file: env MAPPED_REG_TIMING_LOCK, else `${os.tmpdir()}/mapped-reg-conformance-timing.lock`. */
export function timingLockPath(): string {
  return process.env.MAPPED_REG_TIMING_LOCK || join(tmpdir(), TIMING_LOCK_FILE);
}

/** The files (device and inode) this process holds the lock of: a second acquire here would wait for itself. */
const held = new Set<string>();

interface Opened {
  fd: number;
  writable: boolean;
  key: string;
}

const FLAGS = OPEN_FLAGS.NOFOLLOW | OPEN_FLAGS.CLOEXEC | OPEN_FLAGS.NONBLOCK;

function code(e: unknown): string | undefined {
  return e instanceof LibcError ? e.code : undefined;
}

/** A failure to open or lock the file: the host's fault, with its reason. */
function fault(e: unknown, path: string, doing: string): HostFault {
  const host = asHostFault(e, path, doing);
  if (isHostFault(host)) return host;
  const c = code(e);
  const why = c === 'ELOOP' ? 'it is a symbolic link, refused' : e instanceof Error ? e.message : String(e);
  return new HostFault(`cannot use the timing lock ${path} (${why}) while ${doing}`, c);
}

/**
 * Opens the lock file: made here, mode 0666 whatever the umask (another user's run must open it too); else the one
 * there, for writing, or where that is refused (another user's file), for reading only. Never through a symbolic
 * link, never anything but a regular file (a FIFO planted there opens without waiting, and is refused).
 */
function openLock(path: string): Opened {
  let fd = -1;
  let writable = true;
  try {
    // the file there may be removed between the two opens (its holder letting go): then make it again
    for (let tries = 1; fd < 0; tries++) {
      try {
        fd = openFile(path, OPEN_ACCESS.RDWR | OPEN_FLAGS.CREAT | OPEN_FLAGS.EXCL | FLAGS, 0o666);
        fchmodSync(fd, 0o666);
      } catch (e) {
        if (fd >= 0 || code(e) !== 'EEXIST') throw e;
        try {
          fd = openFile(path, OPEN_ACCESS.RDWR | FLAGS);
        } catch (e2) {
          if (code(e2) === 'ENOENT' && tries < 1000) continue;
          if (!['EACCES', 'EPERM', 'EROFS'].includes(code(e2) ?? '')) throw e2;
          fd = openFile(path, OPEN_ACCESS.RDONLY | FLAGS);
          writable = false;
        }
      }
    }
    const st = fstatSync(fd);
    if (!st.isFile()) throw new HostFault(`the timing lock ${path} is not a regular file`);
    return { fd, writable, key: `${st.dev}:${st.ino}` };
  } catch (e) {
    if (fd >= 0) closeFd(fd);
    throw fault(e, path, 'opening it');
  }
}

/** `path` still names the file `key` (device:inode), not a newer one or none. */
function stillAt(path: string, key: string): boolean {
  try {
    const st = lstatSync(path);
    return `${st.dev}:${st.ino}` === key;
  } catch {
    return false;
  }
}

/** What the holder wrote ("<pid> <label>\n"), if it did. */
function readHolder(fd: number): { pid: number; label: string } | undefined {
  const buf = new Uint8Array(512);
  let text: string;
  try {
    text = new TextDecoder().decode(buf.subarray(0, preadFully(fd, buf, 0)));
  } catch {
    return undefined;
  }
  const m = /^(\d+) ([^\n]*)\n$/.exec(text);
  return m ? { pid: Number(m[1]), label: m[2]! } : undefined;
}

/** One line, short: the label goes into the file after the pid. */
function cleanLabel(label: string): string {
  return label.replace(/[\r\n]+/g, ' ').slice(0, 200);
}

/** Writes who holds the lock; best effort (a full disk only costs the message of a run that gives up waiting). */
function writeHolder(fd: number, label: string): void {
  try {
    ftruncate(fd, 0);
    pwrite(fd, new TextEncoder().encode(`${process.pid} ${label}\n`), 0);
  } catch {
    // nothing to do: the lock is held all the same
  }
}

/**
 * Waits synchronously (flock LOCK_EX|LOCK_NB polled every few ms, sleeping with Atomics.wait, never a busy spin)
 * until this process holds the lock, or throws TimingLockTimeout after timeoutMs (default: no limit) naming the
 * holder when it can tell. A file that cannot be opened or locked is a HostFault. A lock this process already
 * holds is an error at once (waiting for it would never end).
 */
export function acquireTimingLock(options: { path?: string; timeoutMs?: number; label?: string } = {}): TimingLock {
  const path = options.path ?? timingLockPath();
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && !(timeoutMs >= 0)) throw new RangeError(`timing lock: timeoutMs ${timeoutMs} is not a number of ms >= 0`);
  const label = cleanLabel(options.label ?? DEFAULT_LABEL);
  const t0 = performance.now();
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  let opened: Opened;
  // The holder removes the file as it lets go (nothing is left in the temporary folder), so a lock taken on a file
  // that is no longer the one at `path` is no lock at all: it is let go, and the file at `path` is taken instead.
  for (;;) {
    opened = openLock(path);
    const { fd, key } = opened;
    if (held.has(key)) {
      closeFd(fd);
      throw new Error(`the timing lock ${path} is already held by this process`);
    }
    try {
      while (!flock(fd, LOCK_EX | LOCK_NB)) {
        const waited = performance.now() - t0;
        if (timeoutMs !== undefined && waited >= timeoutMs) throw new TimingLockTimeout(path, timeoutMs, readHolder(fd));
        // nobody notifies: this is a sleep of at most the poll (less when the time left is shorter)
        Atomics.wait(sleeper, 0, 0, timeoutMs === undefined ? TIMING_LOCK_POLL_MS : Math.min(TIMING_LOCK_POLL_MS, timeoutMs - waited));
      }
    } catch (e) {
      closeFd(fd);
      throw e instanceof TimingLockTimeout ? e : fault(e, path, 'locking it');
    }
    if (stillAt(path, key)) break;
    closeFd(fd);
  }
  const { fd, writable, key } = opened;
  const waitedMs = performance.now() - t0;
  held.add(key);
  if (writable) writeHolder(fd, label);
  return {
    path,
    waitedMs,
    release: once(() => {
      held.delete(key);
      try {
        // removed while still held: a waiter that then takes this file sees it is gone and takes the next one
        // (another user's file, opened read-only, cannot be removed from a sticky /tmp: it stays, emptied by them)
        if (writable) {
          ftruncate(fd, 0);
          try {
            if (stillAt(path, key)) unlinkSync(path);
          } catch {
            // left in place: the next run takes it as it is
          }
        }
        flock(fd, LOCK_UN);
      } catch {
        // the close below releases it in any case
      } finally {
        closeFd(fd);
      }
    }),
  };
}
