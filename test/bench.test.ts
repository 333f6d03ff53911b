// `npm run bench` (dist/bench/bench.js) against the C driver double: it runs, fills every field, builds and runs
// the native reference, and copes with no GPU and no compiler. No timing is judged here: figures only have to
// be there (and positive where a duration or a speed must be).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/command.js';
import { TreeSampler, pssParts } from '../bench/proc.js';
import { MEASUREMENTS } from '../bench/measurements/index.js';
import { deviceFigures } from '../bench/conformance.js';
import type { DeviceResult } from '../results/types.js';
import { type Ran, runScript, workspace } from './support/workspace.js';

const root = ROOT;
const benchJs = join(root, 'dist', 'bench', 'bench.js');
const { work, doubles } = workspace('mapped-reg-bench-test-');

/** A whole bench run includes a whole conformance run: it may take minutes on a busy machine (hence the timeouts). */
function bench(args: string[], env: Record<string, string | undefined> = {}): Ran {
  return runScript(benchJs, args, work, env, ['GITHUB_STEP_SUMMARY'], 240_000);
}

/** A bench of two runs of `size` MiB windows against both doubles (with `env`), in a scratch folder of its own: how it ran, its JSON file and that folder. */
function benchOnDoubles(name: string, size: string, env: Record<string, string> = {}): { r: Ran; json: string; scratch: string } {
  const scratch = mkdtempSync(join(work, 'scratch-'));
  const json = join(work, `${name}.json`);
  const r = bench(['--size', size, '--runs', '2', '--scratch-dir', scratch, '--json', json], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_HIP_LIBRARY: doubles.hip, ...env });
  return { r, json, scratch };
}

/** The C compiler, as buildDoubles and the bench take it: $CC (may carry arguments), else cc. */
function cc(args: string[]): void {
  const [cmd, ...pre] = (process.env.CC ?? '').trim().split(/\s+/).filter((w) => w !== '');
  execFileSync(cmd ?? 'cc', [...pre, ...args]);
}

const positive = expect.any(Number);
function expectPositive(x: unknown, what: string): void {
  expect(x, what).toEqual(positive);
  expect(x as number, what).toBeGreaterThan(0);
  expect(Number.isFinite(x as number), what).toBe(true);
}

/**
 * The bench's JSON as read back (`any`: each field is checked below, one by one, as a reader of the file meets it,
 * rather than trusted to a type).
 */
type BenchJson = any;

/** A device's figures of a bench of two runs of 8 MiB windows: every copy, the link, the registration, the driver call, the native reference. */
function expectDeviceFigures(d: BenchJson): void {
  const id = d.id as string;
  expect(d.errors, id).toEqual([]);
  expect(d.region.bytes).toBe(8 << 20);
  for (const key of ['registered', 'staged', 'pageLocked', 'pageable', 'stagedHalf']) {
    const c = d.copies[key];
    expect(c, `${id} ${key}`).toBeDefined();
    expect(c.samples, `${id} ${key}`).toBe(2);
    for (const f of ['bestGBps', 'medianGBps', 'bestMs', 'medianMs']) expectPositive(c[f], `${id} ${key}.${f}`);
    expect(c.bestGBps).toBeGreaterThanOrEqual(c.medianGBps);
  }
  expect(d.copies.registered.bytes).toBe(8 << 20);
  expect(d.copies.stagedHalf.bytes).toBe(4 << 20); // the probe's window: half the region
  // the double's PCI bus id may or may not be a device in this machine's sysfs
  if ('error' in d.link) expect(d.link.error).toMatch(/PCIe link/);
  else {
    expectPositive(d.link.gbps, `${id} link`);
    expectPositive(d.link.registeredShare, `${id} share`);
  }
  for (const cache of ['warm', 'cold']) {
    const c = d.registration[cache];
    expect(c, `${id} ${cache}`).toBeDefined();
    expectPositive(c.registerMsPerGiB.best, `${id} ${cache} register`);
    expectPositive(c.totalMsPerGiB.best, `${id} ${cache} total`);
    expectPositive(c.totalMsPerGiB.median, `${id} ${cache} total median`);
    expect(c.unregisterMsPerGiB.best).toBeGreaterThanOrEqual(0);
    expect(c.register.samples).toBe(2);
  }
  expect(d.registration.cold.eviction.methods).toContain('posix_fadvise(DONTNEED)');
  expect(d.driverCall.call).toBe(id.startsWith('cuda') ? 'cuDeviceGetAttribute' : 'hipDeviceGetAttribute');
  expectPositive(d.driverCall.meanUs, `${id} driver call`);
  expect(d.native.status, JSON.stringify(d.native)).toBe('ran');
  expect(d.native.raw.api).toBe(id.startsWith('cuda') ? 'CUDA' : 'HIP');
  expect(d.native.raw.bytes).toBe(8 << 20);
  for (const f of ['registeredGBps', 'stagedGBps', 'registeredRatio', 'stagedRatio']) expectPositive(d.native[f], `${id} native ${f}`);
}

