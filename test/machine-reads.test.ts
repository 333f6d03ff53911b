// Nothing the machine check reads can block the thread (issue 30): a pressure file, a sysfs attribute, a process's
// name, the NVML library, each replaced by a named pipe with no writer (a plain open or read of which waits
// forever, and with it the signals and the check's watchdog), is "cannot be read" (unknown in the results), at
// once. Each read runs in a process of its own with a time limit, so that a read that blocks fails its test
// instead of hanging the test file; the readers are pointed at the pipes through their roots
// (MAPPED_REG_PROC_ROOT, MAPPED_REG_SYSFS_ROOT, MAPPED_REG_NVML_LIBRARY).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SMALL_FILE_BYTES, readSmallFile } from '../bindings/small-file.js';
import { readLink } from '../bindings/pci.js';
import { parsePressure } from '../bindings/pressure.js';
import type { RunResult } from '../results/types.js';
import { MAIN, NO_HAZARDS, ROOT, cleanEnv } from './support/command.js';
import { workspace } from './support/workspace.js';

const { work, doubles } = workspace('mapped-reg-machine-reads-');

const mkfifo = (path: string): string => {
  execFileSync('mkfifo', [path]);
  return path;
};

/**
 * `expression` (over `m`, the built module `module` of dist/) evaluated in a node process of its own, with `env`,
 * given at most 20 s; its value as JSON. A read that blocks is killed there: undefined, and the test fails on it.
 */
