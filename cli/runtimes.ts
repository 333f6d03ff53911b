// `runtimes`: the user-space runtimes installed side by side, each running the whole suite in processes of its own
// (the normal run, `mapped-reg-conformance run`, started with MAPPED_REG_*_LIBRARY set to it), each run's results
// in a file of its own (OUT/RUNTIME.json, recording the runtime), then one matrix of runtime × device and one
// decision: every candidate gated against the baseline runtime by its run's own gate (--baseline BASELINE.json,
// results/gate.ts, the busy-machine rules included). Exit 0 when every candidate is at least as good, 1 when one
// is not, 2 for bad input (before anything runs). docs/runtimes.md walks through it.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resultsJson } from '../reporters/json.js';
import { matrixHtml, matrixJunit, matrixLines, runtimeName } from '../reporters/runtime-matrix.js';
import { readResults } from '../results/read.js';
import type { RuntimeBackend, RuntimeRecord } from '../results/runtime.js';
import { whyNotStarted } from '../results/runtime.js';
import { MATRIX_FILE, matrixExitStatus, runtimeMatrix, type RuntimeRun } from '../results/runtime-matrix.js';
import type { RunResult } from '../results/types.js';
import type { RuntimesOptions } from './options.js';
import { writeAtomically, writeOutput } from './outputs.js';
import { type FoundRuntime, findRuntimes, RUNTIME_ENV } from './runtime-discovery.js';
import { onStop, stoppedBy, stoppedStatus } from './signals.js';
import { UsageError } from './usage-error.js';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), 'main.js');

type Say = (line: string) => void;

/** A runtime's state in one phrase: `starts, 1 device`, or why not. */
function stateOf(r: FoundRuntime): string {
  const p = r.probe;
  if (p.started) return `starts, ${p.devices ?? 0} device${p.devices === 1 ? '' : 's'}`;
  const why = whyNotStarted(p);
  return `${p.reason ?? 'does not start'}${why ? `: ${why}` : ''}`;
}

/** A runtime's name as the matrix writes it (reporters/runtime-matrix.ts runtimeName). */
const nameOf = (r: FoundRuntime): string => runtimeName({ runtime: r.label, backend: r.backend, ...(r.probe.version ? { version: r.probe.version } : {}) });

/** The runtimes found, one line each (runtimes --list, list --runtimes). */
function runtimeListLines(found: readonly FoundRuntime[]): string[] {
  if (found.length === 0) return ['no user-space runtime found (CUDA: libcuda.so.1, /usr/local/cuda*/compat; HIP: libamdhip64.so, /opt/rocm*/lib)'];
  const rows = found.map((r) => [nameOf(r), r.source, r.path, stateOf(r)]);
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((x) => x[i]!.length)));
  return rows.map((x) => x.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c)).join('  ').trimEnd());
}

/**
 * The file name of a runtime's results and log: its label with anything but [A-Za-z0-9._-] as _, after its backend
 * where another backend has a runtime of that label (`cuda-system`, `hip-system`).
 */
function fileStem(r: FoundRuntime, found: readonly FoundRuntime[]): string {
  const stem = r.label.replace(/^\/+/, '').replace(/[^A-Za-z0-9._-]/g, '_');
  return found.some((x) => x.label === r.label && x.backend !== r.backend) ? `${r.backend}-${stem}` : stem;
}

/** Each backend's baseline: the one named (--baseline-runtime), else the system's; one that cannot start is bad input. */
function baselines(o: RuntimesOptions, found: readonly FoundRuntime[]): Map<RuntimeBackend, FoundRuntime> {
  const chosen = new Map<RuntimeBackend, FoundRuntime>();
  const isNamed = (r: FoundRuntime): boolean => r.path === o.baselineRuntime || r.probe.file === o.baselineRuntime;
  if (o.baselineRuntime !== undefined && !found.some(isNamed)) throw new UsageError(`--baseline-runtime ${o.baselineRuntime}: not a runtime of ${o.backends.join(' or ')} (--backend)`);
  for (const b of new Set(found.map((r) => r.backend))) {
    const named = o.baselineRuntime === undefined ? undefined : found.find((r) => r.backend === b && isNamed(r));
    const base = named ?? found.find((r) => r.backend === b && r.source === 'system');
    if (!base) throw new UsageError(`runtimes: no ${b.toUpperCase()} runtime in use to gate the others against (the default search found none): name one with --baseline-runtime PATH`);
    if (!base.probe.started) throw new UsageError(`runtimes: the baseline runtime ${base.label} (${base.path}) does not start: ${stateOf(base)}`);
    chosen.set(b, base);
  }
  return chosen;
}

