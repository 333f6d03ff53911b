// Writing the reports the user named (--json, --junit, GITHUB_STEP_SUMMARY, merge -o, report --html). Every
// output is checked before anything runs (checkOutputs): a name that cannot be written is bad input (exit 2,
// one line, nothing run). Then:
// - `-` (and /dev/stdout, /dev/fd/1) is standard output, allowed once; the command's own text then goes to
//   stderr (cli/stdout.ts), so that stdout carries the report alone;
// - a target that exists and is not a regular file (a named pipe, a terminal, a character device) is written
//   directly, never replaced. It is opened when checked, without blocking (O_NONBLOCK), and held open until
//   written: a named pipe with no reader is refused at once (ENXIO: exit 2, nothing run) instead of an open that
//   would wait forever with the signals unanswered, and the reader that was there is the one that gets the report;
//   a reader that then takes nothing for PIPE_STALL_MS fails that output (the others are still written);
// - a regular file (or a new one) is written atomically: an exclusively created, randomly named temporary file
//   beside it (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, then the mode of the file it replaces or 0644 less the
//   umask), synced, then renamed over it. A symbolic link is followed: the file it names is replaced, the link
//   stays. GITHUB_STEP_SUMMARY is appended to, as GitHub expects. The check before the run makes (and removes)
//   a file of the very name the write will use (tempNameFor), so that a name too long for its temporary file is
//   refused before the run, not after it.
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  appendFileSync,
  closeSync,
  constants as fsConstants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readlinkSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileIdentity } from '../results/file-identity.js';
import { reserveStdout, writeStdout } from './stdout.js';

/** Where one output goes, once checked. */
export type OutputTarget =
  /** A descriptor of this process: 1 for `-` and /dev/stdout, else /dev/fd/N, /dev/stderr. */
  | { kind: 'fd'; name: string; fd: number }
  /** An existing file that is not a regular file (a named pipe, a terminal, a device): written in place, through `fd` (opened when checked, non-blocking). */
  | { kind: 'direct'; name: string; path: string; fd: number }
  /** A regular file, or one to create: written atomically (or appended to). */
  | { kind: 'file'; name: string; path: string };

/** An output that cannot be written: bad input, one line (the command exits 2 before anything runs). */
export class OutputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutputError';
  }
}

const why = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

/** The descriptor a path names, for /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N. */
function descriptorOf(path: string): number | undefined {
  if (path === '/dev/stdout') return 1;
  if (path === '/dev/stderr') return 2;
  const m = /^\/(?:dev\/fd|proc\/self\/fd|proc\/(\d+)\/fd)\/(\d+)$/.exec(path);
  if (m && (m[1] === undefined || Number(m[1]) === process.pid)) return Number(m[2]);
  return undefined;
}

/**
 * The temporary file an atomic write of `file` goes through: beside it, `.NAME.<16 hex digits>.tmp` (22 bytes
 * longer than NAME), random. The write and the check before the run both take their name from here.
 */
export function tempNameFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.${randomBytes(8).toString('hex')}.tmp`);
}

/**
 * Whether the atomic write of `file` can make its temporary file: one of that very name (tempNameFor) is made
 * (exclusively) and removed. It fails for the same reasons the write would: a missing folder, no permission, a
 * read-only file system, no inode left, a name too long once the temporary file's 22 bytes are added.
 */
function probeFolder(file: string, what: string): void {
  const dir = dirname(file);
  let st;
  try {
    st = statSync(dir);
  } catch (e) {
    throw new OutputError(`${what}: the folder ${dir} ${why(e) === 'ENOENT' ? 'does not exist' : `cannot be used (${why(e)})`}`);
  }
  if (!st.isDirectory()) throw new OutputError(`${what}: ${dir} is not a folder`);
  const probe = tempNameFor(file);
  try {
    closeSync(openSync(probe, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600));
  } catch (e) {
    const code = why(e);
    if (code === 'ENAMETOOLONG') {
      throw new OutputError(`${what}: the name is too long: the temporary file written beside it (.${basename(file).slice(0, 20)}….<16 hex digits>.tmp, 22 bytes longer) is over its file system's limit (name a shorter file)`);
    }
    const reason = code === 'EROFS' ? 'is on a read-only file system' : code === 'EACCES' || code === 'EPERM' ? 'is not writable' : `cannot hold a new file (${code})`;
    throw new OutputError(`${what}: the folder ${dir} ${reason}`);
  }
  unlinkSync(probe);
}