function inChild(module: string, expression: string, env: Record<string, string> = {}): unknown {
  const url = new URL(`file://${join(ROOT, 'dist', module)}`).href;
  const script = `const m = await import(${JSON.stringify(url)}); process.stdout.write(JSON.stringify(${expression}));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: cleanEnv(env), encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) return { blockedOrFailed: r.signal ?? r.status, stderr: r.stderr.slice(0, 500) };
  return JSON.parse(r.stdout) as unknown;
}

describe('readSmallFile: only a regular file, opened without blocking, at most SMALL_FILE_BYTES', () => {
  it('a regular file is read whole; a missing one is ENOENT; a folder EISDIR', () => {
    const file = join(work, 'small.txt');
    writeFileSync(file, 'some avg10=1.00\n');
    expect(readSmallFile(file)).toEqual({ text: 'some avg10=1.00\n' });
    expect(readSmallFile(join(work, 'none'))).toEqual({ reason: 'ENOENT', code: 'ENOENT' });
    expect(readSmallFile(work)).toEqual({ reason: 'EISDIR', code: 'EISDIR' });
  });

  it('a named pipe with no writer is refused at once, not waited on', () => {
    const pipe = mkfifo(join(work, 'small.fifo'));
    expect(inChild('bindings/small-file.js', `m.readSmallFile(${JSON.stringify(pipe)})`)).toEqual({ reason: 'not a regular file (a named pipe)' });
  });

  it('a character device (a link to /dev/zero in its place) is refused; a file over the bound is too', () => {
    const zero = join(work, 'zero');
    symlinkSync('/dev/zero', zero);
    expect(readSmallFile(zero)).toEqual({ reason: 'not a regular file (a character device)' });
    const big = join(work, 'big.txt');
    writeFileSync(big, 'x'.repeat(SMALL_FILE_BYTES + 1));
    expect(readSmallFile(big)).toEqual({ reason: `more than ${SMALL_FILE_BYTES} bytes` });
    writeFileSync(big, 'x'.repeat(SMALL_FILE_BYTES));
    expect(readSmallFile(big)).toEqual({ text: 'x'.repeat(SMALL_FILE_BYTES) });
  });
});

describe('the pressure files (bindings/pressure.ts)', () => {
  it('a pressure file that is a named pipe is unknown (null) with a note, at once; the other file is still read', () => {
    const proc = join(work, 'proc-fifo');
    mkdirSync(join(proc, 'pressure'), { recursive: true });
    mkfifo(join(proc, 'pressure', 'cpu'));
    writeFileSync(join(proc, 'pressure', 'memory'), 'some avg10=2.50 avg60=0 avg300=0 total=0\nfull avg10=1.25 avg60=0 avg300=0 total=0\n');
    expect(inChild('bindings/pressure.js', 'm.readPressure()', { MAPPED_REG_PROC_ROOT: proc })).toEqual({
      cpu: null,
      memory: { someAvg10: 2.5, fullAvg10: 1.25 },
      note: `${proc}/pressure/cpu: cannot be read (not a regular file (a named pipe))`,
    });
  });

  it('a figure that is not a share of 10 s (over 100%, or too long to be a finite number) is left out', () => {
    expect([...parsePressure('some avg10=100.00 avg60=0 avg300=0 total=0\n')]).toEqual([['some', 100]]);
    expect(parsePressure('some avg10=100.01 avg60=0 avg300=0 total=0\n').size).toBe(0);
    expect(parsePressure(`some avg10=${'9'.repeat(400)} avg60=0 avg300=0 total=0\n`).size).toBe(0);
  });
});

describe('sysfs (bindings/pci.ts)', () => {
  it("a link file that is a named pipe is no link, at once (the check says why, the run goes on)", () => {
    const sysfs = join(work, 'sys-fifo');
    const dev = join(sysfs, 'bus', 'pci', 'devices', '0000:41:00.0');
    mkdirSync(dev, { recursive: true });
    mkfifo(join(dev, 'current_link_speed'));
    writeFileSync(join(dev, 'current_link_width'), '16\n');
    mkfifo(join(dev, 'numa_node'));
    expect(inChild('bindings/pci.js', "[m.readLink('0000:41:00.0'), m.readNumaNode('0000:41:00.0')]", { MAPPED_REG_SYSFS_ROOT: sysfs })).toEqual([
      `no PCIe link in sysfs for 0000:41:00.0 (${dev})`,
      null,
    ]);
  });

  it('a link speed or width beyond any PCIe link (one that overflows to Infinity among them) is unreadable, never a figure that is not finite', () => {
    const sysfs = join(work, 'sys-absurd');
    const link = (bus: string, speed: string, width: string, max?: string): void => {
      const dev = join(sysfs, 'bus', 'pci', 'devices', bus);
      mkdirSync(dev, { recursive: true });
      writeFileSync(join(dev, 'current_link_speed'), speed);
      writeFileSync(join(dev, 'current_link_width'), width);
      if (max !== undefined) writeFileSync(join(dev, 'max_link_speed'), max);
    };
    link('0000:41:00.0', `1${'0'.repeat(309)} GT/s PCIe`, '16');
    link('0000:42:00.0', '32.0 GT/s PCIe', '1000000');
    link('0000:43:00.0', '1025 GT/s PCIe', '16');
    link('0000:44:00.0', '1024 GT/s PCIe', '64');
    link('0000:45:00.0', '32.0 GT/s PCIe', '16', '1e400 GT/s PCIe');
    expect(readLink('0000:41:00.0', sysfs)).toMatch(/^unreadable PCIe link for 0000:41:00\.0: speed "10{39}", width "16"$/);
    expect(readLink('0000:42:00.0', sysfs)).toBe('unreadable PCIe link for 0000:42:00.0: speed "32.0 GT/s PCIe", width "1000000"');
    expect(readLink('0000:43:00.0', sysfs)).toBe('unreadable PCIe link for 0000:43:00.0: speed "1025 GT/s PCIe", width "16"');
    expect(readLink('0000:44:00.0', sysfs)).toMatchObject({ gts: 1024, width: 64 });
    // a maximum that cannot be a link is unknown, and judges nothing
    expect(readLink('0000:45:00.0', sysfs)).toMatchObject({ gts: 32, maxGts: null, maxGbps: null, downtrained: false });
    for (const bus of ['0000:44:00.0', '0000:45:00.0']) {
      const l = readLink(bus, sysfs);
      expect(typeof l).toBe('object');
      for (const v of Object.values(l)) if (typeof v === 'number') expect(Number.isFinite(v)).toBe(true);
    }
  });
});

describe('the GPU-user lookups and the NVML library (bindings/gpu-users.ts)', () => {
  it('an NVML library path that is a named pipe is a note at once, never handed to the loader (whose open would wait forever)', () => {
    const pipe = mkfifo(join(work, 'libnvidia-ml.fifo'));
    const env = { MAPPED_REG_NVML_LIBRARY: pipe };
    const note = `NVML: ${pipe} is not a regular file (a named pipe)`;
    expect(inChild('bindings/gpu-users.js', "m.openGpuUsers('cuda', '0000:00:00.0')", env)).toEqual({ note });
    expect(inChild('bindings/gpu-users.js', "m.loadGpuUsersLibrary('cuda')", env)).toEqual({ note });
    // AMD SMI's path alike
    expect(inChild('bindings/gpu-users.js', "m.loadGpuUsersLibrary('hip')", { MAPPED_REG_AMDSMI_LIBRARY: pipe })).toEqual({ note: `AMD SMI: ${pipe} is not a regular file (a named pipe)` });
  });

  it('loadGpuUsersLibrary: the library loaded (undefined), a note when it cannot be, nothing for a backend without one', () => {
    expect(inChild('bindings/gpu-users.js', "m.loadGpuUsersLibrary('cuda') ?? 'loaded'", { MAPPED_REG_NVML_LIBRARY: doubles.nvml })).toBe('loaded');
    expect(inChild('bindings/gpu-users.js', "m.loadGpuUsersLibrary('cuda')", { MAPPED_REG_NVML_LIBRARY: join(work, 'none.so') })).toEqual({ note: `NVML: ${join(work, 'none.so')} not found` });
    expect(inChild('bindings/gpu-users.js', "m.loadGpuUsersLibrary('opencl') ?? 'none'")).toBe('none');
  });

  it("a process's name that NVML does not give is read from <proc>/<pid>/comm, without blocking: a named pipe there is no name", () => {
    const proc = join(work, 'proc-comm');
    mkdirSync(join(proc, '4242'), { recursive: true });
    mkdirSync(join(proc, '4343'), { recursive: true });
    writeFileSync(join(proc, '4242', 'comm'), 'from-comm\n');
    mkfifo(join(proc, '4343', 'comm'));
    const env = { MAPPED_REG_NVML_LIBRARY: doubles.nvml, MAPPED_REG_DOUBLE_NVML_PROCESSES: '4242::10,4343::20', MAPPED_REG_PROC_ROOT: proc };
    const sample = inChild('bindings/gpu-users.js', "(() => { const g = m.openGpuUsers('cuda', '0000:00:00.0'); const s = g.sample([]); g.close(); return s.processes; })()", env);
    expect(sample).toEqual([
      { pid: 4242, name: 'from-comm', usedMiB: 10, kind: 'compute' },
      { pid: 4343, name: '', usedMiB: 20, kind: 'compute' },
    ]);
  });
});

describe('a run whose machine inputs are named pipes', () => {
  it('ends, its check not killed: the pressure unknown, the GPU not looked at, with why', () => {
    const proc = join(work, 'proc-run');
    mkdirSync(join(proc, 'pressure'), { recursive: true });
    mkfifo(join(proc, 'pressure', 'cpu'));
    mkfifo(join(proc, 'pressure', 'memory'));
    const nvml = mkfifo(join(work, 'nvml-run.fifo'));
    const json = join(work, 'run-fifos.json');
    const r = spawnSync(process.execPath, [MAIN, '--backend', 'cuda', '--size', '8', '--timeout', '30', ...NO_HAZARDS, '--scratch-dir', work, '--json', json], {
      env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_NVML_LIBRARY: nvml, MAPPED_REG_PROC_ROOT: proc, MAPPED_REG_TIMING_LOCK: join(work, 'timing.lock') }),
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const result = JSON.parse(execFileSync('cat', [json], { encoding: 'utf8' })) as RunResult;
    const d = result.devices[0]!;
    expect(d.checks.find((c) => c.id === 'probe.verdict')?.status).toBe('pass');
    expect(d.load).toMatchObject({ busy: false, pressure: { cpuSome: null, memorySome: null }, monitor: null, monitorNote: `NVML: ${nvml} is not a regular file (a named pipe)` });
  });
});

describe('a link speed that overflows', () => {
  it('is an unreadable link (timing.link skipped, saying so), and the command reads its own results back', () => {
    const sysfs = join(work, 'sys-overflow');
    const dev = join(sysfs, 'bus', 'pci', 'devices', '0000:00:00.0');
    mkdirSync(dev, { recursive: true });
    writeFileSync(join(dev, 'current_link_speed'), `1${'0'.repeat(400)} GT/s PCIe\n`);
    writeFileSync(join(dev, 'current_link_width'), '16\n');
    const json = join(work, 'overflow.json');
    const env = cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_NVML_LIBRARY: doubles.nvml, MAPPED_REG_SYSFS_ROOT: sysfs, MAPPED_REG_TIMING_LOCK: join(work, 'timing.lock') });
    const r = spawnSync(process.execPath, [MAIN, '--backend', 'cuda', '--size', '8', ...NO_HAZARDS, '--scratch-dir', work, '--json', json], { env, encoding: 'utf8', timeout: 90_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const back = spawnSync(process.execPath, [MAIN, 'compare', json, json], { env, encoding: 'utf8', timeout: 60_000 });
    expect(back.status, back.stderr).toBe(0);
    const result = JSON.parse(execFileSync('cat', [json], { encoding: 'utf8' })) as RunResult;
    expect(result.devices[0]!.checks.find((c) => c.id === 'timing.link')).toMatchObject({ status: 'skip', message: expect.stringMatching(/^unreadable PCIe link for 0000:00:00\.0: speed "10{39}", width "16"$/) });
  });
});

describe('the NVML library is loaded before the first check, never inside one', () => {
  it("a library slow to load (6 s in its constructor, with --timeout 3) costs no check's --timeout: every check ends, none timed out", () => {
    // (a margin both ways: loaded inside probe.verdict it ran 6 s past a limit of 3; before the checks it is well
    // within the --timeout + 10 s a runner has outside any check)
    const source = join(work, 'slow-nvml.c');
    writeFileSync(source, '#include <unistd.h>\n__attribute__((constructor)) static void slow(void) { sleep(6); }\nint nvmlInit_v2(void) { return 999; }\n');
    const library = join(work, 'slow-nvml.so');
    execFileSync(process.env.CC || 'cc', ['-shared', '-fPIC', '-o', library, source]);
    const json = join(work, 'slow-nvml.json');
    const env = cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_NVML_LIBRARY: library, MAPPED_REG_TIMING_LOCK: join(work, 'timing.lock') });
    const r = spawnSync(process.execPath, [MAIN, '--backend', 'cuda', '--size', '8', '--timeout', '3', ...NO_HAZARDS, '--scratch-dir', work, '--json', json], { env, encoding: 'utf8', timeout: 120_000 });
    const result = JSON.parse(execFileSync('cat', [json], { encoding: 'utf8' })) as RunResult;
    const d = result.devices[0]!;
    expect(d.checks.filter((c) => c.status === 'timeout').map((c) => c.id), r.stdout).toEqual([]);
    expect(d.checks.find((c) => c.id === 'probe.verdict')?.status).toBe('pass');
    // loaded (its constructor ran), then found not to be NVML: the GPU not looked at, with why
    expect(d.load).toMatchObject({ monitor: null, monitorNote: expect.stringMatching(/^NVML: /) });
    expect(r.status, r.stdout).toBe(0);
  });
});
