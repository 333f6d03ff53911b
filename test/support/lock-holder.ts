// Another process holding a scratch folder's lock, as a live run's would: the stale-scratch rules must leave
// its folder alone.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './command.js';

/** Holds an exclusive flock on `file` in another process until released (killed); resolves once it holds it, with its pid. */
export function holdLock(file: string): Promise<(() => void) & { pid: number }> {
  // koffi straight to libc's flock (LOCK_EX = 2), not through the code under test
  const script = `const koffi = require(${JSON.stringify(join(ROOT, 'node_modules', 'koffi'))});
    const flock = koffi.load('libc.so.6').func('int flock(int fd, int operation)');
    if (flock(require('node:fs').openSync(${JSON.stringify(file)}, 'r'), 2) !== 0) process.exit(1);
    process.stdout.write('locked\\n'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('locked')) resolve(Object.assign(() => void child.kill('SIGKILL'), { pid: child.pid! }));
    });
    child.on('exit', (code) => reject(new Error(`the lock holder exited (${code})`)));
  });
}
