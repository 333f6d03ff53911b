// bindings/scratch-lock.ts in this process: a scratch folder is held with flock(2) on its `lock` file for as long
// as it lives, takes its name only once that lock is held, and cleanup removes a folder only when its lock is free
// (or, with no lock to judge by, when it is old and its pid is no process here). The locks other processes hold
// are taken with koffi's flock on libc straight from a child process, not through the code under test.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import koffi from 'koffi';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ROOT } from './support/command.js';
import { holdLock as holdLockElsewhere } from './support/lock-holder.js';

// renameSync, as scratch-lock.ts imports it, runs a hook first when a test sets one (to look at the folder at the
// moment it takes its name, or to make the rename fail); otherwise node:fs as it is
const hooks = vi.hoisted(() => ({ beforeRename: undefined as undefined | ((from: string, to: string) => void) }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const renameSync: typeof fs.renameSync = (from, to) => {
    hooks.beforeRename?.(String(from), String(to));
    fs.renameSync(from, to);
  };
  return { ...fs, default: { ...fs, renameSync }, renameSync };
});

const { LOCK_FILE, NO_LOCK_GRACE_MS, SCRATCH_PREFIX, makeLockedFolder, removeStale } = await import('../bindings/scratch-lock.js');
const { openFdCount, statfs } = await import('../bindings/libc.js');

// libc's flock and open through koffi, for the test's own look at a lock (not bindings/libc.ts)
const libc = koffi.load('libc.so.6');
const rawOpen = libc.func('int open(const char *path, int flags)') as (path: string, flags: number) => number;
const rawClose = libc.func('int close(int fd)') as (fd: number) => number;
const rawFlock = libc.func('int flock(int fd, int operation)') as (fd: number, op: number) => number;
const O_RDONLY = 0;
const LOCK_EX = 2;
const LOCK_NB = 4;

/** Whether some other open file holds `file` locked: a new open of it cannot take LOCK_EX|LOCK_NB. */
function heldElsewhere(file: string): boolean {
  const fd = rawOpen(file, O_RDONLY);
  if (fd < 0) throw new Error(`open ${file} failed (errno ${koffi.errno()})`);
  try {
    return rawFlock(fd, LOCK_EX | LOCK_NB) !== 0; // our own lock, when we get it, goes with the close
  } finally {
    rawClose(fd);
  }
}

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-scratch-lock-'));
const mounts: string[] = [];
const children: (() => void)[] = [];
/** A tag in the names this file makes in /dev/shm, shared with other test files and runs. */
const tag = `t${process.pid}${Math.random().toString(36).slice(2, 8)}`;
/** A pid above any pid_max: a run in another PID namespace, or a dead one; no process here. */
const NO_PID = 4194399;

afterEach(() => {
  hooks.beforeRename = undefined;
});
afterAll(() => {
  for (const release of children) release();
  for (const m of mounts.reverse()) spawnSync('umount', [m]);
  rmSync(work, { recursive: true, force: true });
  for (const n of readdirSync('/dev/shm')) if (n.includes(tag)) rmSync(join('/dev/shm', n), { recursive: true, force: true });
});

function folderIn(parent = work): string {
  return mkdtempSync(join(parent, 'dir-'));
}

/** holdLock, its holder killed after all tests at the latest. */
async function holdLock(file: string): Promise<() => void> {
  const release = await holdLockElsewhere(file);
  children.push(release);
  return release;
}

/** Kills the holder and waits until its lock is free (the kernel releases it as the process ends). */
async function releaseAndWait(release: () => void, lock: string): Promise<void> {
  release();
  for (let i = 0; i < 200 && heldElsewhere(lock); i++) await new Promise((r) => setTimeout(r, 25));
  expect(heldElsewhere(lock)).toBe(false);
}

/**
 * A folder `name` in `dir` as a run leaves it (a lock file, a region file), its lock held by another process when
 * `hold` (taken before the folder has its name, as a run does: cleaners in other test files may look at any moment).
 */
