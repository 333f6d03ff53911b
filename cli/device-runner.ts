// The conformance run of one device, or of several that never register, in a process of its own: the suites
// (dist/suites/*.suite.js) through Vitest's Node API, with the options in MAPPED_REG_SUITE_OPTIONS. What it reads
// and writes (its events on file descriptor 3, the command's answer) is suites/protocol.ts's. The command
// (cli/orchestrate.ts) starts these, and another for the checks left when one dies.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestSpecification } from 'vitest/node';
import { type Backend, isGpuDriver } from '../bindings/discovery.js';
import { discoverOnThread } from './discovery-thread.js';
import { blockForever, getppid, readProtNonePage, setParentDeathSignal } from '../bindings/libc.js';
import { EventsReporter } from '../reporters/events.js';
import { inProcessPool } from './in-process-pool.js';
import { RUNNER_OPTIONS_ENV, decodeRunnerOptions, readAnswer, writeEvent } from '../suites/protocol.js';
import { pickDevice } from './select-devices.js';
import { discoveryHookFor } from '../suites/hooks.js';

/** The suites run in this order: the probe's report is then ready for timing, and the context reset is last. */
export const SUITE_ORDER = ['static', 'probe', 'timing', 'hazards'];

// Vitest is imported as soon as the process starts: a discovering runner loads it while its discovery runs on a
// thread of its own and while the command decides.
const loadVitest = (): Promise<typeof import('vitest/node')> => import('vitest/node');

/** The first line the command writes on our stdin ('' when it closes it first). */
function commandSays(): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const done = (): void => {
      process.stdin.destroy();
      resolve(text.split('\n')[0]!.trim());
    };
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n')) done();
    });
    process.stdin.on('end', done);
    process.stdin.on('error', done);
  });
}

// Vitest's worker side (cli/in-process-pool.ts, in this thread) replaces process.exit with one that throws
// ("process.exit unexpectedly called"), and does not put it back: the runner's own end keeps the real one, else its
// last exit is an uncaught error that takes Node some 75 ms to print, and an exit status of 1.
const exit: (code: number) => never = process.exit.bind(process);

const here = dirname(fileURLToPath(import.meta.url)); // dist/cli
const dist = resolve(here, '..');
const raw = process.env[RUNNER_OPTIONS_ENV];
if (!raw) {
  process.stderr.write(`device-runner: ${RUNNER_OPTIONS_ENV} is not set (this process is started by mapped-reg-conformance)\n`);
  process.exit(2);
}
// This process ends with the command: the kernel sends SIGKILL when the command dies, even to a check stuck in a
// native call or a busy loop (no event loop needed). If the command died before this line, the parent is no
// longer the one that started us: end now.
setParentDeathSignal(9);
const parent = Number(process.env.MAPPED_REG_PARENT_PID);
if (parent > 0 && getppid() !== parent) process.exit(3);
const spec = decodeRunnerOptions(raw);
let devices = spec.devices;
/** What this runner's own discovery found (a discovering runner): the driver libraries it loaded. */
let found: Awaited<ReturnType<typeof discoverOnThread>> | undefined;
const vitestModule = loadVitest();
vitestModule.catch(() => {}); // awaited below, unless the process ends first
if (spec.discover) {
  // A discovering runner: it discovers its group of backends for the command (which loads no driver itself),
  // offers a device, and waits for the command's answer (once every group's discovery is in and the selection is
  // valid): the devices it checks, or none. The suites' own lookup of a CUDA or HIP device then finds the driver
  // already initialized in this process.
  const selection = spec.discover;
  // test hook: a driver that never returns while the process discovers (MAPPED_REG_FORCE_HANG=@discovery, or
  // @discovery:<backend> for the process of that backend's group alone)
  if (discoveryHookFor(selection.forceHang, selection.backends)) blockForever();
  // test hook: a driver that kills the process while it discovers (MAPPED_REG_FORCE_CRASH=@discovery[:<backend>])
  if (discoveryHookFor(selection.forceCrash, selection.backends)) {
    process.stdout.write(`reading a PROT_NONE page returned ${readProtNonePage()}\n`);
  }
  // Vitest loads on this thread while the driver starts on another (cli/discovery-thread.ts): a process that
  // finds nothing to offer exits at once, its load cut short
  const t0 = performance.now();
  found = await discoverOnThread(selection.backends);
  const offer = pickDevice(found, selection);
  writeEvent({ type: 'discovery', durationMs: performance.now() - t0, discovery: found, device: offer?.id ?? null });
  if (!offer) process.exit(0);
  devices = readAnswer(await commandSays());
  if (devices.length === 0) process.exit(0);
}
// the checks of each device, for the command, before the first one starts
const plan = await (await import('../suites/plan.js')).checkPlan();
writeEvent({ type: 'plan', checks: plan });
// test hook: a runner stuck before any check (MAPPED_REG_FORCE_HANG=<device>/@runner)
if (devices.some((d) => d.forceHang === '@runner')) blockForever();
// test hook: a runner that dies before any check, every time (MAPPED_REG_FORCE_CRASH=<device>/@runner)
if (devices.some((d) => d.forceCrash === '@runner')) process.stdout.write(`reading a PROT_NONE page returned ${readProtNonePage()}\n`);

