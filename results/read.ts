// Reading a results file (what `run --json FILE` wrote) for compare, merge, report, the gate and the history
// store: parsed, checked against results/results.schema.json and the rules the schema cannot say (a merged file's
// parts account for its devices; a device listed once), or refused with one line that names the file and the
// reason. Every input file named on the command line is read here (readInput), as a shell gives it: a regular
// file, `-` (standard input), or a pipe with a writer (`--baseline <(curl -s URL)`), each of bounded size; a
// device such as /dev/zero is refused at once, and a named pipe with no writer within PIPE_WAIT_MS too (never a
// hang). Pipes are read without blocking, polled, so that the event loop stays free while they are waited for.
import { closeSync, constants as fsConstants, existsSync, fstatSync, openSync, read } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import { duplicateDevice } from './duplicates.js';
import type { DeviceWithHost, RunResult } from './types.js';
import { oneLine } from './format.js';
import { packageRoot } from './package-root.js';

export type { DeviceWithHost, Machine } from './types.js';

/** Bad input (a results or expectations file): the command prints the message, one line, and exits 2. */
export class InputError extends Error {
  constructor(message: string) {
    super(oneLine(message));
    this.name = 'InputError';
  }
}

/** The schemaVersion this tool writes. */
export const SCHEMA_VERSION = 3;
/**
 * The schemaVersions it reads: 2 is 3 without each figure's rounds (timing.samples: figures without their noise), 1 is
 * 2 without the control copy and the look at the machine (those fields absent).
 */
export const READ_VERSIONS: readonly number[] = [1, 2, 3];

/** Where the schema is: the package ships it as results/results.schema.json, beside dist/. */
export function schemaPath(): string {
  const path = join(packageRoot(), 'results', 'results.schema.json');
  if (!existsSync(path)) throw new Error(`results.schema.json not found at ${path}: the package is incomplete`);
  return path;
}

/** ajv's options for the schema: the build compiles the validator with them, the tests compile the schema with them too. */
export const SCHEMA_OPTIONS = { allErrors: true, strict: true, allowUnionTypes: true } as const;
/**
 * The schema's validator as the build compiles it (ajv's standalone code, scripts/prepare.mjs), in dist/results/:
 * loading it takes some 6 ms where compiling the schema took 150 to 250 ms of CPU in every command that reads a file.
 */
export const VALIDATOR_FILE = 'results-validator.cjs';

/** Where the build writes the validator and the commands load it from. */
export function validatorPath(): string {
  return join(packageRoot(), 'dist', 'results', VALIDATOR_FILE);
}

let validator: ValidateFunction | undefined;

/** The schema's validator (loaded once). */
export function resultsValidator(): ValidateFunction {
  if (!validator) {
    const path = validatorPath();
    if (!existsSync(path)) throw new Error(`${VALIDATOR_FILE} not found at ${path}: the package is incomplete (npm run build makes it)`);
    validator = createRequire(import.meta.url)(path) as ValidateFunction;
  }
  return validator;
}

/** The schema's complaints about `data`, on one line; undefined when it validates. */
export function schemaProblems(data: unknown): string | undefined {
  const validate = resultsValidator();
  if (validate(data)) return undefined;
  const errors = validate.errors ?? [];
  // `if`/`then` failures repeat what the failure inside them says
  const useful = errors.filter((e) => e.keyword !== 'if');
  const shown = (useful.length ? useful : errors).slice(0, 3).map((e) => {
    const where = e.instancePath || '/';
    if (e.keyword === 'required') return `${e.instancePath || ''}/${String((e.params as { missingProperty?: string }).missingProperty)} is required`;
    if (e.keyword === 'enum') return `${where} ${e.message ?? 'is invalid'} (${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).join(', ')})`;
    return `${where} ${e.message ?? 'is invalid'}`;
  });
  const more = errors.length > shown.length ? ` (and ${errors.length - shown.length} more)` : '';
  return `${shown.join('; ')}${more}`;
}

