// `runtimes` (docs/runtimes.md): user-space runtimes found under a fake tree (the HIP double built as several runtimes
// of their own versions: the runtime in use 6.4.0, an honest 7.3.0 under /opt/rocm-7.3.0 and the /opt/rocm link,
// ROCm 7.2.4's lies under /opt/rocm-7.2.4, one under /opt/rocm-7.1.0 whose dependency is missing; the CUDA double
// and a compat copy whose cuInit returns 803), each run in processes of its own, the matrix, its exit status,
// its JUnit, and history add of the matrix.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { buildDoubles, buildRuntimeDoubles, type DoublePaths, type RuntimeDoublePaths } from './double/build.js';
import { cleanEnv, MAIN, NO_HAZARDS, ROOT } from './support/command.js';
import { diskTempDir } from './support/temp-dir.js';
import { validateJunit } from './support/junit-xsd.js';
import { parseXml, allElements } from './support/xml.js';
import { matrixExitStatus, matrixHeadline, type RuntimeMatrix, runtimeMatrix } from '../results/runtime-matrix.js';
import { matrixHtml } from '../reporters/runtime-matrix.js';
import { compareReleases, whyNotStarted } from '../results/runtime.js';
import type { RunResult } from '../results/types.js';

/** Several whole runs of the double, one after the other, on a loaded 2-core machine. */
const SLOW = 240_000;

let work: string;
let root: string;
let doubles: DoublePaths;
let runtimes: RuntimeDoublePaths;

function place(file: string, dest: string, links: string[] = []): void {
  mkdirSync(join(dest, '..'), { recursive: true });
  copyFileSync(file, dest);
  for (const l of links) symlinkSync(dest, l);
}

