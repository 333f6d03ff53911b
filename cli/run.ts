// What `run` and `list` do: discover, decide static verdicts, run the conformance suites of every device (each
// in its own process, through Vitest), and report. The verdicts and checks come from the suites and the model;
// this file only drives, gathers and prints.
import { hostname, release } from 'node:os';
import { type Backend, type Discovery, type DiscoveredDevice, type PlainDevice, type PlainDiscovery, deviceFromPlain, discover, plainDiscovery } from '../bindings/discovery.js';
import { statfs } from '../bindings/libc.js';
import { removeStaleScratch } from '../bindings/scratch.js';
import { cacheable, staticToString, staticVerdict, verdictJson, type VerdictJson } from '../src/index.js';
import type { SuiteOptions } from '../suites/check.js';
import type { CheckResult, DeviceResult, RunResult } from '../results/types.js';
import { onStop, type StopSignal } from './signals.js';
import { Progress } from '../reporters/terminal.js';
import { type DeviceRun, interruptAll, runDevice, runDevices } from './orchestrate.js';
import type { DiscoveryEvent } from '../reporters/events.js';
import { type Selection, deviceOptions, discoveryGroups, isGpuDriver, keeps, mergeDiscoveries, selectDevices, selectionProblem, validSoFar } from './select.js';

export interface RunOptions {
  scratchDir: string;
  sizeMiB: number;
  devices: string[];
  backends: Backend[];
  runs: number;
  minRelativeSpeed: number;
  timeoutS: number;
  /** list: static verdicts only, nothing registered or copied. */
  listOnly: boolean;
  /** Test hooks: a check that must crash its process or hang (MAPPED_REG_FORCE_CRASH / MAPPED_REG_FORCE_HANG = device/check-id or check-id). */
  forceCrash?: string;
  forceHang?: string;
  out: (line: string) => void;
  /** stdout is a terminal: progress is redrawn in place rather than printed a line a check. */
  tty?: boolean;
  /** Raw output for the redrawn progress (default: through `out`, a line at a time). */
  write?: (text: string) => void;
}

/** Thrown for bad input: the command prints the message on one line and exits 2. */
export class UsageError extends Error {}

/** The device's result from its static verdict and what its suites reported. */
function deviceResult(d: DiscoveredDevice, run: DeviceRun | undefined, o: RunOptions, fsType: string): DeviceResult {
  const s = staticVerdict(d.device);
  const staticText = staticToString(s);
  let verdict: DeviceResult['verdict'] =
    s.kind === 'Decided' ? verdictJson(s.verdict) : { kind: 'Inconclusive', reason: 'self-test required, not run', text: 'Self_test_required (not probed)' };
  let verdictCacheable = s.kind === 'Decided' ? cacheable(s.verdict) : false;
  const result: DeviceResult = {
    id: d.id,
    backend: d.backend,
    name: d.name,
    pciBusId: d.pciBusId,
    driver: d.driver,
    integrated: d.integrated,
    ...(d.attributes ? { attributes: d.attributes } : {}),
    staticVerdict: staticText,
    verdict,
    cacheable: verdictCacheable,
    checks: run?.checks ?? [],
    scratch: { dir: o.scratchDir, fsType },
  };
  if (!run) return result;
  const probe = run.checks.find((c) => c.id === 'probe.verdict');
  const data = probe?.data as { verdict?: DeviceResult['verdict']; timing?: DeviceResult['timing']; scratch?: DeviceResult['scratch'] } | undefined;
  if (data?.verdict) {
    verdict = data.verdict;
    verdictCacheable = verdict.kind === 'Usable' || (verdict.kind === 'Refused' && verdict.refusal === 'Wrong_bytes');
  } else if (probe && probe.status !== 'skip') {
    verdict = { kind: 'Inconclusive', reason: `probe.verdict: ${probe.status}${probe.message ? ` (${probe.message})` : ''}`, text: `Inconclusive (probe.verdict ${probe.status})` };
    verdictCacheable = false;
  }
  if (data?.timing) {
    const t = data.timing;
    const link = run.checks.find((c) => c.id === 'timing.link')?.data as { link?: { gbps: number } } | undefined;
    result.timing = { registeredGBps: t.registeredGBps, stagedGBps: t.stagedGBps, ratio: t.ratio, minRelativeSpeed: t.minRelativeSpeed, runs: t.runs, bytes: t.bytes, ...(link?.link ? { linkGBps: link.link.gbps } : {}) };
  }
  if (data?.scratch) result.scratch = data.scratch;
  result.verdict = verdict;
  result.cacheable = verdictCacheable;
  if (run.errors.length) result.errors = run.errors;
  result.processes = run.processes;
  if (run.restarts?.length) result.restarts = run.restarts;
  if (run.incomplete) result.incomplete = true;
  return result;
}

