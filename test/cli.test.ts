// The command as a user runs it: built with tsc, started as a process.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, MAIN, NO_HAZARDS, ROOT } from './support/command.js';
import { type Ran, runScript, workspace } from './support/workspace.js';

const root = ROOT;
const main = MAIN;
const { work, doubles } = workspace('mapped-reg-cli-');

function cli(args: string[], env: Record<string, string | undefined> = {}): Ran {
  return runScript(main, args, work, env);
}

describe('with no GPU', () => {
  it('runs, lists the CPU, OpenCL and Vulkan CPU devices with their verdicts, says no GPU driver was found, writes JSON', () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'r.json');
    const r = cli(['--scratch-dir', scratch, '--json', json]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/CUDA: libcuda\.so\.1 not found/);
    expect(r.stdout).toMatch(/no GPU driver was found/);
    expect(r.stdout).toMatch(/^opencl:\d+ .*Not_needed/m);
    expect(r.stdout).toMatch(/^vulkan:\d+ .*Refused \(Kernel_hazard/m);
    expect(r.stdout).toMatch(/^cpu .*Not_needed/m);
    const result = JSON.parse(readFileSync(json, 'utf8'));
    expect(result.schemaVersion).toBe(3);
    expect(result.gpuDriverFound).toBe(false);
    expect(result.devices.map((d: { id: string }) => d.id)).toEqual(expect.arrayContaining(['cpu', 'opencl:0', 'vulkan:0']));
    const vk = result.devices.find((d: { id: string }) => d.id === 'vulkan:0');
    expect(vk.verdict).toMatchObject({ kind: 'Refused', refusal: 'Kernel_hazard' });
    expect(readdirSync(scratch)).toEqual([]);
    expect(readdirSync(work).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('writes JUnit (one testsuite per device, with its verdict) and appends a Markdown summary to GITHUB_STEP_SUMMARY', () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const junit = join(work, 'j.xml');
    const summary = join(work, 'summary.md');
    writeFileSync(summary, '# earlier step\n');
    const r = cli(['--scratch-dir', scratch, '--junit', junit], { GITHUB_STEP_SUMMARY: summary });
    expect(r.code).toBe(0);
    const xml = readFileSync(junit, 'utf8');
    const suites = [...xml.matchAll(/<testsuite name="([^"]+)"/g)].map((m) => m[1]);
    expect(suites).toEqual(expect.arrayContaining([expect.stringMatching(/^cpu /), expect.stringMatching(/^opencl:0 /), expect.stringMatching(/^vulkan:0 /)]));
    expect(xml).toMatch(/<property name="verdict" value="Refused \(Kernel_hazard/);
    expect(xml).toMatch(/<testcase classname="cpu\.static" name="cpu &gt; static\.verdict"/);
    const md = readFileSync(summary, 'utf8');
    expect(md.startsWith('# earlier step\n')).toBe(true);
    expect(md).toMatch(/^\| `cpu` \| /m);
  });

  it('the built command is an executable with its shebang (npx runs the bin it links; a rebuild keeps it so)', () => {
    expect(statSync(main).mode & 0o111).not.toBe(0);
    const r = spawnSync(main, ['list', '--backend', 'cpu'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^cpu .*Not_needed/m);
  });
});

// with no GPU, continued under the same title (the test names stay as they were): processes, list, --help
describe('with no GPU', () => {
  it('the devices that never register share one process; a crash there is that check\'s alone, the others go on in processes of their own', () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'shared.json');
    const ok = cli(['--scratch-dir', scratch, '--json', json]);
    expect(ok.code).toBe(0);
    const devices = (file: string) => JSON.parse(readFileSync(file, 'utf8')).devices as { id: string; processes: number; restarts?: string[]; checks: { id: string; status: string; process?: number; message?: string }[] }[];
    for (const d of devices(json)) {
      expect(d.processes, d.id).toBe(1);
      expect(d.checks, d.id).toHaveLength(33);
    }
    const crashed = join(work, 'shared-crash.json');
    const r = cli(['--scratch-dir', scratch, '--json', crashed], { MAPPED_REG_FORCE_CRASH: 'cpu/static.verdict' });
    expect(r.code).toBe(1);
    const [opencl, vulkan, cpu] = ['opencl:0', 'vulkan:0', 'cpu'].map((id) => devices(crashed).find((d) => d.id === id)!);
    expect(cpu!.checks.find((c) => c.id === 'static.verdict')).toMatchObject({ status: 'crash', process: 1, message: expect.stringMatching(/SIGSEGV/) });
    for (const d of [opencl!, vulkan!, cpu!]) {
      expect(d.checks, d.id).toHaveLength(33);
      expect(d.processes, d.id).toBe(2);
      expect(d.checks.filter((c) => c.status === 'crash').map((c) => `${d.id} ${c.id}`)).toEqual(d === cpu ? ['cpu static.verdict'] : []);
    }
    expect(opencl!.restarts).toEqual([expect.stringMatching(/^process 1 ended during cpu's static\.verdict \(killed by SIGSEGV\): the 32 checks left run in process 2$/)]);
    expect(cpu!.restarts).toEqual([expect.stringMatching(/^process 1 ended during static\.verdict \(crash, SIGSEGV\): the 32 checks after it run in process 2$/)]);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('list registers and copies nothing', () => {
    const r = cli(['list']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^cpu .*Not_needed/m);
  });

  it('--help names the commands and options the documentation (docs/usage.md, docs/gate.md) documents', () => {
    const r = cli(['--help']);
    expect(r.code).toBe(0);
    const readme = ['usage.md', 'gate.md'].map((f) => readFileSync(join(root, 'docs', f), 'utf8')).join('\n');
    // every option --help shows is documented, and the documented options of run are in --help
    const shown = [...new Set(r.stdout.match(/--[a-z][a-z-]+/g) ?? [])].filter((o) => o !== '--help' && o !== '--version');
    expect(shown).toEqual(expect.arrayContaining(['--scratch-dir', '--size', '--device', '--backend', '--runs', '--min-relative-speed', '--json', '--junit', '--baseline', '--expectations', '--require', '--max-drop', '--check', '--skip', '--skips-file', '--checks']));
    for (const option of shown) expect(readme, option).toContain(option);
    expect(r.stdout).toMatch(/MAPPED_REG_CUDA_LIBRARY/);
    // the gate, said the same way in both
    for (const text of ['fail  hazard.tmpfs_bytes  driver=7.2.4*', 'flake timing.margin       device="NVIDIA H200"']) {
      expect(r.stdout, text).toContain(text);
      expect(readme, text).toContain(text);
    }
    const flat = (s: string): string => s.replace(/\s+/g, ' ');
    for (const text of [
      'unexpected pass',
      'Exit status: 0 the gate passed; 1 the gate failed',
      // check selection, said the same way in both
      'Check selection: --check GLOB runs only the checks whose id matches (with the checks they need: probe.verdict for probe.release and timing.*); --skip GLOB and --skips-file FILE (one glob a line, # comments) skip the checks that match and those that need them, each reported skip with its reason (skipped by --skip GLOB, skipped by FILE:LINE GLOB); a glob that matches no check is bad input (exit 2). A device whose probe.verdict is skipped is never Usable: its verdict is Inconclusive (not probed), which against a baseline where it was Usable is a regression.',
    ]) {
      expect(flat(r.stdout), text).toContain(text);
      expect(flat(readme), text).toContain(text);
    }
  });
});

describe('through the CUDA double', () => {
  it('probes cuda:0 Usable, and --device selects it alone', () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'cuda.json');
    const r = cli(['--device', 'cuda:0', '--size', '16', '--scratch-dir', scratch, '--json', json, ...NO_HAZARDS], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const result = JSON.parse(readFileSync(json, 'utf8'));
    expect(result.devices).toHaveLength(1);
    // the probe's file was written on its own thread while the runner started Vitest
    expect(result.devices[0]).toMatchObject({ id: 'cuda:0', verdict: { kind: 'Usable' }, scratch: { fsType: expect.any(String), sizeBytes: 16 * 1024 * 1024, writtenAhead: true } });
    const probe = result.devices[0].checks.find((c: { id: string }) => c.id === 'probe.verdict');
    expect(probe.data.windows.map((w: { equal: boolean }) => w.equal)).toEqual([true, true]);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('the command itself maps no driver library (its runners discover), and cuda:0 needs one process', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'one-init.json');
    // the dynamic linker writes down every library each process loads (ld.so(8): LD_DEBUG, one file per process),
    // so no load can slip between two looks at /proc
    const ld = mkdtempSync(join(work, 'ld-'));
    const child = spawn(process.execPath, [main, '--size', '4', '--scratch-dir', scratch, '--json', json], {
      env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, LD_DEBUG: 'files', LD_DEBUG_OUTPUT: join(ld, 'ld') }),
      stdio: 'ignore',
      cwd: work,
    });
    const code = await new Promise((done) => child.on('exit', done));
    expect(code).toBe(0);
    const mapped = new Set([...readFileSync(join(ld, `ld.${child.pid}`), 'utf8').matchAll(/\bfile=(\S+)/g)].map((m) => m[1]!));
    expect([...mapped].some((l) => l.includes('koffi'))).toBe(true); // the control: the log has the command's own libraries
    expect([...mapped].filter((l) => /cuda|hip|OpenCL|vulkan|pocl|lvp|LLVM/i.test(l))).toEqual([]);
    const result = JSON.parse(readFileSync(json, 'utf8'));
    const cuda = result.devices.find((d: { id: string }) => d.id === 'cuda:0');
    expect(cuda).toMatchObject({ verdict: { kind: 'Usable' }, processes: 1 });
    expect(result.devices.map((d: { id: string }) => d.id)).toEqual(['cuda:0', 'opencl:0', 'vulkan:0', 'cpu']);
    expect(result.phasesMs.discovery).toBeGreaterThan(0);
  });

  it("the devices that never register start after the GPU's probe: nothing else runs beside its region", () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const r = cli(['--size', '4', '--scratch-dir', scratch, ...NO_HAZARDS], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda });
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    const probe = lines.findIndex((l) => / cuda:0 probe\.verdict pass/.test(l));
    const others = lines.map((l, i) => (/\] (opencl:0|vulkan:0|cpu) /.test(l) ? i : -1)).filter((i) => i >= 0);
    expect(probe).toBeGreaterThan(0);
    expect(others.length).toBeGreaterThanOrEqual(3 * 2); // each: static.verdict, and its skips told at its end
    expect(Math.min(...others)).toBeGreaterThan(probe);
  });

  it("a discovering process that checks nothing ends without its driver's teardown (_exit: its memory goes with it); a runner that checked its GPU runs it", () => {
    const atExit = join(work, 'at-exit-unused');
    // CUDA's discovering process finds cuda:0, which --device leaves out: it offers nothing and ends
    const unused = cli(['--backend', 'cuda', '--backend', 'cpu', '--device', 'cpu', '--json', join(work, 'at-exit-unused.json')], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_AT_EXIT: atExit });
    expect(unused.code).toBe(0);
    const found = JSON.parse(readFileSync(join(work, 'at-exit-unused.json'), 'utf8'));
    expect(found.backends.find((b: { backend: string }) => b.backend === 'cuda')).toMatchObject({ devices: 1 }); // it loaded the double
    expect(existsSync(atExit)).toBe(false);
    // the control: the runner that checked cuda:0 ended through the C library's exit, which ran the destructor
    const used = join(work, 'at-exit-used');
    const r = cli(['--device', 'cuda:0', '--size', '4', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), ...NO_HAZARDS], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_AT_EXIT: used });
    expect(r.code).toBe(0);
    expect(readFileSync(used, 'utf8')).toMatch(/^\d+\n$/);
  });

  it('wrong bytes make the run fail: exit 1, Refused Wrong_bytes', () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const r = cli(['--device', 'cuda:0', '--size', '4', '--scratch-dir', scratch, ...NO_HAZARDS], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_FAULTS: 'wrong_bytes' });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^cuda:0 .*Refused \(Wrong_bytes\)/m);
  });
});

