// Reading a results file (what `run --json FILE` wrote) for compare, merge, report, the gate and the history
// store: parsed, checked against results/results.schema.json and the rules the schema cannot say (a merged file's
// parts account for its devices; a device listed once), or refused with one line that names the file and the
// reason. Every input file named on the command line is read here (readInput): a regular file only, of bounded
// size, so that /dev/zero or a named pipe is refused at once instead of filling the memory or hanging.
import { closeSync, constants as fsConstants, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
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
export const SCHEMA_VERSION = 2;
/** The schemaVersions it reads: 1 is 2 without the control copy and the look at the machine (those fields absent). */
export const READ_VERSIONS: readonly number[] = [1, 2];

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
    throw new InputError(`${file}: unknown schemaVersion ${JSON.stringify(version)} (this version of mapped-reg-conformance reads schemaVersion ${READ_VERSIONS.join(' and ')})`);
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

/**
 * The text of an input file given on the command line. Only a regular file is read (a named pipe, a device such
 * as /dev/zero, a folder: refused at once; opened without blocking, so a pipe with no writer cannot hang it), of
 * at most `maxBytes`. Anything else, or a file that cannot be read, is an InputError.
 */
export function readInput(file: string, maxBytes = MAX_INPUT_BYTES): string {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new InputError(`${file}: cannot read it (${err.code ?? err.message})`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new InputError(`${file}: cannot read it (EISDIR)`);
    if (!st.isFile()) throw new InputError(`${file}: not a regular file (${fileKind(st)}): an input must be a file`);
    if (st.size > maxBytes) throw new InputError(`${file}: ${st.size} bytes, more than the ${maxBytes} an input file may hold`);
    const text = readFileSync(fd, 'utf8');
    // a file that grew while read (a log still written): held to the same bound
    if (Buffer.byteLength(text) > maxBytes) throw new InputError(`${file}: more than the ${maxBytes} bytes an input file may hold`);
    return text;
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

/** Reads and checks a results file: not readable, not JSON, another schemaVersion or not the schema's shape: InputError. */
export function readResults(file: string): RunResult {
  return parseResults(readInput(file), file);
}
