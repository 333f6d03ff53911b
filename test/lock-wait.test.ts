// The waits for the host are the host's: the command against the CUDA double with the timing lock held by another
// process (test/support/lock-holder.ts, straight flock through koffi, as `flock(1)` would) for longer than
// --timeout, and with the lock's file planted or foreign. Each run is the self-test alone (--check probe.verdict):
// what is judged is the check's status, the gate's attribution and what each report says of the holder.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunResult } from '../results/types.js';
import { holdLock } from './support/lock-holder.js';
import { type CommandRun, runCommand, workspace } from './support/workspace.js';

const { work, doubles } = workspace('mapped-reg-lock-wait-');

/** A run of the self-test alone with the timing lock at `lock`, its results, JUnit and terminal. */
function run(lock: string, args: string[]): CommandRun & { json: RunResult; junit: string } {
  const r = runCommand(
    work,
    (out) => ['--backend', 'cuda', '--size', '8', '--check', 'probe.verdict', '--junit', out('xml'), ...args],
    () => ({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_TIMING_LOCK: lock }),
  );
  let json: RunResult;
  try {
    json = JSON.parse(r.read('json')) as RunResult;
  } catch {
    throw new Error(`no results (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  return { ...r, json, junit: r.read('xml') };
}

/** The documented figures (docs/measurement.md, --help): the lock's least wait, and --quiet-wait's most. */
const LOCK_WAIT_MIN_S = 20;
const QUIET_WAIT_MAX_S = 3600;

const probeOf = (r: { json: RunResult }) => r.json.devices[0]!.checks.find((c) => c.id === 'probe.verdict')!;

describe('a wait for the timing lock is the host\'s time', () => {
  it(`a lock held by another process for longer than --timeout: not a timeout, a host error naming the holder after the lock's wait (--quiet-wait, at least ${LOCK_WAIT_MIN_S} s), exit 1`, async () => {
    const lock = join(work, 'held.lock');
    writeFileSync(lock, '');
    const release = await holdLock(lock);
    let r: ReturnType<typeof run>;
    try {
      r = run(lock, ['--timeout', '2', '--quiet-wait', '0']);
    } finally {
      release();
    }
    expect(r.code, r.stdout).toBe(1);
    const c = probeOf(r);
    // the check was not killed at --timeout 2: it gave up waiting for the lock, the host's
    expect(c.status, c.message).toBe('error');
    expect(c.message).toBe(`the host: the timing lock ${lock} was still held after ${LOCK_WAIT_MIN_S} s of waiting, by pid ${release.pid} (node): the copies were not timed`);
    expect(r.json.gate!.headline).toMatch(/^FAIL \(the host, not the driver\): /);
    expect(r.json.gate!.reasons.every((x) => x.host === true)).toBe(true);
    // the holder named in every report: JUnit and the terminal
    expect(r.junit).toMatch(/timing lock [^"<]* was still held after \d+ s of waiting, by pid \d+ \(node\)/);
    expect(r.stdout).toMatch(/HOST ERROR .*probe\.verdict .*still held after \d+ s of waiting, by pid \d+ \(node\)/);
    expect(r.stdout).not.toMatch(/probe\.verdict timeout|no result after|killed/);
    // nothing of the holder's file removed or written
    expect(readFileSync(lock, 'utf8')).toBe('');
  });
});

describe('a check that times copies of its own waits for the lock as the probe does', () => {
  it('hazard.portable_second_context with the lock held for longer than --timeout: a host error naming the holder, never a timeout', async () => {
    const lock = join(work, 'held-portable.lock');
    writeFileSync(lock, '');
    const release = await holdLock(lock);
    let r: ReturnType<typeof runCommand>;
    try {
      r = runCommand(
        work,
        (out) => ['--backend', 'cuda', '--size', '8', '--check', 'hazard.portable_second_context', '--timeout', '2', '--quiet-wait', '0'],
        () => ({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_TIMING_LOCK: lock }),
      );
    } finally {
      release();
    }
    const json = JSON.parse(r.read('json')) as RunResult;
    const c = json.devices[0]!.checks.find((x) => x.id === 'hazard.portable_second_context')!;
    expect(c.status, c.message).toBe('error');
    expect(c.message).toBe(`the host: the timing lock ${lock} was still held after ${LOCK_WAIT_MIN_S} s of waiting, by pid ${release.pid} (node): the copies were not timed`);
    expect(json.gate?.reasons.every((x) => x.host === true) ?? true).toBe(true);
    expect(r.stdout).not.toMatch(/portable_second_context timeout|no result after|killed/);
  });
});

describe("the lock's file cannot be turned against the run: a host error (exit 1), never a warn that passes", () => {
  it('a symbolic link planted at its path: error, the link and its target untouched', () => {
    const target = join(work, 'precious');
    writeFileSync(target, 'precious\n');
    const lock = join(work, 'link.lock');
    symlinkSync(target, lock);
    const r = run(lock, []);
    expect(r.code, r.stdout).toBe(1);
    expect(probeOf(r)).toMatchObject({ status: 'error', message: `the host: cannot use the timing lock ${lock} (it is a symbolic link, refused) while opening it` });
    expect(r.json.gate!.headline).toMatch(/^FAIL \(the host, not the driver\): /);
    expect(readFileSync(target, 'utf8')).toBe('precious\n');
    expect(lstatSync(lock).isSymbolicLink()).toBe(true);
  });

  it('a FIFO planted at its path: error at once (never blocked on its open)', () => {
    const lock = join(work, 'fifo.lock');
    execFileSync('mkfifo', [lock]);
    const r = run(lock, []);
    expect(r.code, r.stdout).toBe(1);
    expect(probeOf(r)).toMatchObject({ status: 'error', message: `the host: the timing lock ${lock} is not a regular file` });
  });

  it('MAPPED_REG_TIMING_LOCK naming a file of the user that is not a lock: error, the file neither truncated nor removed', () => {
    const lock = join(work, 'notes.txt');
    writeFileSync(lock, 'my notes\n');
    const r = run(lock, []);
    expect(r.code, r.stdout).toBe(1);
    expect(probeOf(r)).toMatchObject({ status: 'error', message: expect.stringMatching(/^the host: the timing lock .* holds 9 bytes that are not a holder's line/) });
    expect(readFileSync(lock, 'utf8')).toBe('my notes\n');
  });

  it('MAPPED_REG_TIMING_LOCK naming an empty file of the user: used as the lock, kept (not removed) and left empty', () => {
    const lock = join(work, 'mine.lock');
    writeFileSync(lock, '');
    const r = run(lock, []);
    expect(r.code, r.stdout).toBe(0);
    expect(probeOf(r).status).toBe('pass');
    expect(existsSync(lock)).toBe(true);
    expect(readFileSync(lock, 'utf8')).toBe('');
  });
});

describe('--quiet-wait has a maximum', () => {
  it(`more than ${QUIET_WAIT_MAX_S} s (1e308 waited forever) is bad usage: exit 2, one line, nothing run`, () => {
    for (const value of ['1e308', String(QUIET_WAIT_MAX_S + 1)]) {
      const r = runCommand(work, () => ['--backend', 'cuda', '--quiet-wait', value], () => ({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda }));
      expect(r.code, r.stdout).toBe(2);
      expect(r.stderr.trim().split('\n')).toEqual([`mapped-reg-conformance: --quiet-wait must be a number of seconds from 0 (no wait) to ${QUIET_WAIT_MAX_S}, not "${value}" (see mapped-reg-conformance --help)`]);
      expect(r.read('json')).toBe('');
    }
  });
});
