// The runner of devices that never register (OpenCL, Vulkan, the CPU) checks them without Vitest
// (suites/without-vitest.ts): the same checks, in the same order, with the same results as the Vitest run that a
// runner of a GPU checks them in. Both are started here as the command starts them (cli/device-runner.ts, its options
// in MAPPED_REG_SUITE_OPTIONS, its events on file descriptor 3): one runner with a CUDA device first (whose checks
// are all reported already, so none of them runs and no driver is loaded), which takes Vitest, and one with the
// same devices alone, which does not.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { checkCatalog } from '../suites/catalog.js';
import type { SuiteOptions } from '../suites/protocol.js';
import { cleanEnv, ROOT } from './support/command.js';
import { workspace } from './support/workspace.js';

const RUNNER = join(ROOT, 'dist', 'cli', 'device-runner.js');
const { work } = workspace('mapped-reg-without-vitest-');

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  events: Record<string, unknown>[];
  stderr: string;
}

/** Runs a device runner over `devices` and collects its events. */
function runner(devices: SuiteOptions[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUNNER], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      env: cleanEnv({ MAPPED_REG_SUITE_OPTIONS: JSON.stringify({ devices }), ...env }),
    });
    let events = '';
    let stderr = '';
    (child.stdio[3] as Readable).on('data', (b: Buffer) => (events += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stderr, events: events.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>) }),
    );
  });
}

function options(device: string, more: Partial<SuiteOptions> = {}): SuiteOptions {
  return { device, scratchDir: mkdtempSync(join(work, 'scratch-')), sizeMiB: 8, runs: 3, minRelativeSpeed: 0.8, skip: [], quiet: { waitS: 0, maxDrop: 0.05 }, attempt: 1, ...more };
}

/** A device's checks as the command reads them: start and result events, without their durations. */
function checksOf(r: Ran, device: string): unknown[] {
  return r.events.filter((e) => e.device === device && (e.type === 'start' || e.type === 'result')).map(({ durationMs: _d, ...e }) => e);
}

describe('devices that never register, checked without Vitest', () => {
  it('report the same checks, in the same order, with the same results as in a Vitest run (a check already reported and one deselected included)', async () => {
    const ids = (await checkCatalog()).map((c) => c.id);
    // cpu: one check reported by an earlier process (not run again), one left out by the selection (skip with its reason)
    const cpu = options('cpu', { skip: ['hazard.double_registration_refused'], deselected: { 'probe.release': 'skipped by --skip probe.release' } });
    // opencl:0 is found where an OpenCL CPU device is installed (PoCL); elsewhere its context fails alike in both runs
    const opencl = options('opencl:0');
    const cuda = options('cuda:0', { skip: ids });
    const [alone, withVitest] = await Promise.all([runner([cpu, opencl]), runner([cuda, cpu, opencl])]);
    for (const r of [alone, withVitest]) {
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.events.filter((e) => e.type === 'error')).toEqual([]);
      expect(r.events.at(-1)).toMatchObject({ type: 'end' });
    }
    expect(withVitest.events.filter((e) => e.device === 'cuda:0')).toEqual([]);
    for (const device of ['cpu', 'opencl:0']) {
      expect(checksOf(alone, device), device).toEqual(checksOf(withVitest, device));
      // every check of the catalog but the one reported earlier, each a start then its result
      expect(checksOf(alone, device).length, device).toBe(2 * (ids.length - (device === 'cpu' ? 1 : 0)));
    }
    // suite by suite, then device by device within a suite: both devices' static check before either's probe check
    const order = (r: Ran): string[] => r.events.filter((e) => e.type === 'result' && e.device !== 'cuda:0').map((e) => `${String(e.device)} ${String(e.id)}`);
    expect(order(alone)).toEqual(order(withVitest));
    expect(order(alone).slice(0, 3)).toEqual(['cpu static.verdict', 'opencl:0 static.verdict', 'cpu probe.verdict']);
    expect(checksOf(alone, 'cpu')).toContainEqual(expect.objectContaining({ type: 'result', id: 'probe.release', status: 'skip', message: 'skipped by --skip probe.release' }));
    expect(checksOf(alone, 'cpu')).toContainEqual(expect.objectContaining({ type: 'result', id: 'static.verdict', status: 'pass', observed: expect.stringMatching(/Not_needed/) }));
  });

  it('a check that kills the process without Vitest leaves its start behind and nothing after it, as in Vitest', async () => {
    // a check that applies to the CPU (the others are skipped before they could run)
    const cpu = options('cpu', { forceCrash: 'static.verdict' });
    const [alone, withVitest] = await Promise.all([runner([cpu]), runner([options('cuda:0', { skip: (await checkCatalog()).map((c) => c.id) }), cpu])]);
    for (const r of [alone, withVitest]) {
      expect(r.signal).toBe('SIGSEGV');
      expect(r.events.filter((e) => e.device === 'cpu').map((e) => `${String(e.type)} ${String(e.id)}`)).toEqual(['start static.verdict']);
      expect(r.events.some((e) => e.type === 'end')).toBe(false);
    }
  });

  it('a runner killed after a check (MAPPED_REG_FORCE_KILL) reports that check and stops there, as in Vitest', async () => {
    const cpu = options('cpu');
    const env = { MAPPED_REG_FORCE_KILL: 'cpu/static.verdict' };
    const [alone, withVitest] = await Promise.all([runner([cpu], env), runner([options('cuda:0', { skip: (await checkCatalog()).map((c) => c.id) }), cpu], env)]);
    for (const r of [alone, withVitest]) {
      expect(r.signal).toBe('SIGKILL');
      expect(r.events.filter((e) => e.device === 'cpu').map((e) => `${String(e.type)} ${String(e.id)}`)).toEqual(['start static.verdict', 'result static.verdict']);
    }
  });
});