beforeAll(() => {
  doubles = buildDoubles();
  runtimes = buildRuntimeDoubles();
  work = diskTempDir('mapped-reg-runtimes-');
  root = join(work, 'root');
  const opt = join(root, 'opt');
  place(runtimes.hip724, join(opt, 'rocm-7.2.4', 'lib', 'libamdhip64.so.7'), [join(opt, 'rocm-7.2.4', 'lib', 'libamdhip64.so')]);
  place(runtimes.hipFixed, join(opt, 'rocm-7.3.0', 'lib', 'libamdhip64.so'));
  symlinkSync(join(opt, 'rocm-7.3.0'), join(opt, 'rocm'));
  place(runtimes.hipBroken, join(opt, 'rocm-7.1.0', 'lib', 'libamdhip64.so'));
  const compat = join(root, 'usr', 'local', 'cuda-13.0', 'compat');
  place(runtimes.cudaCompat, join(compat, 'libcuda.so.580.95.05'), [join(compat, 'libcuda.so.1')]);
  // the runtimes in use: what the default search would load (here, the variables name them)
  place(runtimes.hipOld, join(work, 'system', 'libamdhip64.so.6'));
  // the kernel module's version, as /sys/module/nvidia/version gives it
  mkdirSync(join(work, 'sys', 'module', 'nvidia'), { recursive: true });
  writeFileSync(join(work, 'sys', 'module', 'nvidia', 'version'), '580.159.04\n');
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const systemHip = (): string => join(work, 'system', 'libamdhip64.so.6');

/**
 * The doubles' copies at set rates: on the device's clock they then read the double's model, whatever the host's
 * load (without a rate its clock reads the double's memcpy, which a loaded host moves: a quiet candidate was once
 * called too noisy to judge beside a parallel test run).
 */
const PACED = { MAPPED_REG_DOUBLE_RATES: 'registered=2,pinned=2,pageable=0.5' };

function cli(args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv({ ...PACED, ...env }), encoding: 'utf8', cwd: work, maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const readMatrix = (out: string): RuntimeMatrix => JSON.parse(readFileSync(join(out, 'runtime-matrix.json'), 'utf8')) as RuntimeMatrix;

describe('finding the runtimes', () => {
  it('lists the system runtime, each /opt/rocm* once (the /opt/rocm link is rocm-7.3.0), the compat libcuda, with versions read from each library', () => {
    const r = cli(['runtimes', '--list', '--runtime-root', root], { MAPPED_REG_HIP_LIBRARY: systemHip(), MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_SYSFS_ROOT: join(work, 'sys') });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(6);
    expect(lines.find((l) => l.startsWith('system (CUDA 13.0)'))).toMatch(/system\s+.*libcuda_double\.so\s+starts, 1 device$/);
    expect(lines.find((l) => l.startsWith('system (HIP 6.4.0)'))).toMatch(/starts, 1 device$/);
    expect(lines.find((l) => l.startsWith('rocm-7.2.4 (HIP 7.2.4)'))).toMatch(/installed\s+.*opt\/rocm-7\.2\.4\/lib\/libamdhip64\.so\s+starts, 1 device$/);
    expect(lines.find((l) => l.startsWith('rocm-7.3.0 (HIP 7.3.0)'))).toMatch(/starts, 1 device$/);
    expect(lines.find((l) => l.startsWith('rocm-7.1.0'))).toMatch(/did not load: .*libhsa-runtime64\.so\.1/);
    expect(lines.find((l) => l.startsWith('cuda-13.0-compat (CUDA 13.0)'))).toMatch(
      /did not start: .*803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH.*: this user-space driver is release 580\.95\.05, the kernel module 580\.159\.04: a compat driver older than the kernel module never runs over it/,
    );
    // list --runtimes says the same
    const l = cli(['list', '--runtimes', '--runtime-root', root, '--backend', 'hip'], { MAPPED_REG_HIP_LIBRARY: systemHip() });
    expect(l.code, l.stderr).toBe(0);
    expect(l.stdout.trimEnd().split('\n').map((x) => x.split(' ')[0])).toEqual(['system', 'rocm-7.1.0', 'rocm-7.2.4', 'rocm-7.3.0']);
  });

  it('a runtime named with --runtime is found too; one not there, or not a runtime by its name, is bad input (exit 2)', () => {
    const named = cli(['runtimes', '--list', '--backend', 'hip', '--runtime-root', join(work, 'none'), '--runtime', runtimes.hipFixed], { MAPPED_REG_HIP_LIBRARY: systemHip() });
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toMatch(/libamdhip64_runtime_7\.3\.0\.so \(HIP 7\.3\.0\)\s+named/);
    const missing = cli(['runtimes', '--list', '--runtime', join(work, 'libamdhip64.so.9')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^mapped-reg-conformance: --runtime .*libamdhip64\.so\.9: no such file\n$/);
    const wrong = cli(['runtimes', '--list', '--runtime', join(work, 'root', 'opt')]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/not a runtime's library by its name/);
    const backend = cli(['runtimes', '--list', '--backend', 'opencl']);
    expect(backend.code).toBe(2);
    expect(backend.stderr).toMatch(/--backend opencl: a runtime is of cuda or hip/);
  });

  it('bad input before anything runs: no --out; a baseline runtime that does not start (no folder made)', () => {
    const noOut = cli(['runtimes', '--backend', 'hip', '--runtime-root', root], { MAPPED_REG_HIP_LIBRARY: systemHip() });
    expect(noOut.code).toBe(2);
    expect(noOut.stderr).toMatch(/--out DIR is needed/);
    const out = join(work, 'never');
    const broken = cli(['runtimes', '--backend', 'hip', '--runtime-root', root, '--out', out, '--baseline-runtime', join(root, 'opt', 'rocm-7.1.0', 'lib', 'libamdhip64.so')], { MAPPED_REG_HIP_LIBRARY: systemHip() });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/^mapped-reg-conformance: runtimes: the baseline runtime rocm-7\.1\.0 .* does not start: did not load: .*libhsa-runtime64/);
    expect(existsSync(out)).toBe(false);
    const other = cli(['runtimes', '--backend', 'hip', '--runtime-root', root, '--out', out, '--baseline-runtime', join(root, 'usr', 'local', 'cuda-13.0', 'compat', 'libcuda.so.1')], { MAPPED_REG_HIP_LIBRARY: systemHip() });
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/^mapped-reg-conformance: --baseline-runtime .*libcuda\.so\.1: not a runtime of hip \(--backend\)\n$/);
    expect(existsSync(out)).toBe(false);
  });

  it("why a runtime did not start: a compat driver older or newer than the kernel module, or neither known", () => {
    const p = { backend: 'cuda' as const, library: 'x', loaded: true, started: false, code: 803 };
    expect(whyNotStarted({ ...p, release: '580.95.05', kernelModule: '580.159.04' })).toMatch(/older than the kernel module never runs over it/);
    expect(whyNotStarted({ ...p, release: '590.10', kernelModule: '580.159.04' })).toMatch(/is refused for this GPU or branch/);
    expect(whyNotStarted({ ...p })).toMatch(/not of the kernel module's release/);
    expect(whyNotStarted({ ...p, code: 999 })).toBeUndefined();
    expect(whyNotStarted({ ...p, started: true })).toBeUndefined();
    expect(compareReleases('580.95.05', '580.159.04')).toBe(-1);
    expect(compareReleases('580.159.04', '580.159.04')).toBe(0);
    expect(compareReleases('13.1', '13.0.9')).toBe(1);
    expect(compareReleases('a', '1')).toBeUndefined();
  });
});

describe('the matrix of each row kind (results/runtime-matrix.ts)', () => {
  const fixture = (): RunResult => JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'cuda.json'), 'utf8')) as RunResult;
  const probe = { backend: 'cuda' as const, library: '/x/libcuda.so.1', loaded: true, started: true, devices: 1, version: '13.0' };
  const record = (label: string, role: 'baseline' | 'candidate') => ({ backend: 'cuda' as const, label, path: `/${label}/libcuda.so.1`, version: '13.0', role, ...(role === 'candidate' ? { baseline: 'system' } : {}) });
  const passing = { pass: true, headline: 'PASS', maxDrop: 0.1, requires: [], reasons: [], notes: [], missing: [], counts: {} } as unknown as NonNullable<RunResult['gate']>;

  it('a device row, a runtime that found no device, one whose run wrote no results, one that did not start; the decision of each', () => {
    const base = fixture();
    const none = { ...fixture(), devices: [], backends: [{ backend: 'cuda' as const, library: '/none/libcuda.so.1', devices: 0, note: 'CUDA: no CUDA device here: cuInit returned 100 CUDA_ERROR_NO_DEVICE' }], gate: { ...passing, pass: false, reasons: [{ kind: 'missing' as const, text: 'cuda:0 missing' }] } };
    const m = runtimeMatrix([
      { runtime: record('system', 'baseline'), probe, file: 'system.json', result: base, exitCode: 0 },
      { runtime: record('none', 'candidate'), probe: { ...probe, devices: 0 }, file: 'none.json', result: none, exitCode: 1 },
      { runtime: record('lost', 'candidate'), probe, exitCode: 2, problem: '--scratch-dir /x: no space' },
      { runtime: record('old', 'candidate'), probe: { ...probe, started: false, reason: 'did not start: CUDA: cuInit failed: 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH', code: 803 }, exitCode: 1 },
      { runtime: record('good', 'candidate'), probe, file: 'good.json', result: { ...fixture(), gate: passing }, exitCode: 0 },
    ]);
    expect(m.rows.map((r) => [r.runtime, r.kind])).toEqual([
      ['system', 'device'],
      ['none', 'no-device'],
      ['lost', 'not-run'],
      ['old', 'not-started'],
      ['good', 'device'],
    ]);
    expect(m.rows[0]).toMatchObject({ verdict: 'Usable', device: { id: 'cuda:0' }, notPassed: [] });
    expect(m.rows[0]!.registeredGBps).toBe(base.devices[0]!.timing!.registeredGBps);
    expect(m.rows[1]!.reason).toMatch(/CUDA_ERROR_NO_DEVICE/);
    expect(m.rows[2]!.reason).toBe('--scratch-dir /x: no space');
    expect(m.rows[3]!.reason).toMatch(/803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: this user-space driver is not of the kernel module's release/);
    expect(m.regressed).toEqual(['none', 'lost', 'old']);
    expect(m.candidates.find((c) => c.runtime === 'none')!.reasons).toEqual(['cuda:0 missing']);
    expect(m.runs.map((r) => r.file)).toEqual(['system.json', 'none.json', 'good.json']);
    expect(matrixExitStatus(m)).toBe(1);
    expect(matrixHeadline(m)).toBe('FAIL: 3 candidate runtimes regressed against the baseline: none, lost, old');
    const alone = runtimeMatrix([{ runtime: record('system', 'baseline'), probe, file: 'system.json', result: base, exitCode: 0 }, { runtime: record('good', 'candidate'), probe, file: 'good.json', result: { ...fixture(), gate: passing }, exitCode: 0 }]);
    expect(matrixExitStatus(alone)).toBe(0);
    expect(matrixHeadline(runtimeMatrix([{ runtime: record('system', 'baseline'), probe, result: base }]))).toBe('PASS: no candidate runtime beside the baseline');
    // the HTML page escapes what it shows
    const page = matrixHtml(runtimeMatrix([{ runtime: { ...record('<b>x</b>', 'candidate') }, probe: { ...probe, loaded: false, started: false, reason: 'did not load: <script>' } }]));
    expect(page).not.toContain('<script>');
    expect(page).toContain('&lt;b&gt;x&lt;/b&gt;');
  });
});

describe('runtimes --help and docs/runtimes.md agree', () => {
  it('every option runtimes --help shows is in docs/runtimes.md, and the page names the exit statuses the command gives', () => {
    const r = cli(['runtimes', '--help']);
    expect(r.code).toBe(0);
    const page = readFileSync(join(ROOT, 'docs', 'runtimes.md'), 'utf8');
    const shown = [...new Set(r.stdout.match(/--[a-z][a-z-]+/g) ?? [])].filter((o) => o !== '--help' && o !== '--version' && o !== '--baseline');
    expect(shown).toEqual(expect.arrayContaining(['--list', '--backend', '--runtime', '--baseline-runtime', '--runtime-root', '--out', '--junit', '--html', '--size']));
    for (const option of shown) expect(page, option).toContain(`\`${option}`);
    expect(page.replace(/\s+/g, ' ')).toContain('The exit status: 0 when every candidate is at least as good as its baseline, 1 when one is not, or did not load or start');
    expect(cli(['--help']).stdout.replace(/\s+/g, ' ')).toContain('runtimes: 0 every candidate runtime is at least as good as its baseline, 1 one regressed (or did not load or start), 2 bad input (docs/runtimes.md).');
  });
});

describe('the runtimes side by side', () => {
  it('three HIP runtimes beside the one in use: the lies in the 7.2.4 row, 7.3.0 as good, 7.1.0 a row that did not load; exit 1 naming both; JUnit; history holds three driver versions', async () => {
    const out = join(work, 'hip');
    const junit = join(work, 'hip.xml');
    const html = join(work, 'hip.html');
    const r = cli(['runtimes', '--backend', 'hip', '--runtime-root', root, '--out', out, '--junit', junit, '--html', html, '--size', '8', '--skip', 'timing.*'], { MAPPED_REG_HIP_LIBRARY: systemHip() });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(1);
    const m = readMatrix(out);
    expect(m.baselines).toEqual([{ backend: 'hip', runtime: 'system' }]);
    expect(m.regressed).toEqual(['rocm-7.1.0', 'rocm-7.2.4']);
    const row = (label: string) => m.rows.filter((x) => x.runtime === label);
    expect(row('system')).toHaveLength(1);
    expect(row('system')[0]).toMatchObject({ kind: 'device', version: '6.4.0', role: 'baseline', notPassed: [] });
    expect(row('rocm-7.3.0')[0]).toMatchObject({ kind: 'device', version: '7.3.0', notPassed: [] });
    const lying = row('rocm-7.2.4')[0]!;
    expect(lying.kind).toBe('device');
    // ROCm 7.2.4's lies, each a check that did not pass in its row alone
    for (const lie of ['hazard.prot_none_refused', 'hazard.overlap_refused', 'hazard.tmpfs_bytes']) expect(lying.notPassed.join(' ')).toContain(lie);
    expect(row('rocm-7.1.0')[0]).toMatchObject({ kind: 'not-loaded' });
    expect(row('rocm-7.1.0')[0]!.reason).toMatch(/libhsa-runtime64\.so\.1/);
    expect(m.candidates.find((c) => c.runtime === 'rocm-7.3.0')).toMatchObject({ pass: true, baseline: 'system' });
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('FAIL: 2 candidate runtimes regressed against the baseline: rocm-7.1.0, rocm-7.2.4');
    // each runtime's results file records its runtime, and reads as any results file
    const lyingRun = JSON.parse(readFileSync(join(out, 'rocm-7.2.4.json'), 'utf8')) as RunResult;
    expect(lyingRun.runtime).toMatchObject({ label: 'rocm-7.2.4', version: '7.2.4', role: 'candidate', baseline: 'system' });
    expect(lyingRun.gate?.pass).toBe(false);
    // gated against the baseline runtime's results, as --baseline gates (not only by its own failures)
    expect(lyingRun.gate?.baseline).toBe(join(out, 'system.json'));
    expect((JSON.parse(readFileSync(join(out, 'rocm-7.3.0.json'), 'utf8')) as RunResult).gate?.headline).toMatch(/no regression against .*system\.json/);
    const compare = cli(['compare', join(out, 'system.json'), join(out, 'rocm-7.3.0.json')]);
    expect(compare.code, compare.stdout).toBe(0);
    // JUnit: valid, one testsuite per runtime and device, the runtime in its name
    const xml = readFileSync(junit, 'utf8');
    const valid = validateJunit(xml);
    expect(valid.ok, valid.output).toBe(true);
    const suites = allElements(parseXml(xml), "testsuite").map((s) => s.attrs.name);
    expect(suites.filter((s) => /^runtime rocm-7\.2\.4 \(HIP 7\.2\.4\) hip:0 /.test(s ?? ''))).toHaveLength(1);
    expect(suites.filter((s) => /^runtime rocm-7\.1\.0 \(HIP\) \[NOT-LOADED\] on ./.test(s ?? ''))).toHaveLength(1);
    expect(suites.filter((s) => /^runtimes \[FAIL\] on ./.test(s ?? ''))).toHaveLength(1);
    for (const suite of allElements(parseXml(xml), 'testsuite').filter((x) => !x.attrs.name?.startsWith('runtimes ['))) expect(suite.attrs.hostname, suite.attrs.name).toMatch(/./);
    expect(readFileSync(html, 'utf8')).toContain('FAIL: 2 candidate runtimes regressed against the baseline: rocm-7.1.0, rocm-7.2.4');
    // history add of the matrix: each runtime's run under its own driver version
    const db = join(work, 'hip.duckdb');
    const add = cli(['history', 'add', '--db', db, join(out, 'runtime-matrix.json')]);
    expect(add.code, add.stderr).toBe(0);
    const instance = await DuckDBInstance.create(db, { access_mode: 'READ_ONLY' });
    const c = await instance.connect();
    const versions = (await c.runAndReadAll('SELECT DISTINCT dver FROM devices ORDER BY dver')).getRowsJS().map((x) => x[0]);
    c.closeSync();
    instance.closeSync();
    expect(versions).toEqual(['6.4.0', '7.2.4', '7.3.0']);
    // and of the folder: the matrix file is not taken for a results file
    const again = cli(['history', 'add', '--db', join(work, 'hip2.duckdb'), out]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^added 3 runs/);
  }, SLOW);

  it('every candidate at least as good: exit 0 (the lying 7.2.4 in use, the fixed 7.3.0 the candidate)', () => {
    const fixedOnly = join(work, 'root-fixed');
    place(runtimes.hipFixed, join(fixedOnly, 'opt', 'rocm-7.3.0', 'lib', 'libamdhip64.so'));
    const out = join(work, 'better');
    const r = cli(['runtimes', '--backend', 'hip', '--runtime-root', fixedOnly, '--out', out, '--size', '8', ...NO_HAZARDS, '--skip', 'timing.*'], { MAPPED_REG_HIP_LIBRARY: runtimes.hip724 });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const m = readMatrix(out);
    expect(m.candidates).toEqual([{ runtime: 'rocm-7.3.0', backend: 'hip', baseline: 'system', pass: true, reasons: [] }]);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('PASS: every candidate runtime is at least as good as its baseline (rocm-7.3.0)');
  }, SLOW);

  it('CUDA: the system driver against its compat copy: a row that says 803 and why, exit 1 naming the compat runtime, valid JUnit', () => {
    const out = join(work, 'cuda');
    const junit = join(work, 'cuda.xml');
    const r = cli(['runtimes', '--backend', 'cuda', '--runtime-root', root, '--out', out, '--junit', junit, '--size', '8', ...NO_HAZARDS, '--skip', 'timing.*'], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_SYSFS_ROOT: join(work, 'sys') });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(1);
    const m = readMatrix(out);
    expect(m.rows.map((x) => [x.runtime, x.kind])).toEqual([
      ['system', 'device'],
      ['cuda-13.0-compat', 'not-started'],
    ]);
    expect(m.rows[1]!.reason).toMatch(/cuInit failed: 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH.*release 580\.95\.05, the kernel module 580\.159\.04/);
    expect(m.regressed).toEqual(['cuda-13.0-compat']);
    expect(m.candidates[0]!.reasons.join(' ')).toMatch(/803/);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('FAIL: 1 candidate runtime regressed against the baseline: cuda-13.0-compat');
    // its run wrote a results file all the same (the gate's driver-init reason): compare reads it
    expect((JSON.parse(readFileSync(join(out, 'cuda-13.0-compat.json'), 'utf8')) as RunResult).runtime).toMatchObject({ release: '580.95.05', kernelModule: '580.159.04' });
    const xml = readFileSync(junit, 'utf8');
    const valid = validateJunit(xml);
    expect(valid.ok, valid.output).toBe(true);
    expect(xml).toMatch(/<testsuite name="runtime cuda-13\.0-compat \(CUDA 13\.0\) \[NOT-STARTED\] on [^"]+"/);
    expect(xml).toMatch(/<failure message="[^"]*803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH/);
  }, SLOW);

  it("a check that crashes its runtime's process is an <error type=\"crash\"> in the matrix's JUnit, as in the run's own", () => {
    const out = join(work, 'crash');
    const junit = join(work, 'crash.xml');
    const empty = join(work, 'no-other-runtimes');
    mkdirSync(empty, { recursive: true });
    const r = cli(['runtimes', '--backend', 'cuda', '--runtime-root', empty, '--out', out, '--junit', junit, '--size', '8', '--check', 'probe.verdict', '--check', 'probe.release'], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_FORCE_CRASH: 'cuda:0/probe.release' });
    expect(r.code, `${r.stdout}\n${r.stderr}`).not.toBe(2);
    const xml = readFileSync(junit, 'utf8');
    const valid = validateJunit(xml);
    expect(valid.ok, valid.output).toBe(true);
    const testcase = xml.match(/<testcase [^>]*name="system cuda:0 &gt; probe\.release"[^>]*>([\s\S]*?)<\/testcase>/);
    expect(testcase, xml).not.toBeNull();
    expect(testcase![1]).toMatch(/<error [^>]*type="crash"/);
    expect(testcase![1]).not.toMatch(/<failure/);
  }, SLOW);

  it('scripts/h200/runtimes.sh over the double (the system CUDA double, the compat copy in the fake tree): every expectation held, exit 0', () => {
    const out = join(work, 'script');
    const r = spawnSync('bash', [join(ROOT, 'scripts', 'h200', 'runtimes.sh'), out, '--size', '8', ...NO_HAZARDS, '--skip', 'timing.*'], {
      env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_SYSFS_ROOT: join(work, 'sys'), MAPPED_REG_RUNTIMES_ROOT: root, MAPPED_REG_RUNTIMES_COMPAT: join(root, 'usr', 'local', 'cuda-13.0', 'compat', 'libcuda.so.1') }),
      encoding: 'utf8',
      cwd: work,
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const table = readFileSync(join(out, 'runtimes.txt'), 'utf8');
    expect(table).toMatch(/^held {4}exit 1 \(was 1\)$/m);
    expect(table).toMatch(/^held {4}compat: did not start: .*803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH/m);
    expect(table).toMatch(/^held {4}regressed: cuda-13\.0-compat$/m);
    expect(table).toMatch(/^0 expectation\(s\) failed$/m);
    // and it fails when the compat runtime starts after all (the system's library named as the compat one)
    const wrong = spawnSync('bash', [join(ROOT, 'scripts', 'h200', 'runtimes.sh'), join(work, 'script-wrong'), '--size', '8', ...NO_HAZARDS, '--skip', 'timing.*'], {
      env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_RUNTIMES_ROOT: join(work, 'none'), MAPPED_REG_RUNTIMES_COMPAT: runtimes.hipFixed.replace('libamdhip64_runtime_7.3.0.so', 'libcuda_double.so') }),
      encoding: 'utf8',
      cwd: work,
    });
    expect(wrong.status).toBe(1);
    expect(readFileSync(join(work, 'script-wrong', 'runtimes.txt'), 'utf8')).toMatch(/^FAILED  exit 1 \(was 0\)$/m);
  }, SLOW);

  it('SIGTERM while a runtime runs: its run is stopped, no runtime after it starts, exit 143, no process left', async () => {
    const out = join(work, 'stopped');
    const child = spawn(process.execPath, [MAIN, 'runtimes', '--backend', 'hip', '--runtime-root', root, '--out', out, '--size', '8'], {
      env: cleanEnv({ MAPPED_REG_HIP_LIBRARY: systemHip(), MAPPED_REG_FORCE_HANG: 'probe.verdict' }),
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: work,
    });
    let stdout = '';
    const code = await new Promise<number | null>((done) => {
      child.stdout.on('data', (b: Buffer) => {
        stdout += b.toString();
        // the baseline's run hangs in its probe (the hook): stop the command then
        if (stdout.includes('system (HIP 6.4.0): running the suite')) setTimeout(() => child.kill('SIGTERM'), 1500);
      });
      child.on('close', (c) => done(c));
    });
    expect(code, stdout).toBe(143);
    expect(stdout).not.toMatch(/rocm-7\.3\.0 \(HIP 7\.3\.0\): running the suite/);
    const left = spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.includes(out));
    expect(left).toEqual([]);
  }, SLOW);
});
