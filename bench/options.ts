// The bench's options (`npm run bench -- --help`): parsed and checked in one place, so that the bench reads a
// checked Options record and nothing else of the command line.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { scratchDirProblem } from '../bindings/scratch.js';
import { root } from './package.js';
import { MiB } from './units.js';

export interface Options {
  runs: number;
  sizeMiB: number;
  scratchDir: string;
  json?: string;
  devices: string[];
  nativeBin?: string;
  dropCaches: boolean;
}

export const USAGE = `usage: npm run bench -- [options]      (node dist/bench/bench.js [options])

  --runs N            timed runs of each copy and registration: best and median of N (default 7)
  --size MIB          MiB of the file-backed region (default 256); the probe's window is half of it
  --scratch-dir DIR   folder for the scratch file (default: the package's scratch/)
  --device ID         only this CUDA/HIP device (repeatable), e.g. cuda:0; also given to the conformance run
  --json FILE         write the results as JSON
  --native-bin PATH   a built bench/native/staged.c to use when no C compiler (cc, or $CC) is found
  --no-drop-caches    as root, do not also write 1 to /proc/sys/vm/drop_caches for the cold page cache
  --help              this text

Environment: MAPPED_REG_CUDA_LIBRARY, MAPPED_REG_HIP_LIBRARY (the driver to load, as for the command); CC.
Exit status: 0 measured (whatever the figures); 1 some figure could not be measured (see "errors"); 2 bad usage.`;

export class UsageError extends Error {}

export function parseOptions(argv: string[]): Options | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        runs: { type: 'string' },
        size: { type: 'string' },
        'scratch-dir': { type: 'string' },
        device: { type: 'string', multiple: true },
        json: { type: 'string' },
        'native-bin': { type: 'string' },
        'no-drop-caches': { type: 'boolean' },
        help: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const v = parsed.values;
  if (v.help) return 'help';
  const whole = (name: string, text: string | undefined, dflt: number): number => {
    if (text === undefined) return dflt;
    const n = Number(text);
    if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a whole number of at least 1, not ${text}`);
    return n;
  };
  const runs = whole('runs', v.runs, 7);
  const sizeMiB = whole('size', v.size, 256);
  if (sizeMiB * MiB > 2 ** 31) throw new UsageError(`--size ${sizeMiB}: at most 2048 MiB`);
  const scratchDir = v['scratch-dir'] ? resolve(v['scratch-dir']) : join(root, 'scratch');
  if (!v['scratch-dir']) mkdirSync(scratchDir, { recursive: true });
  const problem = scratchDirProblem(scratchDir, sizeMiB * MiB);
  if (problem) throw new UsageError(problem);
  return {
    runs,
    sizeMiB,
    scratchDir,
    devices: v.device ?? [],
    dropCaches: !v['no-drop-caches'],
    ...(v.json ? { json: resolve(v.json) } : {}),
    ...(v['native-bin'] ? { nativeBin: resolve(v['native-bin']) } : {}),
  };
}