/** The timed conformance run: its command, phases, each device's parts and the memory of its processes, against the bench's own figures. */
function expectConformanceRun(res: BenchJson, r: Ran): void {
  const k = res.conformance;
  expect(k.command).toEqual(expect.arrayContaining(['--size', '8']));
  expect(k.command).not.toContain('--device'); // a default run: every device the command finds
  expect(k.exitCode).toEqual(expect.any(Number)); // the HIP double's rocm724 profile fails checks: not the bench's business
  expectPositive(k.wallMs, 'wall');
  expectPositive(k.phasesMs.discovery, 'discovery');
  expectPositive(k.phasesMs.checks, 'checks');
  expect(k.phasesMs.reports).toBeGreaterThanOrEqual(0);
  for (const id of ['cuda:0', 'hip:0']) {
    const d = k.devices.find((x: { id: string }) => x.id === id);
    expect(d, id).toBeDefined();
    for (const f of ['scratchFileMs', 'probeMs', 'registrationMs', 'probeCheckMs', 'hazardsMs', 'checksMs']) expectPositive(d[f], `${id} ${f}`);
    expect(d.hazardChecks).toBeGreaterThan(0);
    expect(d.registrationMs).toBeLessThan(d.probeMs); // a part of the self-test
    // the wait for the OpenCL, Vulkan and CPU group's process, where it was still there when the GPU was told to go
    if (d.discoveryWaitMs !== undefined) {
      expect(d.discoveryWaitMs).toBeGreaterThanOrEqual(0);
      expect(d.discoveryWaitMs).toBeLessThanOrEqual(d.probeMs); // a part of the self-test
      expect(r.stdout).toMatch(/^ +of which the wait for the discovery beside it +\d+$/m);
    }
    expectPositive(d.registeredGBps, `${id} the suite's registered GB/s`);
    expectPositive(d.stagedGBps, `${id} the suite's staged GB/s`);
    expect(d.nativeRatio).toBeCloseTo(d.registeredGBps / res.devices.find((x: { id: string }) => x.id === id).native.registeredGBps, 9);
    expect(d.timingMs.margin).toBeGreaterThanOrEqual(0);
    expect(d.timingMs.total).toBeGreaterThanOrEqual(0);
  }
  expectPositive(k.memory.command.peakKiB, 'command peak');
  const runners = k.memory.runners as { device?: string; peakKiB: number; targetMiB: number; withinTarget: boolean; rssAnonMaxKiB?: number }[];
  expect(runners.map((p) => p.device)).toEqual(expect.arrayContaining(['cuda:0', 'hip:0', 'cpu']));
  const run = k.memory.run as { pssKiB: number; rssSumKiB: number; targetMiB: number; withinTarget: boolean; processes: { pid: number; role: string; pssKiB: number; pssAnonKiB?: number; pssFileKiB?: number; pssShmemKiB?: number }[] };
  expectPositive(run.pssKiB, 'whole run PSS');
  expect(run.rssSumKiB).toBeGreaterThanOrEqual(run.pssKiB);
  expect(run.processes.map((p) => p.role)).toContain('command');
  expect(run.pssKiB).toBe(run.processes.reduce((a, p) => a + p.pssKiB, 0));
  expect(run.targetMiB).toBe(8 + 256);
  // each process's PSS by kind where the kernel splits it (Linux 5.9 on): the parts add up to its PSS, to a kB each
  for (const p of run.processes) {
    if (p.pssAnonKiB === undefined) continue;
    expect(Math.abs(p.pssAnonKiB + p.pssFileKiB! + p.pssShmemKiB! - p.pssKiB)).toBeLessThanOrEqual(3);
    const mib = (kib: number): string => (kib / 1024).toFixed(0);
    expect(r.stdout).toContain(`, pid ${p.pid}: anon ${mib(p.pssAnonKiB)}, file ${mib(p.pssFileKiB!)}, shmem ${mib(p.pssShmemKiB!)} MiB PSS`);
  }
  expect(r.stdout).toMatch(/the whole run at its fullest: \d+ MiB PSS/);
  expect(r.stdout).toMatch(/the whole run: \d+ ms; target with a GPU: <= 2000 ms: (within|OVER)$/m);
  expect(r.stdout).toMatch(/cuda:0: the suite reported registered [\d.]+ GB\/s, staged [\d.]+ GB\/s: [\d.]+ of the native reference's registered copy in this run/);
  for (const p of runners) {
    expectPositive(p.peakKiB, `runner ${p.device}`);
    expect(p.targetMiB).toBe(2 * 8 + 48);
    expect(typeof p.withinTarget).toBe('boolean');
    expect(p.rssAnonMaxKiB).toBeGreaterThan(0);
  }
  expectPositive(res.nodeStart.medianMs, 'node -e 0');
  expectPositive(res.runOverNodeStart, 'run / node -e 0');
}

function expectEveryMeasurementFilled(res: BenchJson): void {
  // each measurement (bench/measurements/) filled the field its key names, on both devices
  // (the keys and the figure each must hold, written here: a measurement added or gone fails the first line)
  const figures: Record<string, string> = {
    'copies.pageable': 'medianGBps',
    'copies.staged': 'medianGBps',
    'copies.pageLocked': 'medianGBps',
    'copies.registered': 'medianGBps',
    'copies.stagedHalf': 'medianGBps',
    driverCall: 'medianUs',
    link: 'gbps',
    native: 'registeredGBps',
    'registration.cold': 'registerMsPerGiB.best',
    'registration.warm': 'registerMsPerGiB.best',
  };
  expect(Object.values(MEASUREMENTS).flat().map((m) => m.key).sort()).toEqual(Object.keys(figures).sort());
  const at = (x: unknown, path: string): unknown => path.split('.').reduce((o, k) => (o as Record<string, unknown> | undefined)?.[k], x);
  expect(res.devices).toHaveLength(2);
  for (const d of res.devices) {
    for (const [key, figure] of Object.entries(figures)) {
      const m = at(d, key) as { error?: unknown } | undefined;
      // the double's made-up PCI bus id has no sysfs link: the link measurement says why instead of a figure
      if (key === 'link' && typeof m?.error === 'string') {
        expect(m.error, `${d.id} link`).not.toBe('');
        continue;
      }
      expectPositive(at(m, figure) as number, `${d.id} ${key}.${figure}`);
    }
  }
}

function expectTextSaysFigures(res: BenchJson, r: Ran): void {
  // the text says the JSON's figures: each device's section, its lines as written here, the figures rounded as
  // the text shows them (never the bench's own renderer as the oracle)
  const esc = (x: string): string => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const d of res.devices) {
    const section = r.stdout.split('\n\n').find((b: string) => b.startsWith(`${d.id}  ${d.name}  [`));
    expect(section, d.id).toBeDefined();
    const copyLine = (label: string, c: { bestGBps: number; medianGBps: number; bytes: number }) =>
      new RegExp(`^  ${esc(label)} +${c.bytes / 1048576} +${c.bestGBps.toFixed(2)} +${c.medianGBps.toFixed(2)}(  what the probe times)?$`, 'm');
    expect(section, `${d.id} registered`).toMatch(copyLine(d.copies.registered.label, d.copies.registered));
    expect(d.copies.registered.label).toMatch(/^registered/);
    for (const k of ['staged', 'pageLocked', 'pageable', 'stagedHalf']) expect(section, `${d.id} ${k}`).toMatch(copyLine(d.copies[k].label, d.copies[k]));
    const ms = (x: { best: number; median: number }): string => `${x.best.toFixed(1)} / ${x.median.toFixed(1)}`;
    expect(section, `${d.id} warm`).toMatch(new RegExp(`^  warm page cache +${esc(ms(d.registration.warm.registerMsPerGiB))} +${esc(ms(d.registration.warm.unregisterMsPerGiB))} +${esc(ms(d.registration.warm.totalMsPerGiB))}$`, 'm'));
    expect(section, `${d.id} driver call`).toContain(`: ${d.driverCall.call} ${d.driverCall.meanUs.toFixed(3)} us (tinybench mean; median ${d.driverCall.medianUs.toFixed(3)} us)`);
    expect(section, `${d.id} native`).toContain(`: registered ${d.native.registeredGBps.toFixed(2)} GB/s`);
  }
}

