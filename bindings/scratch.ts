// A scratch file of random bytes, mapped read-only and shared (as model weights are), with a reference: the
// same bytes read independently, by pread, when the probe compares them (a chunk at a time, never a whole
// region in memory). The file lives in a private folder named after the process
// (`.mapped-reg-<pid>-XXXXXX`) that the process holds locked (bindings/scratch-lock.ts), removed by close(), at
// process exit, or, after a crash, by the next run that finds the folder's lock free.
import { randomFillSync } from 'node:crypto';
import { closeSync, fsyncSync, openSync, statSync, writeSync, accessSync, constants as fsConstants } from 'node:fs';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { registrations, type RegistrationTable } from '../src/ops.js';
import { REFERENCE_CHUNK, type ReferenceReader } from '../src/probe.js';
import { type ReadAhead, readAhead } from './read-ahead.js';
import { HostFault, asHostFault } from './host-fault.js';
import { type FsInfo, MAP, PROT, type Mapping, mmap, munmap, preadFully, statfs } from './libc.js';
import { type LockedFolder, makeLockedFolder, removeStale } from './scratch-lock.js';
import { MiB } from '../results/format.js';

const CHUNK = 8 * MiB;

export interface ScratchRegion {
  /** The folder the file was made in, and its filesystem (ext4, xfs, tmpfs, ...). */
  readonly dir: string;
  readonly fsType: string;
  /** The file (removed with its folder by close()). */
  readonly path: string;
  readonly size: number;
  /** The file was written by the thread of startScratchFile, not by makeScratchRegion itself. */
  readonly writtenAhead: boolean;
  /** Read-write descriptor of the file (for pwrite/ftruncate hazards); closed by close(). */
  readonly fd: number;
  /** MAP_SHARED, PROT_READ mapping of the whole file. */
  readonly map: Mapping;
  /**
   * The same bytes, read by pread from the file's descriptor when asked (the probe reads a chunk at a time);
   * it throws once close() has run.
   */
  readonly reference: ReferenceReader;
  /**
   * Closes the descriptor, removes the file, and unmaps it unless any part of the mapping is still registered
   * in `table` (a range the driver may hold is never unmapped: it is kept until the process ends). Returns true
   * when the mapping was unmapped.
   */
  close(table?: RegistrationTable): boolean;
}

/** Why a folder cannot hold `bytes` of scratch files, or its filesystem when it can. */
function checkDir(dir: string, bytes: number): { problem: string } | { fs: FsInfo } {
  let st;
  try {
    st = statSync(dir);
  } catch {
    return { problem: `scratch folder ${dir} does not exist` };
  }
  if (!st.isDirectory()) return { problem: `scratch folder ${dir} is not a folder` };
  try {
    accessSync(dir, fsConstants.W_OK);
  } catch {
    return { problem: `scratch folder ${dir} is not writable` };
  }
  const fs = statfs(dir);
  if (fs.readOnly) return { problem: `scratch folder ${dir} is on a read-only filesystem` };
  if (fs.freeBytes < BigInt(bytes)) return { problem: `scratch folder ${dir} has ${fs.freeBytes / BigInt(MiB)} MiB free, less than the ${Math.ceil(bytes / MiB)} MiB asked` };
  return { fs };
}

/** Why a folder cannot hold scratch files, or undefined when it can. */
export function scratchDirProblem(dir: string, bytes: number): string | undefined {
  const c = checkDir(dir, bytes);
  return 'problem' in c ? c.problem : undefined;
}

/** The filesystems that keep their files in memory: a mapping of such a file is not the file-backed case (no disk behind it). */
export const MEMORY_FILESYSTEMS: readonly string[] = ['tmpfs', 'ramfs'];

/**
 * Why a folder should not hold the run's scratch files although it can: it is on tmpfs or ramfs, where a file is
 * memory and the registration of its mapping says nothing of a file on a disk (the hazard checks use tmpfs on
 * purpose, in a folder of their own). Undefined for a folder on a disk, or one whose filesystem cannot be told.
 */
export function memoryScratchProblem(dir: string): string | undefined {
  let fs: FsInfo;
  try {
    fs = statfs(dir);
  } catch {
    return undefined;
  }
  return MEMORY_FILESYSTEMS.includes(fs.fsName) ? `scratch folder ${dir} is on ${fs.fsName}: its files live in memory, not on a disk, so the file-backed mapping this tool certifies would not be tested` : undefined;
}

