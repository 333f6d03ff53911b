// The cold page cache (docs/bench.md, "Registration cost per GiB"): a file's pages dropped before a timed
// registration, and how many of them were still cached after (mincore), through the project's libc bindings.
import { fsyncSync, writeFileSync } from 'node:fs';
import { LibcError, type Mapping, POSIX_FADV_DONTNEED, mincore, posixFadvise } from '../bindings/libc.js';

/** Fraction of the mapping's pages in the page cache (mincore), or undefined when it cannot be asked. */
export function residentFraction(m: Mapping): number | undefined {
  let vec: Uint8Array;
  try {
    vec = mincore(m);
  } catch {
    return undefined;
  }
  let n = 0;
  for (const b of vec) n += b & 1;
  return n / vec.length;
}

export interface Eviction {
  /** What was done, in order: always fsync and posix_fadvise(POSIX_FADV_DONTNEED); as root, drop_caches too. */
  methods: string[];
  /** Why a method did not work (posix_fadvise's error number, drop_caches' error). */
  failures: string[];
}

/** Drops the file's pages from the page cache. Pages mapped into a process (touched) cannot be dropped. */
export function evict(fd: number, dropCaches: boolean): Eviction {
  const e: Eviction = { methods: [], failures: [] };
  fsyncSync(fd); // dirty pages are never dropped
  try {
    posixFadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    e.methods.push('posix_fadvise(DONTNEED)');
  } catch (err) {
    if (!(err instanceof LibcError)) throw err;
    e.failures.push(`posix_fadvise(DONTNEED) returned ${err.errno}`);
  }
  if (dropCaches) {
    if (process.getuid?.() !== 0) e.failures.push('drop_caches: not root');
    else {
      try {
        writeFileSync('/proc/sys/vm/drop_caches', '1');
        e.methods.push('drop_caches');
      } catch (err) {
        e.failures.push(`drop_caches: ${(err as Error).message}`);
      }
    }
  }
  return e;
}