export interface RunOutcome {
  result: RunResult;
  /** Stopped by a signal (cli/signals.ts): what finished is in `result`, marked incomplete; no gate is made of it. */
  interrupted: boolean;
  /** Runs one check of one device again, in a new process of that device (the baseline gate's flake re-run). */
  rerun: (deviceId: string, checkId: string) => Promise<CheckResult | undefined>;
}

/** The discovery of a run could not be made (its process died): one line, status 2, nothing written. */
export class DiscoveryError extends Error {}

export async function run(o: RunOptions, tool: { name: string; version: string }): Promise<RunOutcome> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const selection: Selection = { backends: o.backends, devices: o.devices, ...(o.forceCrash ? { forceCrash: o.forceCrash } : {}), ...(o.forceHang ? { forceHang: o.forceHang } : {}) };
  const base = { scratchDir: o.scratchDir, sizeMiB: o.sizeMiB, runs: o.runs, minRelativeSpeed: o.minRelativeSpeed };
  let interrupted = false;
  // set below: the devices waiting for the GPUs' probes are released by an interrupt too
  let gpusProbed: () => void = () => {};
  const onInterrupt = (signal: StopSignal): void => {
    interrupted = true;
    o.out(`\ninterrupted (${signal}): stopping every device (the driver releases what their processes held)`);
    interruptAll();
    gpusProbed();
  };

  // `list` discovers here. A run leaves the discovery to its first device processes, one a group of backends
  // (cli/select.ts), started at once: this process loads no driver, and a GPU's driver is initialized once, in
  // the process that discovered it and then checks it.
  let found: PlainDiscovery;
  let progress: Progress | undefined;
  const pending: [string, Parameters<Progress['event']>[1]][] = [];
  // The GPUs whose probe is still to come: other devices' processes start once it is empty.
  const probing = new Set<string>();
  const afterProbes = new Promise<void>((resolve) => (gpusProbed = resolve));
  const probed = (device: string): void => {
    if (probing.delete(device) && probing.size === 0) gpusProbed();
  };
  const onEvent = (device: string, e: Parameters<Progress['event']>[1]): void => {
    if (e.type === 'result' && e.id === 'probe.verdict') probed(device);
    if (progress) progress.event(device, e);
    else pending.push([device, e]);
  };
  interface Group {
    backends: Backend[];
    run: Promise<DeviceRun>;
    event?: DiscoveryEvent;
    /** The device its process found and offers to keep (the event's `device`). */
    offer?: PlainDevice;
    answer: (go: boolean) => void;
  }
  let groups: Group[] = [];
  /** The scratch files of the runner processes, if any was killed before it could remove its own. */
  const removeScratchOfTheDead = (): void => {
    for (const dir of [o.scratchDir, '/dev/shm']) {
      try {
        removeStaleScratch(dir);
      } catch {
        // a folder we cannot read holds nothing of ours
      }
    }
  };
  // A GPU offered by its discovering process starts as soon as the selection is known to be valid, which may be
  // before a slower group has reported (validSoFar).
  let startedEarly = false;
  const goEarly = (): void => {
    const so = groups.map((g) => ({ backends: g.backends, ...(g.event ? { discovery: g.event.discovery } : {}) }));
    if (interrupted || !validSoFar(so, selection)) return;
    for (const g of groups) {
      if (g.offer && isGpuDriver(g.offer)) {
        g.answer(true);
        startedEarly = true;
      }
    }
  };
  /** Ends the discovering processes (those started early are killed, their scratch files removed), for an error. */
  const stopAll = async (): Promise<void> => {
    if (startedEarly) interruptAll();
    groups.forEach((g) => g.answer(false));
    await Promise.all(groups.map((g) => g.run));
    if (startedEarly) removeScratchOfTheDead();
    stopListening();
  };
  // SIGINT, SIGTERM and SIGHUP stop the run (cli/signals.ts); a second one while it stops is ignored
  let stopListening: () => void = () => {};
  if (o.listOnly) found = plainDiscovery(discover(o.backends));
  else {
    stopListening = onStop(onInterrupt);
    // what killed processes left (their lock is free: bindings/scratch-lock.ts); a live run's folder is kept
    for (const dir of [o.scratchDir, '/dev/shm']) {
      let stale: string[] = [];
      try {
        stale = removeStaleScratch(dir);
      } catch {
        // a folder we cannot read holds nothing of ours
      }
      for (const name of stale) o.out(`removed ${name}, left in ${dir} by a process that no longer runs`);
    }
    const arrivals = discoveryGroups(o.backends).map((backends) => {
      let arrived: () => void = () => {};
      const arrival = new Promise<void>((resolve) => (arrived = resolve));
      const onDiscovery = (e: DiscoveryEvent, answer: (go: boolean) => void): void => {
        g.event = e;
        const offer = e.discovery.devices.find((d) => d.id === e.device);
        if (offer) g.offer = offer;
        g.answer = answer;
        arrived();
        goEarly();
      };
      const g: Group = { backends, answer: () => {}, run: runDevice({ device: '', discover: { ...selection, backends }, ...base, skip: [] }, { timeoutS: o.timeoutS, onEvent, onDiscovery }) };
      void g.run.then(() => arrived());
      groups.push(g);
      return arrival;
    });
    await Promise.all(arrivals);
    const failed = groups.find((g) => g.event === undefined);
    if (failed || interrupted) {
      await stopAll(); // a GPU that started early is stopped too: the run cannot go on
      if (!interrupted) {
        const r = await failed!.run;
        const tail = r.output.trim().split('\n').slice(-1)[0];
        throw new DiscoveryError(`discovery failed: ${r.errors.join('; ')}${tail ? ` (its last output: ${tail})` : ''}`);
      }
      groups = [];
    }
    found = mergeDiscoveries(groups.flatMap((g) => (g.event ? [g.event.discovery] : [])));
  }
  const tDiscovered = performance.now();
  // Bad input the discovery shows (a driver library named that did not load, an unknown device) is refused
  // before anything runs: the discovering processes are told to stop, and have checked nothing.
  const problem = selectionProblem(found, selection);
  if (problem) {
    await stopAll(); // none started early: validSoFar judges from the same discoveries
    throw new UsageError(problem);
  }
  // Each discovering process offered a device: the GPUs are kept; another is kept only when there is no GPU.
  const keep = keeps(groups.map((g) => g.offer));
  const kept = groups.flatMap((g, i) => (g.offer && keep[i] ? [g.offer.id] : []));
  groups.forEach((g, i) => g.answer(keep[i]!));
  const firstRuns = groups.filter((_, i) => keep[i]).map((g) => g.run);
  const chosen = selectDevices(found, selection);
  const selected = chosen.map(deviceFromPlain);
  const fsType = statfs(o.scratchDir).fsName;

  const inProcesses = groups.flatMap((g) => (g.event ? [`${g.event.discovery.backends.map((b) => b.backend).join('+')} ${g.event.durationMs.toFixed(0)} ms`] : []));
  o.out(`discovery (${(tDiscovered - t0).toFixed(0)} ms${inProcesses.length ? `; in their processes: ${inProcesses.join(', ')}` : ''}):`);
  for (const b of found.backends) {
    const what = b.backend === 'cpu' ? 'the host CPU' : b.library ? `${b.library}, ${b.devices} device(s)` : 'no library';
    o.out(`  ${b.backend}: ${what}${b.note ? ` - ${b.note}` : ''}`);
  }
  for (const d of selected) {
    const attrs = d.attributes ? ` ${Object.entries(d.attributes).map(([k, v]) => `${k}=${v}`).join(' ')}` : '';
    const mem = d.totalMemBytes ? `, ${(d.totalMemBytes / 2 ** 30).toFixed(1)} GiB` : '';
    o.out(`  ${d.id}: ${d.name} [${d.driver.name} ${d.driver.version}${d.pciBusId ? `, ${d.pciBusId}` : ''}${mem}] integrated=${d.integrated ?? `unknown${d.integratedError ? ` (${d.integratedError})` : ''}`}${attrs}`);
  }
  if (!found.gpuDriverFound && !interrupted) o.out('  no GPU driver was found (neither CUDA nor HIP): only the devices above are checked');

  const suiteOptions: SuiteOptions[] = chosen.map((d) => deviceOptions(d, base, selection));
  let runs: DeviceRun[] = [];
  if (!o.listOnly) {
    if (!interrupted) o.out(`\nchecks (each device in its own process, --timeout ${o.timeoutS} s a check):`);
    const write = o.write ?? ((text: string) => text.split('\n').slice(0, -1).forEach((l) => o.out(l)));
    progress = new Progress(write, o.tty ?? false, selected.map((d) => d.id));
    for (const [device, e] of pending.splice(0)) progress.event(device, e);
    // Other GPUs start at once (devices run in parallel); the other devices once every GPU's probe is over.
    const others = interrupted ? [] : suiteOptions.filter((d) => !kept.includes(d.device));
    const gpus = others.filter((d) => isGpuDriver(d.discovered!));
    const rest = others.filter((d) => !gpus.includes(d));
    // every GPU selected is running now (an interrupt already released the others' wait)
    for (const d of chosen) if (isGpuDriver(d)) probing.add(d.id);
    if (probing.size === 0) gpusProbed();
    const gpuRuns = gpus.map((d) => runDevice(d, { timeoutS: o.timeoutS, onEvent }));
    // a GPU run that ended without a probe result (its process died before) frees the others too
    for (const r of [...firstRuns, ...gpuRuns]) void r.then((done) => probed(done.device));
    const restRuns = afterProbes.then(() => (interrupted ? [] : runDevices(rest, { timeoutS: o.timeoutS, onEvent })));
    runs = (await Promise.all([Promise.all(firstRuns), Promise.all(gpuRuns), restRuns])).flat();
    progress.finish();
    stopListening();
    removeScratchOfTheDead();
  }
  const tChecked = performance.now();
  const devices = selected.map((d) => deviceResult(d, runs.find((r) => r.device === d.id), o, fsType));

  const result: RunResult = {
    schemaVersion: 1,
    tool,
    host: { hostname: hostname(), kernel: release(), platform: `${process.platform}-${process.arch}` },
    startedAt,
    finishedAt: new Date().toISOString(),
    options: { scratchDir: o.scratchDir, sizeMiB: o.sizeMiB, devices: o.devices, backends: o.backends, runs: o.runs, minRelativeSpeed: o.minRelativeSpeed, timeoutS: o.timeoutS, list: o.listOnly },
    backends: found.backends,
    gpuDriverFound: found.gpuDriverFound,
    ...(interrupted ? { incomplete: true } : {}),
    phasesMs: { discovery: tDiscovered - t0, checks: tChecked - tDiscovered, reports: 0 },
    devices,
  };
  o.out(`\n${devices.length} device(s) in ${((performance.now() - t0) / 1000).toFixed(2)} s`);
  const rerun = async (deviceId: string, checkId: string): Promise<CheckResult | undefined> => {
    const options = suiteOptions.find((s) => s.device === deviceId);
    const device = devices.find((d) => d.id === deviceId);
    if (!options || !device) return undefined;
    const others = device.checks.map((c) => c.id).filter((id) => id !== checkId);
    const again = await runDevice({ ...options, skip: others }, { timeoutS: o.timeoutS });
    return again.checks.find((c) => c.id === checkId);
  };
  return { result, interrupted, rerun };
}
