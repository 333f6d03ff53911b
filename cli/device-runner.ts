// The conformance run of one device, or of several that never register, in a process of its own: the suites
// (dist/suites/*.suite.js) through Vitest's Node API (devices that never register: without Vitest,
// suites/without-vitest.ts), with the options in MAPPED_REG_SUITE_OPTIONS. What it reads and writes (its events on
// file descriptor 3, the command's answer) is suites/protocol.ts's. The command (cli/orchestrate.ts) starts these,
// and another for the checks left when one dies.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestSpecification, Vitest } from 'vitest/node';
import { type Backend, type PlainDiscovery, discover, isGpuDriver, plainDiscovery } from '../bindings/discovery.js';
import { discoverOnThread } from './discovery-thread.js';
import { blockForever, exitNow, getppid, readProtNonePage, setParentDeathSignal } from '../bindings/libc.js';
import { EventsReporter } from '../reporters/events.js';
import { inProcessPool } from './in-process-pool.js';
import { DEVICE_OPTIONS_ON_STDIN, OPTIONS_ON_STDIN, type PlannedCheck, RUNNER_OPTIONS_ENV, decodeRunnerOptions, readAnswer, writeEvent } from '../suites/protocol.js';
import { pickDevice, spareLikelyRegisters } from './select-devices.js';
import { discoveryHookFor } from '../suites/hooks.js';

/** The suites run in this order: the probe's report is then ready for timing, and the context reset is last. */
export const SUITE_ORDER = ['static', 'probe', 'timing', 'hazards'];

/** Every check of a device's run (suites/plan.ts), for the command before the first check. */
const readPlan = async (): Promise<PlannedCheck[]> => (await import('../suites/plan.js')).checkPlan();

/** A device whose driver registers host memory (CUDA, HIP): its checks run in Vitest; the others' without (suites/without-vitest.ts). */
const registers = (device: string): boolean => isGpuDriver({ backend: device.split(':')[0] as Backend });

/**
 * The next line the command writes on our stdin ('' once it closes it): a spare runner's options
 * (cli/spare-runner.ts), then a discovering runner's answer. Once the answer is read, stdin is let go.
 */
const commandSays: () => Promise<string> = (() => {
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let text = '';
  let closed = false;
  let listening = false;
  const flush = (): void => {
    while (waiting.length > 0 && (lines.length > 0 || closed)) waiting.shift()!(lines.shift() ?? '');
  };
  const listen = (): void => {
    listening = true;
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk: string) => {
      text += chunk;
      for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n')) {
        lines.push(text.slice(0, i).trim());
        text = text.slice(i + 1);
      }
      flush();
    });
    const end = (): void => {
      closed = true;
      flush();
    };
    process.stdin.on('end', end);
    process.stdin.on('error', end);
  };
  return () => {
    if (!listening) listen();
    return new Promise<string>((resolve) => {
      waiting.push(resolve);
      flush();
    });
  };
})();

// Vitest's worker side (cli/in-process-pool.ts, in this thread) replaces process.exit with one that throws
// ("process.exit unexpectedly called"), and does not put it back: the runner's own end keeps the real one, else its
// last exit is an uncaught error that takes Node some 75 ms to print, and an exit status of 1.
const exit: (code: number) => never = process.exit.bind(process);

/**
 * A discovering process that checks nothing ends without its drivers' teardown: its 'exit' handlers run, then
 * _exit. The ICDs it loaded (NVIDIA's OpenCL ICD starts the CUDA driver) would otherwise tear down in its C
 * library's exit, with its memory still there while a GPU's probe waits for it to be gone (SuiteOptions.waitFor).
 * It registered nothing and wrote its events synchronously: nothing is lost.
 */
function endUnused(): never {
  process.on('exit', () => exitNow(0)); // the last of the handlers: the others ran before it
  return exit(0);
}

const here = dirname(fileURLToPath(import.meta.url)); // dist/cli
const dist = resolve(here, '..');

/**
 * A Vitest run of the suites, made before this process knows its devices (given with `provide` before it starts):
 * Vitest loaded (both sides), the plan read and Vitest's instance created (its configuration, Vite's server), as soon as the
 * process starts: a discovering runner does it while its discovery runs on a thread of its own and while the
 * command decides, so that after the command's answer only the run itself is left (some 0.1 s of CPU on 2 cores).
 */
