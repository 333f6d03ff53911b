// The small files the machine is read from (/proc/pressure/*, sysfs attributes, /proc/<pid>/comm): read so that
// nothing can block the thread. The file is opened without blocking (a named pipe with no writer would block a
// plain open or read forever, and with it the signals and the check's watchdog), only a regular file is read
// (procfs and sysfs files are regular files), and at most `maxBytes` of it (a file that never ends, such as
// /dev/zero linked in its place, cannot fill memory). What cannot be read is a reason, never a throw.
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from 'node:fs';
import { fileKind } from '../results/read.js';

/** The most bytes read of one such file: a pressure file is some 100 bytes, a sysfs attribute at most a page. */
export const SMALL_FILE_BYTES = 64 * 1024;

/** The text of a small file, or why it cannot be read ("ENOENT", "a named pipe", "more than 65536 bytes"). */
export function readSmallFile(path: string, maxBytes = SMALL_FILE_BYTES): { text: string } | { reason: string; code?: string } {
  let fd: number;
  try {
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { reason: code ?? String(e), ...(code ? { code } : {}) };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return st.isDirectory() ? { reason: 'EISDIR', code: 'EISDIR' } : { reason: `not a regular file (${fileKind(st)})` };
    // procfs and sysfs give a size of 0 or a page whatever they hold: read until the end, up to the bound
    const buf = Buffer.alloc(maxBytes + 1);
    let got = 0;
    for (;;) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
      if (got > maxBytes) return { reason: `more than ${maxBytes} bytes` };
    }
    return { text: buf.subarray(0, got).toString('utf8') };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { reason: code ?? String(e), ...(code ? { code } : {}) };
  } finally {
    closeSync(fd);
  }
}

/** A process's command name (`<procRoot>/<pid>/comm`), read without blocking; '' when it cannot be read. */
export function processName(pid: number, procRoot = '/proc'): string {
  const read = readSmallFile(`${procRoot}/${pid}/comm`, 4096);
  return 'text' in read ? read.text.trim() : '';
}
