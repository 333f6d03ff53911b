// The child-process protocol of hazard.truncate_contained: the arguments the parent gives the child
// (./truncate-child.ts), the JSON lines the child prints, one per step, and the parent's side: start the child,
// read its lines and how it ended, and say what each copy from the cut tail did. A copy from a cut tail may kill
// its process (a SIGBUS), so it never runs in the device's process.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CheckContext } from '../check.js';
import { MiB } from './harness.js';

/** The check that runs the truncation child. */
export const TRUNCATE_CHECK = 'hazard.truncate_contained';

/** How long the truncation child may run before it is killed. */
export const TRUNCATE_CHILD_TIMEOUT_MS = 30_000;

export interface TruncateArgs {
  /** Device id, e.g. `cuda:0`. */
  device: string;
  /** The file to map (made by the parent, at least `size` bytes of known content). */
  file: string;
  /** Bytes mapped and registered. */
  size: number;
  /** Length the file is cut to while registered (a page multiple). */
  cut: number;
  /** The large copy: this many bytes from offset `cut`. */
  large: number;
  /** The small copy: this many bytes from offset `cut`. */
  small: number;
}

/** What the device brought back for bytes the file no longer has. */
export type TailBytes = 'stale' | 'zeros' | 'other';

export type TruncateLine =
  | { step: 'ready'; device: string; api: string; library: string }
  | { step: 'register'; code: number; name: string; flags: number }
  | { step: 'truncate'; size: number }
  | { step: 'large' | 'small'; phase: 'begin'; bytes: number }
  | { step: 'large' | 'small'; code: number; name: string; bytes?: TailBytes; firstDifference?: number }
  | { step: 'unregister'; code: number; name: string }
  | { step: 'done' }
  | { step: 'error'; message: string };

/** What an early child (./truncate-early.ts) is started with: `truncate-child.js --early '<EarlyStart as JSON>'`. */
export interface EarlyStart {
  /** Device id, e.g. `cuda:0`. */
  device: string;
  /** The runner's pid: a child whose parent is already another one ends at once (its death signal came too late). */
  parentPid: number;
  /** How long the child waits for the timing lock before its driver init; longer is the host's fault. */
  lockLimitMs: number;
}

/** An early child's lines about its start (before its arguments), kept apart from the check's lines. */
export type EarlyLine =
  | { early: 'lock' }
  | { early: 'init'; lockWaitMs: number }
  | { early: 'started'; library: string; ms: number }
  | { early: 'fault'; message: string }
  | { early: 'failed'; message: string };

/**
 * A compiled file of this folder (`name`, e.g. truncate-child.js), for a process or a thread to run: compiled, this
 * file is dist/suites/hazards/truncate.js and it is beside it; from the TypeScript sources (under Vitest), the
 * compiled one in the project's dist/.
 */
export function compiledHazardFile(name: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const sibling = join(here, name);
  if (existsSync(sibling)) return sibling;
  return join(here, '..', '..', 'dist', 'suites', 'hazards', name);
}

/** The compiled child. */
export const truncateChildScript = (): string => compiledHazardFile('truncate-child.js');

/** How the child ended, and the lines it printed. */
export interface ChildRun {
  lines: TruncateLine[];
  status: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** The child could not be started (not a timeout). */
  error?: Error;
  stderr: string;
  ms: number;
}

/** Runs the child on `args` with the driver library `native` loaded (passed in the environment), to its end. */
export function runTruncateChild(script: string, native: NonNullable<CheckContext['device']['native']>, args: TruncateArgs): ChildRun {
  const libraryEnv = native.kit.libraryEnv;
  const started = performance.now();
  const r = spawnSync(process.execPath, [script, JSON.stringify(args)], {
    env: { ...process.env, [libraryEnv]: native.library },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: TRUNCATE_CHILD_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    maxBuffer: 4 * MiB,
  });
  const ms = Math.round(performance.now() - started);
  const timedOut = (r.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
  return { lines: parseLines(r.stdout ?? ''), status: r.status, signal: r.signal, timedOut, ...(r.error && !timedOut ? { error: r.error } : {}), stderr: (r.stderr ?? '').trim(), ms };
}

export function parseLines(stdout: string): TruncateLine[] {
  const lines: TruncateLine[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as TruncateLine | EarlyLine;
      // an early child's lines about its start are not the check's
      if (!('early' in parsed)) lines.push(parsed);
    } catch {
      // a partial line from a process that died mid-write
    }
  }
  return lines;
}

type CopyLine = Extract<TruncateLine, { step: 'large' | 'small'; code: number }>;

/** What one copy from the cut tail did, from the child's lines and how it ended. */
export function copyOutcome(lines: TruncateLine[], step: 'large' | 'small', end: string): { text: string; data: Record<string, unknown> } {
  const begun = lines.some((l) => l.step === step && 'phase' in l);
  const result = lines.find((l): l is CopyLine => l.step === step && 'code' in l);
  if (result) {
    if (result.code !== 0) return { text: `${result.code} ${result.name}`, data: { code: result.code, name: result.name } };
    const bytes =
      result.bytes === 'stale'
        ? 'stale bytes (the file no longer has them)'
        : result.bytes === 'zeros'
          ? 'zeros'
          : `bytes neither stale nor zeros (first difference from the old bytes at offset ${result.firstDifference})`;
    return { text: `0, ${bytes}`, data: { code: 0, bytes: result.bytes, ...(result.firstDifference !== undefined ? { firstDifference: result.firstDifference } : {}) } };
  }
  if (begun) return { text: end, data: { ended: end } };
  return { text: 'not reached', data: { reached: false } };
}