/** The fields of --scale 1,2,4 over two GPUs and of --against (one round), and their lines in the text. */
function expectScalingAndRepeats(res: BenchJson, r: Ran): void {
  expect(res.errors).toEqual(['scaling: only 2 GPU(s) found: no run over 4']);
  expect(res.options).toMatchObject({ repeat: 1, against: join(root, 'dist', 'cli', 'main.js'), scale: [1, 2, 4] });
  const s = res.scaling;
  expect(s.runs.map((x: { gpus: number }) => x.gpus)).toEqual([1, 2]);
  for (const run of s.runs) {
    expect(run.exitCode).toBe(0);
    expectPositive(run.wallMs, `${run.gpus} GPUs wall`);
    expectPositive(run.peakPssKiB, `${run.gpus} GPUs PSS`);
    expectPositive(run.phasesMs.checks, `${run.gpus} GPUs checks`);
    expect(Object.keys(run.registeredGBps).sort()).toEqual(['cuda:0', 'cuda:1'].slice(0, run.gpus));
  }
  expect(Object.keys(s.alone).sort()).toEqual(['cuda:0', 'cuda:1']);
  // cuda:0 alone is the run over one GPU; cuda:1 in a run of its own (the progress on stderr names each command)
  expect(s.alone['cuda:0']).toBe(s.runs[0].registeredGBps['cuda:0']);
  expect(r.stderr).not.toMatch(/scaling: cuda:0 alone/);
  expect(r.stderr).toMatch(/^scaling: cuda:1 alone: node dist\/cli\/main\.js .*--device cuda:1$/m);
  for (const g of Object.values(s.alone)) expectPositive(g, 'alone');
  expect(s.mostOverOne).toBeCloseTo(s.runs[1].wallMs / s.runs[0].wallMs, 9);
  const deviation = Math.max(...['cuda:0', 'cuda:1'].map((id) => Math.abs(s.runs[1].registeredGBps[id] / s.alone[id] - 1)));
  expect(s.maxAloneDeviation).toBeCloseTo(deviation, 9);
  expect(s.targets).toEqual({ overOne: 1.5, aloneDeviation: 0.03 });
  expect(r.stdout).toMatch(new RegExp(`^  2 +${s.runs[1].wallMs.toFixed(0)} `, 'm'));
  expect(r.stdout).toContain(`the most GPUs over one: ${s.mostOverOne.toFixed(2)} x (target <= 1.5: `);
  // --against: this build's detailed run, then the other's
  const x = res.repeats;
  expect(x.runs.map((run: { build: string; order: number }) => [run.build, run.order])).toEqual([['this', 1], ['against', 2]]);
  expect(x.runs[0].wallMs).toBe(res.conformance.wallMs);
  expectPositive(x.runs[1].wallMs, 'against wall');
  expect(x.this.medianMs).toBe(x.runs[0].wallMs);
  expect(x.against).toMatchObject({ main: join(root, 'dist', 'cli', 'main.js'), medianMs: x.runs[1].wallMs });
  expect(r.stdout).toContain(`against: median ${x.against.medianMs.toFixed(0)} ms`);
  // the other build's command was the one run
  const other = join(root, 'dist', 'cli', 'main.js');
  expect(r.stderr).toContain(`conformance run against ${other}: node ${other} --json`);
}