async function readyRun(planned: Promise<PlannedCheck[]>): Promise<Vitest> {
  // vitest/worker: the side of Vitest that runs the test files, which cli/in-process-pool.ts starts in this thread
  const [{ BaseSequencer, createVitest }, plan] = await Promise.all([import('vitest/node'), planned, import('vitest/worker')]);
  class SuiteOrder extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const rank = (f: TestSpecification): number => SUITE_ORDER.findIndex((s) => f.moduleId.endsWith(`/${s}.suite.js`));
      return [...files].sort((a, b) => rank(a) - rank(b));
    }
  }
  // what Vitest's startVitest sets before it makes its instance (the checks' process and their children saw it so)
  process.env.TEST = 'true';
  process.env.VITEST = 'true';
  process.env.NODE_ENV ??= 'test';
  return createVitest(
    'test',
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
}

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
// the plan is read, and Vitest made ready (below), while discovery runs and the command decides; a spare runner
// reads the plan while it waits for its options
const planned = readPlan();
planned.catch(() => {}); // awaited below, unless the process ends first
// a device spare (cli/spare-runner.ts startDeviceSpares): a GPU's runner, whose options come once its driver's
// discovery has found the GPU; Vitest is made ready meanwhile (loading it keeps this thread busy, which delays
// nothing here: there is nothing to do before the options). So does the spare runner where it will likely be a GPU
// driver's discovering process: its discovery (the driver's start, the offered GPU's context) runs on a thread of
// its own, and Vitest's load, from the options on, was the longer of the two (on the H200, the checks started
// some 250 ms after the discovery was in).
const deviceSpare = raw === DEVICE_OPTIONS_ON_STDIN;
const early = deviceSpare || (raw === OPTIONS_ON_STDIN && spareLikelyRegisters()) ? readyRun(planned) : undefined;
early?.catch(() => {}); // awaited below, unless the process ends first
// a spare runner (cli/spare-runner.ts): its options come on stdin, once the command knows them (none: it is not used)
const options = raw === OPTIONS_ON_STDIN || deviceSpare ? await commandSays() : raw;
if (!options) exit(0);
if (deviceSpare) process.stdin.destroy();
const spec = decodeRunnerOptions(options);
let devices = spec.devices;
// a runner that can only get devices that never register (the OpenCL, Vulkan and CPU group's) never loads Vitest
const mayRegister = spec.discover ? spec.discover.backends.some((b) => isGpuDriver({ backend: b })) : devices.some((d) => registers(d.device));
const ready = mayRegister ? (early ?? readyRun(planned)) : undefined;
ready?.catch(() => {}); // awaited below, unless the process ends first
/** What this runner's own discovery found (a discovering runner): the driver libraries it loaded. */
let found: PlainDiscovery | undefined;
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
  // finds nothing to offer exits at once, its load cut short. A runner that loads no Vitest discovers on this
  // thread: a thread of its own would only add its start (a Node.js environment, the bindings loaded again).
  const t0 = performance.now();
  // the thread also keeps the offered GPU's context, while this thread finishes loading Vitest
  found = mayRegister ? (await discoverOnThread(selection.backends, selection)).found : plainDiscovery(discover(selection.backends));
  const offer = pickDevice(found, selection);
  writeEvent({ type: 'discovery', durationMs: performance.now() - t0, discovery: found, device: offer?.id ?? null });
  if (!offer) endUnused();
  devices = readAnswer(await commandSays());
  process.stdin.destroy();
  if (devices.length === 0) endUnused();
}
// the checks of each device, for the command, before the first one starts
const plan = await planned;
writeEvent({ type: 'plan', checks: plan });
// test hook: a runner stuck before any check (MAPPED_REG_FORCE_HANG=<device>/@runner)
if (devices.some((d) => d.forceHang === '@runner')) blockForever();
// test hook: a runner that dies before any check, every time (MAPPED_REG_FORCE_CRASH=<device>/@runner)
if (devices.some((d) => d.forceCrash === '@runner')) process.stdout.write(`reading a PROT_NONE page returned ${readProtNonePage()}\n`);

// Devices that never register: their checks without Vitest, the same checks, events and results as in it
if (!devices.some((d) => registers(d.device))) {
  const [{ runWithoutVitest }, { deviceContext }] = await Promise.all([import('../suites/without-vitest.js'), import('../suites/context.js')]);
  await runWithoutVitest(devices, SUITE_ORDER, deviceContext);
  exit(0);
}

// The probe's scratch file (256 MiB of random bytes by default) is written on a thread of its own while Vitest
// starts here (some 0.3 s each on the H200): the probe maps it when it comes.
// The GPU's management library (NVML, AMD SMI), which the probe looks at the machine through, is loaded here too:
// loading it is then never part of a check's --timeout.
// The truncation hazard's child starts once the probe is over, where its check will run here, and waits for its
// arguments: its start (Node.js, the driver's init, inside the timing lock) runs while the other hazards do, its
// check last (suites/hazards/truncate-early.ts, suites/hazards/index.ts).
const { startProbeScratch, whenProbeDone } = await import('../suites/context.js');
const { startTruncateChildFor } = await import('../suites/hazards/truncate-early.js');
const { PROBE_VERDICT } = await import('../suites/checks/data.js');
const { loadGpuUsersLibrary } = await import('../bindings/gpu-users.js');
for (const d of devices) {
  const backend = d.device.split(':')[0] as Backend;
  // the probe runs here: neither reported by an earlier process (skip) nor left out by --check / --skip (deselected)
  const probeHere = !d.skip.includes(PROBE_VERDICT) && d.deselected?.[PROBE_VERDICT] === undefined;
  if (isGpuDriver({ backend }) && probeHere) {
    startProbeScratch(d);
    loadGpuUsersLibrary(backend);
  }
  // once the probe is over: beside the probe's region and page-locked window it would add its own memory to the run's fullest moment
  const library = found?.backends.find((b) => b.backend === backend)?.library;
  if (isGpuDriver({ backend })) whenProbeDone(d.device, probeHere, () => startTruncateChildFor(d, library));
}

// the devices, known now, given to the suites (suites/define-checks.ts inject), and the run
const vitest = await (ready ?? readyRun(planned));
vitest.provide('mappedReg', devices);
try {
  await vitest.start([]);
} finally {
  await vitest.close();
}
exit(0);
