// Expectations, in the manner of deqp-runner's baseline and flakes files: known failures are not regressions,
// known flakes are re-run once by the baseline gate before a regression of theirs counts.
//
//   # comment (a line that starts with #, or the rest of a line from a # that starts a word)
//   fail  <check-id-glob> [device=<glob>] [driver=<glob>] [host=<glob>]
//   flake <check-id-glob> [device=<glob>] [driver=<glob>] [host=<glob>]
//
// Globs: `*` any run of characters, `?` one character, everything else literal, matched against the whole
// string, case-sensitively. `device=` matches the device's name or its id (`device="NVIDIA H200"`,
// `device=hip:*`); `driver=` the driver's version (`driver=7.2.4*`), or name and version (`driver="HIP 7.2.*"`);
// `host=` the hostname of a merged file's device (or of the file). A value with spaces is quoted with "...".
// Keys left out match anything. The device-level verdict entry of a comparison has the check id `verdict`.
import { InputError, inputName, readInput, TEXT_INPUT_BYTES } from './read.js';
import type { DeviceResult, Machine } from './types.js';

export type ExpectationKind = 'fail' | 'flake';

export interface Expectation {
  kind: ExpectationKind;
  /** Glob of check ids. */
  check: string;
  device?: string;
  driver?: string;
  host?: string;
  /** Where it was written: `file:line`. */
  source: string;
  /** The line as written (comments and surrounding blanks removed), for the reports: "known failure: <line>". */
  line: string;
}

export interface Expectations {
  file: string;
  entries: Expectation[];
}

/** What an entry is matched against: a device of a results file (a merged file's carries its host). */
export type ExpectationSubject = Pick<DeviceResult, 'id' | 'name' | 'driver'> & { host?: Machine };

const KEYS = ['device', 'driver', 'host'] as const;
type Key = (typeof KEYS)[number];

/** `*` and `?` globs, anchored, as a RegExp. */
export function globToRegExp(glob: string): RegExp {
  const body = [...glob].map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&'))).join('');
  return new RegExp(`^${body}$`, 's');
}

const globCache = new Map<string, RegExp>();
function globMatch(glob: string, value: string): boolean {
  let re = globCache.get(glob);
  if (!re) {
    re = globToRegExp(glob);
    globCache.set(glob, re);
  }
  return re.test(value);
}

/** Splits a line into words: whitespace-separated, "..." quoted (the quotes removed), a # starting a word ends the line. */
function words(line: string, where: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (i < line.length && /\s/.test(line[i]!)) i++;
    if (i >= line.length || line[i] === '#') break;
    let word = '';
    while (i < line.length && !/\s/.test(line[i]!)) {
      if (line[i] === '"') {
        const end = line.indexOf('"', i + 1);
        if (end < 0) throw new InputError(`${where}: unterminated quote`);
        word += line.slice(i + 1, end);
        i = end + 1;
      } else word += line[i++];
    }
    out.push(word);
  }
  return out;
}

/** A word as it can be written again: a value with blanks in quotes (`device="NVIDIA H200"`). */
function quoted(word: string): string {
  const eq = word.indexOf('=');
  const value = word.slice(eq + 1);
  if (!/\s/.test(value)) return word;
  return eq > 0 ? `${word.slice(0, eq + 1)}"${value}"` : `"${word}"`;
}

/** Parses an expectations file's text; a bad line is an InputError naming `file:line`. */
export function parseExpectations(text: string, file: string): Expectations {
  const entries: Expectation[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const where = `${file}:${index + 1}`;
    const w = words(raw, where);
    if (w.length === 0) return;
    const [kind, check, ...rest] = w as [string, string | undefined, ...string[]];
    if (kind !== 'fail' && kind !== 'flake') throw new InputError(`${where}: unknown entry "${kind}" (expected "fail" or "flake")`);
    if (!check || check.includes('=')) throw new InputError(`${where}: "${kind}" needs a check id (glob) first, e.g. "${kind} hazard.tmpfs_bytes device=*HIP*"`);
    const entry: Expectation = { kind, check, source: where, line: w.map(quoted).join(' ') };
    for (const kv of rest) {
      const eq = kv.indexOf('=');
      const key = kv.slice(0, eq);
      const value = kv.slice(eq + 1);
      if (eq <= 0 || !(KEYS as readonly string[]).includes(key)) throw new InputError(`${where}: unknown "${kv}" (expected ${KEYS.map((k) => `${k}=<glob>`).join(', ')})`);
      if (value === '') throw new InputError(`${where}: ${key}= needs a value`);
      if (entry[key as Key] !== undefined) throw new InputError(`${where}: ${key}= given twice`);
      entry[key as Key] = value;
    }
    entries.push(entry);
  });
  return { file, entries };
}

/** Reads and parses an expectations file (`-`: standard input; unreadable: InputError). */
export async function readExpectations(file: string): Promise<Expectations> {
  return parseExpectations(await readInput(file, TEXT_INPUT_BYTES), inputName(file));
}

function matches(e: Expectation, device: ExpectationSubject, checkId: string, fallbackHost?: string): boolean {
  if (!globMatch(e.check, checkId)) return false;
  if (e.device !== undefined && !globMatch(e.device, device.name) && !globMatch(e.device, device.id)) return false;
  if (e.driver !== undefined && !globMatch(e.driver, device.driver.version) && !globMatch(e.driver, `${device.driver.name} ${device.driver.version}`)) return false;
  if (e.host !== undefined) {
    const hostname = device.host?.hostname ?? fallbackHost;
    if (hostname === undefined || !globMatch(e.host, hostname)) return false;
  }
  return true;
}

/** The first entry of that kind that covers this device's check, if any. `fallbackHost`: the file's hostname, for a device that carries none. */
export function findExpectation(expectations: Expectations | undefined, kind: ExpectationKind, device: ExpectationSubject, checkId: string, fallbackHost?: string): Expectation | undefined {
  return expectations?.entries.find((e) => e.kind === kind && matches(e, device, checkId, fallbackHost));
}

/** The check is a known failure of this device (a `fail` entry covers it). */
export function isExpectedFailure(expectations: Expectations | undefined, device: ExpectationSubject, checkId: string, fallbackHost?: string): boolean {
  return findExpectation(expectations, 'fail', device, checkId, fallbackHost) !== undefined;
}

/** The check is a known flake of this device (a `flake` entry covers it). */
export function isKnownFlake(expectations: Expectations | undefined, device: ExpectationSubject, checkId: string, fallbackHost?: string): boolean {
  return findExpectation(expectations, 'flake', device, checkId, fallbackHost) !== undefined;
}
