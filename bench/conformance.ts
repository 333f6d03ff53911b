// The conformance run (`conformance`; docs/bench.md): the command run as a user runs it, timed from spawn to
// exit, its process tree's memory sampled meanwhile (./proc.ts), and its phases read back from its JSON.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CheckResult, DeviceResult, RunResult } from '../results/types.js';
import { PROBE_VERDICT, probeData } from '../suites/checks/data.js';
import { STATIC_VERDICT } from '../suites/checks/data.js';
import { TIMING_LINK, TIMING_MARGIN } from '../suites/checks/data.js';
import type { Options } from './bench-options.js';
import { root } from './package.js';
import { TreeSampler, runnerDevices } from './proc.js';
import { say } from './progress.js';
import type { Conformance, ConformanceDevice } from './result.js';
import { TARGETS } from './targets.js';

/** The command's exit, its time from spawn to exit, the end of its output and its process tree's memory. */
interface Spawned {
  code: number | null;
  signal: NodeJS.Signals | null;
  wallMs: number;
  output: string;
  memory: ReturnType<TreeSampler['stop']>;
}

/** Runs the command with `args` (and `extraEnv`), its tree's memory sampled, and waits for its exit. */
async function runCommand(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Spawned> {
  let output = '';
  const t0 = performance.now();
  // The bench measures, it does not report: no Markdown summary appended to a CI job's page.
  const env = { ...process.env, ...extraEnv };
  delete env.GITHUB_STEP_SUMMARY;
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const sampler = child.pid !== undefined ? new TreeSampler(child.pid) : undefined;
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => {
    child.on('error', (e) => {
      output += `\n${e.message}`;
      done([null, null]);
    });
    child.on('exit', (c, s) => done([c, s]));
  });
  const wallMs = performance.now() - t0;
  return { code, signal, wallMs, output, memory: sampler?.stop() ?? { intervalMs: 0, walks: 0, processes: [] } };
}

/** The memory of the run's processes, each runner's peak and the whole tree's against the target for this size. */
function memoryAgainstTarget(mem: Spawned['memory'], sizeMiB: number): Conformance['memory'] {
  const target = TARGETS.peakMiB(sizeMiB);
  const runnerTarget = TARGETS.runnerPeakMiB(sizeMiB);
  return {
    intervalMs: mem.intervalMs,
    walks: mem.walks,
    ...(mem.tree ? { run: { ...mem.tree, targetMiB: target, withinTarget: mem.tree.pssKiB / 1024 <= target } } : {}),
    ...(mem.processes[0]?.role === 'command' ? { command: mem.processes[0] } : {}),
    runners: mem.processes.filter((p) => p.role === 'device-runner').map((p) => ({ ...p, targetMiB: runnerTarget, withinTarget: p.peakKiB / 1024 <= runnerTarget })),
    others: mem.processes.filter((p) => p.role === 'other'),
  };
}

const totalMs = (checks: readonly CheckResult[]): number => checks.reduce((a, c) => a + (c.durationMs ?? 0), 0);

/** One device's phases and figures, from its result in the command's JSON. */
export function deviceFigures(dev: DeviceResult): ConformanceDevice {
  const checks = dev.checks ?? [];
  const ms = (id: string): number | undefined => checks.find((c) => c.id === id)?.durationMs;
  const hazards = checks.filter((c) => c.id.startsWith('hazard.'));
  const out: ConformanceDevice = {
    id: dev.id,
    ...(dev.verdict?.text ?? dev.verdict?.kind ? { verdict: dev.verdict.text ?? dev.verdict.kind } : {}),
    checksMs: totalMs(checks),
    hazardsMs: totalMs(hazards),
    hazardChecks: hazards.length,
    timingMs: { total: totalMs(checks.filter((c) => c.id.startsWith('timing.'))) },
    ...(dev.processes !== undefined ? { processes: dev.processes } : {}),
  };
  const st = ms(STATIC_VERDICT);
  if (st !== undefined) out.staticMs = st;
  const probeMs = ms(PROBE_VERDICT);
  if (probeMs !== undefined) out.probeCheckMs = probeMs;
  const phases = probeData(checks)?.phasesMs;
  if (phases?.scratchFile !== undefined) out.scratchFileMs = phases.scratchFile;
  if (phases?.probe !== undefined) out.probeMs = phases.probe;
  if (phases?.registration !== undefined) out.registrationMs = phases.registration;
  if (dev.scratch?.discoveryWaitMs !== undefined) out.discoveryWaitMs = dev.scratch.discoveryWaitMs;
  if (dev.timing?.registeredGBps !== undefined) out.registeredGBps = dev.timing.registeredGBps;
  if (dev.timing?.stagedGBps !== undefined) out.stagedGBps = dev.timing.stagedGBps;
  const margin = ms(TIMING_MARGIN);
  const link = ms(TIMING_LINK);
  if (margin !== undefined) out.timingMs.margin = margin;
  if (link !== undefined) out.timingMs.link = link;
  return out;
}

/**
 * Each process named by the devices it checked (a discovering runner's become known from the results); a runner of
 * several devices is listed under each of them.
 */
function nameProcesses(memory: Conformance['memory'], ids: string[]): void {
  for (const p of [...memory.others, ...(memory.run?.processes ?? [])]) {
    const devices = runnerDevices(p.device, ids);
    if (devices.length) p.device = devices.join('+');
  }
  memory.runners = memory.runners.flatMap((p) => {
    const devices = runnerDevices(p.device, ids);
    return devices.length ? devices.map((device) => ({ ...p, device })) : [p];
  });
}

/** Where a conformance run comes from: another build of the command (--against), extra arguments and environment. */
export interface RunFrom {
  /** The command's file: this package's dist/cli/main.js unless given. */
  main?: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** What the progress line calls it. */
  label?: string;
}

export async function conformanceRun(o: Options, devices: string[], from: RunFrom = {}): Promise<Conformance> {
  const dir = mkdtempSync(join(tmpdir(), 'mapped-reg-bench-run-'));
  const json = join(dir, 'results.json');
  const main = from.main ?? join(root, 'dist', 'cli', 'main.js');
  const args = [main, '--json', json, '--size', String(o.sizeMiB), '--scratch-dir', o.scratchDir, '--runs', String(o.runs), ...devices.flatMap((id) => ['--device', id]), ...(from.args ?? [])];
  const shown = ['node', ...args.map((a) => (a === main && !from.main ? 'dist/cli/main.js' : a === json ? '<tmp>/results.json' : a))];
  say(`${from.label ?? 'conformance run'}: ${shown.join(' ')}`);
  const { code, signal, wallMs, output, memory } = await runCommand(args, from.env);
  const result: Conformance = { command: shown, exitCode: code, ...(signal ? { signal } : {}), wallMs, devices: [], memory: memoryAgainstTarget(memory, o.sizeMiB) };
  try {
    const r = JSON.parse(readFileSync(json, 'utf8')) as Pick<RunResult, 'phasesMs' | 'devices'>;
    if (r.phasesMs) {
      result.phasesMs = r.phasesMs;
      result.outsidePhasesMs = wallMs - r.phasesMs.discovery - r.phasesMs.checks - r.phasesMs.reports;
    }
    result.devices = r.devices.map(deviceFigures);
    nameProcesses(result.memory, r.devices.map((d) => d.id));
  } catch (e) {
    result.error = `no results from the conformance run (exit ${code ?? signal}): ${(e as Error).message}`;
    result.outputTail = output.slice(-1500);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}
