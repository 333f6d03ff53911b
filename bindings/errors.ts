// What the driver bindings (cuda.ts, hip.ts, and a registered backend's) throw, and the loading logic they share:
// finding the library file, telling "not there" from "there, but not a driver", and declaring its functions.

import { existsSync } from 'node:fs';
import koffi, { type LibraryHandle } from 'koffi';
import { oneLine } from '../results/format.js';

/**
 * The driver's name in its messages ('CUDA', 'HIP'): whatever its backend module says (BackendModule.driver),
 * not a closed list, so that a backend added to the registry names its own.
 */
export type DriverApi = string;

/** None of the library names or paths tried could be found. */
export class LibraryNotFoundError extends Error {
  readonly api: DriverApi;
  /** Every name or path tried, in order. */
  readonly tried: string[];

  constructor(api: DriverApi, tried: string[]) {
    super(`${api}: ${tried[0] ?? '(nothing)'} not found (tried ${tried.join(', ')})`);
    this.name = 'LibraryNotFoundError';
    this.api = api;
    this.tried = [...tried];
  }
}

/** A file was found but is not a usable driver library: it does not load, or it lacks a symbol we need. */
export class NotADriverError extends Error {
  readonly api: DriverApi;
  readonly path: string;
  /** One line: the loader's message, or which symbol is missing. */
  readonly reason: string;

  constructor(api: DriverApi, path: string, reason: string) {
    const line = oneLine(reason);
    super(`${api}: ${path} is not a ${api} driver library (${line})`);
    this.name = 'NotADriverError';
    this.api = api;
    this.path = path;
    this.reason = line;
  }
}

/** What a driver call returned: 0 (`SUCCESS`), or the error's code and name. */
export interface DriverResult {
  code: number;
  name: string;
}

/** Runs a driver call and returns its result; an error that is not the driver's (a bug, libc) propagates. */
export function driverResult(f: () => void): DriverResult {
  try {
    f();
    return { code: 0, name: 'SUCCESS' };
  } catch (e) {
    if (e instanceof DriverError) return { code: e.code, name: e.codeName };
    throw e;
  }
}

/** A driver call returned something other than success. `code` is the raw result, never folded. */
export class DriverError extends Error {
  readonly api: DriverApi;
  /** The C function that failed, e.g. 'cuMemHostRegister_v2'. */
  readonly call: string;
  readonly code: number;
  /** e.g. 'CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED', 'hipErrorHostMemoryNotRegistered'. */
  readonly codeName: string;
  /** The driver's own sentence for the code, when it gave one. */
  readonly description: string | undefined;

  constructor(api: DriverApi, call: string, code: number, codeName: string, description?: string) {
    super(`${api}: ${call} failed: ${code} ${codeName}${description ? ` (${oneLine(description)})` : ''}`);
    this.name = 'DriverError';
    this.api = api;
    this.call = call;
    this.code = code;
    this.codeName = codeName;
    this.description = description;
  }
}

// koffi strips the file name from dlerror's text when the message is about that very file, so this exact
// message means "this candidate does not exist" (a missing dependency names the dependency instead).
const NOT_FOUND = 'Failed to load shared library: cannot open shared object file: No such file or directory';

/**
 * dlopen the first candidate that exists. A candidate that is not there is skipped; one that is there but
 * does not load is a NotADriverError (we do not fall back to another version behind the user's back); none
 * there at all is a LibraryNotFoundError listing every candidate.
 */
export function openLibrary(api: DriverApi, candidates: readonly string[]): { path: string; lib: LibraryHandle } {
  for (const candidate of candidates) {
    if (candidate.includes('/') && !existsSync(candidate)) continue;
    try {
      return { path: candidate, lib: koffi.load(candidate) };
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (message === NOT_FOUND) continue;
      throw new NotADriverError(api, candidate, message.replace(/^Failed to load shared library: /, 'cannot load: '));
    }
  }
  throw new LibraryNotFoundError(api, [...candidates]);
}

/** Libraries another thread of this process loaded, held open by this thread (holdLibrary). */
const heldLibraries: LibraryHandle[] = [];

/**
 * Opens `path` once more and never lets it go: a library that another thread loaded (cli/discovery-thread.ts) stays
 * loaded when that thread ends, which unloads the libraries it alone held (koffi's dlclose as its heap is torn
 * down) — a driver initialized there, its own threads running, must never be unloaded. Best effort: a library
 * that cannot be opened here is left to the other thread.
 */
export function holdLibrary(path: string): void {
  try {
    heldLibraries.push(koffi.load(path));
  } catch {
    // the library loaded on the other thread is what the run uses; holding it is only insurance
  }
}

/**
 * Declares every prototype of `prototypes` (name -> C prototype string) in `lib`: the functions, or, when one
 * cannot be declared, why (`no symbol X`, or koffi's message), `lib` then unloaded. For a caller that reports
 * instead of throwing (bindings/gpu-users.ts); declareAll throws.
 * The caller states the shape of the result (`F`): koffi types its functions as `(...args: any[]) => any`.
 */
export function declarePrototypes<F>(lib: LibraryHandle, prototypes: Record<string, string>): { functions: F } | { missing: string } {
  const out: Record<string, unknown> = {};
  for (const [name, prototype] of Object.entries(prototypes)) {
    try {
      out[name] = lib.func(prototype);
    } catch (e) {
      lib.unload();
      const message = e instanceof Error ? e.message : String(e);
      return { missing: /Cannot find function/.test(message) ? `no symbol ${name}` : message };
    }
  }
  return { functions: out as F };
}

/** declarePrototypes, throwing NotADriverError naming what is missing. */
export function declareAll<F>(api: DriverApi, path: string, lib: LibraryHandle, prototypes: Record<string, string>): F {
  const declared = declarePrototypes<F>(lib, prototypes);
  if ('missing' in declared) throw new NotADriverError(api, path, declared.missing);
  return declared.functions;
}
