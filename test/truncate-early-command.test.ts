// The truncation child started early, through the command against the CUDA double: a device's runner starts it
// before its checks (the check's data says so), none is started where the check is deselected, and nothing is left
// behind (no child, no scratch file) when the runner is killed before the check or crashes in an earlier one. Every
// wait is on something observable (a line printed, a process there or gone), with generous bounds.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDoubles } from './double/build.js';
import { childrenOf, commandLine, killedAfterEach, running, runnersOf, startCli, type Started, waitUntil } from './support/processes.js';
import { diskTempDir } from './support/temp-dir.js';
import { holdLock } from './support/lock-holder.js';

const work = diskTempDir('mapped-reg-truncate-early-command-');
let cudaDouble: string;
/** Processes a test saw: any still running after it are killed. */
const seen = killedAfterEach();

beforeAll(() => {
  cudaDouble = buildDoubles().cuda;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Check {
  id: string;
  status: string;
  process?: number;
  data?: Record<string, unknown>;
}

/** The command on cuda:0 of the double, tagged: every process it starts carries TAG in its environment. */
function run(args: string[], env: Record<string, string> = {}): { c: Started; scratch: string; json: string; tag: string } {
  const scratch = mkdtempSync(join(work, 'scratch-'));
  const json = join(work, `r-${Math.random().toString(36).slice(2)}.json`);
  const tag = `e32-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const c = startCli(['--device', 'cuda:0', '--size', '8', '--scratch-dir', scratch, '--json', json, ...args], { MAPPED_REG_CUDA_LIBRARY: cudaDouble, TRUNCATE_EARLY_TEST_TAG: tag, ...env }, work);
  seen.add(c.pid);
  return { c, scratch, json, tag };
}

/** The truncation children (started early or not) of the process tree of `pid`'s runners now. */
function truncateChildren(c: Started): number[] {
  const runners = runnersOf(c.pid);
  for (const r of runners) seen.add(r);
  const kids = runners.flatMap((r) => childrenOf(r)).filter((p) => commandLine(p).includes('truncate-child.js'));
  for (const k of kids) seen.add(k);
  return kids;
}

/** Every live process on the machine that carries `tag` in its environment (a run's process left behind). */
function tagged(tag: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'utf8').includes(`TRUNCATE_EARLY_TEST_TAG=${tag}`) && running(Number(name))) found.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** Whether the truncation check's file (hazard.bin, in a folder of its process) is in `scratch` now. */
const hazardFile = (scratch: string): boolean => readdirSync(scratch).some((d) => existsSync(join(scratch, d, 'hazard.bin')));

const truncate = (json: string): Check => (JSON.parse(readFileSync(json, 'utf8')) as { devices: { checks: Check[] }[] }).devices[0]!.checks.find((x) => x.id === 'hazard.truncate_contained')!;

describe('the truncation child started early, through the command', () => {
  it('a default run: the runner started the child before its checks, the check used it and passes as before; nothing is left', async () => {
    const { c, scratch, json, tag } = run([]);
    const { code } = await c.exit;
    expect(code).toBe(0);
    const t = truncate(json);
    expect(t.status).toBe('pass');
    expect(t.data).toMatchObject({ childStartedEarly: true, child: { status: null, signal: 'SIGBUS', timedOut: false }, large: { code: 1, name: 'CUDA_ERROR_INVALID_VALUE' } });
    // its start as it measured it (whether it was ready when the check came depends on the machine's load: not judged)
    expect(t.data?.early).toMatchObject({ startMs: expect.any(Number), readyAtCheck: expect.any(Boolean) });
    // its file and arguments were handed over at the start of hazard.context_reset, the check before it
    expect(t.data?.early).toMatchObject({ handedOverBeforeCheck: true });
    expect(tagged(tag)).toEqual([]);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('without hazard.context_reset, the check hands its file over itself, and passes as before', async () => {
    const { c, scratch, json, tag } = run(['--skip', 'hazard.context_reset']);
    expect((await c.exit).code).toBe(0);
    const t = truncate(json);
    expect(t.status).toBe('pass');
    expect(t.data).toMatchObject({ childStartedEarly: true, early: { handedOverBeforeCheck: false }, child: { signal: 'SIGBUS' } });
    expect(tagged(tag)).toEqual([]);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it("the child's wait for the timing lock at the check is the host's: a check that waits past --timeout for it is not killed", async () => {
    const lockFile = join(work, `timing-${Math.random().toString(36).slice(2)}.lock`);
    writeFileSync(lockFile, '', { mode: 0o600 });
    const release = await holdLock(lockFile);
    try {
      // the probe is not selected: only the early child waits for the lock, held here
      const { c, scratch, json } = run(['--check', 'hazard.truncate_contained', '--timeout', '4', '--quiet-wait', '120'], { MAPPED_REG_TIMING_LOCK: lockFile });
      await waitUntil(() => hazardFile(scratch), 60_000, 'the check to make its file');
      // the check now waits for the child, which waits for the lock: well past --timeout (a lower bound, never a race)
      await new Promise((done) => setTimeout(done, 9_000));
      release();
      const { code } = await c.exit;
      const t = truncate(json);
      expect(t.status).toBe('pass');
      expect(t.data).toMatchObject({ childStartedEarly: true, early: { readyAtCheck: false } });
      expect((t.data?.early as { lockWaitAtCheckMs: number }).lockWaitAtCheckMs).toBeGreaterThan(4_000);
      expect(code).toBe(0);
    } finally {
      release();
    }
  });

  it('the runner killed (SIGKILL) before the check: its early child ends too, the check runs in the next process (a child started there, at the check), nothing is left', async () => {
    const { c, scratch, json, tag } = run([], { MAPPED_REG_FORCE_HANG: 'cuda:0/hazard.prot_none_refused' });
    await waitUntil(() => truncateChildren(c).length === 1, 60_000, 'the early truncation child of the runner');
    const [early] = truncateChildren(c);
    expect(commandLine(early!)).toMatch(/truncate-child\.js --early /);
    await c.waitFor(/cuda:0 probe\.verdict pass/);
    const [runner] = runnersOf(c.pid);
    process.kill(runner!, 'SIGKILL');
    await waitUntil(() => !running(early!), 15_000, `the early child ${early} of the killed runner to end`);
    // the hung check hangs again in the next process: stop the command (SIGTERM), which stops its processes
    await waitUntil(() => runnersOf(c.pid).some((r) => r !== runner), 60_000, 'the next process of the device');
    c.child.kill('SIGTERM');
    await c.exit;
    await waitUntil(() => tagged(tag).length === 0, 15_000, `every process of the run to end (left: ${tagged(tag).join(', ')})`);
    expect(readdirSync(scratch)).toEqual([]);
    expect(JSON.parse(readFileSync(json, 'utf8')).incomplete).toBe(true);
  });

  it('the command and its runner killed at once (SIGKILL, as an OOM killer may): the early child ends by itself, nothing of the run is left running', async () => {
    const { c, tag } = run([], { MAPPED_REG_FORCE_HANG: 'cuda:0/hazard.prot_none_refused' });
    await waitUntil(() => truncateChildren(c).length === 1, 60_000, 'the early truncation child of the runner');
    const [early] = truncateChildren(c);
    const [runner] = runnersOf(c.pid);
    // started: its main thread blocked reading its arguments on stdin (read, fd 0), the wait it ends on its own
    await waitUntil(() => readFileSync(`/proc/${early}/syscall`, 'utf8').startsWith('0 0x0 '), 60_000, `the early child ${early} to wait for its arguments`);
    // no one is left to clean up: the child's own parent-death signal and the end of its input must end it
    process.kill(c.pid, 'SIGKILL');
    process.kill(runner!, 'SIGKILL');
    await waitUntil(() => !running(early!), 15_000, `the early child ${early} to end with its runner`);
    await c.exit;
    await waitUntil(() => tagged(tag).length === 0, 15_000, `every process of the run to end (left: ${tagged(tag).join(', ')})`);
  });

  it('a crash in an earlier check: the early child dies with its runner; the next process runs the check with a child of its own, and nothing is left', async () => {
    const { c, scratch, json, tag } = run([], { MAPPED_REG_FORCE_CRASH: 'cuda:0/hazard.coherent_after_write' });
    await c.exit;
    const t = truncate(json);
    expect(t.status).toBe('pass');
    expect(t.process).toBeGreaterThan(1);
    expect(t.data).toMatchObject({ childStartedEarly: false, notEarly: 'no child was started early in this process', child: { signal: 'SIGBUS' } });
    expect(tagged(tag)).toEqual([]);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('the check deselected (--skip): no child is started', async () => {
    const { c, scratch, tag } = run(['--skip', 'hazard.truncate_contained'], { MAPPED_REG_FORCE_HANG: 'cuda:0/hazard.prot_none_refused' });
    // the early child is spawned before Vitest starts, long before the probe reports: none by then, none at all
    await c.waitFor(/cuda:0 probe\.verdict pass/);
    expect(runnersOf(c.pid).length).toBe(1);
    expect(truncateChildren(c)).toEqual([]);
    c.child.kill('SIGTERM');
    await c.exit;
    await waitUntil(() => tagged(tag).length === 0, 15_000, 'every process of the run to end');
    expect(readdirSync(scratch)).toEqual([]);
  });
});