async function planted(dir: string, name: string, hold: boolean): Promise<{ path: string; release: () => void }> {
  const path = join(dir, name);
  const making = join(dir, `making-${name.slice(1)}`);
  mkdirSync(making);
  writeFileSync(join(making, LOCK_FILE), '');
  writeFileSync(join(making, 'region.bin'), 'x');
  const release = hold ? await holdLock(join(making, LOCK_FILE)) : () => {};
  renameSync(making, path);
  return { path, release };
}

/** Sets a folder's mtime `ms` in the past. */
function age(path: string, ms: number): void {
  const then = new Date(Date.now() - ms);
  utimesSync(path, then, then);
}

/** A process that lives until the end of the file (its pid is a live one here). */
function liveProcess(): number {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  children.push(() => child.kill('SIGKILL'));
  return child.pid!;
}

describe('makeLockedFolder', () => {
  it('makes .mapped-reg-<pid>-XXXXXX, mode 0700, with a lock file (0600) it holds; remove() takes it away and frees the descriptor', () => {
    const dir = folderIn();
    const fds = openFdCount();
    const f = makeLockedFolder(dir);
    expect(dirname(f.path)).toBe(dir);
    expect(basename(f.path)).toMatch(new RegExp(`^\\.mapped-reg-${process.pid}-[A-Za-z0-9]{6}$`));
    expect(basename(f.path).startsWith(SCRATCH_PREFIX)).toBe(true);
    expect(readdirSync(dir)).toEqual([basename(f.path)]); // nothing left under the name it was made with
    expect(statSync(f.path).mode & 0o777).toBe(0o700);
    expect(readdirSync(f.path)).toEqual([LOCK_FILE]);
    expect(statSync(join(f.path, LOCK_FILE)).mode & 0o777).toBe(0o600);
    expect(heldElsewhere(join(f.path, LOCK_FILE))).toBe(true);
    expect(openFdCount()).toBe(fds + 1);
    writeFileSync(join(f.path, 'region.bin'), 'x');
    f.remove();
    expect(readdirSync(dir)).toEqual([]);
    expect(openFdCount()).toBe(fds);
    f.remove(); // idempotent: no second close of a descriptor that may be someone else's by now
    expect(openFdCount()).toBe(fds);
  });

  it('two folders in one place are two names, two locks', () => {
    const dir = folderIn();
    const a = makeLockedFolder(dir);
    const b = makeLockedFolder(dir);
    try {
      expect(a.path).not.toBe(b.path);
      expect(heldElsewhere(join(a.path, LOCK_FILE))).toBe(true);
      expect(heldElsewhere(join(b.path, LOCK_FILE))).toBe(true);
      a.remove();
      expect(existsSync(a.path)).toBe(false);
      expect(heldElsewhere(join(b.path, LOCK_FILE))).toBe(true);
    } finally {
      a.remove();
      b.remove();
    }
  });
});

describe('makeLockedFolder: taking its name by a rename, once its lock is held', () => {
  it('the folder takes its name only once its lock is held: when renamed, it is .mapped-reg-new-<pid>-XXXXXX and its lock file is locked', () => {
    const dir = folderIn();
    const seen: { from: string; to: string; locked: boolean; toExists: boolean }[] = [];
    hooks.beforeRename = (from, to) => {
      seen.push({ from, to, locked: heldElsewhere(join(from, LOCK_FILE)), toExists: existsSync(to) });
    };
    const f = makeLockedFolder(dir);
    try {
      expect(seen).toHaveLength(1);
      const [{ from, to, locked, toExists }] = seen as [(typeof seen)[0]];
      expect(basename(from)).toMatch(new RegExp(`^\\.mapped-reg-new-${process.pid}-[A-Za-z0-9]{6}$`));
      expect(to).toBe(f.path);
      // the same random suffix
      expect(basename(to)).toBe(`.mapped-reg-${process.pid}-${basename(from).slice(-6)}`);
      expect(locked).toBe(true);
      expect(toExists).toBe(false);
      expect(existsSync(from)).toBe(false);
    } finally {
      f.remove();
    }
  });

  it('a cleaner that runs while the folder is still being made (named new-, locked) keeps it', () => {
    const dir = folderIn();
    let cleaned: string[] | undefined;
    hooks.beforeRename = () => {
      cleaned = removeStale(dir);
    };
    const f = makeLockedFolder(dir);
    try {
      expect(cleaned).toEqual([]);
      expect(readdirSync(f.path)).toEqual([LOCK_FILE]);
    } finally {
      f.remove();
    }
  });

  it('when the rename fails: the error is thrown, the lock descriptor closed, the folder being made removed', () => {
    const dir = folderIn();
    const fds = openFdCount();
    const failure = Object.assign(new Error('EXDEV: made up by the test, rename'), { code: 'EXDEV' });
    hooks.beforeRename = () => {
      throw failure;
    };
    expect(() => makeLockedFolder(dir)).toThrow(failure);
    expect(readdirSync(dir)).toEqual([]);
    expect(openFdCount()).toBe(fds);
  });
});