describe('bench against the driver double', () => {
  it('measures every figure of a CUDA and a HIP device, the native reference and the conformance run', { timeout: 300_000 }, () => {
    const { r, json, scratch } = benchOnDoubles('double', '8');
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const res: BenchJson = JSON.parse(readFileSync(json, 'utf8'));
    expect(res.schemaVersion).toBe(1);
    expect(res.gpu.found).toBe(true);
    expect(res.errors).toEqual([]);
    expect(res.options).toMatchObject({ runs: 2, sizeMiB: 8 });
    expect(res.devices.map((d: { id: string }) => d.id)).toEqual(['cuda:0', 'hip:0']);
    for (const d of res.devices) expectDeviceFigures(d);
    expect(res.devices[0].registerFlags).toBe(0x08); // READ_ONLY: the double reports READ_ONLY_HOST_REGISTER_SUPPORTED
    expect(res.devices[0].native.raw.flags).toBe(0x08);

    expectConformanceRun(res, r);

    for (const text of ['registered (READ_ONLY)', 'staged: memcpy into page-locked + copy', 'page-locked alone', 'pageable (not registered)', 'what the probe times', 'registration, ms per GiB', 'cuDeviceGetAttribute', 'hipDeviceGetAttribute', 'native reference (', 'conformance run:', 'peak memory', 'node -e 0']) {
      expect(r.stdout).toContain(text);
    }
    expect(r.stdout).toMatch(/^cuda:0 {2}Double CUDA Device/m);
    expect(readdirSync(scratch)).toEqual([]);

    expectEveryMeasurementFilled(res);
    expectTextSaysFigures(res, r);
  });

  it('says so when there is no C compiler, and then takes --native-bin', { timeout: 300_000 }, () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const env = { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, CC: join(work, 'no-such-cc') };
    const args = ['--size', '4', '--runs', '1', '--scratch-dir', scratch, '--device', 'cuda:0', '--no-drop-caches'];
    const json = join(work, 'nocc.json');
    const r = bench([...args, '--json', json], env);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const res = JSON.parse(readFileSync(json, 'utf8'));
    expect(res.devices[0].native).toMatchObject({ status: 'no-compiler', message: expect.stringMatching(/no C compiler/) });
    expect(r.stdout).toMatch(/native reference: no-compiler: no C compiler/);
    expect(res.devices[0].registration.cold.eviction.methods).toEqual(['posix_fadvise(DONTNEED)']);
    expect(res.conformance.command).toEqual(expect.arrayContaining(['--device', 'cuda:0']));
    expect(res.conformance.command).not.toContain('hip:0');

    const bin = join(work, 'staged');
    cc(['-O2', '-o', bin, join(root, 'bench', 'native', 'staged.c'), '-ldl']);
    const json2 = join(work, 'nativebin.json');
    // two GPUs of the double: the scaling runs over 1 and 2, each alone; and a run of another build (this one's own
    // dist/, as the lead's old build would be) after the detailed run
    const r2 = bench([...args, '--json', json2, '--native-bin', bin, '--scale', '1,2,4', '--against', root], { ...env, MAPPED_REG_DOUBLE_DEVICES: '2' });
    // 4 GPUs asked of 2 found: said, not run
    expect(r2.code, r2.stderr + r2.stdout).toBe(1);
    const res2 = JSON.parse(readFileSync(json2, 'utf8'));
    const native = res2.devices[0].native;
    expect(native.status).toBe('ran');
    expect(native.binary.how).toMatch(/--native-bin/);
    expectPositive(native.registeredGBps, 'native registered');
    expectScalingAndRepeats(res2, r2);
  });
});