/** A results file's text, parsed and checked; `file` names it in the errors. */
export function parseResults(text: string, file: string): RunResult {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new InputError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new InputError(`${file}: not a results file (the top level is not a JSON object)`);
  const version = (data as { schemaVersion?: unknown }).schemaVersion;
  if ('schemaVersion' in data && !READ_VERSIONS.includes(version as number)) {
    throw new InputError(`${file}: unknown schemaVersion ${JSON.stringify(version)} (this version of mapped-reg-conformance reads schemaVersion ${READ_VERSIONS.join(', ')})`);
  }
  const problems = schemaProblems(data);
  if (problems) throw new InputError(`${file}: not a valid results file: ${problems}`);
  const r = data as RunResult;
  const parts = mergedProblem(r);
  if (parts) throw new InputError(`${file}: not a valid results file: ${parts}`);
  const twice = duplicateDevice(r);
  if (twice) throw new InputError(`${file}: ${twice}`);
  return r;
}

/** Why a merged file's parts do not account for its devices (each part's count of them, in order, of its host), or undefined. */
function mergedProblem(r: RunResult): string | undefined {
  const parts = (r as { merged?: { hostname: string; devices: number }[] }).merged;
  if (parts === undefined) return undefined;
  const total = parts.reduce((n, p) => n + p.devices, 0);
  if (total !== r.devices.length) return `/merged counts ${total} device(s), /devices holds ${r.devices.length}`;
  let at = 0;
  for (const [i, p] of parts.entries()) {
    for (const d of (r.devices as DeviceWithHost[]).slice(at, at + p.devices)) {
      const host = d.host?.hostname ?? r.host.hostname;
      if (host !== p.hostname) return `device ${JSON.stringify(d.id.slice(0, 200))} of /merged/${i} (host ${JSON.stringify(p.hostname.slice(0, 200))}) carries host ${JSON.stringify(host.slice(0, 200))}`;
    }
    at += p.devices;
  }
  return undefined;
}

/**
 * The most bytes an input file may hold: a JSON text in Node.js is one string, and V8 limits a string to
 * 2^29 - 24 characters (512 MiB); a results file of a fleet larger than that belongs in a history store.
 */
export const MAX_INPUT_BYTES = 2 ** 29 - 24;
/** The most bytes a text input (an expectations file, a skips file) may hold: thousands of lines fit in far less. */
export const TEXT_INPUT_BYTES = 64 * 1024 * 1024;

/** How long a named pipe may give nothing (no writer yet, or one that wrote nothing) before it is refused. */
export const PIPE_WAIT_MS = 3000;
/** How often a pipe with nothing to read yet is tried again. */
const PIPE_POLL_MS = 20;
/** What one read asks for. */
const READ_CHUNK = 1024 * 1024;

