// Reading a results file (what `run --json FILE` wrote) for compare, merge and report: parsed, checked against
// results/results.schema.json, or refused with one line that names the file and the reason.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import type { Ajv as AjvClass, ValidateFunction } from 'ajv';
import type { RunResult } from './types.js';

export type { DeviceWithHost, Host } from './types.js';

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

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();

// The schema ships in the npm package as results/results.schema.json, beside dist/: from the compiled
// dist/results/read.js it is ../../results/, from this source file (under Vitest) ./.
const SCHEMA_CANDIDATES = ['../../results/results.schema.json', './results.schema.json'].map((p) => fileURLToPath(new URL(p, import.meta.url)));

/** Where the schema was found (the first candidate that exists). */
export function schemaPath(): string {
  const found = SCHEMA_CANDIDATES.find((p) => existsSync(p));
  if (!found) throw new Error(`results.schema.json not found (looked at ${SCHEMA_CANDIDATES.join(', ')}): the package is incomplete`);
  return found;
}

let validator: ValidateFunction | undefined;

/** The schema's validator (compiled once). */
export function resultsValidator(): ValidateFunction {
  if (!validator) {
    const schema = JSON.parse(readFileSync(schemaPath(), 'utf8')) as object;
    // loaded here, when a file is first validated: a run that reads no results file never loads ajv
    const { Ajv } = createRequire(import.meta.url)('ajv') as { Ajv: typeof AjvClass };
    validator = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(schema);
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
  return data as RunResult;
}

/** The text of an input file given on the command line; one that cannot be read is an InputError. */
export function readInput(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new InputError(`${file}: cannot read it (${err.code ?? err.message})`);
  }
}

/** Reads and checks a results file: not readable, not JSON, another schemaVersion or not the schema's shape: InputError. */
export function readResults(file: string): RunResult {
  return parseResults(readInput(file), file);
}
