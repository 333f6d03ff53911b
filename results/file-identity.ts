// Which file a name reaches, whatever name it was given by: its device and inode, links resolved (a hard link, a
// symbolic link, `./a.json` and `/abs/a.json` are one file). The one rule by which every command tells its files
// apart: an output that is one of its inputs (cli/outputs.ts), the store among the files added to it
// (history/commands.ts), a results file given twice (results/duplicates.ts).
import { realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';

/** `ino:DEV:INO` of the file `name` reaches; for a name that reaches none yet, `path:` its absolute path (links above it resolved). */
export function fileIdentity(name: string): string {
  try {
    const st = statSync(name);
    return `ino:${st.dev}:${st.ino}`;
  } catch {
    try {
      return `path:${realpathSync(name)}`;
    } catch {
      try {
        // a new file: the folder it would be made in, resolved
        return `path:${resolve(realpathSync(resolve(name, '..')), resolve(name).split('/').pop()!)}`;
      } catch {
        return `path:${resolve(name)}`;
      }
    }
  }
}