describe('makeLockedFolder: a full or missing folder, and /dev/shm', () => {
  it('no inode left for the lock file (a tmpfs with nr_inodes=2): ENOSPC is thrown, the folder being made removed', () => {
    const dir = folderIn();
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,nr_inodes=2', 'tmpfs', dir]);
    mounts.push(dir);
    expect(() => makeLockedFolder(dir)).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a folder that does not exist: ENOENT, nothing made', () => {
    expect(() => makeLockedFolder(join(work, 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    expect(existsSync(join(work, 'missing'))).toBe(false);
  });

  it('in /dev/shm (tmpfs): held, kept by a cleaner there, removed by remove()', () => {
    expect(statfs('/dev/shm').fsName).toBe('tmpfs');
    const f = makeLockedFolder('/dev/shm');
    try {
      expect(dirname(f.path)).toBe('/dev/shm');
      expect(heldElsewhere(join(f.path, LOCK_FILE))).toBe(true);
      expect(removeStale('/dev/shm')).not.toContain(basename(f.path));
      expect(existsSync(join(f.path, LOCK_FILE))).toBe(true);
    } finally {
      f.remove();
    }
    expect(existsSync(f.path)).toBe(false);
  });
});

describe('makeLockedFolder in a process of its own (dist/bindings/scratch-lock.js)', () => {
  const script = (dir: string, end: string): string =>
    `import(${JSON.stringify(join(ROOT, 'dist', 'bindings', 'scratch-lock.js'))}).then(({ makeLockedFolder }) => {
      const f = makeLockedFolder(${JSON.stringify(dir)});
      process.stdout.write(f.path + '\\n');
      ${end}
    });`;

  it('a normal exit removes the folders still held', () => {
    const dir = folderIn();
    const r = spawnSync(process.execPath, ['-e', script(dir, 'process.exitCode = 0;')], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/\.mapped-reg-\d+-/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("a killed process's folder stays, its lock free: a cleaner removes it and says so; a live process's is kept", async () => {
    const dir = folderIn();
    const start = (): Promise<{ path: string; kill: () => void }> => {
      const child = spawn(process.execPath, ['-e', script(dir, 'setInterval(() => {}, 1000);')], { stdio: ['ignore', 'pipe', 'inherit'] });
      const kill = (): void => {
        child.kill('SIGKILL');
      };
      children.push(kill);
      return new Promise((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => resolve({ path: d.toString().trim(), kill }));
        child.on('exit', (code) => reject(new Error(`the folder's maker exited (${code})`)));
      });
    };
    const killed = await start();
    const alive = await start();
    expect(heldElsewhere(join(killed.path, LOCK_FILE))).toBe(true);
    expect(removeStale(dir)).toEqual([]);
    await releaseAndWait(killed.kill, join(killed.path, LOCK_FILE));
    expect(readdirSync(dir).sort()).toEqual([basename(alive.path), basename(killed.path)].sort());
    expect(removeStale(dir)).toEqual([basename(killed.path)]);
    expect(readdirSync(dir)).toEqual([basename(alive.path)]);
    expect(heldElsewhere(join(alive.path, LOCK_FILE))).toBe(true);
  });
});

describe('removeStale: folders with a lock file', () => {
  it('removes a folder whose lock is free and keeps one whose lock another process holds, whatever its pid', async () => {
    const dir = folderIn();
    const held = await planted(dir, `.mapped-reg-${NO_PID}-held`, true);
    const free = await planted(dir, `.mapped-reg-${NO_PID}-free`, false);
    // a pid of this process: the lock decides, not the pid
    const ownFree = await planted(dir, `.mapped-reg-${process.pid}-ownfree`, false);
    expect(removeStale(dir).sort()).toEqual([basename(free.path), basename(ownFree.path)].sort());
    expect(readdirSync(dir)).toEqual([basename(held.path)]);
    expect(readdirSync(held.path).sort()).toEqual([LOCK_FILE, 'region.bin']);
    expect(heldElsewhere(join(held.path, LOCK_FILE))).toBe(true); // the cleaner let go of it
    // once its holder is gone, it is stale too
    await releaseAndWait(held.release, join(held.path, LOCK_FILE));
    expect(removeStale(dir)).toEqual([basename(held.path)]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("keeps the folder of a live makeLockedFolder of this process (another open file's lock)", () => {
    const dir = folderIn();
    const f = makeLockedFolder(dir);
    try {
      expect(removeStale(dir)).toEqual([]);
      expect(readdirSync(dir)).toEqual([basename(f.path)]);
      expect(heldElsewhere(join(f.path, LOCK_FILE))).toBe(true);
    } finally {
      f.remove();
    }
  });

  it('a free lock is enough however young the folder', async () => {
    const dir = folderIn();
    const { path } = await planted(dir, `.mapped-reg-${NO_PID}-young`, false);
    expect(Date.now() - statSync(path).mtimeMs).toBeLessThan(NO_LOCK_GRACE_MS);
    expect(removeStale(dir)).toEqual([basename(path)]);
  });

  it('a lock file that is a symbolic link is not followed: the folder is left (it cannot tell)', () => {
    const dir = folderIn();
    const target = join(work, `target-${Math.random().toString(36).slice(2)}`);
    writeFileSync(target, '');
    const path = join(dir, `.mapped-reg-${NO_PID}-linkedlock`);
    mkdirSync(path);
    symlinkSync(target, join(path, LOCK_FILE));
    age(path, 10 * NO_LOCK_GRACE_MS);
    expect(removeStale(dir)).toEqual([]);
    expect(readdirSync(path)).toEqual([LOCK_FILE]);
    expect(existsSync(target)).toBe(true);
  });

  it('in /dev/shm: a held folder is kept, a free one is gone', async () => {
    const held = await planted('/dev/shm', `.mapped-reg-${NO_PID}-held${tag}`, true);
    const free = await planted('/dev/shm', `.mapped-reg-${NO_PID}-free${tag}`, false);
    const removed = removeStale('/dev/shm');
    expect(removed).not.toContain(basename(held.path));
    // (another test file's run may be the one that removed the free folder: only the end state is asserted)
    expect(readdirSync('/dev/shm').filter((n) => n.endsWith(tag))).toEqual([basename(held.path)]);
    expect(existsSync(free.path)).toBe(false);
    expect(readdirSync(held.path).sort()).toEqual([LOCK_FILE, 'region.bin']);
  });

  it('a stale folder it cannot remove (a read-only bind mount) is left, not reported, and the rest is still cleaned', async () => {
    const source = folderIn();
    const stale = await planted(source, `.mapped-reg-${NO_PID}-ro`, false);
    const view = folderIn();
    execFileSync('mount', ['--bind', source, view]);
    mounts.push(view);
    execFileSync('mount', ['-o', 'remount,bind,ro', view]);
    expect(statfs(view).readOnly).toBe(true);
    expect(removeStale(view)).toEqual([]);
    expect(readdirSync(join(view, basename(stale.path))).sort()).toEqual([LOCK_FILE, 'region.bin']);
    // the same folder, where it can be removed
    expect(removeStale(source)).toEqual([basename(stale.path)]);
    expect(readdirSync(view)).toEqual([]);
  });
});

describe('removeStale: folders with no lock to judge by', () => {
  it('no lock file (an older version): kept while young; once past the grace removed when its pid is no process here, kept when it is', () => {
    const dir = folderIn();
    const young = join(dir, `.mapped-reg-${NO_PID}-young`);
    const old = join(dir, `.mapped-reg-${NO_PID}-old`);
    const oldLive = join(dir, `.mapped-reg-${liveProcess()}-oldlive`);
    const oldOwn = join(dir, `.mapped-reg-${process.pid}-oldown`);
    const oldNoPid = join(dir, `.mapped-reg-nopid-old`);
    for (const p of [young, old, oldLive, oldOwn, oldNoPid]) {
      mkdirSync(p);
      writeFileSync(join(p, 'region.bin'), 'x');
    }
    for (const p of [old, oldLive, oldOwn, oldNoPid]) age(p, NO_LOCK_GRACE_MS + 5_000);
    age(young, NO_LOCK_GRACE_MS - 20_000);
    expect(removeStale(dir)).toEqual([basename(old)]);
    expect(readdirSync(dir).sort()).toEqual([young, oldLive, oldOwn, oldNoPid].map((p) => basename(p)).sort());
  });

  it('still named new- (its maker killed while making it): judged by age and pid only', async () => {
    const dir = folderIn();
    const young = await planted(dir, `.mapped-reg-new-${NO_PID}-young`, false);
    const oldDead = await planted(dir, `.mapped-reg-new-${NO_PID}-olddead`, false);
    const oldLive = await planted(dir, `.mapped-reg-new-${liveProcess()}-oldlive`, false);
    const oldOwn = await planted(dir, `.mapped-reg-new-${process.pid}-oldown`, false);
    for (const f of [oldDead, oldLive, oldOwn]) age(f.path, 2 * NO_LOCK_GRACE_MS);
    expect(removeStale(dir)).toEqual([basename(oldDead.path)]);
    expect(readdirSync(dir).sort()).toEqual([young, oldLive, oldOwn].map((f) => basename(f.path)).sort());
    // a young one is kept even with its pid gone
    expect(existsSync(join(young.path, LOCK_FILE))).toBe(true);
  });
});

describe("removeStale: the caller's own ended processes", () => {
  it('a folder still being made by a process the caller saw end (its own killed child) goes at once; young ones of other pids stay', async () => {
    const dir = folderIn();
    const mine = await planted(dir, `.mapped-reg-new-${NO_PID}-mine`, false);
    const other = await planted(dir, `.mapped-reg-new-${NO_PID - 1}-other`, false);
    const live = liveProcess();
    const stillLive = await planted(dir, `.mapped-reg-new-${live}-live`, false);
    // the grace kept it: a maker in another PID namespace could still be at work
    expect(removeStale(dir)).toEqual([]);
    // NO_PID ended (the caller's word), and is no process here: no grace; a pid said ended but alive is kept
    expect(removeStale(dir, new Set([NO_PID, live]))).toEqual([basename(mine.path)]);
    expect(readdirSync(dir).sort()).toEqual([other, stillLive].map((f) => basename(f.path)).sort());
  });
});

describe('removeStale: what is not a folder of ours', () => {
  it('leaves other names, plain files and symbolic links named like ours (not followed)', () => {
    const dir = folderIn();
    const elsewhere = folderIn();
    const target = join(elsewhere, `.mapped-reg-${NO_PID}-target`);
    mkdirSync(target);
    writeFileSync(join(target, LOCK_FILE), '');
    age(target, 10 * NO_LOCK_GRACE_MS);
    symlinkSync(target, join(dir, `.mapped-reg-${NO_PID}-link`));
    writeFileSync(join(dir, `.mapped-reg-${NO_PID}-file`), 'x');
    for (const other of [`mapped-reg-${NO_PID}-nodot`, `.mapped-${NO_PID}-short`, 'other']) {
      mkdirSync(join(dir, other));
      age(join(dir, other), 10 * NO_LOCK_GRACE_MS);
    }
    const before = readdirSync(dir).sort();
    expect(removeStale(dir)).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(before);
    expect(lstatSync(join(dir, `.mapped-reg-${NO_PID}-link`)).isSymbolicLink()).toBe(true);
    expect(readdirSync(target)).toEqual([LOCK_FILE]);
  });

  it('an empty folder: nothing to do', () => {
    expect(removeStale(folderIn())).toEqual([]);
  });
});