/**
 * Removes the scratch folders left in `dir` by processes that were killed (their lock is free), and returns
 * their names; a folder whose owner lives, in any PID namespace, is kept (bindings/scratch-lock.ts). `ended`: pids
 * the caller saw end (its own children), whose folders still being made go at once rather than after the grace.
 */
export function removeStaleScratch(dir: string, ended: ReadonlySet<number> = new Set()): string[] {
  return removeStale(dir, ended);
}

/** Writes `bytes` random bytes to the open file `fd` and syncs it (here, or in the writer thread below). */
function fillRandom(fd: number, bytes: number): void {
  const chunk = Buffer.allocUnsafe(Math.min(CHUNK, bytes));
  for (let off = 0; off < bytes; off += chunk.length) {
    const n = Math.min(chunk.length, bytes - off);
    randomFillSync(chunk, 0, n);
    let done = 0;
    while (done < n) done += writeSync(fd, chunk, done, n - done, off + done);
  }
  fsyncSync(fd);
}

// The writer threads: the loop of fillRandom, each on its share of the file its creator opened (the random bytes
// cost more than the writes: some 0.3 s for 256 MiB on one thread of the H200's host). The last to finish its
// share syncs the file and sets state[0] to 1; state[0] is 2 when one failed (the creator then writes the file
// itself, and says why). state[1] counts the shares done.
const WRITER = `
const { randomFillSync } = require('node:crypto');
const { fsyncSync, writeSync } = require('node:fs');
const { workerData: w } = require('node:worker_threads');
const state = new Int32Array(w.state);
try {
  const chunk = Buffer.allocUnsafe(Math.min(${CHUNK}, w.to - w.from));
  for (let off = w.from; off < w.to; off += chunk.length) {
    const n = Math.min(chunk.length, w.to - off);
    randomFillSync(chunk, 0, n);
    let done = 0;
    while (done < n) done += writeSync(w.fd, chunk, done, n - done, off + done);
  }
  if (Atomics.add(state, 1, 1) === w.shares - 1) {
    fsyncSync(w.fd);
    Atomics.compareExchange(state, 0, 0, 1);
    Atomics.notify(state, 0);
  }
} catch {
  Atomics.store(state, 0, 2);
  Atomics.notify(state, 0);
}
`;

/** How many threads write a scratch file of `bytes`: one a 64 MiB share, at most 4, and never every core. */
export function writerShares(bytes: number, cores = availableParallelism()): number {
  return Math.max(1, Math.min(4, cores - 1, Math.ceil(bytes / (64 * MiB))));
}

/** A scratch file being written by a thread of its own (startScratchFile), for the makeScratchRegion that takes it. */
export interface PendingScratch {
  readonly dir: string;
  readonly bytes: number;
  /** Waits for the writer; the folder, the open file, and whether the writer filled it. Once. */
  take(): { folder: LockedFolder; path: string; fd: number; written: boolean };
}

/**
 * Starts writing the probe's scratch file of `bytes` in `dir` on a thread of its own, so that the 256 MiB of
 * random bytes are written while the process does something else (a device runner: while Vitest starts). The
 * folder and the file are made here, on the calling thread (they are the process's, removed at its exit like
 * any other). Undefined when the folder cannot be made now: makeScratchRegion then makes it and says why.
 */
export function startScratchFile(dir: string, bytes: number, shares = writerShares(bytes)): PendingScratch | undefined {
  if (!Number.isSafeInteger(bytes) || bytes <= 0 || 'problem' in checkDir(dir, bytes)) return undefined;
  let folder: LockedFolder;
  try {
    folder = makeLockedFolder(dir);
  } catch {
    return undefined;
  }
  const path = join(folder.path, 'region.bin');
  let fd: number;
  try {
    fd = openSync(path, 'w+', 0o600);
  } catch {
    folder.remove();
    return undefined;
  }
  const state = new Int32Array(new SharedArrayBuffer(8));
  // shares of whole chunks, the last one shorter; not kept alive for the process: a run that never takes the
  // file ends without waiting for it
  const share = Math.ceil(bytes / shares / CHUNK) * CHUNK;
  for (let i = 0; i < shares; i++) {
    const from = Math.min(bytes, i * share);
    const to = i === shares - 1 ? bytes : Math.min(bytes, from + share);
    new Worker(WRITER, { eval: true, workerData: { fd, from, to, shares, state: state.buffer } }).unref();
  }
  let taken = false;
  return {
    dir,
    bytes,
    take() {
      if (taken) throw new Error(`the scratch file ${path} was taken already`);
      taken = true;
      Atomics.wait(state, 0, 0);
      return { folder, path, fd, written: Atomics.load(state, 0) === 1 };
    },
  };
}

