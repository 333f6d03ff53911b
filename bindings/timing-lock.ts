// The host-wide lock held only around timed copies: the timed copies of different devices, and of two runs of the
// command on one host, never overlap, so that one device's copies do not slow another's figure. It is an
// exclusive flock(2) on one file (in os.tmpdir(), one per user: `mapped-reg-conformance-timing-<uid>.lock`): a
// holder that dies releases it, whatever PID namespace it runs in. Waiting is synchronous (the probe is):
// LOCK_EX|LOCK_NB polled every few ms, asleep in Atomics.wait between tries. The holder writes its pid and a label
// into the file, for the message of a run that gives up waiting.
//
// A shared holder (LOCK_SH: the truncation child's driver init, suites/hazards/truncate-early.ts, and the portable
// check's copies) keeps timed copies out while it holds the lock, but not other shared holders: several devices'
// children start their drivers side by side, never inside anyone's timed copies. It writes no holder's line (it is
// not alone): a waiter that gives up names it from the kernel's list of locks (whoHolds). It removes the file it made
// only when it is the last holder (its lock converted to LOCK_EX without waiting).
//
// Timed copies go first: an exclusive taker closes a gate while it waits (a record lock, fcntl F_OFD_SETLK, on one
// byte of the same file: let go with the file, or its process), and a shared taker waits while the gate is closed.
// Without it, shared holders coming and going on a host of several GPUs overlap each other and keep every device's
// timed copies waiting, the run's longest path, for as long as any of them holds it. The gate decides only who goes
// first, never who is let in together: a system that has no such locks (an old kernel) waits without it.
//
// The file cannot be turned against the run or its user: it is opened without following a link and without
// waiting (a FIFO), and used only when it is a regular file of this user with no other name (a hard link), empty
// or holding a holder's line. Anything else is the host's fault (a HostFault), and the file is left as it is:
// only a file this process made is ever removed, and a file is written only once it is known to be a lock.
import { fchmodSync, fstatSync, lstatSync, readFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostFault, asHostFault, isHostFault } from './host-fault.js';
import {
  F_RDLCK,
  F_UNLCK,
  F_WRLCK,
  LOCK_EX,
  LOCK_NB,
  LOCK_SH,
  LOCK_UN,
  LibcError,
  OPEN_ACCESS,
  OPEN_FLAGS,
  closeFd,
  flock,
  ftruncate,
  ofdLock,
  ofdLockedAgainst,
  openFile,
  preadFully,
  pwrite,
} from './libc.js';
import { once } from './once.js';
import { processName } from './small-file.js';

/** Between two tries for a held lock. */
export const TIMING_LOCK_POLL_MS = 5;
/** The label written when the caller gives none. */
export const DEFAULT_LABEL = 'mapped-reg-conformance';
/** The most bytes a lock file holds: a holder's line ("<pid> <label>\n", the label cut to 200 characters). */
export const HOLDER_MAX_BYTES = 512;

/** Where the gate is: one byte of the lock file, past any holder's line (a record lock locks bytes, not content). */
export const GATE_OFFSET = 1 << 20;

/** Closes the gate for shared takers while this exclusive taker waits; false where another closed it, or it cannot be. */
function closeGate(fd: number): boolean {
  try {
    return ofdLock(fd, F_WRLCK, GATE_OFFSET, 1);
  } catch {
    return false; // no record locks here (or a file opened read-only): the wait goes on without a gate
  }
}

function openGate(fd: number): void {
  try {
    ofdLock(fd, F_UNLCK, GATE_OFFSET, 1);
  } catch {
    // closing the file lets it go in any case
  }
}

/** An exclusive taker waits, and has closed the gate: a shared taker lets it go first. */
function gateClosed(fd: number): boolean {
  try {
    return ofdLockedAgainst(fd, F_RDLCK, GATE_OFFSET, 1);
  } catch {
    return false;
  }
}

