// A discovering runner's discovery on a thread of its own (cli/device-runner.ts): the driver's initialization
// (cuInit, the HIP runtime's start: 0.3 to 0.5 s on the H200) then runs while the runner's own thread loads Vitest
// and the suites, instead of before. The driver is initialized for the whole process, so the suites' own lookup
// of the device, on the runner's thread, finds it ready. A driver that kills the thread kills the process, as it
// did on the runner's thread: the command sees the same end.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { type Backend, type PlainDiscovery, discover, plainDiscovery } from '../bindings/discovery.js';
import { holdLibrary } from '../bindings/errors.js';

/** Resolves with the discovery of `backends`, made on a new thread (which then ends); rejects with why it could not be made. */
export function discoverOnThread(backends: readonly Backend[]): Promise<PlainDiscovery> {
  return new Promise((resolve, reject) => {
    // no execArgv of the process's own (an --input-type, say, which a thread refuses)
    const thread = new Worker(new URL(import.meta.url), { workerData: [...backends], execArgv: [] });
    let done = false;
    thread.once('message', (found: PlainDiscovery) => {
      done = true;
      // the libraries it loaded (the driver, initialized) are held here before the thread, which waits for this,
      // is ended: its end would unload what it alone held
      for (const b of found.backends) if (b.library !== null) holdLibrary(b.library);
      resolve(found);
      void thread.terminate();
    });
    thread.once('error', (e) => reject(e));
    thread.once('exit', (code) => {
      if (!done) reject(new Error(`the discovery thread ended with status ${code} before it reported`));
    });
  });
}

// as the thread: discover, report, and wait to be ended (its libraries are held by the runner's thread first)
if (!isMainThread && parentPort) {
  parentPort.on('message', () => {});
  parentPort.postMessage(plainDiscovery(discover(workerData as Backend[])));
}
