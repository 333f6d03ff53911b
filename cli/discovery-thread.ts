// A discovering runner's discovery on a thread of its own (cli/device-runner.ts): the driver's initialization
// (cuInit, the HIP runtime's start: 0.3 to 0.5 s on the H200) then runs while the runner's own thread loads Vitest
// and the suites, instead of before. The driver is initialized for the whole process, so the suites' own lookup
// of the device, on the runner's thread, finds it ready. A driver that kills the thread kills the process, as it
// did on the runner's thread: the command sees the same end.
//
// Once it has reported, the thread keeps the context of the device the runner offers (NativeDevice.keepContext:
// CUDA's primary context, made once for the process; some 130 ms on the H200, which the first check's lookup
// otherwise spent on the runner's thread after Vitest was ready). It is the same retain, of the same process-wide
// context, that the lookup takes, never released: the lookup's own then finds the context made. Where the thread's
// keep failed, or had not returned yet, the lookup's retain is the one that counts, as before: its error is the
// check's, its wait the driver's own lock.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { type Backend, type PlainDiscovery, discover, plainDiscovery } from '../bindings/discovery.js';
import { holdLibrary } from '../bindings/errors.js';
import { errorText } from '../src/fatal.js';
import type { Selection } from '../suites/protocol.js';
import { pickDevice } from './select-devices.js';

/** What the thread did about the offered device's context: the device it kept it for, or why it kept none. */
export type EarlyContext = { kept: string } | { none: string };

export interface ThreadDiscovery {
  found: PlainDiscovery;
  /** Settles once the thread has ended (never rejects). */
  context: Promise<EarlyContext>;
}

type FromThread = { found: PlainDiscovery } | { context: EarlyContext };

/**
 * Resolves with the discovery of `backends`, made on a new thread, once it has reported; rejects with why it could
 * not be made. With `offering` (the runner's selection), the thread then keeps the context of the device the runner
 * will offer (pickDevice), and ends.
 */
export function discoverOnThread(backends: readonly Backend[], offering?: Selection): Promise<ThreadDiscovery> {
  return new Promise((resolve, reject) => {
    // no execArgv of the process's own (an --input-type, say, which a thread refuses)
    const thread = new Worker(new URL(import.meta.url), { workerData: { backends: [...backends], offering }, execArgv: [] });
    let reported = false;
    let settle: (c: EarlyContext) => void = () => {};
    const context = new Promise<EarlyContext>((r) => (settle = r));
    thread.on('message', (m: FromThread) => {
      if ('found' in m) {
        reported = true;
        // the libraries it loaded (the driver, initialized) are held here before the thread, which waits for this,
        // is ended: its end would unload what it alone held
        for (const b of m.found.backends) if (b.library !== null) holdLibrary(b.library);
        resolve({ found: m.found, context });
        if (!offering) void thread.terminate();
      } else {
        settle(m.context);
        void thread.terminate();
      }
    });
    thread.once('error', (e) => {
      settle({ none: `the thread failed: ${e.message}` });
      reject(e);
    });
    thread.once('exit', (code) => {
      settle({ none: `the thread ended with status ${code}` });
      if (!reported) reject(new Error(`the discovery thread ended with status ${code} before it reported`));
    });
  });
}

/** On the thread: the offered device's context kept (its native keepContext), or why not. */
function keepOffered(found: ReturnType<typeof discover>, offering: Selection): EarlyContext {
  const offer = pickDevice(plainDiscovery(found), offering);
  const native = offer && found.devices.find((d) => d.id === offer.id)?.native;
  if (!native) return { none: offer ? `${offer.id} has no context to keep` : 'no device to offer' };
  try {
    native.keepContext();
    return { kept: offer!.id };
  } catch (e) {
    return { none: `${offer!.id}: ${errorText(e)}` };
  }
}

// as the thread: discover, report, keep the offered device's context, and wait to be ended (its libraries are held
// by the runner's thread first)
if (!isMainThread && parentPort) {
  const port = parentPort;
  const { backends, offering } = workerData as { backends: Backend[]; offering?: Selection };
  port.on('message', () => {});
  const found = discover(backends);
  port.postMessage({ found: plainDiscovery(found) } satisfies FromThread);
  if (offering) port.postMessage({ context: keepOffered(found, offering) } satisfies FromThread);
}