describe('bench with no GPU', () => {
  it('says no CUDA/HIP device was found, and still times the conformance run and node -e 0', { timeout: 300_000 }, () => {
    const { r, json, scratch } = benchOnDoubles('nogpu', '4', { MAPPED_REG_DOUBLE_PROFILE: 'nodevice' });
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toMatch(/no CUDA\/HIP device was found/);
    expect(r.stdout).not.toMatch(/target with a GPU/);
    expect(r.stdout).toMatch(/target with no GPU: <= 10: (within|OVER)/);
    const res = JSON.parse(readFileSync(json, 'utf8'));
    expect(res.gpu.found).toBe(false);
    expect(res.gpu.message).toMatch(/no CUDA device here/);
    expect(res.devices).toEqual([]);
    expect(res.errors).toEqual([]);
    expect(res.conformance.exitCode).toBe(0);
    expect(res.conformance.command).not.toContain('--device');
    expectPositive(res.conformance.wallMs, 'wall');
    expectPositive(res.conformance.phasesMs.checks, 'checks');
    expect(res.conformance.devices.map((d: { id: string }) => d.id)).toContain('cpu');
    expectPositive(res.nodeStart.medianMs, 'node -e 0');
    expectPositive(res.runOverNodeStart, 'ratio');
    expect(res.targets.noGpuRunOverNodeStart).toBe(10);
    expect(res.targets.gpuRunWallMs).toBe(2000);
    expect(res.conformance.memory.runners.map((p: { device?: string }) => p.device)).toContain('cpu');
    expect(readdirSync(scratch)).toEqual([]);
  });
});

