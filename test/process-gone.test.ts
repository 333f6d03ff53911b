// bindings/process-gone.ts: whether another process of the run is gone, from /proc, and the wait for it; and the
// command's choice of the processes a GPU's probe waits for (cli/discovering-runners.ts besideDiscovery). Real
// child processes, and a fake /proc for the states a test cannot make a process take.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childStart, processGone, waitUntilGone } from '../bindings/process-gone.js';
import { type Group, besideDiscovery } from '../cli/discovering-runners.js';
import { STALL_GRACE_S } from '../cli/orchestrate.js';
import type { SuiteOptions } from '../suites/protocol.js';
import { waitUntil } from './support/processes.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-process-gone-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

/** A child process running `code`; its pid once it runs. */
async function child(code: string): Promise<ChildProcess & { pid: number }> {
  const c = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  children.push(c);
  await waitUntil(() => c.pid !== undefined && childStart(c.pid, process.pid) !== undefined, 30_000, 'the child to run');
  return c as ChildProcess & { pid: number };
}

const FOREVER = 'setInterval(() => {}, 1 << 30)';

/** A fake /proc with one process's stat line: its folder. */
function fakeProc(pid: number, stat: string): string {
  const root = mkdtempSync(join(work, 'proc-'));
  mkdirSync(join(root, String(pid)));
  writeFileSync(join(root, String(pid), 'stat'), stat);
  return root;
}

/** A stat line: the command `comm`, the state, the start (field 22). */
const statLine = (pid: number, comm: string, state: string, start: number): string =>
  `${pid} (${comm}) ${state} 1 ${pid} ${pid} 0 -1 4194560 100 0 0 0 1 1 0 0 20 0 1 0 ${start} 1000000 100 18446744073709551615\n`;

describe('a process, gone or not', () => {
  it('this process is there, with its start; a child that exited and was reaped is gone', async () => {
    const me = childStart(process.pid, process.ppid);
    expect(me).toEqual({ pid: process.pid, startTicks: expect.any(Number) });
    expect(processGone(me!)).toBe(false);
    // not its parent's child: not taken (a /proc that is not the pid's own)
    expect(childStart(process.pid, process.ppid + 1)).toBeUndefined();
    const c = await child('');
    const start = childStart(c.pid, process.pid)!;
    await new Promise((done) => (c.exitCode !== null ? done(undefined) : c.once('exit', done)));
    await waitUntil(() => processGone(start), 30_000, 'the reaped child to be gone');
    expect(childStart(c.pid, process.pid)).toBeUndefined();
  });

  it('the start is read past the last parenthesis (a command with spaces and parentheses in it); a later start is another process', () => {
    const proc = fakeProc(4242, statLine(4242, 'node ) S (x', 'S', 777));
    expect(childStart(4242, 1, proc)).toEqual({ pid: 4242, startTicks: 777 });
    expect(childStart(4242, 2, proc)).toBeUndefined();
    expect(processGone({ pid: 4242, startTicks: 777 }, proc)).toBe(false);
    // the pid given to a newer process: not the one the run knew
    expect(processGone({ pid: 4242, startTicks: 700 }, proc)).toBe(true);
    // the run's processes are the kernel's: MAPPED_REG_PROC_ROOT (the machine as the looks see it) is not read
    const saved = process.env.MAPPED_REG_PROC_ROOT;
    process.env.MAPPED_REG_PROC_ROOT = proc;
    try {
      expect(childStart(4242, 1)).toEqual(childStart(4242, 1, '/proc'));
    } finally {
      if (saved === undefined) delete process.env.MAPPED_REG_PROC_ROOT;
      else process.env.MAPPED_REG_PROC_ROOT = saved;
    }
  });

  it('a zombie (its memory given back) and a dead process are gone; so is a pid with no stat, or one that cannot be read', () => {
    const zombie = fakeProc(4243, statLine(4243, 'node', 'Z', 777));
    expect(processGone({ pid: 4243, startTicks: 777 }, zombie)).toBe(true);
    expect(childStart(4243, 1, zombie)).toBeUndefined();
    const dead = fakeProc(4244, statLine(4244, 'node', 'X', 777));
    expect(processGone({ pid: 4244, startTicks: 777 }, dead)).toBe(true);
    expect(processGone({ pid: 4245, startTicks: 777 }, dead)).toBe(true);
    const garbled = fakeProc(4246, 'not a stat line');
    expect(processGone({ pid: 4246, startTicks: 777 }, garbled)).toBe(true);
  });
});

describe('the wait until processes are gone', () => {
  it('waits for a process that ends by itself (a zombie here: this thread, asleep, does not reap it) and returns once it is gone', async () => {
    const c = await child('setTimeout(() => process.exit(0), 300)');
    const start = childStart(c.pid, process.pid)!;
    const w = waitUntilGone([start], 60_000);
    expect(w.left).toEqual([]);
    expect(processGone(start)).toBe(true);
    expect(w.waitedMs).toBeGreaterThan(0);
  });

  it('gives up after its limit, naming those still there; none to wait for returns at once', async () => {
    const c = await child(FOREVER);
    const start = childStart(c.pid, process.pid)!;
    const w = waitUntilGone([start, { pid: process.pid, startTicks: -1 }], 50);
    expect(w.left).toEqual([start]);
    expect(w.waitedMs).toBeGreaterThanOrEqual(50);
    expect(waitUntilGone([], 60_000).left).toEqual([]);
  });
});

describe("the discovering processes a GPU's probe waits for (besideDiscovery)", () => {
  const options = { device: 'cuda:0' } as SuiteOptions;
  const group = (backends: string[], pid: number | undefined, exited = false): Group =>
    ({ backends, inProcess: pid !== undefined, ...(pid !== undefined ? { pid } : {}), exited }) as unknown as Group;

  it("a group of devices that never register whose process is there: waited for, with its start, within the stall's limit", async () => {
    const c = await child(FOREVER);
    const o = besideDiscovery([group(['cuda'], process.pid), group(['opencl', 'vulkan', 'cpu'], c.pid)], 120)(options);
    expect(o.waitFor).toEqual({ processes: [childStart(c.pid, process.pid)], limitMs: (120 + STALL_GRACE_S) * 1000 });
    expect(o.device).toBe('cuda:0');
    expect(options.waitFor).toBeUndefined(); // the options asked for are left as they are
  });

  it('none: a group that exited, one answered without a process, one that is gone, a group of GPU drivers (it checks a GPU of its own), a pid that is not the command\'s child', async () => {
    const c = await child(FOREVER);
    const gone = await child('');
    await new Promise((done) => (gone.exitCode !== null ? done(undefined) : gone.once('exit', done)));
    await waitUntil(() => childStart(gone.pid, process.pid) === undefined, 30_000, 'the child to be reaped');
    const o = besideDiscovery([group(['opencl', 'vulkan', 'cpu'], c.pid, true), group(['hip'], c.pid), group(['cpu'], undefined), group(['vulkan'], gone.pid), group(['opencl'], process.ppid)], 120)(options);
    expect(o).toBe(options);
  });
});