/** Checks one output name (`append`: it is appended to, not replaced); errors name it (`--json x.json`). */
export function checkOutput(option: string, value: string, append = false): OutputTarget {
  const what = `${option} ${value}`;
  if (value === '') throw new OutputError(`${option} '': an empty file name (use - for standard output)`);
  if (value === '-') return { kind: 'fd', name: option, fd: 1 };
  const path = resolve(value);
  const fd = descriptorOf(path);
  if (fd !== undefined) {
    try {
      fstatSync(fd);
    } catch {
      throw new OutputError(`${what}: descriptor ${fd} is not open`);
    }
    return { kind: 'fd', name: option, fd };
  }
  let st;
  try {
    st = lstatSync(path);
  } catch (e) {
    if (why(e) !== 'ENOENT') throw new OutputError(`${what}: cannot be used (${why(e)})`);
    // a new file: its folder must take it, and its temporary file
    probeFolder(path, what);
    return { kind: 'file', name: option, path };
  }
  let real = path;
  if (st.isSymbolicLink()) {
    // followed a link at a time: a link to /dev/stdout or /proc/self/fd/1 is that descriptor (whose own link, for
    // a pipe, names no file)
    for (let hops = 0; st.isSymbolicLink(); hops++) {
      if (hops > 40) throw new OutputError(`${what}: too many symbolic links`);
      real = resolve(dirname(real), readlinkSync(real));
      const linked = descriptorOf(real);
      if (linked !== undefined) return checkOutput(option, `/dev/fd/${linked}`, append);
      try {
        st = lstatSync(real);
      } catch (e) {
        throw new OutputError(`${what}: a symbolic link to nothing usable (${real}: ${why(e)})`);
      }
    }
    real = realpathSync(real);
  }
  if (st.isDirectory()) throw new OutputError(`${what}: is a folder, not a file`);
  if (!st.isFile()) {
    // a named pipe, a terminal, a device: written in place, never replaced; opened now, without blocking, and
    // held open until written (a pipe's reader that saw us close would end before the report)
    try {
      const fd = openSync(real, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY | (append ? fsConstants.O_APPEND : 0));
      return { kind: 'direct', name: option, path: real, fd };
    } catch (e) {
      if (why(e) === 'ENXIO') throw new OutputError(`${what}: ${st.isFIFO() ? 'a named pipe with no reader' : 'a special file with nothing behind it'} (ENXIO): start its reader first, or name a file`);
      throw new OutputError(`${what}: cannot be written (${why(e)})`);
    }
  }
  try {
    accessSync(real, fsConstants.W_OK);
  } catch (e) {
    if (why(e) === 'EROFS') throw new OutputError(`${what}: is on a read-only file system`);
    // not writable in place: the atomic write replaces it all the same when its folder allows; an append cannot
    if (append) throw new OutputError(`${what}: cannot be written (${why(e)})`);
  }
  if (!append) probeFolder(real, what);
  return { kind: 'file', name: option, path: real };
}

/** What tells two targets apart: the descriptor, or the file (its inode when it exists, else its path). */
function identity(t: OutputTarget): string {
  if (t.kind === 'fd') {
    // standard output is standard output, whatever it is connected to
    if (t.fd === 1) return 'fd:1';
    try {
      const st = fstatSync(t.fd);
      return `ino:${st.dev}:${st.ino}`;
    } catch {
      return `fd:${t.fd}`;
    }
  }
  return fileIdentity(t.path);
}

/** One output a command was asked for: its option (or variable), the name given, and whether it is appended to. */
export interface OutputRequest {
  option: string;
  value: string | undefined;
  append?: boolean;
}

/** One input a command reads (the store, --baseline, --expectations, a results file, the skips file): what names it, and the path. */
export interface InputRequest {
  /** How the refusal names it: `--baseline`, `the store (--db)`, `the results file`. */
  option: string;
  value: string | undefined;
}

/** The file an output reaches: for a descriptor (standard output too), the file it is open on, if any. */
function reachedFile(t: OutputTarget): string {
  if (t.kind !== 'fd') return identity(t);
  try {
    const st = fstatSync(t.fd);
    return `ino:${st.dev}:${st.ino}`;
  } catch {
    return `fd:${t.fd}`;
  }
}

/**
 * Checks every output of a command before anything runs (a value undefined: not asked for). Returns the targets
 * by option. Throws an OutputError, one line, for: an empty name, a folder, a file whose folder is missing or
 * cannot take a new file (read-only, no permission), a target that cannot be written, two outputs naming the
 * same file (by path or inode) or standard output twice, and an output that is one of the command's `inputs`
 * (by device and inode, links resolved: the store, a results file, the baseline... is never overwritten). A `-`
 * reserves standard output for that report.
 */
