// The command started as a process the test can watch and signal: its output as it comes, its children, and
// waits on observable events (a line printed, a file appearing, a process gone) with generous upper bounds, never
// on fixed sleeps that a loaded machine outruns.
import { type ChildProcess, spawn, type StdioOptions } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { afterEach } from 'vitest';
import { MAIN, cleanEnv } from './command.js';

export interface Started {
  child: ChildProcess;
  pid: number;
  /** Everything printed so far on stdout and stderr. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit status (or 128 + the signal's number, as a shell reports it) and the signal. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once stdout or stderr matches `re` (rejects after `ms`). */
  waitFor(re: RegExp, ms?: number): Promise<void>;
}

/**
 * Starts the built command with `args`, in `cwd`, with the tests' environment (no MAPPED_REG_*) plus `env`;
 * `detached`: in a process group of its own (its pid), as a shell's job, so that a test can signal the group as a
 * terminal does.
 */
export function startCli(args: string[], env: Record<string, string | undefined>, cwd: string, stdio: StdioOptions = ['ignore', 'pipe', 'pipe'], detached = false): Started {
  const child = spawn(process.execPath, [MAIN, ...args], { env: cleanEnv(env), cwd, stdio, detached });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('close', (code, signal) => done({ code, signal })));
  return {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    exit,
    waitFor: (re, ms = 60_000) => waitUntil(() => re.test(out) || re.test(err), ms, `output matching ${re} (stdout so far: ${out.slice(-2000)}; stderr: ${err.slice(-1000)})`),
  };
}

/**
 * The command run in `cwd` with no timeout of its own (an input that could hang it), standard input closed, the
 * step summary unset (startCli): the promise of its end, with what it said on stderr.
 */
export async function commandEnd(cwd: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  const started = startCli(args, { GITHUB_STEP_SUMMARY: undefined }, cwd, ['ignore', 'ignore', 'pipe']);
  const { code } = await started.exit;
  return { code, stderr: started.stderr() };
}

/** Polls `ok` every 20 ms until it holds; rejects after `ms` naming `what`. */
export function waitUntil(ok: () => boolean, ms: number, what: string): Promise<void> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      let done = false;
      try {
        done = ok();
      } catch {
        done = false;
      }
      if (done) resolve();
      else if (performance.now() - t0 > ms) reject(new Error(`waited ${ms} ms for ${what}`));
      else setTimeout(tick, 20);
    };
    tick();
  });
}

/** The direct children of a process (every thread's), from /proc. */
export function childrenOf(pid: number): number[] {
  const kids: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text) kids.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    // gone
  }
  return kids;
}

/** Whether a process still runs (a zombie waiting to be reaped does not). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** The command line of a process ('' when gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** The device runners among a command's children. */
export function runnersOf(pid: number): number[] {
  return childrenOf(pid).filter((p) => commandLine(p).includes('device-runner'));
}

/**
 * The processes a test file saw (runners, their children), to add to as it finds them: any still running after
 * each test (a failing test, an old build) is killed, and the set emptied.
 */
export function killedAfterEach(): Set<number> {
  const seen = new Set<number>();
  afterEach(() => {
    for (const p of seen) if (running(p)) process.kill(p, 'SIGKILL');
    seen.clear();
  });
  return seen;
}