describe('bad input: one line on stderr, exit 2, nothing written', () => {
  const notADriver = join(work, 'not-a-driver.so');
  writeFileSync(notADriver, 'this is not a shared library\n');
  const readOnly = join(work, 'read-only');
  const aFile = join(work, 'a-file');
  writeFileSync(aFile, 'x');
  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ['--size 0', ['--size', '0'], {}, /--size/],
    ['--size -1', ['--size', '-1'], {}, /--size/],
    ['--size abc', ['--size', 'abc'], {}, /--size/],
    ['--size larger than the free space', ['--size', '1000000'], {}, /free/],
    ['--scratch-dir missing', ['--scratch-dir', join(work, 'nope')], {}, /does not exist/],
    ['--scratch-dir not a folder', ['--scratch-dir', aFile], {}, /not a folder/],
    ['--scratch-dir read-only', ['--scratch-dir', readOnly], {}, /read-only/],
    ['--device unknown', ['--device', 'cuda:7'], {}, /unknown device cuda:7/],
    ['--backend unknown', ['--backend', 'metal'], {}, /unknown backend metal/],
    ['--runs 0', ['--runs', '0'], {}, /--runs/],
    ['--min-relative-speed 0', ['--min-relative-speed', '0'], {}, /--min-relative-speed/],
    ['--min-relative-speed 11', ['--min-relative-speed', '11'], {}, /--min-relative-speed/],
    ['an unknown option', ['--frobnicate'], {}, /unknown option --frobnicate; usage: .*--help/],
    ['MAPPED_REG_CUDA_LIBRARY missing', [], { MAPPED_REG_CUDA_LIBRARY: join(work, 'missing.so') }, /MAPPED_REG_CUDA_LIBRARY=.*not found/],
    ['MAPPED_REG_CUDA_LIBRARY not a driver', [], { MAPPED_REG_CUDA_LIBRARY: notADriver }, /MAPPED_REG_CUDA_LIBRARY=.*not-a-driver\.so/],
    ['MAPPED_REG_HIP_LIBRARY not a driver', [], { MAPPED_REG_HIP_LIBRARY: notADriver }, /MAPPED_REG_HIP_LIBRARY=/],
    // discovery's libraries too (docs/usage.md): a run of OpenCL alone used to pass with 0 devices
    ['MAPPED_REG_OPENCL_LIBRARY missing', ['--backend', 'opencl'], { MAPPED_REG_OPENCL_LIBRARY: join(work, 'missing.so') }, /^mapped-reg-conformance: MAPPED_REG_OPENCL_LIBRARY=.*missing\.so: .*not found/],
    ['MAPPED_REG_VULKAN_LIBRARY not a library', ['--backend', 'vulkan'], { MAPPED_REG_VULKAN_LIBRARY: notADriver }, /^mapped-reg-conformance: MAPPED_REG_VULKAN_LIBRARY=.*not-a-driver\.so/],
  ];

  beforeAll(() => {
    mkdirSync(readOnly);
    // a read-only filesystem: as root, permission bits alone do not stop a write
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', readOnly]);
  });
  afterAll(() => {
    spawnSync('umount', [readOnly]);
  });

  for (const [what, args, env, message] of cases) {
    it(what, () => {
      const json = join(work, `bad-${what.replace(/\W+/g, '_')}.json`);
      const r = cli([...args, '--json', json], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(existsSync(json)).toBe(false);
    });
  }
});