/** This process's user id (0 where the platform has none). */
const uid = (): number => process.getuid?.() ?? 0;

/** The file's name in os.tmpdir() for user `id` when env MAPPED_REG_TIMING_LOCK does not name one: one per user. */
export function timingLockFile(id = uid()): string {
  return `mapped-reg-conformance-timing-${id}.lock`;
}

export interface TimingLock {
  readonly path: string;
  /** ms spent waiting for it */
  readonly waitedMs: number;
  /** Releases the lock (and clears the holder written). Idempotent. */
  release(): void;
}

/**
 * Waited timeoutMs and the lock is still held; `holder` when the holder wrote who it is, or the kernel named it;
 * `behindTimedCopies`: a shared taker that waited while another process's timed copies waited to go first.
 */
export class TimingLockTimeout extends Error {
  readonly path: string;
  readonly timeoutMs: number;
  readonly holder?: { pid: number; label: string };
  readonly behindTimedCopies: boolean;
  /** Who kept it, for a message: "by pid <pid> (<label>)", and the timed copies let go first where they were. */
  readonly by: string;

  constructor(path: string, timeoutMs: number, holder?: { pid: number; label: string }, behindTimedCopies = false) {
    const by = `${holder ? `by pid ${holder.pid} (${holder.label})` : 'by a process that did not say which'}${behindTimedCopies ? ', with timed copies waiting to go first' : ''}`;
    super(`the timing lock ${path} is still held after ${timeoutMs} ms, ${by}`);
    this.name = 'TimingLockTimeout';
    this.path = path;
    this.timeoutMs = timeoutMs;
    if (holder) this.holder = holder;
    this.behindTimedCopies = behindTimedCopies;
    this.by = by;
  }
}

/** The lock file: env MAPPED_REG_TIMING_LOCK, else `${os.tmpdir()}/mapped-reg-conformance-timing-<uid>.lock`. */
export function timingLockPath(): string {
  return process.env.MAPPED_REG_TIMING_LOCK || join(tmpdir(), timingLockFile());
}

/** The files (device and inode) this process holds the lock of: a second acquire here would wait for itself. */
const held = new Set<string>();