/** How an input is named in its errors: `-` is standard input. */
export const inputName = (file: string): string => (file === '-' ? 'standard input (-)' : file);

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** One read of a descriptor, without blocking the event loop (the thread pool's read of a non-blocking descriptor returns at once). */
const readOnce = (fd: number, buf: Buffer): Promise<number> =>
  new Promise((done, failed) => read(fd, buf, 0, buf.length, null, (e, n) => (e ? failed(e) : done(n))));

/**
 * All the bytes of `fd`, at most `maxBytes`. A pipe (`pipeWaitMs` given) with nothing yet is polled: EAGAIN (a
 * writer, nothing written yet) is waited for; an end before the first byte (a named pipe with no writer reads
 * as empty) is tried again until `pipeWaitMs` have passed, then refused.
 */
async function readAll(fd: number, name: string, maxBytes: number, pipeWaitMs?: number): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  const buf = Buffer.allocUnsafe(READ_CHUNK);
  const deadline = pipeWaitMs === undefined ? 0 : Date.now() + pipeWaitMs;
  for (;;) {
    let n: number;
    try {
      n = await readOnce(fd, buf);
    } catch (e) {
      if (pipeWaitMs !== undefined && (e as NodeJS.ErrnoException).code === 'EAGAIN') {
        await sleep(PIPE_POLL_MS);
        continue;
      }
      throw e;
    }
    if (n === 0) {
      if (pipeWaitMs === undefined || total > 0) break;
      if (Date.now() >= deadline) throw new InputError(`${name}: a named pipe that gave nothing in ${pipeWaitMs / 1000} s (no process writes to it): start its writer first, or give a file`);
      await sleep(PIPE_POLL_MS);
      continue;
    }
    total += n;
    if (total > maxBytes) throw new InputError(`${name}: more than the ${maxBytes} bytes an input file may hold`);
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

/** Whether standard input was read already: a second `-` would find it at its end. */
let stdinTaken = false;

/** Standard input, whole (a file, a pipe or a socket it is); a terminal is refused: nothing was piped in. */
function readStdin(maxBytes: number): Promise<string> {
  const name = inputName('-');
  if (stdinTaken) return Promise.reject(new InputError(`${name}: read once already by this command: only one input can be -`));
  stdinTaken = true;
  const stdin = process.stdin;
  if (stdin.isTTY) return Promise.reject(new InputError(`${name}: a terminal, not a file: pipe the file in (... | mapped-reg-conformance ... -) or name it`));
  return new Promise((done, failed) => {
    const chunks: Buffer[] = [];
    let total = 0;
    stdin.on('data', (c: Buffer) => {
      total += c.length;
      if (total > maxBytes) {
        stdin.destroy();
        failed(new InputError(`${name}: more than the ${maxBytes} bytes an input file may hold`));
        return;
      }
      chunks.push(c);
    });
    stdin.once('end', () => done(Buffer.concat(chunks, total).toString('utf8')));
    stdin.once('error', (e: NodeJS.ErrnoException) => failed(new InputError(`${name}: cannot read it (${e.code ?? e.message})`)));
  });
}

/**
 * The text of an input given on the command line: a regular file; `-`, standard input; a pipe with a writer
 * (process substitution, a named pipe being written), read without blocking and polled; at most `maxBytes`. A
 * device such as /dev/zero, a socket, a folder: refused at once; a named pipe that gives nothing within
 * `pipeWaitMs` (no writer): refused then. Anything else, or a file that cannot be read, is an InputError.
 */
export async function readInput(file: string, maxBytes = MAX_INPUT_BYTES, pipeWaitMs = PIPE_WAIT_MS): Promise<string> {
  if (file === '-') return readStdin(maxBytes);
  let fd: number;
  try {
    // without blocking: a named pipe with no writer would block the open itself
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new InputError(`${file}: cannot read it (${err.code ?? err.message})`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new InputError(`${file}: cannot read it (EISDIR)`);
    if (!st.isFile() && !st.isFIFO()) throw new InputError(`${file}: not a regular file (${fileKind(st)}): an input must be a file or a pipe`);
    if (st.size > maxBytes) throw new InputError(`${file}: ${st.size} bytes, more than the ${maxBytes} an input file may hold`);
    // a file that grows while read (a log still written) is held to the same bound
    return await readAll(fd, file, maxBytes, st.isFIFO() ? pipeWaitMs : undefined);
  } catch (e) {
    if (e instanceof InputError) throw e;
    const err = e as NodeJS.ErrnoException;
    throw new InputError(`${file}: cannot read it (${err.code ?? err.message})`);
  } finally {
    closeSync(fd);
  }
}

/** What a file that is not a regular file is, in words. */
export function fileKind(st: { isDirectory(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a named pipe';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** Reads and checks a results file (`-`: standard input): not readable, not JSON, another schemaVersion or not the schema's shape: InputError. */
export async function readResults(file: string): Promise<RunResult> {
  return parseResults(await readInput(file), inputName(file));
}
