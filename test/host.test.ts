// Nothing at a predictable path in a shared folder (TMPDIR stays empty); the host's
// faults (no scratch space, on real small tmpfs mounts) reported as `error`, never as the driver's `fail`; stale
// scratch judged by a lock its owner holds, not by a pid.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, MAIN, NO_HAZARDS } from './support/command.js';
import { holdLock } from './support/lock-holder.js';
import { buildDoubles } from './double/build.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-host-'));
let doubles: { cuda: string; hip: string };
const mounts: string[] = [];

beforeAll(() => {
  doubles = buildDoubles();
});
afterAll(() => {
  for (const m of mounts) spawnSync('umount', [m]);
  rmSync(work, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: cleanEnv({ MAPPED_REG_CUDA_LIBRARY: doubles.cuda, ...env }), encoding: 'utf8', cwd: work });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A tmpfs of its own, in a private folder (unmounted after the file's tests). CI runs as root, like here. */
function tmpfs(options: string): string {
  const dir = mkdtempSync(join(work, 'tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

interface Check {
  id: string;
  status: string;
  message?: string;
}
interface Device {
  id: string;
  verdict: { kind: string; reason?: string };
  checks: Check[];
}

describe('item 1: nothing at a predictable path in a shared folder', () => {
  it('a run with TMPDIR set to an empty folder leaves it empty', () => {
    const tmp = mkdtempSync(join(work, 'tmpdir-'));
    const r = cli(['--device', 'cuda:0', '--size', '8', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), '--json', join(work, 'tmpdir.json'), ...NO_HAZARDS], { TMPDIR: tmp });
    expect(r.code).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it("a symlink planted at the old fixed cache path (Vitest's results.json under TMPDIR) writes nothing through it", () => {
    const tmp = mkdtempSync(join(work, 'tmpdir-'));
    const victim = join(work, 'victim.txt');
    writeFileSync(victim, 'untouched\n');
    const planted = join(tmp, 'mapped-reg-conformance-vite', 'vitest', 'da39a3ee5e6b4b0d3255bfef95601890afd80709');
    mkdirSync(planted, { recursive: true });
    symlinkSync(victim, join(planted, 'results.json'));
    const r = cli(['--device', 'cuda:0', '--size', '8', '--scratch-dir', mkdtempSync(join(work, 'scratch-')), ...NO_HAZARDS], { TMPDIR: tmp });
    expect(r.code).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
  });
});

describe("item 6: the host's faults are not the driver's", () => {
  it('a 20 MiB tmpfs as --scratch-dir: the check whose file does not fit is error (the host), with the reason, not fail; JUnit <error type="host">; the summaries say the host', () => {
    const dir = tmpfs('size=20m');
    const json = join(work, 'nospace.json');
    const junit = join(work, 'nospace.xml');
    const summary = join(work, 'nospace.md');
    writeFileSync(summary, '');
    // a tmpfs on purpose: its size is the fault
    const r = cli(['--device', 'cuda:0', '--size', '16', '--scratch-dir', dir, '--allow-tmpfs-scratch', '--json', json, '--junit', junit], { GITHUB_STEP_SUMMARY: summary });
    const d = (JSON.parse(readFileSync(json, 'utf8')) as { devices: Device[] }).devices[0]!;
    const truncate = d.checks.find((c) => c.id === 'hazard.truncate_contained')!; // a 32 MiB file
    expect(truncate.status).toBe('error');
    expect(truncate.message).toBe(`the host: no space left in ${dir} (ENOSPC) while making the check's file`);
    expect(d.checks.filter((c) => c.status === 'fail')).toEqual([]);
    expect(d.verdict.kind).toBe('Usable'); // the 16 MiB probe fitted
    expect(readFileSync(junit, 'utf8')).toMatch(/name="cuda:0 &gt; hazard\.truncate_contained"[^>]*>\s*<error message="the host: no space left[^"]*" type="host"/);
    expect(r.stdout).toMatch(/^cuda:0: 1 check could not run because of the host, not the driver \(status error; the run does not pass\): hazard\.truncate_contained$/m);
    expect(readFileSync(summary, 'utf8')).toMatch(/Not run because of the host, not the driver \(1\)[\s\S]*hazard\.truncate\\_contained\*\* \(error\): the host: no space left/);
    expect(r.code).toBe(1);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("a tmpfs with no inode left for the probe's file: probe.verdict and the checks that need it are error, the verdict Inconclusive, never Refused", () => {
    // two inodes: the root and the private folder; nothing can be made inside it (ENOSPC)
    const dir = tmpfs('size=64m,nr_inodes=2');
    const json = join(work, 'noinode.json');
    const r = cli(['--device', 'cuda:0', '--size', '8', '--scratch-dir', dir, '--allow-tmpfs-scratch', '--json', json]);
    const d = (JSON.parse(readFileSync(json, 'utf8')) as { devices: Device[] }).devices[0]!;
    const byId = Object.fromEntries(d.checks.map((c) => [c.id, c]));
    for (const id of ['probe.verdict', 'probe.release', 'timing.margin']) {
      expect(byId[id]!.status, id).toBe('error');
      expect(byId[id]!.message, id).toBe(`the host: no space left in ${dir} (ENOSPC) while making the probe's scratch file`);
    }
    expect(d.verdict.kind).toBe('Inconclusive');
    expect(d.checks.filter((c) => c.status === 'fail' || c.status === 'crash')).toEqual([]);
    expect(r.code).toBe(1);
  });
});

describe('item 8: stale scratch is judged by a lock its owner holds, not by a pid', () => {
  /**
   * A scratch folder as a run makes it, named with a pid that is no process here (a run in another PID namespace);
   * with `hold`, its lock is held by another process before the folder takes its name (other tests' runs clean
   * /dev/shm at any moment). Returns the folder and the function that releases the lock.
   */
  async function folder(dir: string, name: string, hold: boolean): Promise<{ path: string; release: () => void }> {
    const path = join(dir, name);
    const making = join(dir, `making-${name.slice(1)}`);
    mkdirSync(making);
    writeFileSync(join(making, 'lock'), '');
    writeFileSync(join(making, 'region.bin'), 'x');
    const release = hold ? await holdLock(join(making, 'lock')) : () => {};
    renameSync(making, path); // the lock stays with the file
    return { path, release };
  }

  it("a live run's folder in another PID namespace (its lock held) is kept, in --scratch-dir and in /dev/shm; a dead one's (its lock free) is removed", async () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const tag = `${process.pid}${Math.random().toString(36).slice(2, 8)}`;
    // 4194399 is above any pid_max: that pid means nothing here
    const { path: live, release: releaseLive } = await folder(scratch, `.mapped-reg-4194399-live${tag}`, true);
    await folder(scratch, `.mapped-reg-4194399-dead${tag}`, false);
    const { path: liveShm, release: releaseShm } = await folder('/dev/shm', `.mapped-reg-4194399-live${tag}`, true);
    const { path: deadShm } = await folder('/dev/shm', `.mapped-reg-4194399-dead${tag}`, false);
    const releases = [releaseLive, releaseShm];
    try {
      const r = cli(['--backend', 'cpu', '--scratch-dir', scratch]);
      expect(r.code).toBe(0);
      expect(readdirSync(scratch)).toEqual([`.mapped-reg-4194399-live${tag}`]);
      expect(readdirSync(live)).toEqual(['lock', 'region.bin']);
      const shm = readdirSync('/dev/shm').filter((n) => n.endsWith(tag));
      expect(shm).toEqual([`.mapped-reg-4194399-live${tag}`]);
      expect(r.stdout).toContain(`removed .mapped-reg-4194399-dead${tag}, left in ${scratch}`);
      // (another test's run may be the one that removed the dead folder in /dev/shm: only the end state is asserted)
    } finally {
      for (const release of releases) release();
      rmSync(liveShm, { recursive: true, force: true });
      rmSync(deadShm, { recursive: true, force: true });
    }
  });

  it('a folder without a lock file (an older version): kept while young, removed once over a minute old and its pid is gone', () => {
    const scratch = mkdtempSync(join(work, 'scratch-'));
    const young = join(scratch, '.mapped-reg-4194399-young');
    const old = join(scratch, '.mapped-reg-4194399-old');
    mkdirSync(young);
    mkdirSync(old);
    const longAgo = new Date(Date.now() - 5 * 60_000);
    utimesSync(old, longAgo, longAgo);
    const r = cli(['--backend', 'cpu', '--scratch-dir', scratch]);
    expect(r.code).toBe(0);
    expect(readdirSync(scratch)).toEqual(['.mapped-reg-4194399-young']);
  });
});
