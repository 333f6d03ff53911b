// What starting Node.js alone costs here (`nodeStart`; docs/bench.md): the yardstick of the run's wall time.
import { spawnSync } from 'node:child_process';
import { type Stat, time } from './timing.js';

/** `node -e 0`, N times (at least 3). */
export function nodeStart(runs: number): Stat {
  return time(
    'node -e 0',
    () => {
      const r = spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore' });
      if (r.status !== 0) throw new Error(`node -e 0 exited ${r.status ?? r.signal}`);
    },
    { iterations: Math.max(runs, 3) },
  );
}
