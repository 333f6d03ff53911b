// bindings/timing-lock.ts: the host-wide lock around timed copies. Other holders are child processes running the
// built module (dist/bindings/timing-lock.js), each taking the lock on a file in this test's own temp folder.
// Mutual exclusion is proven by a shared log of enter/leave events (never by timings); the waits end on events
// (a line in the log, a process gone), never on fixed sleeps.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isHostFault } from '../bindings/host-fault.js';
import { TimingLockTimeout, acquireTimingLock, timingLockFile, timingLockPath } from '../bindings/timing-lock.js';
import { ROOT, cleanEnv } from './support/command.js';
import { holdLock } from './support/lock-holder.js';
import { waitUntil } from './support/processes.js';
import { thrown } from './support/thrown.js';

const MODULE = join(ROOT, 'dist/bindings/timing-lock.js');
const work = mkdtempSync(join(tmpdir(), 'mapped-reg-timing-lock-'));
chmodSync(work, 0o755); // a child of another user (below) reaches its files
const children: ChildProcess[] = [];
const savedLock = process.env.MAPPED_REG_TIMING_LOCK;
afterEach(() => {
  if (savedLock === undefined) delete process.env.MAPPED_REG_TIMING_LOCK;
  else process.env.MAPPED_REG_TIMING_LOCK = savedLock;
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

let n = 0;
/** A path of its own for one test's lock file. */
function lockPath(): string {
  return join(work, `lock-${++n}`);
}

interface Child {
  child: ChildProcess;
  pid: number;
  out(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * A child process running `body` as an ES module with acquireTimingLock imported; its arguments are
 * process.argv[1...]. `as`: another user's uid and gid.
 */
function child(body: string, args: string[], as?: { uid: number; gid: number }): Child {
  const script = `import { appendFileSync, existsSync } from 'node:fs';
import { acquireTimingLock } from ${JSON.stringify(MODULE)};
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
${body}`;
  const c = spawn(process.execPath, ['--input-type=module', '-e', script, ...args], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(as ?? {}),
  });
  children.push(c);
  let out = '';
  let err = '';
  c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  c.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    c.on('close', (code, signal) => {
      if (code !== 0 && signal === null) out += `\n[stderr] ${err}`;
      done({ code, signal });
    }),
  );
  return { child: c, pid: c.pid!, out: () => out, exit };
}

/** A child that takes the lock at argv[1] with the label argv[2], says "held", and keeps it until killed. */
function holder(path: string, label: string, as?: { uid: number; gid: number }): Child {
  return child(
    `const lock = acquireTimingLock({ path: process.argv[1], label: process.argv[2] });
console.log('held');
setInterval(() => {}, 1 << 30);`,
    [path, label],
    as,
  );
}

async function held(c: Child): Promise<void> {
  await waitUntil(() => c.out().includes('held'), 60_000, `the child ${c.pid} to hold the lock (output: ${c.out()})`);
}

/** A child's try for the lock without waiting: 'got it', or the name of what it threw. */
async function tryInChild(path: string, as?: { uid: number; gid: number }): Promise<string> {
  const c = child(
    `try {
  acquireTimingLock({ path: process.argv[1], timeoutMs: 0 }).release();
  console.log('got it');
} catch (e) {
  console.log(e.name);
}`,
    [path],
    as,
  );
  expect(await c.exit, c.out()).toEqual({ code: 0, signal: null });
  return c.out().trim();
}

/** What `make` returns, made under umask `mask`; the process's own umask back after it, whatever happens. */
function underUmask<T>(mask: number, make: () => T): T {
  const umask = process.umask(mask);
  try {
    return make();
  } finally {
    process.umask(umask);
  }
}

describe('the lock file', () => {
  it(`is MAPPED_REG_TIMING_LOCK when set, else ${timingLockFile()} in os.tmpdir(): one per user`, () => {
    delete process.env.MAPPED_REG_TIMING_LOCK;
    expect(timingLockPath()).toBe(join(tmpdir(), `mapped-reg-conformance-timing-${process.getuid!()}.lock`));
    expect(timingLockFile(65534)).toBe('mapped-reg-conformance-timing-65534.lock');
    process.env.MAPPED_REG_TIMING_LOCK = join(work, 'from-env');
    expect(timingLockPath()).toBe(join(work, 'from-env'));
    const lock = acquireTimingLock();
    expect(lock.path).toBe(join(work, 'from-env'));
    expect(existsSync(join(work, 'from-env'))).toBe(true);
    lock.release();
  });

  it("is made mode 0600 whatever the umask (this user's alone); the holder writes its pid and label; release removes the file", async () => {
    const path = lockPath();
    const lock = underUmask(0o777, () => acquireTimingLock({ path, label: 'device 0\nof two' }));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe(`${process.pid} device 0 of two\n`);
    expect(lock.waitedMs).toBeGreaterThanOrEqual(0);
    lock.release();
    // nothing left behind in the temporary folder
    expect(existsSync(path)).toBe(false);
    lock.release(); // idempotent
    // free again: taken at once, and a second release of the first lock does not release this one
    const again = acquireTimingLock({ path, timeoutMs: 0 });
    lock.release();
    expect(await tryInChild(path)).toBe('TimingLockTimeout');
    again.release();
    expect(await tryInChild(path)).toBe('got it');
  });

  it('a lock this process holds: an error at once, not a wait for itself', () => {
    const path = lockPath();
    const lock = acquireTimingLock({ path });
    expect(thrown(() => acquireTimingLock({ path }))).toHaveProperty('message', `the timing lock ${path} is already held by this process`);
    lock.release();
    acquireTimingLock({ path }).release();
  });

  it('a symbolic link planted at its path is refused (a HostFault), its target neither made nor touched', () => {
    const target = join(work, 'target-of-link');
    const path = lockPath();
    symlinkSync(target, path);
    const dangling = thrown(() => acquireTimingLock({ path }));
    expect(isHostFault(dangling)).toBe(true);
    expect((dangling as Error).message).toBe(`the host: cannot use the timing lock ${path} (it is a symbolic link, refused) while opening it`);
    expect(existsSync(target)).toBe(false);
    writeFileSync(target, 'precious\n');
    expect(isHostFault(thrown(() => acquireTimingLock({ path })))).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('precious\n');
    expect(lstatSync(path).isSymbolicLink()).toBe(true);
  });

  it('a file that cannot be opened, or is not a regular file (a FIFO opens without waiting), is a HostFault', () => {
    const missing = join(work, 'no-such-folder', 'lock');
    const e = thrown(() => acquireTimingLock({ path: missing }));
    expect(isHostFault(e)).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^the host: cannot use the timing lock ${missing} \\(open: No such file or directory \\(ENOENT\\)`));
    const fifo = lockPath();
    execFileSync('mkfifo', ['-m', '0444', fifo]);
    const f = thrown(() => acquireTimingLock({ path: fifo }));
    expect(isHostFault(f)).toBe(true);
    expect((f as Error).message).toBe(`the host: the timing lock ${fifo} is not a regular file`);
    // a folder planted there: open refuses it (EISDIR), and it stays
    const folder = lockPath();
    mkdirSync(folder);
    const d = thrown(() => acquireTimingLock({ path: folder, timeoutMs: 0 }));
    expect(isHostFault(d)).toBe(true);
    expect((d as Error).message).toMatch(new RegExp(`^the host: cannot use the timing lock ${folder} \\(open: Is a directory \\(EISDIR\\)`));
    expect(statSync(folder).isDirectory()).toBe(true);
    expect(thrown(() => acquireTimingLock({ path: lockPath(), timeoutMs: -1 }))).toBeInstanceOf(RangeError);
  });
});

/**
 * A contender: takes the lock at argv[1] argv[3] times, logging start, enter and leave with its pid to the file
 * argv[2]; prints each take's waitedMs and the wall time of the call, as JSON.
 */
const CONTENDER = `const [path, log, rounds] = process.argv.slice(1);
appendFileSync(log, 'start ' + process.pid + '\\n');
const waits = [];
for (let r = 0; r < Number(rounds); r++) {
  const before = performance.now();
  const lock = acquireTimingLock({ path, label: 'child ' + process.pid });
  const wall = performance.now() - before;
  appendFileSync(log, 'enter ' + process.pid + '\\n');
  waits.push({ waitedMs: lock.waitedMs, wall });
  sleep(1); // inside for a moment, so that the other one tries meanwhile
  appendFileSync(log, 'leave ' + process.pid + '\\n');
  lock.release();
}
console.log(JSON.stringify(waits));`;

/**
 * Reads a log of enter/leave events that starts with `first` inside, asserting that no one enters while another is
 * inside and that each leave is the one inside; the number of enters of each, in the order they first entered.
 */
function entersOneAtATime(log: string, first: string): number[] {
  let inside: string | null = first;
  const enters = new Map<string, number>();
  for (const line of readFileSync(log, 'utf8').split('\n').filter((l) => l !== '')) {
    const [event, who] = line.split(' ') as [string, string];
    if (event === 'start') continue;
    if (event === 'enter') {
      expect(inside, `${who} entered while ${inside} was inside`).toBeNull();
      inside = who;
      enters.set(who, (enters.get(who) ?? 0) + 1);
    } else {
      expect(event).toBe('leave');
      expect(inside).toBe(who);
      inside = null;
    }
  }
  expect(inside).toBeNull();
  return [...enters.values()];
}

describe('between processes', () => {
  it('two processes and this one contend: the log of enter/leave never shows two inside; waitedMs is recorded', async () => {
    const path = lockPath();
    const log = join(work, `log-${n}`);
    writeFileSync(log, '');
    const ROUNDS = 20;
    // this process holds it while the children start: each child's first try waits
    const mine = acquireTimingLock({ path, label: 'test' });
    const contenders = [0, 1].map(() => child(CONTENDER, [path, log, String(ROUNDS)]));
    await waitUntil(() => readFileSync(log, 'utf8').split('start').length === 3, 60_000, 'both children to start');
    appendFileSync(log, 'leave test\n');
    mine.release();
    const exits = await Promise.all(contenders.map((c) => c.exit));
    expect(exits, contenders.map((c) => c.out()).join('\n')).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
    // the log: 'test' inside first, then one process at a time
    expect(entersOneAtATime(log, 'test')).toEqual([ROUNDS, ROUNDS]);
    // waitedMs: a figure of the wait, within the call's own time; the rounds as a whole waited for something
    const waits = contenders.flatMap((c) => JSON.parse(c.out()) as { waitedMs: number; wall: number }[]);
    expect(waits).toHaveLength(2 * ROUNDS);
    for (const w of waits) {
      expect(w.waitedMs).toBeGreaterThanOrEqual(0);
      expect(w.waitedMs).toBeLessThanOrEqual(w.wall);
    }
    expect(waits.reduce((s, w) => s + w.waitedMs, 0)).toBeGreaterThan(0);
  });

  it('a timeout names the holder (its pid and label); a killed holder releases the lock', async () => {
    const path = lockPath();
    const log = join(work, `log-${n}`);
    writeFileSync(log, '');
    const h = holder(path, 'cuda:0 timed copies');
    await held(h);
    const e = thrown(() => acquireTimingLock({ path, timeoutMs: 50 }));
    expect(e).toBeInstanceOf(TimingLockTimeout);
    expect((e as TimingLockTimeout).holder).toEqual({ pid: h.pid, label: 'cuda:0 timed copies' });
    expect((e as Error).message).toBe(`the timing lock ${path} is still held after 50 ms, by pid ${h.pid} (cuda:0 timed copies)`);
    // a waiter with no limit, started while the holder lives: it gets the lock only once the holder is killed
    const waiter = child(
      `const [path, log] = process.argv.slice(1);
appendFileSync(log, 'trying\\n');
const lock = acquireTimingLock({ path });
appendFileSync(log, 'entered\\n');
console.log(JSON.stringify({ waitedMs: lock.waitedMs }));`,
      [path, log],
    );
    await waitUntil(() => readFileSync(log, 'utf8').includes('trying'), 60_000, 'the waiter to try');
    expect(waiter.child.exitCode).toBeNull();
    appendFileSync(log, 'killing\n');
    h.child.kill('SIGKILL');
    expect(await h.exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await waiter.exit, waiter.out()).toEqual({ code: 0, signal: null });
    expect(readFileSync(log, 'utf8')).toBe('trying\nkilling\nentered\n');
    expect((JSON.parse(waiter.out()) as { waitedMs: number }).waitedMs).toBeGreaterThan(0);
    // and free now for this process too
    acquireTimingLock({ path, timeoutMs: 60_000 }).release();
  });
});

describe('shared holders (the truncation child\'s driver init)', () => {
  /** A child that takes the lock at argv[1] shared, says "held", and keeps it until killed. */
  const sharedHolder = (path: string): Child =>
    child(
      `const lock = acquireTimingLock({ path: process.argv[1], label: 'shared', shared: true });
console.log('held');
setInterval(() => {}, 1 << 30);`,
      [path],
    );

  it('two shared holders at once; an exclusive taker waits for both, and gets it once both let go; they write nothing', async () => {
    const path = lockPath();
    const a = sharedHolder(path);
    await held(a);
    const b = sharedHolder(path);
    await held(b);
    expect(readFileSync(path, 'utf8')).toBe('');
    expect(thrown(() => acquireTimingLock({ path, timeoutMs: 50 }))).toBeInstanceOf(TimingLockTimeout);
    a.child.kill('SIGKILL');
    await a.exit;
    expect(thrown(() => acquireTimingLock({ path, timeoutMs: 50 }))).toBeInstanceOf(TimingLockTimeout);
    b.child.kill('SIGKILL');
    await b.exit;
    acquireTimingLock({ path, timeoutMs: 60_000 }).release();
  });

  it('an exclusive taker that gives up names the shared holders as the kernel lists them (they write no line)', async () => {
    const path = lockPath();
    const a = sharedHolder(path);
    await held(a);
    const b = sharedHolder(path);
    await held(b);
    try {
      const e = thrown(() => acquireTimingLock({ path, timeoutMs: 10 }));
      expect(e).toBeInstanceOf(TimingLockTimeout);
      const holder = (e as TimingLockTimeout).holder;
      expect([a.child.pid, b.child.pid]).toContain(holder?.pid);
      expect(holder?.label).toBe('node, holding it shared (and 1 more holder)');
      expect((e as Error).message).toMatch(/, by pid \d+ \(node, holding it shared \(and 1 more holder\)\)$/);
    } finally {
      a.child.kill('SIGKILL');
      b.child.kill('SIGKILL');
      await Promise.all([a.exit, b.exit]);
    }
  });

  it('timed copies go first: while an exclusive taker waits for shared holders, a new shared taker waits too; it gets in once the timed copies are done', async () => {
    const path = lockPath();
    const a = sharedHolder(path);
    await held(a);
    // before any exclusive taker: a second shared taker gets in beside the first
    acquireTimingLock({ path, shared: true, timeoutMs: 0 }).release();
    const timed = child(
      `const lock = acquireTimingLock({ path: process.argv[1], label: 'timed copies' });
console.log('held');
setInterval(() => {}, 1 << 30);`,
      [path],
    );
    try {
      /** A shared try without waiting: true when it was kept out (it lets go at once what it got). */
      const keptOut = (): boolean => {
        const e = thrown(() => acquireTimingLock({ path, shared: true, timeoutMs: 0 }).release());
        return e instanceof TimingLockTimeout;
      };
      // the exclusive taker waits for the shared holder, and has closed the gate: no shared taker joins the holder
      await waitUntil(keptOut, 30_000, 'the exclusive taker to wait, keeping shared takers out');
      const e = thrown(() => acquireTimingLock({ path, shared: true, timeoutMs: 20 }));
      expect(e).toBeInstanceOf(TimingLockTimeout);
      expect((e as TimingLockTimeout).behindTimedCopies).toBe(true);
      expect((e as Error).message).toMatch(/\(node, holding it shared\), with timed copies waiting to go first$/);
      expect(timed.out()).toBe('');
      a.child.kill('SIGKILL');
      await a.exit;
      await held(timed);
      // it holds the lock, and waits no more: a shared taker is kept out by its copies, not by a gate
      const during = thrown(() => acquireTimingLock({ path, shared: true, timeoutMs: 20 }));
      expect(during).toBeInstanceOf(TimingLockTimeout);
      expect((during as TimingLockTimeout).behindTimedCopies).toBe(false);
      expect((during as TimingLockTimeout).holder).toEqual({ pid: timed.pid, label: 'timed copies' });
    } finally {
      timed.child.kill('SIGKILL');
      await timed.exit;
    }
    acquireTimingLock({ path, shared: true, timeoutMs: 60_000 }).release();
  });

  it('an exclusive taker that gave up keeps no shared taker out (its gate goes with it)', async () => {
    const path = lockPath();
    const a = sharedHolder(path);
    await held(a);
    try {
      expect(thrown(() => acquireTimingLock({ path, timeoutMs: 50 }))).toBeInstanceOf(TimingLockTimeout);
      // this process lives on: a gate it left closed would keep the child out
      const c = execFileSync(
        process.execPath,
        ['--input-type=module', '-e', `import { acquireTimingLock } from ${JSON.stringify(MODULE)};
try { acquireTimingLock({ path: process.argv[1], timeoutMs: 0, shared: true }).release(); console.log('held'); } catch (e) { console.log(e.name); }`, path],
        { env: cleanEnv(), encoding: 'utf8' },
      );
      expect(c.trim()).toBe('held');
    } finally {
      a.child.kill('SIGKILL');
      await a.exit;
    }
  });

  it('a shared taker waits while an exclusive holder times its copies', () => {
    const path = lockPath();
    const mine = acquireTimingLock({ path, label: 'timed copies' });
    try {
      const c = execFileSync(
        process.execPath,
        ['--input-type=module', '-e', `import { acquireTimingLock } from ${JSON.stringify(MODULE)};
try { acquireTimingLock({ path: process.argv[1], timeoutMs: 100, shared: true }); console.log('held'); } catch (e) { console.log(e.name); }`, path],
        { env: cleanEnv(), encoding: 'utf8' },
      );
      expect(c.trim()).toBe('TimingLockTimeout');
    } finally {
      mine.release();
    }
  });

  it('the last shared holder removes the file it made; one that is not the last leaves it to the others', async () => {
    const path = lockPath();
    const first = acquireTimingLock({ path, shared: true });
    expect(existsSync(path)).toBe(true);
    first.release();
    expect(existsSync(path)).toBe(false);
    // a file that was there: used, left as it is
    writeFileSync(path, '');
    const second = acquireTimingLock({ path, shared: true });
    second.release();
    expect(existsSync(path)).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('');
    // made here, but another holds it shared too: left to it
    const made = lockPath();
    const third = acquireTimingLock({ path: made, shared: true });
    const other = sharedHolder(made);
    await held(other);
    third.release();
    expect(existsSync(made)).toBe(true);
    other.child.kill('SIGKILL');
    await other.exit;
  });
});

describe('between processes: a lock file read-only to its holder, or made by another user', () => {
  /** As root: a child of uid 65534 (a file of its own is then another user's to this process); else this user. */
  const other = process.getuid!() === 0 ? { uid: 65534, gid: 65534 } : undefined;

  it('a holder that wrote nothing (the file read-only to it) is named from the kernel\'s list of locks (/proc/locks)', async () => {
    const path = lockPath();
    writeFileSync(path, '');
    chmodSync(path, 0o444);
    if (other) chownSync(path, other.uid, other.gid);
    const h = holder(path, 'cannot write this', other);
    await held(h);
    expect(readFileSync(path, 'utf8')).toBe('');
    // a waiter of the same user as the holder gives up naming it: the pid the kernel lists, and its command
    const waiter = child(
      `try {
  acquireTimingLock({ path: process.argv[1], timeoutMs: 20 });
} catch (e) {
  console.log(JSON.stringify({ name: e.name, message: e.message, holder: e.holder }));
}`,
      [path],
      other,
    );
    expect(await waiter.exit, waiter.out()).toEqual({ code: 0, signal: null });
    expect(JSON.parse(waiter.out())).toEqual({ name: 'TimingLockTimeout', message: `the timing lock ${path} is still held after 20 ms, by pid ${h.pid} (node)`, holder: { pid: h.pid, label: 'node' } });
    h.child.kill('SIGKILL');
    await h.exit;
  });

  it("another user's lock file is refused (a HostFault), never shared, written or removed: the lock is one per user", async () => {
    const path = lockPath();
    const mine = underUmask(0o022, () => acquireTimingLock({ path, label: 'made here' }));
    if (other) {
      // the other user's run refuses the file this one made (and, as root, this run refuses the other's)
      expect(await tryInChild(path, other)).toBe('HostFault');
      mine.release();
      writeFileSync(path, '');
      chownSync(path, other.uid, other.gid);
      const e = thrown(() => acquireTimingLock({ path, timeoutMs: 0 }));
      expect(isHostFault(e)).toBe(true);
      expect((e as Error).message).toBe(`the host: the timing lock ${path} belongs to uid ${other.uid}, not to this user (uid 0): refused, left as it is`);
      expect(statSync(path).uid).toBe(other.uid);
    } else {
      mine.release();
    }
    expect(existsSync(path)).toBe(!!other);
  });
});

describe('a file at the lock\'s path that is not a lock of ours is left as it is', () => {
  it('a hard link to another file (a second name): refused (a HostFault), the file neither written nor removed', () => {
    const target = join(work, 'linked-target');
    writeFileSync(target, '');
    const path = lockPath();
    linkSync(target, path);
    const e = thrown(() => acquireTimingLock({ path, timeoutMs: 0 }));
    expect(isHostFault(e)).toBe(true);
    expect((e as Error).message).toBe(`the host: the timing lock ${path} has 2 names (a hard link to another file): refused, left as it is`);
    expect(readFileSync(target, 'utf8')).toBe('');
    expect(statSync(path).nlink).toBe(2);
  });

  it('a file of the user with other bytes (MAPPED_REG_TIMING_LOCK naming it): refused, not truncated, not removed', () => {
    const path = lockPath();
    writeFileSync(path, 'precious notes\n');
    const e = thrown(() => acquireTimingLock({ path, timeoutMs: 0 }));
    expect(isHostFault(e)).toBe(true);
    expect((e as Error).message).toBe(`the host: the timing lock ${path} holds 15 bytes that are not a holder's line ("<pid> <label>"): not a lock of this tool, refused, left as it is`);
    expect(readFileSync(path, 'utf8')).toBe('precious notes\n');
    // a big file whose start looks like a holder's line is not one either
    writeFileSync(path, `123 x\n${'y'.repeat(1000)}`);
    expect(isHostFault(thrown(() => acquireTimingLock({ path, timeoutMs: 0 })))).toBe(true);
    expect(readFileSync(path, 'utf8')).toHaveLength(1006);
    // and it is not held: the refusal let the lock go
    process.env.MAPPED_REG_TIMING_LOCK = path;
    expect(isHostFault(thrown(() => acquireTimingLock({ timeoutMs: 0 })))).toBe(true);
  });

  it('a file that was there (empty, or a dead holder\'s line): used, the holder written, emptied at release, never removed', () => {
    for (const before of ['', '99999 a holder killed while it held the lock\n']) {
      const path = lockPath();
      writeFileSync(path, before);
      const lock = acquireTimingLock({ path, timeoutMs: 0, label: 'this run' });
      expect(readFileSync(path, 'utf8')).toBe(`${process.pid} this run\n`);
      lock.release();
      expect(existsSync(path)).toBe(true);
      expect(readFileSync(path, 'utf8')).toBe('');
    }
  });

  // the file empty (flock(1), or a process holding the file open), or with the line of a holder killed before it
  // could clear it (pid 1 holds no lock here) while another process has taken the lock since
  for (const [what, before] of [
    ['when it wrote nothing (flock(1), or a process holding the file open)', ''],
    ["not by a killed holder's line left in the file", '1 cuda:0 of pid 1\n'],
  ] as const) {
    it(`a holder named by the kernel ${what}`, async () => {
      const path = lockPath();
      writeFileSync(path, before);
      const release = await holdLock(path);
      try {
        const e = thrown(() => acquireTimingLock({ path, timeoutMs: 10 }));
        expect(e).toBeInstanceOf(TimingLockTimeout);
        expect((e as TimingLockTimeout).holder).toEqual({ pid: release.pid, label: 'node' });
      } finally {
        release();
      }
    });
  }
});
