// The scratch folder the command takes (cli/options.ts, checkScratch): one on tmpfs or ramfs is refused unless
// --allow-tmpfs-scratch says it is meant; the package's own folder, which a global install leaves unwritable,
// names --scratch-dir in its refusal.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-scratch-options-'));
// the package's root as checkScratch sees it: a read-only filesystem (as root, permission bits alone stop no write)
const roRoot = join(work, 'ro-package');
const roWithScratch = join(work, 'ro-package-with-scratch');
let root = roRoot;
vi.mock('../results/package-root.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../results/package-root.js')>();
  return { ...real, packageRoot: () => root };
});

const memory = mkdtempSync('/dev/shm/mapped-reg-scratch-options-');
const ramfs = join(work, 'ramfs');

beforeAll(() => {
  mkdirSync(roRoot);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', roRoot]);
  mkdirSync(roWithScratch);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', roWithScratch]);
  mkdirSync(join(roWithScratch, 'scratch'));
  execFileSync('mount', ['-o', 'remount,ro', roWithScratch]);
  mkdirSync(ramfs);
  execFileSync('mount', ['-t', 'ramfs', 'ramfs', ramfs]);
});
afterAll(() => {
  for (const m of [roRoot, roWithScratch, ramfs]) spawnSync('umount', [m]);
  rmSync(work, { recursive: true, force: true });
  rmSync(memory, { recursive: true, force: true });
});

const args = (extra: Record<string, unknown> = {}) => ({ size: 1, device: [], runs: 1, backend: ['cpu'], check: [], skip: [], minRelativeSpeed: 0.5, timeout: 0, ...extra });

describe('a scratch folder on tmpfs or ramfs', () => {
  it('is refused before the run, saying why and what to give instead', async () => {
    const { runCommandOptions, UsageError } = await import('../cli/options.js');
    for (const [dir, fs] of [
      [memory, 'tmpfs'],
      [ramfs, 'ramfs'],
    ] as const) {
      const run = () => runCommandOptions(args({ scratchDir: dir }), false, {});
      await expect(run()).rejects.toThrow(UsageError);
      await expect(run()).rejects.toThrow(`scratch folder ${dir} is on ${fs}: its files live in memory, not on a disk, so the file-backed mapping this tool certifies would not be tested: give --scratch-dir a folder on a disk (ext4, xfs, ...), or add --allow-tmpfs-scratch to test tmpfs on purpose`);
    }
  });
  it('is taken with --allow-tmpfs-scratch, and by list (which maps no file)', async () => {
    const { runCommandOptions } = await import('../cli/options.js');
    expect((await runCommandOptions(args({ scratchDir: memory, allowTmpfsScratch: true }), false, {})).scratchDir).toBe(memory);
    expect((await runCommandOptions({ device: [], backend: ['cpu'], check: [], skip: [], scratchDir: memory }, true, {})).scratchDir).toBe(memory);
  });
  it('a folder on a disk is taken as before', async () => {
    const { runCommandOptions } = await import('../cli/options.js');
    const disk = mkdtempSync(join(work, 'disk-'));
    const { memoryScratchProblem } = await import('../bindings/scratch.js');
    // the tests' own folders must not be on tmpfs for this case to say anything (docs/development.md)
    expect(memoryScratchProblem(disk)).toBeUndefined();
    expect((await runCommandOptions(args({ scratchDir: disk }), false, {})).scratchDir).toBe(disk);
  });
});

describe("the package's own scratch folder that cannot be written (a global install)", () => {
  // (the read-only filesystems here are tmpfs mounts: a folder that cannot be written is told first all the same)
  it('cannot be made: the refusal names --scratch-dir', async () => {
    root = roRoot;
    vi.resetModules();
    const { runCommandOptions, UsageError } = await import('../cli/options.js');
    const run = () => runCommandOptions(args(), false, {});
    await expect(run()).rejects.toThrow(UsageError);
    await expect(run()).rejects.toThrow(/^scratch folder .*ro-package\/scratch cannot be made \(E[A-Z]+\): the package's own scratch folder; name one you can write on a disk with --scratch-dir DIR$/);
  });
  it('is there but not writable: the refusal names --scratch-dir', async () => {
    root = roWithScratch;
    vi.resetModules();
    const { runCommandOptions, UsageError } = await import('../cli/options.js');
    const run = () => runCommandOptions(args(), false, {});
    await expect(run()).rejects.toThrow(UsageError);
    await expect(run()).rejects.toThrow(/^scratch folder .*ro-package-with-scratch\/scratch is (not writable|on a read-only filesystem): the package's own scratch folder; name one you can write on a disk with --scratch-dir DIR$/);
  });
});