export function checkOutputs(outputs: OutputRequest[], inputs: InputRequest[] = []): Record<string, OutputTarget> {
  return Object.fromEntries(checkOutputList(outputs, inputs).map((t) => [t.name, t]));
}

/** checkOutputs for outputs of which an option may name several (--json a.json --json b.json): the targets in order. */
export function checkOutputList(outputs: OutputRequest[], inputs: InputRequest[] = []): OutputTarget[] {
  const checked: OutputTarget[] = [];
  const seen = new Map<string, string>();
  const read = inputs.filter((i): i is { option: string; value: string } => i.value !== undefined && i.value !== '' && i.value !== '-').map((i) => ({ ...i, id: fileIdentity(i.value) }));
  for (const { option, value, append } of outputs) {
    if (value === undefined) continue;
    const t = checkOutput(option, value, append);
    const id = identity(t);
    const other = seen.get(id);
    if (other !== undefined) throw new OutputError(`${other} and ${option} name the same ${id === 'fd:1' ? 'standard output' : `file (${value})`}: each report needs its own`);
    const reached = reachedFile(t);
    const input = read.find((i) => i.id === reached || i.id === id);
    if (input) throw new OutputError(`${option} ${value}: the same file as ${input.option} ${input.value}, which this command reads: an input is never overwritten (name another file)`);
    seen.set(id, option);
    checked.push(t);
  }
  if (checked.some((t) => t.kind === 'fd' && t.fd === 1)) reserveStdout();
  return checked;
}

/**
 * How long a non-blocking output (a named pipe, a terminal) may take nothing before it is given up: its reader is
 * stalled (a pager left open, a process stopped), and the run's other outputs and its exit must not wait forever.
 */
export const PIPE_STALL_MS = 60_000;

/** Writes all of `data` to a descriptor; one that is non-blocking and full is waited for, PIPE_STALL_MS at most without progress. */
function writeAll(fd: number, data: Buffer, stallMs = PIPE_STALL_MS): void {
  let done = 0;
  let since = performance.now();
  while (done < data.length) {
    try {
      done += writeSync(fd, data, done, data.length - done);
      since = performance.now();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      if (performance.now() - since > stallMs) throw new Error(`its reader took nothing for ${stallMs / 1000} s`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

/** The mode a new report gets: 0644 less the umask. */
function newFileMode(): number {
  const mask = process.umask();
  return 0o644 & ~mask;
}

/**
 * Writes `data` to `file` atomically: an exclusively created, randomly named temporary file beside it (never
 * a name someone could have prepared, never a link followed), with the mode of the file it replaces (or 0644
 * less the umask), synced, then renamed over it. On failure the temporary file is removed and the error thrown.
 */
export function writeAtomically(file: string, data: string): void {
  let mode = newFileMode();
  try {
    mode = statSync(file).mode & 0o7777;
  } catch {
    // a new file
  }
  const tmp = tempNameFor(file);
  let fd = -1;
  try {
    fd = openSync(tmp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
    writeAll(fd, Buffer.from(data));
    fchmodSync(fd, mode);
    fsyncSync(fd);
    closeSync(fd);
    fd = -1;
    renameSync(tmp, file);
  } catch (e) {
    if (fd >= 0) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // never made, or already renamed
    }
    throw e;
  }
}

/** Writes (or, with `append`, appends) `data` to a checked target. Throws what the write threw. */
export function writeOutput(t: OutputTarget, data: string, append = false): void {
  if (t.kind === 'fd') {
    if (t.fd === 1) writeStdout(data, t.name);
    else writeAll(t.fd, Buffer.from(data));
  } else if (t.kind === 'direct') {
    // the descriptor opened when checked (with O_APPEND when appended to), closed once written
    try {
      writeAll(t.fd, Buffer.from(data));
    } finally {
      closeSync(t.fd);
    }
  } else if (append) appendFileSync(t.path, data);
  else writeAtomically(t.path, data);
}

/** One output to write: where, the text, and whether it is appended to. */
export interface OutputWrite {
  target: OutputTarget;
  text: string;
  append: boolean;
}

/**
 * Writes the outputs of a run in their order: each one is tried, whatever happened to the others; one that fails
 * is told on stderr in one line. Returns true when any could not be written.
 */
export function writeEveryOutput(outputs: readonly OutputWrite[]): boolean {
  let failed = false;
  for (const { target: t, text, append } of outputs) {
    try {
      writeOutput(t, text, append);
    } catch (e) {
      failed = true;
      const where = t.kind === 'fd' ? `descriptor ${t.fd}` : t.path;
      process.stderr.write(`mapped-reg-conformance: ${t.name}: could not write ${where} (${why(e)}): the run does not pass\n`);
    }
  }
  return failed;
}
