// The open file descriptors of this process that lead under a folder of the test's own: a leak of the code under
// test shows there, whatever V8, Vitest or libuv open or close meanwhile (a whole-process count moves with them).
import { readdirSync, readlinkSync } from 'node:fs';

/** What each open fd under `prefix` leads to (a removed file's ends in " (deleted)"), sorted. */
export function fdsUnder(prefix: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed meanwhile (the listing's own fd among them)
    }
    if (target.startsWith(prefix)) out.push(target);
  }
  return out.sort();
}
