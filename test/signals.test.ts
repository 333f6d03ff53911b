// Real signals to the command and to its device processes,
// against the CUDA driver double. Every wait is on something observable (a line printed, a scratch file, a
// process gone), with generous bounds.
import { execFileSync } from 'node:child_process';
import { closeSync, constants as fsConstants, existsSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDoubles } from './double/build.js';
import { childrenOf, killedAfterEach, running, runnersOf, startCli, type Started, waitUntil } from './support/processes.js';
import { NO_HAZARDS } from './support/command.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-signals-'));
let doubles: { cuda: string; hip: string };
/** Processes a test saw: any still running after it are killed. */
const seen = killedAfterEach();

beforeAll(() => {
  doubles = buildDoubles();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Check {
  id: string;
  status: string;
  message?: string;
  process?: number;
  log?: string[];
}
interface Device {
  id: string;
  verdict: { kind: string };
  checks: Check[];
  processes?: number;
  restarts?: string[];
  errors?: string[];
  incomplete?: boolean;
}
const ALL_CHECKS = 33;

function cuda(args: string[], env: Record<string, string> = {}, detached = false): { c: Started; scratch: string; json: string } {
  const scratch = mkdtempSync(join(work, 'scratch-'));
  const json = join(work, `r-${Math.random().toString(36).slice(2)}.json`);
  const c = startCli(['--device', 'cuda:0', '--scratch-dir', scratch, '--json', json, ...args], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, ...env }, work, ['ignore', 'pipe', 'pipe'], detached);
  return { c, scratch, json };
}

const readJson = (file: string): { incomplete?: boolean; devices: Device[] } => JSON.parse(readFileSync(file, 'utf8'));
const statuses = (d: Device): Record<string, string> => Object.fromEntries(d.checks.map((c) => [c.id, c.status]));

/** The runner processes of the command now, remembered for the cleanup. */
function runners(c: Started): number[] {
  const r = runnersOf(c.pid);
  for (const p of r) seen.add(p);
  return r;
}

/** The pids of the processes whose probe region is in `scratch` now (a live one is inside probe.verdict). */
function regionOwners(scratch: string): number[] {
  const owners: number[] = [];
  for (const name of readdirSync(scratch)) {
    const m = /^\.mapped-reg-(\d+)-/.exec(name);
    const region = join(scratch, name, 'region.bin');
    // mapped: the probe check has it (the file itself is written ahead, before any check, while Vitest starts)
    if (m && existsSync(region) && mapsFile(Number(m[1]), region)) owners.push(Number(m[1]));
  }
  return owners;
}

/** Whether process `pid` maps `path` now. */
function mapsFile(pid: number, path: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/maps`, 'utf8').includes(path);
  } catch {
    return false;
  }
}

/** How much of its probe region in `scratch` process `pid` has in memory (the Rss of its mappings of it), KiB. */
function regionResidentKiB(pid: number, scratch: string): number {
  let kib = 0;
  let inRegion = false;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inRegion = line.includes(scratch) && line.endsWith('/region.bin');
    const m = /^Rss:\s+(\d+) kB/.exec(line);
    if (m && inRegion) kib += Number(m[1]);
  }
  return kib;
}

/** A running process whose probe region is in `scratch` now, other than those in `not`. */
function regionOwner(scratch: string, not: number[] = []): number | undefined {
  return regionOwners(scratch).find((p) => !not.includes(p) && running(p));
}

describe('a stop signal before the command is loaded', () => {
  it('SIGTERM once the spare runner is started (the command still loading): one line, exit 143, the spare runner gone, nothing written', async () => {
    const { c, json } = cuda(['--size', '8']);
    // the spare runner is started on the command's first line, after the early handler: a child there means it is set
    await waitUntil(() => childrenOf(c.pid).length > 0, 30_000, 'the spare runner to start');
    const spare = childrenOf(c.pid);
    for (const p of spare) seen.add(p);
    c.child.kill('SIGTERM');
    const { code, signal } = await c.exit;
    // Node's default would end it by the signal itself, silently, its spare runner left to find out alone
    expect(signal).toBeNull();
    expect(code).toBe(143);
    // before the command's own handlers (this line), or after them (the run's, which says what it stopped)
    expect(c.stderr() + c.stdout()).toMatch(/interrupted \(SIGTERM\)/);
    await waitUntil(() => spare.every((p) => !running(p)), 10_000, 'the spare runner to end');
    if (!c.stdout().includes('stopping every device')) {
      expect(c.stderr()).toBe('mapped-reg-conformance: interrupted (SIGTERM) before any device was checked: nothing was run or written\n');
      expect(existsSync(json)).toBe(false);
    }
  });
});

describe('item 4: SIGTERM and SIGHUP stop the run as SIGINT does', () => {
  for (const [signal, status] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    it(`${signal} while a check hangs: every device process stopped, no scratch file, the JSON marked incomplete, exit ${status}`, async () => {
      const { c, scratch, json } = cuda(['--size', '8', '--timeout', '60'], { MAPPED_REG_FORCE_HANG: 'probe.release' });
      await c.waitFor(/cuda:0 probe\.verdict pass/); // the next check, probe.release, hangs
      // the other backends' discovering processes end on their own once the command has answered them (on a
      // loaded machine, after the CUDA device's first checks)
      await waitUntil(() => runners(c).length === 1, 60_000, "the other discovering processes to end (the CUDA device's left)");
      const before = runners(c);
      expect(before.length).toBe(1);
      c.child.kill(signal);
      const { code, signal: killedBy } = await c.exit;
      expect(killedBy).toBeNull();
      expect(code).toBe(status);
      expect(c.stdout()).toMatch(new RegExp(`interrupted \\(${signal}\\)`));
      // the log ends on the run's answer, as a CI log must (docs/ci.md): INTERRUPTED, the signal, what it left unrun
      expect(c.stdout().trimEnd().split('\n').at(-1)).toMatch(new RegExp(`^INTERRUPTED: the run was interrupted by ${signal} before every check reported: 1 device incomplete \\(cuda:0\\); what is missing was not run, and no gate was made$`));
      await waitUntil(() => before.every((p) => !running(p)), 10_000, 'the device process to end');
      expect(readdirSync(scratch)).toEqual([]);
      const r = readJson(json);
      expect(r.incomplete).toBe(true);
      expect(r.devices[0]!.incomplete).toBe(true);
      expect(statuses(r.devices[0]!)).toEqual({ 'static.verdict': 'pass', 'probe.verdict': 'pass' });
    });
  }

  it('Ctrl-C again, and SIGTERM, while it stops (sent to the whole process group, as a terminal sends them), after an interrupt during the probe: ignored; the reports are written, no scratch file is left, exit 130', async () => {
    // the step summary goes to a named pipe that the test holds full (its own reader and writer, 64 KiB of filler)
    // and drains only once it has signalled the command again: the command's shutdown waits there (writing it, up
    // to PIPE_STALL_MS) for as long as the test needs
    const fifo = join(work, 'stopping.fifo');
    execFileSync('mkfifo', [fifo]);
    const pipe = openSync(fifo, fsConstants.O_RDWR | fsConstants.O_NONBLOCK);
    let filler = 0;
    for (;;) {
      try {
        filler += writeSync(pipe, Buffer.alloc(4096, 'f'));
      } catch {
        break; // EAGAIN: full
      }
    }
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'stopping.json');
    // a slow registered copy keeps the probe, and its scratch region, alive long enough to be interrupted
    const c = startCli(['--device', 'cuda:0', '--scratch-dir', scratch, '--json', json, '--size', '32', '--timeout', '60'], { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_FAULTS: 'slow_registered=20', GITHUB_STEP_SUMMARY: fifo }, work, ['ignore', 'pipe', 'pipe'], true);
    await waitUntil(() => regionOwner(scratch) !== undefined, 60_000, 'the probe region');
    const before = runners(c);
    process.kill(-c.pid, 'SIGINT');
    await c.waitFor(/interrupted/, 20_000);
    // stopping: its device process killed, its scratch region removed, the JSON written; the step summary is next
    await waitUntil(() => before.every((p) => !running(p)) && readdirSync(scratch).length === 0 && existsSync(json), 20_000, 'the device process stopped, its scratch removed, the JSON written');
    // the command is alive, waiting to write its step summary: Ctrl-C again, then SIGTERM
    expect(running(c.pid)).toBe(true);
    process.kill(-c.pid, 'SIGINT');
    process.kill(-c.pid, 'SIGTERM');
    // drained: the command writes its summary, then exits (the test's own writer keeps the pipe open: read until then)
    const chunks: Buffer[] = [];
    let exited = false;
    void c.exit.then(() => (exited = true));
    for (const buf = Buffer.alloc(65536); ; ) {
      let n = 0;
      try {
        n = readSync(pipe, buf, 0, buf.length, null);
      } catch {
        n = 0; // EAGAIN: empty for now
      }
      if (n > 0) chunks.push(Buffer.from(buf.subarray(0, n)));
      else if (exited) break;
      else await new Promise((r) => setTimeout(r, 20));
    }
    closeSync(pipe);
    const summary = Buffer.concat(chunks).subarray(filler).toString('utf8');
    const { code, signal } = await c.exit;
    // neither signal ended it (nor changed its status): they came while it stopped
    expect(signal).toBeNull();
    expect(code).toBe(130);
    expect(summary).toMatch(/\*\*Interrupted\*\*/);
    expect(readJson(json).incomplete).toBe(true);
    expect(readdirSync(scratch)).toEqual([]);
  });
});

describe('item 4 and item 9: a device process ends itself when the command dies', () => {
  it('SIGKILL of the command while a check hangs: its device processes end too (no orphan left running)', async () => {
    const { c } = cuda(['--size', '8', '--timeout', '60'], { MAPPED_REG_FORCE_HANG: 'probe.release' });
    await c.waitFor(/cuda:0 probe\.verdict pass/);
    await waitUntil(() => runners(c).length === 1, 60_000, "the other discovering processes to end (the CUDA device's left)");
    const before = runners(c);
    expect(before.length).toBe(1);
    c.child.kill('SIGKILL');
    await c.exit;
    await waitUntil(() => before.every((p) => !running(p)), 15_000, `the orphaned device process ${before.join(', ')} to end`);
  });
});

describe('item 5: a device process killed outside a check loses nothing', () => {
  it('SIGKILL from outside while the device process starts (after its discovery, before its first check): every check is reported, from a new process; exit 0', async () => {
    const { c, json } = cuda(['--size', '8', '--backend', 'cuda', ...NO_HAZARDS]);
    await c.waitFor(/checks \(each device in its own process/);
    const [runner] = runners(c);
    expect(runner).toBeDefined();
    process.kill(runner!, 'SIGKILL');
    const { code } = await c.exit;
    const d = readJson(json).devices[0]!;
    expect(d.checks).toHaveLength(ALL_CHECKS);
    expect(d.processes).toBeGreaterThanOrEqual(2);
    expect(d.restarts?.[0]).toMatch(/process 1 was killed by SIGKILL/);
    expect(d.verdict.kind).toBe('Usable');
    expect(code).toBe(0);
  });

  it('killed between two hazard checks (MAPPED_REG_FORCE_KILL): the checks before come from process 1, the rest from process 2', async () => {
    const { c, json } = cuda(['--size', '8'], { MAPPED_REG_FORCE_KILL: 'cuda:0/hazard.prot_none_refused' });
    const { code } = await c.exit;
    const d = readJson(json).devices[0]!;
    expect(d.checks).toHaveLength(ALL_CHECKS);
    const firstHazard = d.checks.findIndex((x) => x.id === 'hazard.prot_none_refused');
    expect(d.checks.slice(0, firstHazard + 1).every((x) => x.process === 1)).toBe(true);
    expect(d.checks.slice(firstHazard + 1).every((x) => x.process === 2)).toBe(true);
    expect(d.processes).toBe(2);
    expect(d.restarts).toEqual([expect.stringMatching(/^process 1 was killed by SIGKILL \(not by this command\) outside any check \(after hazard\.prot_none_refused\): the 27 checks left run in process 2$/)]);
    expect(d.errors ?? []).toEqual([]);
    expect(c.stdout()).toMatch(/cuda:0 new process: process 1 was killed by SIGKILL/);
    expect(code).toBe(0);
  });

  it('a process that keeps dying outside any check gets two new ones, then its checks are error, never run; exit 1', async () => {
    const { c, json } = cuda(['--size', '8'], { MAPPED_REG_FORCE_CRASH: 'cuda:0/@runner' });
    const { code } = await c.exit;
    const d = readJson(json).devices[0]!;
    expect(d.processes).toBe(3);
    expect(d.checks).toHaveLength(ALL_CHECKS);
    expect(d.checks.every((x) => x.status === 'error' && /^never run: the device's process died outside any check 3 times in a row/.test(x.message ?? ''))).toBe(true);
    expect(d.errors?.join('\n')).toMatch(/SIGSEGV/);
    expect(code).toBe(1);
  });

  it('killed from outside during a check (SIGKILL while the probe has its scratch file mapped): the check runs again; killed again, it is error (the host), not crash', async () => {
    const { c, scratch, json } = cuda(['--size', '32', '--junit', join(work, 'killed-twice.xml'), ...NO_HAZARDS], { MAPPED_REG_DOUBLE_FAULTS: 'slow_registered=10' });
    const killed: number[] = [];
    for (let round = 0; round < 2; round++) {
      await waitUntil(() => regionOwner(scratch, killed) !== undefined, 60_000, `a probe region of a new device process (round ${round + 1})`);
      const owner = regionOwner(scratch, killed)!;
      seen.add(owner);
      killed.push(owner);
      process.kill(owner, 'SIGKILL');
    }
    const { code } = await c.exit;
    const d = readJson(json).devices[0]!;
    const probe = d.checks.find((x) => x.id === 'probe.verdict')!;
    expect(probe.status).toBe('error');
    expect(probe.message).toMatch(/^the host: the check's process was killed by SIGKILL from outside twice \(processes 1 and 2\)/);
    expect(d.checks).toHaveLength(ALL_CHECKS);
    expect(d.checks.find((x) => x.id === 'static.verdict')!.process).toBe(1);
    const after = d.checks.slice(d.checks.findIndex((x) => x.id === 'probe.verdict') + 1);
    expect(after.every((x) => x.process === 3)).toBe(true); // the checks after it, from the third process
    expect(d.restarts?.[0]).toMatch(/process 1 was killed by SIGKILL during probe\.verdict, not by this command/);
    expect(readFileSync(join(work, 'killed-twice.xml'), 'utf8')).toMatch(/<testcase classname="cuda:0\.probe" name="cuda:0 &gt; probe\.verdict"[^>]*>\s*<error message="the host: [^"]*" type="host"/);
    expect(c.stdout()).toMatch(/cuda:0: 1 check could not run because of the host, not the driver/);
    expect(readdirSync(scratch)).toEqual([]);
    expect(code).toBe(1);
  });
});

/** What each runner of the command was started to do: the backends it discovers, or the devices it checks. */
function runnerSpecs(c: Started): { pid: number; discover?: string[]; devices: string[] }[] {
  return runners(c).flatMap((pid) => {
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      const raw = env.find((e) => e.startsWith('MAPPED_REG_SUITE_OPTIONS='));
      if (!raw) return [];
      const spec = JSON.parse(raw.slice('MAPPED_REG_SUITE_OPTIONS='.length)) as { discover?: { backends: string[] }; devices: { device: string }[] };
      return [{ pid, ...(spec.discover ? { discover: spec.discover.backends } : {}), devices: spec.devices.map((d) => d.device) }];
    } catch {
      return []; // gone
    }
  });
}

describe("a driver's GPUs start as soon as its own discovery is in", () => {
  it("a GPU's probe reads no page of its region while the CPU group still discovers (hung there, as an OpenCL ICD starting on a cold page cache): no discovering process lives beside the run's fullest moment", async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const c = startCli(
      ['--backend', 'cuda', '--backend', 'cpu', '--device', 'cuda:0', '--size', '8', '--timeout', '60', '--scratch-dir', scratch, '--json', join(work, 'beside.json')],
      { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_FORCE_HANG: '@discovery:cpu' },
      work,
    );
    await waitUntil(() => readdirSync(scratch).length === 1, 60_000, "cuda:0's scratch folder (its runner told to go)");
    const cpu = runnerSpecs(c).find((r) => r.discover?.includes('cpu'));
    expect(cpu).toBeDefined();
    // the probe has come as far as the map; for 3 s after (without the wait, it reads the region at once): none of
    // its pages in the process while the CPU group discovers
    await waitUntil(() => regionOwners(scratch).length === 1, 60_000, "cuda:0's probe to map its region");
    const [probe] = regionOwners(scratch);
    for (const until = performance.now() + 3000; performance.now() < until; await new Promise((r) => setTimeout(r, 50))) {
      expect(regionResidentKiB(probe!, scratch)).toBe(0);
      expect(running(cpu!.pid)).toBe(true);
    }
    c.child.kill('SIGTERM');
    expect((await c.exit).code).toBe(143);
    await waitUntil(() => readdirSync(scratch).length === 0, 10_000, 'the scratch folder to be empty');
  });

  it('two CUDA GPUs while the CPU group still discovers (hung there): the second GPU gets its own process at once; SIGTERM then stops every process, exit 143, no scratch left', async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const json = join(work, 'early.json');
    const c = startCli(
      ['--backend', 'cuda', '--backend', 'cpu', '--device', 'cuda:0', '--device', 'cuda:1', '--size', '8', '--timeout', '60', '--scratch-dir', scratch, '--json', json],
      { MAPPED_REG_CUDA_LIBRARY: doubles.cuda, MAPPED_REG_DOUBLE_DEVICES: '2', MAPPED_REG_FORCE_HANG: '@discovery:cpu' },
      work,
    );
    // the CPU group's discovering process hangs (as a slow OpenCL ICD starts); the CUDA group's reported both GPUs,
    // and each GPU's process made its scratch folder: cuda:1's is a device spare, started while CUDA's discovery ran
    // (its options on its stdin: cli/spare-runner.ts), cuda:0's the discovering process itself
    await waitUntil(() => readdirSync(scratch).length === 2, 60_000, "both GPUs' scratch folders: cuda:1 checked in a process of its own");
    expect(runnerSpecs(c).some((r) => r.discover?.includes('cpu'))).toBe(true); // still discovering
    const all = runners(c);
    expect(all).toHaveLength(3); // CPU's discovering process, CUDA's (cuda:0), cuda:1's
    c.child.kill('SIGTERM');
    const { code } = await c.exit;
    expect(code).toBe(143);
    await waitUntil(() => all.every((pid) => !running(pid)), 10_000, 'every runner to end');
    await waitUntil(() => readdirSync(scratch).length === 0, 10_000, 'the scratch folder to be empty');
  });
});