// bad input, continued under the same title: what discovery finds wrong, and a folder only root could write
describe('bad input: one line on stderr, exit 2, nothing written', () => {
  it('an unknown device beside a valid one of another backend: refused before any check, nothing left behind', () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'mixed.json');
    const r = cli(['--device', 'cuda:0', '--device', 'opencl:9', '--scratch-dir', scratch, '--json', json], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda });
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/unknown device opencl:9 \(found: cuda:0, .*opencl:0/)]);
    expect(r.stdout).not.toMatch(/checks \(/);
    expect(existsSync(json)).toBe(false);
    expect(readdirSync(scratch)).toEqual([]); // the runner that found cuda:0 was told to stop before its first check
  });

  it('a process that dies while it discovers: one line, exit 2, nothing written', () => {
    const json = join(work, 'discovery-crash.json');
    const r = cli(['--json', json, '--scratch-dir', mkdtempSync(join(work, 'scratch-'))], { MAPPED_REG_FORCE_CRASH: '@discovery' });
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^mapped-reg-conformance: discovery failed: the discovering process \(cuda\) was killed by SIGSEGV before it reported/)]);
    expect(existsSync(json)).toBe(false);
  });

  it("a group that dies while it discovers, beside a driver whose two GPUs may have started with its own discovery: one line, exit 2, nothing written, no scratch left", () => {
    const json = join(work, 'discovery-crash-early.json');
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const r = cli(['--backend', 'cuda', '--backend', 'cpu', '--device', 'cuda:0', '--device', 'cuda:1', '--size', '8', '--json', json, '--scratch-dir', scratch], {
      MAPPED_REG_CUDA_LIBRARY: doubles.cuda,
      MAPPED_REG_DOUBLE_DEVICES: '2',
      MAPPED_REG_FORCE_CRASH: '@discovery:cpu',
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^mapped-reg-conformance: discovery failed: the discovering process \(cpu\) was killed by SIGSEGV before it reported/)]);
    expect(existsSync(json)).toBe(false);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('a process that hangs while it discovers is killed after --timeout plus the grace: one line, exit 2', () => {
    const json = join(work, 'discovery-hang.json');
    const r = cli(['--json', json, '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--timeout', '1', '--backend', 'cpu'], { MAPPED_REG_FORCE_HANG: '@discovery' });
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^mapped-reg-conformance: discovery failed: the discovering process \(cpu\) reported nothing for 11 s and was killed/)]);
    expect(existsSync(json)).toBe(false);
  }, 30_000);

  it('a folder with no write permission for a non-root user is refused too', () => {
    const locked = join(work, 'locked');
    chmodSync(work, 0o755); // mkdtemp makes it 0700: the other user must be able to reach the folder inside
    mkdirSync(locked);
    chmodSync(locked, 0o555);
    // root ignores the bits, so this asks as the nobody user when running as root
    const r = process.getuid?.() === 0
      ? spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, main, '--scratch-dir', locked], { encoding: 'utf8' })
      : spawnSync(process.execPath, [main, '--scratch-dir', locked], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/not writable/);
  });
});