describe('bench usage', () => {
  it('refuses bad options and unknown devices with exit 2 and one line', () => {
    for (const bad of [['--scale', '0'], ['--scale', '2,1'], ['--scale', '1,x'], ['--repeat', '0'], ['--against', work]]) {
      const r = bench(bad);
      expect([r.code, r.stderr.trim().split('\n').length], bad.join(' ')).toEqual([2, 1]);
    }
    for (const args of [['--runs', '0'], ['--size', 'x'], ['--bogus'], ['--scratch-dir', join(work, 'nowhere')]]) {
      const r = bench(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    const r = bench(['--device', 'cuda:7', '--scratch-dir', work], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown device cuda:7 .*cuda:0/);
    const help = bench(['--help']);
    expect(help.code).toBe(0);
    for (const o of ['--runs', '--size', '--scratch-dir', '--device', '--json', '--native-bin', '--repeat', '--against', '--scale']) expect(help.stdout).toContain(o);
  });
});

describe('the native reference (bench/native/staged.c) against the double', () => {
  it('builds, and prints its lines, or one JSON object with --json, for CUDA and HIP', () => {
    const bin = join(work, 'staged-direct');
    cc(['-O2', '-Wall', '-Werror', '-o', bin, join(root, 'bench', 'native', 'staged.c'), '-ldl']);
    const file = join(work, 'native.bin');
    writeFileSync(file, Buffer.alloc(4 << 20, 7));
    const run = (args: string[], env: Record<string, string>) => execFileSync(bin, args, { encoding: 'utf8', env: { ...process.env, ...env } });
    const text = run([file, '4', '2'], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda });
    const lines = text.trim().split('\n');
    expect(lines).toHaveLength(6);
    for (const l of lines) expect(l).toMatch(/^.{34} +\d+\.\d\d GB\/s {2}\(best of 2, 4 MiB\)$/);
    expect(text).toMatch(/^registered \(READ_ONLY\) /m);
    for (const [api, env] of [['cuda', { MAPPED_REG_CUDA_LIBRARY: doubles.cuda }], ['hip', { MAPPED_REG_HIP_LIBRARY: doubles.hip }]] as const) {
      const j = JSON.parse(run(['--json', '--api', api, file, '4', '3'], env));
      expect(j).toMatchObject({ api: api.toUpperCase(), device: 0, bytes: 4 << 20, runs: 3, flags: api === 'cuda' ? 8 : 0 });
      expect(Object.keys(j.results)).toEqual(['pageable', 'staged', 'memcpy', 'pageLocked', 'registered', 'stagedSourceRegistered']);
      for (const v of Object.values(j.results) as { bestS: number; medianS: number; gbps: number }[]) {
        expect(v.bestS).toBeGreaterThan(0);
        expect(v.medianS).toBeGreaterThanOrEqual(v.bestS);
        expect(v.gbps).toBeGreaterThan(0);
      }
    }
    const bad = spawnSync(bin, ['--api', 'opencl', file, '4']);
    expect(bad.status).toBe(2);
    const noDriver = spawnSync(bin, [file, '4'], { env: { ...process.env, MAPPED_REG_CUDA_LIBRARY: join(work, 'no-such.so') }, encoding: 'utf8' });
    expect(noDriver.status).toBe(1);
  });
});

describe('TreeSampler (bench/proc.ts)', () => {
  it('records the peak memory of a process and of its children, by role', async () => {
    // the grandchild holds its 96 MiB until told to go, and the test samples once it says it holds them: no sample
    // depends on a timer firing in time on a busy machine
    const ready = join(work, 'sampler-ready');
    const go = join(work, 'sampler-go');
    const script = `const fs = require('fs'); const b = Buffer.alloc(96 << 20, 1); fs.writeFileSync(${JSON.stringify(ready)}, ''); const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(go)})) { clearInterval(t); process.exit(b[0] - 1); } }, 5);`;
    const child = spawn(process.execPath, ['-e', `require('child_process').spawnSync(process.execPath, ['-e', ${JSON.stringify(script)}], { stdio: 'inherit' }); process.exit(0);`], { stdio: 'ignore' });
    const exited = new Promise((done) => child.on('exit', done));
    const sampler = new TreeSampler(child.pid!, 10);
    while (!existsSync(ready)) await new Promise((r) => setTimeout(r, 5));
    sampler.sample();
    writeFileSync(go, '');
    await exited;
    const { processes, walks, tree } = sampler.stop();
    expect(walks).toBeGreaterThanOrEqual(2); // at the start, and the one above
    expect(processes[0]).toMatchObject({ pid: child.pid, role: 'command' });
    const grandchild = processes.find((p) => p.ppid !== undefined && p.pid !== child.pid && p.command.includes('Buffer.alloc'));
    expect(grandchild, JSON.stringify(processes)).toBeDefined();
    expect(grandchild!.role).toBe('other');
    expect(grandchild!.peakKiB / 1024).toBeGreaterThan(96);
    expect(grandchild!.rssAnonMaxKiB! / 1024).toBeGreaterThan(96); // a filled Buffer is anonymous memory
    expect(grandchild!.rssFileMaxKiB).toBeGreaterThan(0); // the node binary's pages at least
    // the run at its fullest (the walk above, with the 96 MiB held): the grandchild's PSS, and its anonymous part
    const held = tree!.processes.find((p) => p.pid === grandchild!.pid)!;
    expect(held.pssKiB / 1024).toBeGreaterThan(96);
    if (readFileSync('/proc/self/smaps_rollup', 'utf8').includes('Pss_Anon:')) {
      expect(held.pssAnonKiB! / 1024).toBeGreaterThan(96);
      expect(held.pssAnonKiB! + held.pssFileKiB! + held.pssShmemKiB!).toBeLessThanOrEqual(held.pssKiB + 3);
    }
  });

  it('pssParts reads Pss and its anonymous, file and shared-memory parts from smaps_rollup, and no part an older kernel lacks', () => {
    const rollup = ['00400000-7ffd0000 ---p 00000000 00:00 0    [rollup]', 'Rss:              620000 kB', 'Pss:              597000 kB', 'Pss_Dirty:         10000 kB', 'Pss_Anon:          311000 kB', 'Pss_File:          150000 kB', 'Pss_Shmem:         136000 kB', 'Shared_Clean:       9000 kB'].join('\n');
    expect(pssParts(rollup)).toEqual({ pssKiB: 597000, pssAnonKiB: 311000, pssFileKiB: 150000, pssShmemKiB: 136000 });
    expect(pssParts('Rss:  620000 kB\nPss:  597000 kB\n')).toEqual({ pssKiB: 597000 });
    expect(pssParts('Rss:  620000 kB\n')).toBeUndefined();
  });
});

describe("a device's figures from the command's results (bench/conformance.ts deviceFigures)", () => {
  const device = (scratch: DeviceResult['scratch'] | undefined): DeviceResult =>
    ({ id: 'cuda:0', checks: [{ id: 'probe.verdict', durationMs: 90, data: { verdict: { kind: 'Usable' }, phasesMs: { scratchFile: 3, registration: 1.5, probe: 80 } } }], ...(scratch ? { scratch } : {}) }) as unknown as DeviceResult;

  it("the self-test's wait for the discovery beside it, where the results have one; none where they have none", () => {
    expect(deviceFigures(device({ dir: '/s', fsType: 'ext4', discoveryWaitMs: 42 }))).toMatchObject({ probeMs: 80, registrationMs: 1.5, scratchFileMs: 3, probeCheckMs: 90, discoveryWaitMs: 42 });
    expect(deviceFigures(device({ dir: '/s', fsType: 'ext4' })).discoveryWaitMs).toBeUndefined();
    expect(deviceFigures(device(undefined)).discoveryWaitMs).toBeUndefined();
  });
});