/** One runtime's run: `mapped-reg-conformance run` with its library, its own JSON and log; its exit status. */
function runOne(o: RuntimesOptions, r: FoundRuntime, json: string, log: string, baselineJson: string | undefined): Promise<number | null> {
  const fd = openSync(log, 'w');
  const args = [MAIN, 'run', '--backend', r.backend, '--json', json, ...(baselineJson ? ['--baseline', baselineJson] : []), ...o.forward];
  // a session of its own: a Ctrl-C reaches this command alone, which stops the run it started (that run then stops its devices)
  const child = spawn(process.execPath, args, { env: { ...process.env, [RUNTIME_ENV[r.backend]]: r.path }, stdio: ['ignore', fd, fd], detached: true });
  const stop = onStop((signal) => child.kill(signal));
  // 'close' comes after 'error' too (a process that could not start): the log is closed there alone, once
  let failed = false;
  child.on('error', () => {
    failed = true;
  });
  return new Promise((done) => {
    child.on('close', (code) => {
      stop();
      closeSync(fd);
      done(failed ? null : code);
    });
  });
}

/** The last line a run said of itself on failure (`mapped-reg-conformance: ...`), from its log. */
function lastProblem(log: string): string | undefined {
  try {
    return readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('mapped-reg-conformance: ')).pop()?.slice('mapped-reg-conformance: '.length);
  } catch {
    return undefined;
  }
}

/** The record of a runtime that its results file carries. */
function recordOf(r: FoundRuntime, base: FoundRuntime): RuntimeRecord {
  return {
    backend: r.backend,
    label: r.label,
    path: r.path,
    ...(r.probe.version ? { version: r.probe.version } : {}),
    role: r === base ? 'baseline' : 'candidate',
    ...(r === base ? {} : { baseline: base.label }),
    ...(r.probe.release ? { release: r.probe.release } : {}),
    ...(r.probe.kernelModule ? { kernelModule: r.probe.kernelModule } : {}),
  };
}

/** Runs every runtime (each backend's baseline first) and returns their parts of the matrix. */
async function runAll(o: RuntimesOptions, found: readonly FoundRuntime[], base: Map<RuntimeBackend, FoundRuntime>, say: Say): Promise<RuntimeRun[]> {
  const out = o.out!;
  const runs: RuntimeRun[] = [];
  const ordered = [...base.values(), ...found.filter((r) => ![...base.values()].includes(r))];
  const baselineFile = new Map<RuntimeBackend, string>();
  for (const r of ordered) {
    const b = base.get(r.backend)!;
    const runtime = recordOf(r, b);
    if (stoppedBy()) break;
    if (!r.probe.loaded) {
      say(`${nameOf(r)}: not run: ${stateOf(r)}`);
      runs.push({ runtime, probe: r.probe });
      continue;
    }
    const stem = fileStem(r, found);
    const json = join(out, `${stem}.json`);
    const log = join(out, `${stem}.log`);
    say(`${nameOf(r)}: running the suite (${r.path}; log ${log})`);
    const t0 = performance.now();
    const code = await runOne(o, r, json, log, baselineFile.get(r.backend));
    let result: RunResult | undefined;
    try {
      result = await readResults(json);
    } catch {
      result = undefined;
    }
    if (result) {
      // the results file records the runtime it was run under (an optional field: compare, merge, report read it as any run)
      result = { ...result, runtime };
      writeAtomically(json, resultsJson(result));
      if (r === b) baselineFile.set(r.backend, json);
    }
    const problem = result ? undefined : lastProblem(log);
    say(`  exit ${code ?? 'by a signal'} in ${((performance.now() - t0) / 1000).toFixed(1)} s${result?.gate ? `: ${result.gate.headline}` : ''}${problem ? `: ${problem}` : ''}`);
    runs.push({ runtime, probe: r.probe, ...(result ? { file: `${stem}.json`, result } : {}), exitCode: code, ...(problem ? { problem } : {}) });
  }
  return runs;
}

/** `runtimes`: returns the exit status. */
export async function runtimesCommand(o: RuntimesOptions, say: Say, tool: string): Promise<number> {
  const found = findRuntimes({ backends: o.backends, root: o.root, named: o.named });
  if (o.list) {
    runtimeListLines(found).forEach(say);
    return 0;
  }
  if (found.length === 0) throw new UsageError(`runtimes: ${runtimeListLines(found)[0]!}`);
  const base = baselines(o, found);
  try {
    mkdirSync(o.out!, { recursive: true });
  } catch (e) {
    throw new UsageError(`--out ${o.out!}: cannot make the folder (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  runtimeListLines(found).forEach(say);
  say('');
  const runs = await runAll(o, found, base, say);
  const m = runtimeMatrix(runs);
  writeAtomically(join(o.out!, MATRIX_FILE), `${JSON.stringify(m, null, 2)}\n`);
  if (o.junit) writeOutput(o.junit, matrixJunit(m, runs, tool));
  if (o.html) writeOutput(o.html, matrixHtml(m));
  say('');
  matrixLines(m).forEach(say);
  if (stoppedBy()) return stoppedStatus();
  return matrixExitStatus(m);
}
