// Loaded into every Node.js process of a run (NODE_OPTIONS="--import=<this file>", which Node allows where it
// refuses --cpu-prof): a CPU profile of the process's main thread from the import to its exit, written as
// <MAPPED_REG_CPU_PROFILE_DIR>/<pid>.cpuprofile (Chrome DevTools or speedscope read it). A process killed by a
// signal writes none. Used by scripts/h200/acceptance.sh's `profile` step.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const dir = process.env.MAPPED_REG_CPU_PROFILE_DIR;
if (dir && isMainThread) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 200 });
  session.post('Profiler.start');
  process.on('exit', () => {
    // an in-process session answers synchronously: the profile is in hand before the process ends
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(`${dir}/${process.pid}.cpuprofile`, JSON.stringify(result.profile));
    });
  });
}
