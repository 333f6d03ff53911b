// A run's result from what was found and what each device's processes reported: the device's verdict is its
// static verdict, or the one its probe reported; whether it is cacheable is the model's word (src/verdict.ts).
import { hostname, release } from 'node:os';
import type { DiscoveredDevice, PlainDiscovery } from '../bindings/discovery.js';
import { SCHEMA_VERSION } from '../results/read.js';
import type { DeviceResult, RunResult, VerdictJson } from '../results/types.js';
import { Inconclusive, type Verdict, cacheable, staticVerdict, staticToString, verdictFromJson, verdictJson } from '../src/index.js';
import { PROBE_VERDICT, probeData } from '../suites/checks/data.js';
import { linkOf } from '../suites/checks/data.js';
import type { DeviceRun } from './orchestrate.js';

/** A verdict as the results carry it, with the model's cacheable; `text` replaces the verdict's own text. */
function judged(v: Verdict, text?: string): { verdict: VerdictJson; cacheable: boolean } {
  return { verdict: text === undefined ? verdictJson(v) : { ...verdictJson(v), text }, cacheable: cacheable(v) };
}

/**
 * The device's verdict: the one its probe reported, else what its static verdict and its probe's status say. Only
 * probe.verdict decides it (with the static verdict, which the command decides itself): a device that needs the
 * self-test and whose probe.verdict was skipped by the selection is Inconclusive, "not probed", with the reason.
 */
function verdictOf(d: DiscoveredDevice, run: DeviceRun | undefined): { verdict: VerdictJson; cacheable: boolean } {
  const s = staticVerdict(d.device);
  const probe = run?.checks.find((c) => c.id === PROBE_VERDICT);
  const reported = run && probeData(run.checks)?.verdict;
  // the probe's own verdict, as it wrote it
  if (reported) return { verdict: reported, cacheable: cacheable(verdictFromJson(reported)) };
  // a probe that ran and reported no verdict (it crashed, timed out, the host failed it)
  if (probe && probe.status !== 'skip') {
    return judged(Inconclusive(`probe.verdict: ${probe.status}${probe.message ? ` (${probe.message})` : ''}`), `Inconclusive (probe.verdict ${probe.status})`);
  }
  if (s.kind === 'Decided') return judged(s.verdict);
  // the self-test left out by the user's selection (--check, --skip, a skips file): never Usable, and it says why
  if (probe?.status === 'skip' && probe.message) return judged(Inconclusive(`not probed: probe.verdict ${probe.message}`), `Inconclusive (not probed: probe.verdict ${probe.message})`);
  return judged(Inconclusive('self-test required, not run'), 'Self_test_required (not probed)');
}

/** One device's result: what was found of it, its verdict, and what its processes reported. */
export function deviceResult(d: DiscoveredDevice, run: DeviceRun | undefined, scratch: DeviceResult['scratch']): DeviceResult {
  const result: DeviceResult = {
    id: d.id,
    backend: d.backend,
    name: d.name,
    pciBusId: d.pciBusId,
    driver: d.driver,
    integrated: d.integrated,
    ...(d.attributes ? { attributes: d.attributes } : {}),
    staticVerdict: staticToString(staticVerdict(d.device)),
    ...verdictOf(d, run),
    checks: run?.checks ?? [],
    scratch,
  };
  if (!run) return result;
  const data = probeData(run.checks);
  if (data?.timing) {
    const t = data.timing;
    const link = linkOf(run.checks);
    const some = <K extends string>(key: K, x: number | null | undefined): Partial<Record<K, number>> => (x === null || x === undefined ? {} : ({ [key]: x } as Record<K, number>));
    result.timing = {
      registeredGBps: t.registeredGBps,
      stagedGBps: t.stagedGBps,
      ratio: t.ratio,
      minRelativeSpeed: t.minRelativeSpeed,
      runs: t.runs,
      bytes: t.bytes,
      ...(link ? { linkGBps: link.gbps } : {}),
      ...some('pageLockedGBps', t.pageLockedGBps),
      ...some('pageLockedRatio', t.pageLockedRatio),
      ...some('hostCopyGBps', t.hostCopyGBps),
      ...(t.samples ? { samples: t.samples } : {}),
      ...(t.extra ? { extraRounds: t.extra } : {}),
      ...(t.clock ? { clock: t.clock.clock, ...(t.clock.clock === 'host' ? { clockNote: t.clock.why } : {}) } : {}),
    };
    if (link) {
      result.link = { gts: link.gts, width: link.width, gbps: link.gbps, maxGts: link.maxGts, maxWidth: link.maxWidth, downtrained: link.downtrained, ...(link.downtrainedText ? { text: link.downtrainedText } : {}) };
    }
  }
  if (data?.load) result.load = data.load;
  if (data?.numa) result.numa = data.numa;
  if (data?.scratch) result.scratch = data.scratch;
  if (run.errors.length) result.errors = run.errors;
  result.processes = run.processes;
  if (run.restarts?.length) result.restarts = run.restarts;
  if (run.incomplete) result.incomplete = true;
  return result;
}

/** The run's result: what was found, each device's result, the phases' times; `incomplete` when a signal stopped it. */
export function runResult(r: {
  tool: RunResult['tool'];
  startedAt: string;
  options: RunResult['options'];
  found: PlainDiscovery;
  devices: DeviceResult[];
  phasesMs: { discovery: number; checks: number };
  incomplete: boolean;
}): RunResult {
  return {
    schemaVersion: SCHEMA_VERSION,
    tool: r.tool,
    host: { hostname: hostname(), kernel: release(), platform: `${process.platform}-${process.arch}` },
    startedAt: r.startedAt,
    finishedAt: new Date().toISOString(),
    options: r.options,
    backends: r.found.backends,
    gpuDriverFound: r.found.gpuDriverFound,
    ...(r.incomplete ? { incomplete: true } : {}),
    phasesMs: { ...r.phasesMs, reports: 0 },
    devices: r.devices,
  };
}
