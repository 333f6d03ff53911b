// merge FILE.json... -o OUT.json: the results of many machines (a Kubernetes Job per node, a Slurm task per
// node, a CI matrix) as one results file, for compare and report. Each device carries the `host` of the file it
// came from; the top-level host is `merged`. The output is a results file of the same schemaVersion and
// validates against results/results.schema.json.
import { InputError, READ_VERSIONS } from './read.js';
import type { DeviceWithHost, Machine, RunResult } from './types.js';

/** A merged file: a results file whose devices carry their host, with where each part came from. */
export type MergedResult = Omit<RunResult, 'devices'> & {
  devices: DeviceWithHost[];
  merged: { hostname: string; kernel: string; platform: string; startedAt: string; finishedAt: string; tool: string; devices: number; incomplete?: boolean }[];
};

const unique = (xs: string[]): string => [...new Set(xs)].join(', ');

/**
 * Merges results files (already read with readResults). `names` (the files' names, same order) only make the
 * errors clearer. Refuses an empty list and a schemaVersion this tool does not read (InputError); files of 1 and 2
 * merge into a file of 2 (a file of 1 is one of 2 without the newer fields). A device that already carries `host` (a
 * file merged before) keeps it, so merged files merge again.
 */
export function mergeResults(files: RunResult[], names?: string[]): MergedResult {
  const name = (i: number): string => names?.[i] ?? `file ${i + 1}`;
  if (files.length === 0) throw new InputError('merge: no results file given');
  files.forEach((f, i) => {
    if (!READ_VERSIONS.includes(f.schemaVersion)) throw new InputError(`${name(i)}: unknown schemaVersion ${JSON.stringify(f.schemaVersion)} (this version of mapped-reg-conformance reads schemaVersion ${READ_VERSIONS.join(', ')})`);
  });
  // the highest version of the inputs: a field a version adds is optional in the ones it reads
  const version = Math.max(...files.map((f) => f.schemaVersion)) as RunResult['schemaVersion'];
  const parts = files.flatMap((f) => ((f as Partial<MergedResult>).merged ? (f as MergedResult).merged : [{ ...f.host, startedAt: f.startedAt, finishedAt: f.finishedAt, tool: `${f.tool.name} ${f.tool.version}`, devices: f.devices.length, ...(f.incomplete ? { incomplete: true } : {}) }]));
  const hosts: Machine[] = parts.map((p) => ({ hostname: p.hostname, kernel: p.kernel, platform: p.platform }));
  const byTime = (key: 'startedAt' | 'finishedAt', pick: (a: number, b: number) => boolean): string =>
    files.map((f) => f[key]).reduce((best, t) => (pick(Date.parse(t), Date.parse(best)) ? t : best));
  const devices: DeviceWithHost[] = files.flatMap((f) => (f.devices as DeviceWithHost[]).map((d) => ({ ...d, host: d.host ?? { ...f.host } })));
  const incomplete = files.some((f) => f.incomplete);
  return {
    schemaVersion: version,
    tool: { name: files[0]!.tool.name, version: unique(files.map((f) => f.tool.version)) },
    host: { hostname: 'merged', kernel: unique(hosts.map((h) => h.kernel)), platform: unique(hosts.map((h) => h.platform)) },
    startedAt: byTime('startedAt', (a, b) => a < b),
    finishedAt: byTime('finishedAt', (a, b) => a > b),
    options: { merged: files.map((f) => ({ hostname: f.host.hostname, options: f.options })) },
    backends: files.flatMap((f) => (f.backends ?? []).map((b) => ({ ...b, host: (b as { host?: string }).host ?? f.host.hostname }))),
    gpuDriverFound: files.some((f) => f.gpuDriverFound),
    ...(incomplete ? { incomplete: true } : {}),
    merged: parts,
    devices,
  };
}

/**
 * The most input `merge` takes, in bytes: the merged file is one JSON text, a string in Node.js, and V8 limits a
 * string to 2^29 - 24 characters (512 MiB). The merged file is about the size of its inputs (each device gains its
 * host, a few per cent: 1,000 hosts' 149 MB became 155 MB), so 400 MiB of input leaves a margin.
 */
export const MERGE_LIMIT_BYTES = 400 * 1024 * 1024;

/** Why these inputs are too large to merge (a line that points to `history`), or undefined. */
export function mergeSizeProblem(sizes: readonly number[], limit = MERGE_LIMIT_BYTES): string | undefined {
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total <= limit) return undefined;
  const mb = (x: number): string => `${(x / 1024 / 1024).toFixed(0)} MiB`;
  return `merge: the ${sizes.length} files hold ${mb(total)}, more than the ${mb(limit)} one merged file can hold (a JSON text in Node.js is at most 512 MiB): for a fleet, use a history store instead: history add --db FILE RESULTS..., then history compare and history report`;
}
