// The conformance run (`conformance`; docs/bench.md): the command run as a user runs it, timed from spawn to
// exit, its process tree's memory sampled meanwhile (./proc.ts), and its phases read back from its JSON.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Options } from './bench-options.js';
import { root } from './package.js';
import { TreeSampler, runnerDevices } from './proc.js';
import { say } from './progress.js';
import type { Conformance, ConformanceDevice } from './result.js';
import { TARGETS } from './targets.js';

interface CheckJson {
  id: string;
  status: string;
  durationMs: number;
  data?: { phasesMs?: { scratchFile?: number; registration?: number; probe?: number } };
}

export async function conformanceRun(o: Options, devices: string[]): Promise<Conformance> {
  const dir = mkdtempSync(join(tmpdir(), 'mapped-reg-bench-run-'));
  const json = join(dir, 'results.json');
  const main = join(root, 'dist', 'cli', 'main.js');
  const args = [main, '--json', json, '--size', String(o.sizeMiB), '--scratch-dir', o.scratchDir, '--runs', String(o.runs), ...devices.flatMap((id) => ['--device', id])];
  const shown = ['node', ...args.map((a) => (a === main ? 'dist/cli/main.js' : a === json ? '<tmp>/results.json' : a))];
  say(`conformance run: ${shown.join(' ')}`);
  let output = '';
  const t0 = performance.now();
  // The bench measures, it does not report: no Markdown summary appended to a CI job's page.
  const env = { ...process.env };
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
  const mem = sampler?.stop() ?? { intervalMs: 0, walks: 0, processes: [] };
  const target = TARGETS.peakMiB(o.sizeMiB);
  const result: Conformance = {
    command: shown,
    exitCode: code,
    ...(signal ? { signal } : {}),
    wallMs,
    devices: [],
    memory: {
      intervalMs: mem.intervalMs,
      walks: mem.walks,
      ...('tree' in mem && mem.tree ? { run: { ...mem.tree, targetMiB: target, withinTarget: mem.tree.pssKiB / 1024 <= target } } : {}),
      ...(mem.processes[0]?.role === 'command' ? { command: mem.processes[0] } : {}),
      runners: mem.processes.filter((p) => p.role === 'device-runner').map((p) => ({ ...p, targetMiB: target, withinTarget: p.peakKiB / 1024 <= target })),
      others: mem.processes.filter((p) => p.role === 'other'),
    },
  };
  try {
    const r = JSON.parse(readFileSync(json, 'utf8')) as { phasesMs?: Conformance['phasesMs']; devices: { id: string; verdict?: { text?: string; kind?: string }; checks: CheckJson[]; processes?: number; timing?: { registeredGBps?: number; stagedGBps?: number } }[] };
    if (r.phasesMs) {
      result.phasesMs = r.phasesMs;
      result.outsidePhasesMs = wallMs - r.phasesMs.discovery - r.phasesMs.checks - r.phasesMs.reports;
    }
    result.devices = r.devices.map((dev): ConformanceDevice => {
      const checks = dev.checks ?? [];
      const ms = (id: string): number | undefined => checks.find((c) => c.id === id)?.durationMs;
      const probe = checks.find((c) => c.id === 'probe.verdict');
      const hazards = checks.filter((c) => c.id.startsWith('hazard.'));
      const timing = checks.filter((c) => c.id.startsWith('timing.'));
      const out: ConformanceDevice = {
        id: dev.id,
        ...(dev.verdict?.text ?? dev.verdict?.kind ? { verdict: dev.verdict.text ?? dev.verdict.kind } : {}),
        checksMs: checks.reduce((a, c) => a + (c.durationMs ?? 0), 0),
        hazardsMs: hazards.reduce((a, c) => a + (c.durationMs ?? 0), 0),
        hazardChecks: hazards.length,
        timingMs: { total: timing.reduce((a, c) => a + (c.durationMs ?? 0), 0) },
        ...(dev.processes !== undefined ? { processes: dev.processes } : {}),
      };
      const st = ms('static.verdict');
      if (st !== undefined) out.staticMs = st;
      if (probe) out.probeCheckMs = probe.durationMs;
      if (probe?.data?.phasesMs?.scratchFile !== undefined) out.scratchFileMs = probe.data.phasesMs.scratchFile;
      if (probe?.data?.phasesMs?.probe !== undefined) out.probeMs = probe.data.phasesMs.probe;
      if (probe?.data?.phasesMs?.registration !== undefined) out.registrationMs = probe.data.phasesMs.registration;
      if (dev.timing?.registeredGBps !== undefined) out.registeredGBps = dev.timing.registeredGBps;
      if (dev.timing?.stagedGBps !== undefined) out.stagedGBps = dev.timing.stagedGBps;
      const margin = ms('timing.margin');
      const link = ms('timing.link');
      if (margin !== undefined) out.timingMs.margin = margin;
      if (link !== undefined) out.timingMs.link = link;
      return out;
    });
    // each process named by the devices it checked (a discovering runner's become known from the results); a
    // runner of several devices is listed under each of them
    const ids = r.devices.map((d) => d.id);
    for (const p of [...result.memory.others, ...(result.memory.run?.processes ?? [])]) {
      const devices = runnerDevices(p.device, ids);
      if (devices.length) p.device = devices.join('+');
    }
    result.memory.runners = result.memory.runners.flatMap((p) => {
      const devices = runnerDevices(p.device, ids);
      return devices.length ? devices.map((device) => ({ ...p, device })) : [p];
    });
  } catch (e) {
    result.error = `no results from the conformance run (exit ${code ?? signal}): ${(e as Error).message}`;
    result.outputTail = output.slice(-1500);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}
