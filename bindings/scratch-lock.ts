// The private folders of scratch files (`.mapped-reg-<pid>-XXXXXX`, in --scratch-dir and in /dev/shm), and how a
// folder left behind is told from one in use. The owner holds an exclusive flock(2) on a `lock` file inside its
// folder for as long as the folder lives; a process that dies (SIGKILL, the OOM killer) releases it. Cleanup
// takes the lock without waiting (LOCK_EX|LOCK_NB) and removes only a folder whose lock it got: a run in another
// PID namespace (two containers sharing a host path), whose pid means nothing here, keeps its folder. A folder is
// made as `.mapped-reg-new-<pid>-XXXXXX` and takes its name once its lock is held, so no cleaner sees it unlocked.
// A folder still named `new` (its process killed while making it) or with no lock file (made by a version of this
// tool before the lock) is removed only when it is older than NO_LOCK_GRACE_MS and its pid is not a live process
// here.
import { closeSync, constants as fsConstants, existsSync, lstatSync, mkdtempSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { LOCK_EX, LOCK_NB, flock } from './libc.js';
import { once } from './once.js';

/** The names of the folders (the prefix, then the owner's pid). */
export const SCRATCH_PREFIX = '.mapped-reg-';
/** A folder being made (its lock not yet held): judged by age and pid only. */
const MAKING_PREFIX = `${SCRATCH_PREFIX}new-`;
/** The file inside each folder that its owner holds locked. */
export const LOCK_FILE = 'lock';
/** A folder without a lock file, or still being made, is left alone for this long. */
export const NO_LOCK_GRACE_MS = 60_000;

export interface LockedFolder {
  /** The folder, made with mkdtemp (mode 0700, a random suffix). */
  readonly path: string;
  /** Removes the folder and everything in it, then releases the lock. Idempotent. */
  remove(): void;
}

/** Folders of this process still to remove at exit (a normal exit; a killed process is cleaned by the next run). */
const live = new Set<LockedFolder>();
process.on('exit', () => {
  for (const f of live) f.remove();
});

/**
 * Makes a private folder in `dir` and holds its lock until remove() (or the end of the process). The folder is
 * made as `.mapped-reg-new-<pid>-XXXXXX`, its lock file made and locked there, and only then renamed
 * `.mapped-reg-<pid>-XXXXXX`: a cleaner never sees a folder of that name whose lock is not yet held.
 */
export function makeLockedFolder(dir: string): LockedFolder {
  const making = mkdtempSync(join(dir, `${MAKING_PREFIX}${process.pid}-`));
  const path = join(dir, `${SCRATCH_PREFIX}${process.pid}-${making.slice(making.lastIndexOf('-') + 1)}`);
  let fd = -1;
  try {
    // O_EXCL in a folder only we can write: nobody else's file, no link followed
    fd = openSync(join(making, LOCK_FILE), fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
    flock(fd, LOCK_EX | LOCK_NB); // a new file: nobody else can hold it
    renameSync(making, path); // the lock goes with the file
  } catch (e) {
    if (fd >= 0) closeSync(fd);
    rmSync(making, { recursive: true, force: true });
    throw e;
  }
  const folder: LockedFolder = {
    path,
    remove: once(() => {
      live.delete(folder);
      // removed while still locked: a cleaner that opens the lock file now finds it held, or gone
      try {
        rmSync(path, { recursive: true, force: true });
      } finally {
        closeSync(fd);
      }
    }),
  };
  live.add(folder);
  return folder;
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A folder with no lock file, or one still being made: left behind when it is older than the grace and its pid is
 * no live process here.
 */
function unlockedAndOld(folder: string, name: string, now: number, ended: ReadonlySet<number>): boolean {
  const m = /^\.mapped-reg-(?:new-)?(\d+)-/.exec(name);
  // a process the caller saw end (its own child) is making nothing: no grace
  if (m !== null && ended.has(Number(m[1])) && !processExists(Number(m[1]))) return true;
  try {
    if (now - lstatSync(folder).mtimeMs <= NO_LOCK_GRACE_MS) return false;
  } catch {
    return false;
  }
  return m !== null && Number(m[1]) !== process.pid && !processExists(Number(m[1]));
}

/**
 * Removes the folders of ours in `dir` that no process holds (left by a process that was killed), and returns
 * their names. A folder whose lock is held (by any process, in any PID namespace) is kept, and so is anything
 * that is not a plain folder of ours (a symbolic link named like one is not followed).
 */
export function removeStale(dir: string, ended: ReadonlySet<number> = new Set()): string[] {
  const removed: string[] = [];
  const now = Date.now();
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(SCRATCH_PREFIX)) continue;
    const folder = join(dir, name);
    try {
      if (!lstatSync(folder).isDirectory()) continue;
    } catch {
      continue;
    }
    // the lock is taken and kept while the folder is removed, so that no live owner can be in it meanwhile
    let fd = -1;
    if (name.startsWith(MAKING_PREFIX)) {
      if (unlockedAndOld(folder, name, now, ended)) {
        rmSync(folder, { recursive: true, force: true });
        removed.push(name);
      }
      continue;
    }
    try {
      fd = openSync(join(folder, LOCK_FILE), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') continue; // cannot tell: leave it
    }
    try {
      const stale = fd >= 0 ? flock(fd, LOCK_EX | LOCK_NB) : unlockedAndOld(folder, name, now, ended);
      // its owner may have removed it itself (then released the lock) since we opened the lock file
      if (!stale || !existsSync(folder)) continue;
      rmSync(folder, { recursive: true, force: true });
      removed.push(name);
    } catch {
      // not ours to remove (another user's folder in /dev/shm), or gone meanwhile
    } finally {
      if (fd >= 0) closeSync(fd);
    }
  }
  return removed;
}
