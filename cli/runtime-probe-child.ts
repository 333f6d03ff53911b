// The process that probes one runtime (cli/runtime-discovery.ts starts one per runtime: a process loads one runtime
// only). Arguments: the backend, then the library's path ('' for the system's). Prints the probe as one JSON line.
import { probeRuntime } from '../bindings/runtime-probe.js';
import type { RuntimeBackend } from '../results/runtime.js';

const [backend, library] = process.argv.slice(2);
process.stdout.write(`${JSON.stringify(probeRuntime(backend as RuntimeBackend, library ? library : undefined))}\n`);