interface Opened {
  fd: number;
  writable: boolean;
  /** Made by this open (O_EXCL): the only file release may remove. */
  made: boolean;
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

/** Why the open file cannot be this user's lock (not a regular file, another user's, another name for it), or undefined. */
function notOurs(path: string, st: { isFile(): boolean; uid: number; nlink: number }): string | undefined {
  if (!st.isFile()) return `the timing lock ${path} is not a regular file`;
  if (st.uid !== uid()) return `the timing lock ${path} belongs to uid ${st.uid}, not to this user (uid ${uid()}): refused, left as it is`;
  // 0: removed by its holder meanwhile (taken again below); more than 1: a hard link to a file that has another name
  if (st.nlink > 1) return `the timing lock ${path} has ${st.nlink} names (a hard link to another file): refused, left as it is`;
  return undefined;
}

/**
 * Opens the lock file: made here, mode 0600 whatever the umask; else the one there, for writing, or where that is
 * refused (a file of ours made read-only), for reading only. Never through a symbolic link, never a FIFO's wait,
 * never anything but a regular file of this user with no other name.
 */
function openLock(path: string): Opened {
  let fd = -1;
  let writable = true;
  let made = false;
  try {
    // the file there may be removed between the two opens (its holder letting go): then make it again
    for (let tries = 1; fd < 0; tries++) {
      try {
        fd = openFile(path, OPEN_ACCESS.RDWR | OPEN_FLAGS.CREAT | OPEN_FLAGS.EXCL | FLAGS, 0o600);
        made = true;
        fchmodSync(fd, 0o600);
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
    const why = notOurs(path, st);
    if (why !== undefined) throw new HostFault(why);
    return { fd, writable, made, key: `${st.dev}:${st.ino}` };
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

const HOLDER_LINE = /^(\d+) ([^\n]*)\n$/;

/** What the file holds (at most HOLDER_MAX_BYTES of it), or undefined when it cannot be read. */
function readText(fd: number): string | undefined {
  const buf = new Uint8Array(HOLDER_MAX_BYTES + 1);
  try {
    return new TextDecoder().decode(buf.subarray(0, preadFully(fd, buf, 0)));
  } catch {
    return undefined;
  }
}

/** What the holder wrote ("<pid> <label>\n"), if it did. */
function readHolder(fd: number): { pid: number; label: string } | undefined {
  const m = HOLDER_LINE.exec(readText(fd) ?? '');
  return m ? { pid: Number(m[1]), label: m[2]! } : undefined;
}

/** Where the kernel lists the locks held. */
const PROC_LOCKS = '/proc/locks';

/** A holder of the lock as the kernel lists it: its pid (0: a process of another PID namespace) and whether it holds it shared. */
interface KernelHolder {
  pid: number;
  shared: boolean;
}

/** The flocks held on the open file `fd` as /proc/locks lists them (not this process's, not the waiters'), or undefined when it cannot be read. */
function kernelHolders(fd: number): KernelHolder[] | undefined {
  try {
    const st = fstatSync(fd);
    const dev = `${((st.dev >> 8) & 0xfff).toString(16).padStart(2, '0')}:${((st.dev & 0xff) | ((st.dev >> 12) & 0xfff00)).toString(16).padStart(2, '0')}`;
    const holders: KernelHolder[] = [];
    for (const line of readFileSync(PROC_LOCKS, 'utf8').split('\n')) {
      // "1: FLOCK  ADVISORY  WRITE 16691 fe:00:5392777 0 EOF" (READ: a shared holder; a waiter's line has "->" after the number)
      const m = /^\d+: FLOCK +\S+ +(READ|WRITE) +(\d+) +([0-9a-f]+:[0-9a-f]+):(\d+) /.exec(line);
      if (!m || m[3] !== dev || Number(m[4]) !== st.ino || Number(m[2]) === process.pid) continue;
      holders.push({ pid: Number(m[2]), shared: m[1] === 'READ' });
    }
    return holders;
  } catch {
    return undefined;
  }
}

/** The command of a process (its comm, from the kernel's own /proc: its pids are the kernel's), for a holder that wrote no line. */
const commandOf = (pid: number): string => (processName(pid) || 'gone since').slice(0, 64);

/**
 * Who holds the lock, for the message of a waiter that gives up. The kernel's list of locks (/proc/locks) is the
 * truth: the line in the file is taken when its pid is among the holders there (its label says more than a
 * command's name), and when the kernel cannot name them (no /proc/locks; holders of another PID namespace, listed
 * as 0). Else a holder the kernel lists is named by its command, an exclusive one first: a holder that wrote
 * nothing (`flock(1)`, a file read-only to it, the truncation children holding it shared), or one holding it while
 * the file still has the line of a holder killed before it could clear it.
 */
function whoHolds(fd: number): { pid: number; label: string } | undefined {
  const line = readHolder(fd);
  const kernel = kernelHolders(fd);
  if (kernel === undefined) return line;
  if (line && kernel.some((h) => h.pid === line.pid || h.pid === 0)) return line;
  const named = kernel.filter((h) => h.pid !== 0);
  const first = named.find((h) => !h.shared) ?? named[0];
  if (!first) return line;
  const others = named.length - 1;
  return { pid: first.pid, label: `${commandOf(first.pid)}${first.shared ? ', holding it shared' : ''}${others > 0 ? ` (and ${others} more holder${others === 1 ? '' : 's'})` : ''}` };
}

/**
 * Why the file (locked by this process) is not a lock of this tool: it is empty (a holder let go) or holds one
 * holder's line (a holder that died); anything else is someone's file, which is never written or removed.
 */
function notALock(path: string, fd: number): string | undefined {
  const size = fstatSync(fd).size;
  const text = size > HOLDER_MAX_BYTES ? undefined : readText(fd);
  if (text === '' || (text !== undefined && HOLDER_LINE.test(text))) return undefined;
  return `the timing lock ${path} holds ${size} bytes that are not a holder's line ("<pid> <label>"): not a lock of this tool, refused, left as it is`;
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
 * holder when it can tell. A file that cannot be opened or locked, or that is not this user's lock, is a
 * HostFault. A lock this process already holds is an error at once (waiting for it would never end).
 */
export function acquireTimingLock(options: { path?: string; timeoutMs?: number; label?: string; shared?: boolean } = {}): TimingLock {
  const mode = options.shared ? LOCK_SH : LOCK_EX;
  const path = options.path ?? timingLockPath();
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && !(timeoutMs >= 0)) throw new RangeError(`timing lock: timeoutMs ${timeoutMs} is not a number of ms >= 0`);
  const label = cleanLabel(options.label ?? DEFAULT_LABEL);
  const t0 = performance.now();
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  let opened: Opened;
  // The holder that made the file removes it as it lets go (nothing is left in the temporary folder), so a lock
  // taken on a file that is no longer the one at `path` is no lock at all: it is let go, and the file at `path` is
  // taken instead.
  for (;;) {
    opened = openLock(path);
    const { fd, key } = opened;
    if (held.has(key)) {
      closeFd(fd);
      throw new Error(`the timing lock ${path} is already held by this process`);
    }
    // an exclusive taker holds the gate from its first try until it has the lock (then the next one waiting takes it)
    let gate = false;
    const taken = (): boolean => {
      if (options.shared) return !gateClosed(fd) && flock(fd, mode | LOCK_NB);
      gate ||= closeGate(fd);
      return flock(fd, mode | LOCK_NB);
    };
    try {
      while (!taken()) {
        const waited = performance.now() - t0;
        if (timeoutMs !== undefined && waited >= timeoutMs) throw new TimingLockTimeout(path, timeoutMs, whoHolds(fd), options.shared === true && gateClosed(fd));
        // nobody notifies: this is a sleep of at most the poll (less when the time left is shorter)
        Atomics.wait(sleeper, 0, 0, timeoutMs === undefined ? TIMING_LOCK_POLL_MS : Math.min(TIMING_LOCK_POLL_MS, timeoutMs - waited));
      }
    } catch (e) {
      closeFd(fd);
      throw e instanceof TimingLockTimeout ? e : fault(e, path, 'locking it');
    } finally {
      if (gate) openGate(fd);
    }
    if (stillAt(path, key)) break;
    closeFd(fd);
  }
  const { fd, writable, made, key } = opened;
  // held: nobody writes it meanwhile. A file that is not a lock of ours is let go untouched.
  const foreign = notALock(path, fd);
  if (foreign !== undefined) {
    closeFd(fd); // the close lets the lock go
    throw new HostFault(foreign);
  }
  const waitedMs = performance.now() - t0;
  held.add(key);
  if (writable && !options.shared) writeHolder(fd, label);
  return {
    path,
    waitedMs,
    release: once(() => {
      held.delete(key);
      try {
        // the file this process made is removed while still held: a waiter that then takes it sees it is gone and
        // takes the next one. A file that was there before (a lock file left by a killed holder, or the one
        // MAPPED_REG_TIMING_LOCK names) is only emptied of this holder's line, and stays. A shared holder wrote
        // nothing, and empties and removes only the file it made, as its last holder (its lock made exclusive
        // without waiting: the conversion may let go of it, which the release does anyway).
        if (writable && (!options.shared || (made && flock(fd, LOCK_EX | LOCK_NB)))) {
          ftruncate(fd, 0);
          try {
            if (made && stillAt(path, key)) unlinkSync(path);
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
