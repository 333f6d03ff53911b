// The spare runner (cli/spare-runner.ts): a run's first discovering process is started with the command, before the
// command loads its modules, and gets its options on its stdin; a command that does not run kills it.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runsChecks } from '../cli/spare-runner.js';
import { runnersOf, running, startCli, waitUntil } from './support/processes.js';
import { workspace } from './support/workspace.js';

const { work, doubles } = workspace('mapped-reg-spare-');

/** What a runner was started with: its options ('-': on its stdin), or '' when it is gone. */
function optionsOf(pid: number): string {
  try {
    const entry = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((e) => e.startsWith('MAPPED_REG_SUITE_OPTIONS='));
    return entry?.slice('MAPPED_REG_SUITE_OPTIONS='.length) ?? '';
  } catch {
    return '';
  }
}

/** Every live process that a command of `pid` started as a runner (it names the command as its parent), children or not. */
function runnersStartedBy(pid: number): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/environ`, 'utf8').split('\0').includes(`MAPPED_REG_PARENT_PID=${pid}`) && running(p);
      } catch {
        return false;
      }
    });
}

describe('the spare runner', () => {
  it('is started for a run (the default command, or run), not for --help, --version or another command', () => {
    for (const args of [[], ['run'], ['--json', 'r.json'], ['--device', 'cuda:0', '--size', '8'], ['run', '--backend', 'cpu']]) expect(runsChecks(args), args.join(' ')).toBe(true);
    for (const args of [['--help'], ['-h'], ['--version'], ['-V'], ['run', '--help'], ['list'], ['compare', 'a.json', 'b.json'], ['report', 'a.json', '--html', 'x.html'], ['history', 'add'], ['runtimes'], ['merge', 'a.json']]) expect(runsChecks(args), args.join(' ')).toBe(false);
  });

  it("is the run's first discovering process (CUDA's, where its library is there), its options on its stdin; the other group's is started with them in its environment", async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    // every discovering process stops in its discovery, as a driver that never returns: the processes stay to be
    // looked at (with this hook every group gets its process, HIP's too: cli/discovering-runners.ts withoutProcess)
    const c = startCli(['--size', '8', '--timeout', '60', '--scratch-dir', scratch, '--json', join(work, 'hung.json')], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_FORCE_HANG: '@discovery' }, work);
    await waitUntil(() => runnersOf(c.pid).length === 3, 60_000, 'three discovering processes');
    const options = runnersOf(c.pid).map(optionsOf);
    expect(options.filter((o) => o === '-')).toHaveLength(1);
    const others = options.filter((o) => o !== '-').map((o) => JSON.parse(o) as { discover?: { backends: string[] } });
    expect(others.map((o) => o.discover?.backends).sort()).toEqual([['hip'], ['opencl', 'vulkan', 'cpu']]);
    c.child.kill('SIGTERM');
    expect((await c.exit).code).toBe(143);
    await waitUntil(() => runnersStartedBy(c.pid).length === 0, 10_000, 'every runner to end');
  });

  it('with no GPU it discovers and checks the devices that never register: the same result as a runner started with its options', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'no-gpu.json');
    const c = startCli(['--scratch-dir', scratch, '--json', json], {}, work);
    expect((await c.exit).code).toBe(0);
    const result = JSON.parse(readFileSync(json, 'utf8')) as { devices: { id: string; processes: number; checks: unknown[] }[] };
    expect(result.devices.map((d) => d.id)).toEqual(expect.arrayContaining(['cpu']));
    for (const d of result.devices) expect([d.id, d.processes, d.checks.length]).toEqual([d.id, 1, 33]);
  });

  it('is killed by a command that does not run: bad usage ends with status 2 and leaves no runner', async () => {
    const c = startCli(['--size', 'banana'], {}, work);
    const { code } = await c.exit;
    expect(code).toBe(2);
    expect(c.stderr()).toMatch(/--size/);
    await waitUntil(() => runnersStartedBy(c.pid).length === 0, 10_000, 'the spare runner to end');
  });

  it('is killed when no group of the run needs a process (a GPU driver whose library is not found): the run goes on without it', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const c = startCli(['--backend', 'hip', '--scratch-dir', scratch], { MAPPED_REG_HIP_LIBRARY: undefined }, work);
    await c.exit;
    expect(c.stdout()).toMatch(/HIP/);
    await waitUntil(() => runnersStartedBy(c.pid).length === 0, 10_000, 'the spare runner to end');
  });
});
