// What native code in this process writes to its standard error while `f` runs, captured instead of printed. The
// driver double says so on stderr, in one line, when it refuses a setting; the tests that give it bad ones on
// purpose load it in their own process, where those lines would otherwise land among the test run's output.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';

const libc = koffi.load('libc.so.6');
const dup = libc.func('int dup(int fd)') as (fd: number) => number;
const dup2 = libc.func('int dup2(int from, int to)') as (from: number, to: number) => number;

/** Runs `f` with fd 2 sent to a file of its own: its value and what was written there. On a throw, what was written is printed, then the error rethrown. */
export function capturingStderr<T>(f: () => T): { value: T; said: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mapped-reg-stderr-'));
  const path = join(dir, 'stderr.txt');
  const fd = openSync(path, 'w+', 0o600);
  const saved = dup(2);
  if (saved < 0 || dup2(fd, 2) < 0) throw new Error('capturingStderr: dup/dup2 of fd 2 failed');
  let ran: { value: T } | { error: unknown };
  try {
    ran = { value: f() };
  } catch (error) {
    ran = { error };
  } finally {
    dup2(saved, 2);
    closeSync(saved);
    closeSync(fd);
  }
  const said = readFileSync(path, 'utf8');
  rmSync(dir, { recursive: true, force: true });
  if ('error' in ran) {
    process.stderr.write(said);
    throw ran.error;
  }
  return { value: ran.value, said };
}