// The probe's scratch file (256 MiB of random bytes by default) is written on a thread of its own while Vitest
// starts here (some 0.3 s each on the H200): the probe maps it when it comes.
// The GPU's management library (NVML, AMD SMI), which the probe looks at the machine through, is loaded here too:
// loading it is then never part of a check's --timeout.
// The truncation hazard's child starts now too, where its check will run here, and waits for its arguments: its start
// (Node.js, the driver's init, inside the timing lock) runs while the probe does (suites/hazards/truncate-early.ts).
const { startProbeScratch } = await import('../suites/context.js');
const { startTruncateChildFor } = await import('../suites/hazards/truncate-early.js');
const { PROBE_VERDICT } = await import('../suites/checks/data.js');
const { loadGpuUsersLibrary } = await import('../bindings/gpu-users.js');
for (const d of devices) {
  const backend = d.device.split(':')[0] as Backend;
  if (isGpuDriver({ backend }) && !d.skip.includes(PROBE_VERDICT)) {
    startProbeScratch(d);
    loadGpuUsersLibrary(backend);
  }
  if (isGpuDriver({ backend })) startTruncateChildFor(d, found?.backends.find((b) => b.backend === backend)?.library);
}

const { BaseSequencer, startVitest } = await vitestModule;

class SuiteOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification): number => SUITE_ORDER.findIndex((s) => f.moduleId.endsWith(`/${s}.suite.js`));
    return [...files].sort((a, b) => rank(a) - rank(b));
  }
}

const vitest = await startVitest(
  'test',
  [],
  {
    root: dist,
    config: false,
    dir: join(dist, 'suites'),
    include: ['**/*.suite.js'],
    // the package may live under node_modules (npx): nothing of ours is excluded
    exclude: [],
    watch: false,
    // in this process's own thread (cli/in-process-pool.ts): a check that crashes takes this process down with
    // its signal, which the command sees; checks share the device and the probe's report (no isolation between
    // suite files)
    pool: inProcessPool,
    maxWorkers: 1,
    fileParallelism: false,
    isolate: false,
    // no results cache (Vitest writes it under Vite's cacheDir, which must never be a predictable shared path)
    cache: false,
    // no Vitest timeout: the command's watchdog (--timeout) kills a check that hangs, even in a native call
    testTimeout: 0,
    hookTimeout: 0,
    provide: { mappedReg: devices },
    reporters: [new EventsReporter(plan)],
    sequence: { sequencer: SuiteOrder },
    // Our compiled modules are imported by Node itself, as when the package is installed under node_modules (which
    // Vitest externalizes): only the suite files go through Vite. Transformed, they cost a runner some 75 MiB and
    // its start some 0.5 s on 2 cores.
    server: { deps: { external: [new RegExp(`^${dist.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/`)] } },
  },
  // Vite's cacheDir stays its default, inside the package (dist/node_modules/.vite): with `cache: false` nothing is
  // written there, and nothing of a run goes to a predictable path in a shared folder such as TMPDIR
  { logLevel: 'error', clearScreen: false },
);
await vitest.close();
exit(0);
