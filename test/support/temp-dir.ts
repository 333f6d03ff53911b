// A temp folder of a test's own on a regular (disk-backed) file system: the doubles and the hazard checks treat a
// tmpfs file as tmpfs (ROCm 7.2.4 serves it zeros), so a test that means a plain file must not get one. The
// system's temp folder when it is not tmpfs, else /var/tmp; neither: the test fails (never a skip, never the
// repository's scratch/).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { statfs } from '../../bindings/libc.js';

/** A new folder named `prefix`XXXXXX under the first of the temp folders that is not tmpfs; the caller removes it. */
export function diskTempDir(prefix: string): string {
  const tried: string[] = [];
  for (const base of [tmpdir(), '/var/tmp']) {
    const fs = statfs(base).fsName;
    if (fs !== 'tmpfs') return mkdtempSync(join(base, prefix));
    tried.push(`${base} (${fs})`);
  }
  throw new Error(`no temp folder on a disk-backed file system: ${tried.join(', ')}; set TMPDIR to one`);
}
