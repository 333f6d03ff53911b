// A scratch file of random bytes, mapped read-only and shared (as model weights are), with a reference: the
// same bytes read independently, by pread, when the probe compares them (a chunk at a time, never a whole
// region in memory). The file lives in a private folder named after the process
// (`.mapped-reg-<pid>-XXXXXX`) that the process holds locked (bindings/scratch-lock.ts), removed by close(), at
// process exit, or, after a crash, by the next run that finds the folder's lock free.
import { randomFillSync } from 'node:crypto';
import { closeSync, fsyncSync, openSync, statSync, writeSync, accessSync, constants as fsConstants } from 'node:fs';
import { join } from 'node:path';
import { registrations, type RegistrationTable } from '../src/ops.js';
import type { ReferenceReader } from '../src/probe.js';
import { HostFault, asHostFault } from './host-fault.js';
import { type FsInfo, MAP_SHARED, PROT_READ, type Mapping, mmap, munmap, preadFully, statfs } from './libc.js';
import { type LockedFolder, makeLockedFolder, removeStale } from './scratch-lock.js';

const MiB = 1024 * 1024;
const CHUNK = 8 * MiB;

export interface ScratchRegion {
  /** The folder the file was made in, and its filesystem (ext4, xfs, tmpfs, ...). */
  readonly dir: string;
  readonly fsType: string;
  /** The file (removed with its folder by close()). */
  readonly path: string;
  readonly size: number;
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

/**
 * Removes the scratch folders left in `dir` by processes that were killed (their lock is free), and returns
 * their names; a folder whose owner lives, in any PID namespace, is kept (bindings/scratch-lock.ts).
 */
export function removeStaleScratch(dir: string): string[] {
  return removeStale(dir);
}

/** Makes and maps a scratch file of `bytes` random bytes in `dir`; its reference reads the file on demand. */
export function makeScratchRegion(dir: string, bytes: number): ScratchRegion {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new RangeError(`scratch size must be a positive number of bytes, not ${bytes}`);
  const doing = "making the probe's scratch file";
  // the command checked the folder before the run; what fails here now is the host's doing (a full disk, a
  // second run sharing it): a HostFault, never the driver's failure
  const checked = checkDir(dir, bytes);
  if ('problem' in checked) throw new HostFault(`${checked.problem} while ${doing}`, /free, less than/.test(checked.problem) ? 'ENOSPC' : undefined);
  const fsType = checked.fs.fsName;
  // A private folder inside the scratch folder: the file name cannot collide with anything there.
  let folder: LockedFolder;
  try {
    folder = makeLockedFolder(dir);
  } catch (e) {
    throw asHostFault(e, dir, doing);
  }
  const path = join(folder.path, 'region.bin');
  let fd = -1;
  let map: Mapping | undefined;
  try {
    fd = openSync(path, 'w+', 0o600);
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK, bytes));
    for (let off = 0; off < bytes; off += chunk.length) {
      const n = Math.min(chunk.length, bytes - off);
      randomFillSync(chunk, 0, n);
      let done = 0;
      while (done < n) done += writeSync(fd, chunk, done, n - done, off + done);
    }
    fsyncSync(fd);
    map = mmap(bytes, PROT_READ, MAP_SHARED, fd, 0);
    const m = map;
    const openFd = fd;
    let closed = false;
    let unmapped = false;
    const reference: ReferenceReader = {
      length: bytes,
      read(offset: number, into: Uint8Array): void {
        if (closed) throw new Error(`scratch file ${path} is closed: its reference cannot be read`);
        if (!Number.isSafeInteger(offset) || offset < 0 || offset + into.length > bytes) {
          throw new RangeError(`reference read of ${into.length} bytes at ${offset}: outside the ${bytes} bytes of ${path}`);
        }
        const done = preadFully(openFd, into, offset);
        if (done < into.length) throw new Error(`scratch file ${path} ended at ${offset + done} of ${bytes} bytes`);
      },
    };
    return {
      dir,
      fsType,
      path,
      size: bytes,
      fd,
      map: m,
      reference,
      close(table: RegistrationTable = registrations): boolean {
        if (!closed) {
          closed = true;
          closeSync(openFd);
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
