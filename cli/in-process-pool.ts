// A Vitest pool (Vitest's custom pool API, experimental in Vitest 4) that runs the test files in the device
// runner's own thread instead of a worker thread: the runner already is the process of its devices, with nothing
// to isolate the suites from. It saves the worker thread's start (a Node.js bootstrap and a second load of the
// suites' modules, koffi and the bindings among them) and its heap. A check that kills its thread kills its
// process, as before; a check that hangs hangs the process, whose watchdog is the command's (--timeout).
import { EventEmitter } from 'node:events';
import type { PoolRunnerInitializer, PoolWorker, WorkerRequest } from 'vitest/node';

const NAME = 'mapped-reg-in-process';

class InProcessWorker implements PoolWorker {
  readonly name = NAME;
  /** Messages from the pool to the worker side, and back; each is cloned (as a thread's messages are) and delivered on a later turn. */
  readonly #toWorker = new EventEmitter();
  readonly #toPool = new EventEmitter();
  #started = false;

  // Vitest's PoolWorker interface types these callbacks' argument as `any`
  on(event: string, callback: (arg: any) => void): void {
    this.#toPool.on(event, callback);
  }

  off(event: string, callback: (arg: any) => void): void {
    this.#toPool.off(event, callback);
  }

  send(message: WorkerRequest): void {
    const copy = structuredClone(message);
    setImmediate(() => this.#toWorker.emit('message', copy));
  }

  deserialize(data: unknown): unknown {
    return data;
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const { init, runBaseTests, setupEnvironment } = await import('vitest/worker');
    init({
      post: (response: unknown) => {
        const copy = structuredClone(response);
        setImmediate(() => this.#toPool.emit('message', copy));
      },
      on: (callback: (message: unknown) => void) => this.#toWorker.on('message', callback),
      off: (callback: (message: unknown) => void) => this.#toWorker.off('message', callback),
      teardown: () => this.#toWorker.removeAllListeners('message'),
      runTests: (state, traces) => runBaseTests('run', state, traces),
      collectTests: (state, traces) => runBaseTests('collect', state, traces),
      setup: setupEnvironment,
    });
  }

  async stop(): Promise<void> {
    this.#toWorker.removeAllListeners();
  }
}

/** The pool of `pool` in Vitest's configuration. */
export const inProcessPool: PoolRunnerInitializer = { name: NAME, createPoolWorker: () => new InProcessWorker() };