/**
 * Makes and maps a scratch file of `bytes` random bytes in `dir`; its reference reads the file on demand. With
 * `pending` (startScratchFile of the same folder and size), the file its thread wrote is the one mapped.
 */
export function makeScratchRegion(dir: string, bytes: number, pending?: PendingScratch): ScratchRegion {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new RangeError(`scratch size must be a positive number of bytes, not ${bytes}`);
  const doing = "making the probe's scratch file";
  // the command checked the folder before the run; what fails here now is the host's doing (a full disk, a
  // second run sharing it): a HostFault, never the driver's failure
  const checked = checkDir(dir, bytes);
  const early = pending && pending.dir === dir && pending.bytes === bytes ? pending.take() : undefined;
  if ('problem' in checked && !early?.written) {
    if (early) {
      closeSync(early.fd);
      early.folder.remove();
    }
    throw new HostFault(`${checked.problem} while ${doing}`, /free, less than/.test(checked.problem) ? 'ENOSPC' : undefined);
  }
  const fsType = statfs(dir).fsName;
  // A private folder inside the scratch folder: the file name cannot collide with anything there.
  let folder: LockedFolder;
  if (early) folder = early.folder;
  else {
    try {
      folder = makeLockedFolder(dir);
    } catch (e) {
      throw asHostFault(e, dir, doing);
    }
  }
  const path = join(folder.path, 'region.bin');
  let fd = early?.fd ?? -1;
  let map: Mapping | undefined;
  try {
    if (fd < 0) fd = openSync(path, 'w+', 0o600);
    // the writer thread failed (no space, ...): written again here, where the host's error is raised and named
    if (!early?.written) fillRandom(fd, bytes);
    map = mmap(bytes, PROT.READ, MAP.SHARED, fd, 0);
    const m = map;
    const openFd = fd;
    let closed = false;
    let unmapped = false;
    /** Throws where the reference cannot give `length` bytes at `offset`: closed, or outside the file. */
    const readable = (offset: number, length: number): void => {
      if (closed) throw new Error(`scratch file ${path} is closed: its reference cannot be read`);
      if (!Number.isSafeInteger(offset) || offset < 0 || offset + length > bytes) {
        throw new RangeError(`reference read of ${length} bytes at ${offset}: outside the ${bytes} bytes of ${path}`);
      }
    };
    const read = (offset: number, into: Uint8Array): void => {
      readable(offset, into.length);
      const done = preadFully(openFd, into, offset);
      if (done < into.length) throw new Error(`scratch file ${path} ended at ${offset + done} of ${bytes} bytes`);
    };
    // the comparisons' chunks read ahead by glibc's threads (bindings/read-ahead.ts): made on the first view, let go
    // when the probe says its comparisons are over (rest) and at close
    let ahead: ReadAhead | undefined;
    const reference: ReferenceReader = {
      length: bytes,
      read,
      view(offset: number, length: number): Uint8Array {
        readable(offset, length);
        ahead ??= readAhead(openFd, bytes, Math.min(REFERENCE_CHUNK, bytes), read);
        return ahead.view(offset, length);
      },
      rest(): void {
        ahead?.close();
        ahead = undefined;
      },
    };
    return {
      dir,
      fsType,
      path,
      size: bytes,
      writtenAhead: early?.written === true,
      fd,
      map: m,
      reference,
      close(table: RegistrationTable = registrations): boolean {
        if (!closed) {
          closed = true;
          try {
            ahead?.close();
          } finally {
            closeSync(openFd);
          }
          folder.remove();
        }
        if (!unmapped && !table.isPinned(m)) {
          munmap(m);
          unmapped = true;
        }
        return unmapped;
      },
    };
  } catch (e) {
    if (map) munmap(map); // nothing registered yet
    if (fd >= 0) closeSync(fd);
    folder.remove();
    throw asHostFault(e, dir, doing);
  }
}
