// The spare runner (cli/spare-runner.ts): a run's first discovering process is started with the command, before the
// command loads its modules, and gets its options on its stdin; a command that does not run kills it.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runsChecks } from '../cli/spare-runner.js';
import { DeviceChoice } from '../cli/select-devices.js';
import { cuda } from '../bindings/backends/cuda.js';
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

/** A folder whose dev/ holds `n` CUDA device nodes (nvidia0 ...) and the driver's own nodes that are not GPUs. */
function devRoot(n: number): string {
  const root = mkdtempSync(join(work, 'root-'));
  mkdirSync(join(root, 'dev'));
  for (const name of ['nvidiactl', 'nvidia-uvm', 'nvidia-modeset', ...Array.from({ length: n }, (_, i) => `nvidia${i}`)]) writeFileSync(join(root, 'dev', name), '');
  return root;
}

describe("the device spares: the other GPUs' runners, started while their driver's discovery runs", () => {
  it('counts the GPUs a driver will likely find from its device nodes, bounded by the variable that hides devices; asked-for devices count as asked', () => {
    const root = devRoot(4);
    expect(cuda.registers && cuda.expectedDevices?.({}, root)).toBe(4);
    expect(cuda.registers && cuda.expectedDevices?.({ CUDA_VISIBLE_DEVICES: '1,3' }, root)).toBe(2);
    expect(cuda.registers && cuda.expectedDevices?.({ CUDA_VISIBLE_DEVICES: '' }, root)).toBe(0);
    expect(cuda.registers && cuda.expectedDevices?.({ MAPPED_REG_DEV_ROOT: root })).toBe(4);
    expect(cuda.registers && cuda.expectedDevices?.({}, join(root, 'none'))).toBeUndefined();
    const base = {} as ConstructorParameters<typeof DeviceChoice>[1];
    const env = { MAPPED_REG_DEV_ROOT: root };
    expect(new DeviceChoice({ backends: ['cuda', 'hip', 'opencl'], devices: [] }, base, env).expectedOthers('cuda')).toBe(3);
    expect(new DeviceChoice({ backends: ['cuda'], devices: ['cuda:0', 'cuda:2'] }, base, env).expectedOthers('cuda')).toBe(1);
    expect(new DeviceChoice({ backends: ['cuda', 'cpu'], devices: ['cuda:1', 'cpu'] }, base, env).expectedOthers('cuda')).toBe(0);
    expect(new DeviceChoice({ backends: ['opencl'], devices: [] }, base, env).expectedOthers('cuda')).toBe(0);
    // a backend that never registers has no runners of its own to start
    expect(new DeviceChoice({ backends: ['opencl'], devices: [] }, base, env).expectedOthers('opencl')).toBe(0);
  });

  it('are started, one per GPU beyond the first, while the discovery runs (here: stuck), their options to come on stdin; none for --device cuda:0; all end with the command', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const root = devRoot(4);
    const env = { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_DEVICES: '4', MAPPED_REG_FORCE_HANG: '@discovery', MAPPED_REG_DEV_ROOT: root };
    const c = startCli(['--backend', 'cuda', '--size', '8', '--timeout', '60', '--scratch-dir', scratch], env, work);
    await waitUntil(() => runnersOf(c.pid).length === 4, 60_000, 'the discovering process and three device spares');
    expect(runnersOf(c.pid).map(optionsOf).sort()).toEqual(['-', '-device', '-device', '-device']);
    c.child.kill('SIGTERM');
    expect((await c.exit).code).toBe(143);
    await waitUntil(() => runnersStartedBy(c.pid).length === 0, 10_000, 'every runner to end');

    const one = startCli(['--device', 'cuda:0', '--size', '8', '--timeout', '60', '--scratch-dir', scratch], env, work);
    await waitUntil(() => runnersOf(one.pid).length >= 1, 60_000, 'the discovering process');
    expect(runnersOf(one.pid).map(optionsOf)).toEqual(['-']);
    one.child.kill('SIGTERM');
    await one.exit;
    await waitUntil(() => runnersStartedBy(one.pid).length === 0, 10_000, 'every runner to end');
  }, 120_000);

  it("check the GPUs the discovery found, each in a spare of its own (the last GPU's runner, stuck in its first check, was started as one); those none took end once the discovery is in, not with the command", async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    // eight nodes, four GPUs: seven spares, three taken, four killed once the discovery is in
    const c = startCli(['--backend', 'cuda', '--size', '8', '--timeout', '60', '--scratch-dir', scratch], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_DEVICES: '4', MAPPED_REG_FORCE_HANG: 'cuda:3/static.verdict', MAPPED_REG_DEV_ROOT: devRoot(8) }, work);
    await waitUntil(() => runnersOf(c.pid).length === 8, 60_000, 'the discovering process and seven device spares');
    await waitUntil(() => runnersOf(c.pid).length === 1, 60_000, "every GPU's runner but the stuck one to end");
    expect(runnersOf(c.pid).map(optionsOf)).toEqual(['-device']);
    c.child.kill('SIGTERM');
    await c.exit;
    await waitUntil(() => runnersStartedBy(c.pid).length === 0, 10_000, 'every runner to end');

    // eight nodes, two GPUs: six spares none takes; the run is whole, and leaves no runner
    const json = join(work, 'two.json');
    const two = startCli(['--backend', 'cuda', '--size', '8', '--scratch-dir', scratch, '--json', json], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_DEVICES: '2', MAPPED_REG_DEV_ROOT: devRoot(8) }, work);
    expect((await two.exit).code).toBe(0);
    const result = JSON.parse(readFileSync(json, 'utf8')) as { devices: { id: string; verdict: { kind: string }; processes: number }[] };
    expect(result.devices.map((d) => [d.id, d.verdict.kind, d.processes])).toEqual([
      ['cuda:0', 'Usable', 1],
      ['cuda:1', 'Usable', 1],
    ]);
    await waitUntil(() => runnersStartedBy(two.pid).length === 0, 10_000, 'every runner, the six spares too, to end');
  }, 180_000);
});

describe("the probe's scratch file", () => {
  it('is not written where the run does not probe (--skip probe.verdict)', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const regions = (): number => readdirSync(scratch).filter((d) => existsSync(join(scratch, d, 'region.bin'))).length;
    const c = startCli(['--backend', 'cuda', '--size', '8', '--scratch-dir', scratch, '--skip', 'probe.verdict'], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda }, work);
    let seen = false;
    const watch = setInterval(() => (seen ||= regions() > 0), 5);
    try {
      expect((await c.exit).code).toBe(0);
    } finally {
      clearInterval(watch);
    }
    expect(seen).toBe(false);
    expect(readdirSync(scratch)).toEqual([]);
  }, 60_000);
});
