// The bench's options (`npm run bench -- --help`), from the command's definitions where they are the same
// (cli/options.ts: --runs, --size, --scratch-dir, --device, their defaults and checks), through yargs: `--help`
// lists them; bad usage is a UsageError (one line, exit 2). The bench reads a checked Options record and nothing
// else of the command line.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import yargs from 'yargs';
import { MEASURE_OPTIONS, UsageError, measureOptions, once, textOption } from '../cli/options.js';

export { UsageError };

export interface Options {
  runs: number;
  sizeMiB: number;
  scratchDir: string;
  json?: string;
  devices: string[];
  nativeBin?: string;
  dropCaches: boolean;
  /** Conformance runs of this build (--repeat), the first the detailed one. */
  repeat: number;
  /** Another build's command (--against DIR: DIR/dist/cli/main.js), run alternately with this one. */
  against?: string;
  /** GPU counts of the scaling runs (--scale 1,2,4,8). */
  scale?: number[];
}

/** The most --repeat rounds and --scale counts. */
const MAX_REPEAT = 100;
const MAX_GPUS = 64;

/** The command of the build in package folder `dir` (its dist/cli/main.js), or why there is none. */
function againstMain(dir: string): string | { error: string } {
  const main = join(resolve(dir), 'dist', 'cli', 'main.js');
  return existsSync(main) ? main : { error: `--against ${dir}: no dist/cli/main.js there (a package folder with a built dist/)` };
}

/** --scale's list: positive whole GPU counts, rising, at most MAX_GPUS. */
function scaleCounts(text: string): number[] {
  const counts = text.split(',').map((s) => s.trim());
  if (counts.some((c) => !/^[1-9][0-9]*$/.test(c) || Number(c) > MAX_GPUS)) throw new UsageError(`--scale ${text}: GPU counts from 1 to ${MAX_GPUS}, comma-separated (e.g. 1,2,4,8)`);
  const n = counts.map(Number);
  if (n.some((x, i) => i > 0 && x <= n[i - 1]!)) throw new UsageError(`--scale ${text}: the counts must rise (e.g. 1,2,4,8)`);
  return n;
}

/** The bench's own limit on the region: its copies go through one Uint8Array (at most 2 GiB). */
const MAX_SIZE_MIB = 2048;

export async function parseOptions(argv: string[]): Promise<Options> {
  const a = await yargs(argv)
    .scriptName('npm run bench --')
    .usage('$0 [options]      (node dist/bench/bench.js [options])\n\nPer CUDA/HIP device: registered, staged, page-locked and pageable copies, the link, registration per GiB, one driver call, the native reference; then a whole conformance run, its phases and peak memory (docs/bench.md).')
    .options({
      runs: { ...MEASURE_OPTIONS.runs, describe: 'timed runs of each copy and registration: best and median of N; also given to the conformance run' },
      size: { ...MEASURE_OPTIONS.size, describe: `MiB of the file-backed region (at most ${MAX_SIZE_MIB}); the probe's window is half of it` },
      'scratch-dir': { ...MEASURE_OPTIONS['scratch-dir'], describe: "folder for the scratch file, on a disk (default: the package's scratch/); tmpfs and ramfs are refused" },
      'allow-tmpfs-scratch': MEASURE_OPTIONS['allow-tmpfs-scratch'],
      device: { ...MEASURE_OPTIONS.device, describe: 'only this CUDA/HIP device (repeatable), e.g. cuda:0; also given to the conformance run' },
      json: textOption('--json', 'write the results as JSON'),
      'native-bin': textOption('--native-bin', 'a built bench/native/staged.c to use when no C compiler (cc, or $CC) is found'),
      repeat: { type: 'number', default: 1, describe: `conformance runs of this build (median of N; at most ${MAX_REPEAT}); with --against, as many of the other build, alternating` },
      against: textOption('--against', 'a package folder with another build (DIR/dist/cli/main.js, e.g. the code before a change): its conformance runs alternate with this one\'s'),
      scale: { type: 'string', coerce: once('--scale'), describe: 'the run against the GPU count: the command on the first N GPUs found for each N (e.g. 1,2,4,8), then each GPU of the largest N alone' },
      'drop-caches': { type: 'boolean', default: true, describe: 'as root, also write 1 to /proc/sys/vm/drop_caches for the cold page cache (--no-drop-caches: do not)' },
    })
    .strict()
    .version(false)
    .help()
    .epilogue(
      'Environment: MAPPED_REG_CUDA_LIBRARY, MAPPED_REG_HIP_LIBRARY (the driver to load, as for the command); CC.\n' +
        'Exit status: 0 measured (whatever the figures); 1 some figure could not be measured (see "errors"); 2 bad usage.',
    )
    .fail((msg, err) => {
      throw new UsageError(msg || err?.message || 'bad usage');
    })
    .parseAsync();
  const m = measureOptions({ ...(a.scratchDir !== undefined ? { scratchDir: a.scratchDir } : {}), allowTmpfsScratch: a.allowTmpfsScratch, size: a.size, device: a.device, runs: a.runs }, { maxSizeMiB: MAX_SIZE_MIB });
  if (!Number.isInteger(a.repeat) || a.repeat < 1 || a.repeat > MAX_REPEAT) throw new UsageError(`--repeat ${a.repeat}: a whole number from 1 to ${MAX_REPEAT}`);
  let against: string | undefined;
  if (a.against !== undefined) {
    const main = againstMain(a.against);
    if (typeof main !== 'string') throw new UsageError(main.error);
    against = main;
  }
  return {
    repeat: a.repeat,
    ...(against ? { against } : {}),
    ...(a.scale !== undefined ? { scale: scaleCounts(a.scale) } : {}),
    runs: m.runs,
    sizeMiB: m.sizeMiB,
    scratchDir: m.scratchDir,
    devices: [...m.devices],
    dropCaches: a.dropCaches,
    ...(a.json ? { json: resolve(a.json) } : {}),
    ...(a.nativeBin ? { nativeBin: resolve(a.nativeBin) } : {}),
  };
}
