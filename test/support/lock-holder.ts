// Another process holding a scratch folder's lock, as a live run's would: the stale-scratch rules must leave
// its folder alone.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './command.js';

/**
 * Holds an exclusive (or `shared`) flock on `file` in another process until released (killed), or, with
 * `releaseMs`, until that many ms after another process opened the file (seen in /proc/<pid>/fd): a taker that
 * opened it to wait then waited at least that long, however loaded the machine (its wait is counted from before its
 * open). Resolves once it holds it, with its pid.
 */
export function holdLock(file: string, o: { releaseMs?: number; shared?: boolean } = {}): Promise<(() => void) & { pid: number }> {
  // koffi straight to libc's flock (LOCK_EX = 2; LOCK_SH = 1 for `shared`, as the truncation children hold it), not through the code under test
  const script = `const koffi = require(${JSON.stringify(join(ROOT, 'node_modules', 'koffi'))});
    const fs = require('node:fs');
    const flock = koffi.load('libc.so.6').func('int flock(int fd, int operation)');
    const fd = fs.openSync(${JSON.stringify(file)}, 'r');
    // its path now: once it says it holds the lock, the test may rename the file's folder (the lock stays with the file)
    const target = fs.realpathSync(${JSON.stringify(file)});
    const releaseMs = ${o.releaseMs ?? -1};
    if (flock(fd, ${o.shared === true ? 1 : 2}) !== 0) process.exit(1);
    process.stdout.write('locked\\n');
    const openedElsewhere = () => fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p) && Number(p) !== process.pid).some((p) => {
      try { return fs.readdirSync('/proc/' + p + '/fd').some((f) => { try { return fs.readlinkSync('/proc/' + p + '/fd/' + f) === target; } catch { return false; } }); } catch { return false; }
    });
    const poll = setInterval(() => { if (releaseMs >= 0 && openedElsewhere()) { clearInterval(poll); setTimeout(() => process.exit(0), releaseMs); } }, 5);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('locked')) resolve(Object.assign(() => void child.kill('SIGKILL'), { pid: child.pid! }));
    });
    child.on('exit', (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)));
  });
}
