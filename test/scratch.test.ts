// bindings/scratch.ts in this process: the folder's checks (scratchDirProblem), a scratch region's file, mapping
// and reference, its close() against the registration table, and what a failure of the host leaves (a HostFault,
// nothing on disk, no descriptor). The small file systems are real tmpfs mounts in a private folder (as root, like
// CI); one failure the host cannot be made to give on demand (mmap's ENOMEM) is injected into bindings/libc.ts.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { RegistrationTable } from '../src/ops.js';
import { fdsUnder } from './support/fds.js';
import { thrown } from './support/thrown.js';

// mmap as scratch.ts imports it: fails once with a real LibcError(ENOMEM) when a test asks; otherwise libc's
const inject = vi.hoisted(() => ({ mmapFails: false }));
vi.mock('../bindings/libc.js', async (importOriginal) => {
  const libc = await importOriginal<typeof import('../bindings/libc.js')>();
  return {
    ...libc,
    mmap: (...args: Parameters<typeof libc.mmap>) => {
      if (inject.mmapFails) {
        inject.mmapFails = false;
        throw new libc.LibcError('mmap', 12); // ENOMEM
      }
      return libc.mmap(...args);
    },
  };
});

const { makeScratchRegion, removeStaleScratch, scratchDirProblem, startScratchFile, writerShares } = await import('../bindings/scratch.js');
const { HostFault } = await import('../bindings/host-fault.js');
const { ftruncate, mappingCount, statfs } = await import('../bindings/libc.js');

const MiB = 1024 * 1024;
const work = mkdtempSync(join(tmpdir(), 'mapped-reg-scratch-'));
const mounts: string[] = [];

afterEach(() => {
  inject.mmapFails = false;
});
afterAll(() => {
  for (const m of mounts.reverse()) spawnSync('umount', [m]);
  rmSync(work, { recursive: true, force: true });
});

function folderIn(): string {
  return mkdtempSync(join(work, 'dir-'));
}

/** A tmpfs of its own (`options`: size=, nr_inodes=, ro), in a private folder. */
function tmpfs(options: string): string {
  const dir = folderIn();
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

describe('scratchDirProblem', () => {
  it('a writable folder with room: no problem', () => {
    expect(scratchDirProblem(folderIn(), MiB)).toBeUndefined();
  });

  it('a missing folder, a file, a read-only file system: each says so', () => {
    const missing = join(work, 'missing');
    expect(scratchDirProblem(missing, MiB)).toBe(`scratch folder ${missing} does not exist`);
    const file = join(work, 'a-file');
    writeFileSync(file, 'x');
    expect(scratchDirProblem(file, MiB)).toBe(`scratch folder ${file} is not a folder`);
    // access(W_OK) already refuses a read-only mount (EROFS), even to root: the statfs ST_RDONLY test after it is
    // not what reports it
    const ro = tmpfs('ro,size=1m');
    expect(statfs(ro).readOnly).toBe(true);
    expect(scratchDirProblem(ro, 1)).toBe(`scratch folder ${ro} is not writable`);
  });

  it('less free space than asked: the free MiB and the MiB asked; exactly the free space is enough', () => {
    const dir = tmpfs('size=4m');
    const free = statfs(dir).freeBytes;
    expect(free).toBe(4n * BigInt(MiB));
    expect(scratchDirProblem(dir, Number(free))).toBeUndefined();
    expect(scratchDirProblem(dir, Number(free) + 1)).toBe(`scratch folder ${dir} has 4 MiB free, less than the 5 MiB asked`);
    expect(scratchDirProblem(dir, 64 * MiB)).toBe(`scratch folder ${dir} has 4 MiB free, less than the 64 MiB asked`);
  });
});

describe('makeScratchRegion', () => {
  it('refuses a size that is not a positive safe integer, before making anything', () => {
    const dir = folderIn();
    for (const bytes of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(() => makeScratchRegion(dir, bytes), String(bytes)).toThrow(RangeError);
    }
    expect(() => makeScratchRegion(dir, 0)).toThrow('scratch size must be a positive number of bytes, not 0');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a file of random bytes in a private locked folder, mapped shared read-only; the reference reads the same bytes; close() removes it all', () => {
    const dir = folderIn();
    const bytes = 9 * MiB + 123; // more than one 8 MiB chunk, and not a multiple of a page
    const r = makeScratchRegion(dir, bytes);
    try {
      expect(r.dir).toBe(dir);
      expect(r.fsType).toBe(statfs(dir).fsName);
      expect(r.size).toBe(bytes);
      expect(basename(r.path)).toBe('region.bin');
      expect(dirname(dirname(r.path))).toBe(dir);
      expect(basename(dirname(r.path))).toMatch(new RegExp(`^\\.mapped-reg-${process.pid}-`));
      expect(readdirSync(dirname(r.path)).sort()).toEqual(['lock', 'region.bin']);
      expect(statSync(r.path).size).toBe(bytes);
      expect(statSync(r.path).mode & 0o777).toBe(0o600);
      expect(mappingCount(r.path)).toBe(1);
      const file = readFileSync(r.path);
      expect(Buffer.from(r.map.bytes).equals(file)).toBe(true);
      // random, not a chunk repeated or left as zeros
      expect(file.subarray(0, 4096).equals(file.subarray(8 * MiB, 8 * MiB + 4096))).toBe(false);
      expect(file.subarray(bytes - 4096).every((b) => b === 0)).toBe(false);
      expect(r.reference.length).toBe(bytes);
      const into = new Uint8Array(MiB);
      r.reference.read(bytes - MiB, into);
      expect(Buffer.from(into).equals(file.subarray(bytes - MiB))).toBe(true);
      // a cleaner keeps the folder of a live region
      expect(removeStaleScratch(dir)).toEqual([]);
    } finally {
      expect(r.close(new RegistrationTable())).toBe(true);
    }
    expect(readdirSync(dir)).toEqual([]);
    expect(mappingCount(r.path)).toBe(0);
    expect(fdsUnder(dir)).toEqual([]);
  });
});

describe('makeScratchRegion: written ahead by a thread (startScratchFile)', () => {
  it('written ahead by its own thread (startScratchFile): the region maps that file, random bytes, and close() removes it all', () => {
    const dir = folderIn();
    const bytes = 9 * MiB + 123;
    const pending = startScratchFile(dir, bytes);
    expect(pending).toBeDefined();
    // the folder and the file exist at once, before the thread wrote them
    expect(readdirSync(dir)).toHaveLength(1);
    const r = makeScratchRegion(dir, bytes, pending);
    try {
      expect(r.writtenAhead).toBe(true);
      expect(readdirSync(dir)).toHaveLength(1);
      expect(statSync(r.path).size).toBe(bytes);
      const file = readFileSync(r.path);
      expect(Buffer.from(r.map.bytes).equals(file)).toBe(true);
      expect(file.subarray(0, 4096).equals(file.subarray(8 * MiB, 8 * MiB + 4096))).toBe(false);
      expect(file.subarray(bytes - 4096).every((b) => b === 0)).toBe(false);
      const into = new Uint8Array(MiB);
      r.reference.read(bytes - MiB, into);
      expect(Buffer.from(into).equals(file.subarray(bytes - MiB))).toBe(true);
      // taken once
      expect(() => pending!.take()).toThrow('was taken already');
    } finally {
      expect(r.close(new RegistrationTable())).toBe(true);
    }
    expect(readdirSync(dir)).toEqual([]);
    expect(fdsUnder(dir)).toEqual([]);
    // one of another size or folder is not taken: the region writes its own file
    const other = makeScratchRegion(dir, 64 * 1024, undefined);
    expect(other.writtenAhead).toBe(false);
    other.close(new RegistrationTable());
  });

  it('written ahead by several threads, each its share: every byte written (no hole of zeros), the shares unlike, synced once all are done', () => {
    const dir = folderIn();
    // three shares of 8 MiB chunks: 0-16, 16-32 and the short last one, 32-36 MiB + 5 bytes
    const bytes = 36 * MiB + 5;
    const r = makeScratchRegion(dir, bytes, startScratchFile(dir, bytes, 3));
    try {
      expect(r.writtenAhead).toBe(true);
      const file = readFileSync(r.path);
      expect(file.length).toBe(bytes);
      for (let at = 0; at < bytes; at += 4096) expect(file.subarray(at, Math.min(bytes, at + 4096)).every((b) => b === 0), `a page of zeros at ${at}`).toBe(false);
      expect(file.subarray(0, MiB).equals(file.subarray(16 * MiB, 17 * MiB))).toBe(false);
      expect(file.subarray(16 * MiB, 17 * MiB).equals(file.subarray(32 * MiB, 33 * MiB))).toBe(false);
    } finally {
      expect(r.close(new RegistrationTable())).toBe(true);
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  it('the writers: a 64 MiB share each, at most 4, never every core', () => {
    expect(writerShares(256 * MiB, 16)).toBe(4);
    expect(writerShares(256 * MiB, 2)).toBe(1);
    expect(writerShares(100 * MiB, 16)).toBe(2);
    expect(writerShares(MiB, 16)).toBe(1);
    expect(writerShares(256 * MiB, 1)).toBe(1);
  });

  it('a folder that cannot hold the file: nothing is started, the region says why when asked', () => {
    const dir = tmpfs('size=1m');
    expect(startScratchFile(dir, 2 * MiB)).toBeUndefined();
    expect(readdirSync(dir)).toEqual([]);
    expect(startScratchFile(join(dir, 'missing'), MiB)).toBeUndefined();
  });

  it('threads that ran out of space: the region writes the file again itself, and the host fault (ENOSPC) is named; nothing is left', () => {
    const dir = tmpfs('size=4m');
    // each fits the free space when started; together they do not, so at least one thread fails, and its region,
    // written again while the other holds its space, fails too (which one is the threads' race)
    const pending = [startScratchFile(dir, 3 * MiB)!, startScratchFile(dir, 3 * MiB)!];
    const made = pending.map((p) => {
      try {
        return makeScratchRegion(dir, 3 * MiB, p);
      } catch (e) {
        return e;
      }
    });
    const faults = made.filter((m) => m instanceof HostFault);
    expect(faults.length).toBeGreaterThanOrEqual(1);
    for (const f of faults) expect((f as InstanceType<typeof HostFault>).code).toBe('ENOSPC');
    for (const m of made) {
      if (m instanceof HostFault) continue;
      const r = m as ReturnType<typeof makeScratchRegion>;
      expect(Buffer.from(r.map.bytes).equals(readFileSync(r.path))).toBe(true);
      r.close(new RegistrationTable());
    }
    expect(readdirSync(dir)).toEqual([]);
    expect(fdsUnder(dir)).toEqual([]);
  });
});

describe('makeScratchRegion: the reference and close()', () => {
  it('the reference refuses reads outside the file, reports a file cut short, and is closed by close()', () => {
    const dir = folderIn();
    const bytes = 64 * 1024;
    const r = makeScratchRegion(dir, bytes);
    try {
      const into = new Uint8Array(16);
      expect(() => r.reference.read(-1, into)).toThrow(RangeError);
      expect(() => r.reference.read(0.5, into)).toThrow(RangeError);
      expect(() => r.reference.read(bytes - 15, into)).toThrow(`reference read of 16 bytes at ${bytes - 15}: outside the ${bytes} bytes of ${r.path}`);
      r.reference.read(bytes - 16, into); // the last 16 bytes: inside
      ftruncate(r.fd, bytes - 8); // another process could do this to the file
      expect(() => r.reference.read(bytes - 16, into)).toThrow(`scratch file ${r.path} ended at ${bytes - 8} of ${bytes} bytes`);
    } finally {
      r.close(new RegistrationTable());
    }
    expect(() => r.reference.read(0, new Uint8Array(1))).toThrow(`scratch file ${r.path} is closed: its reference cannot be read`);
  });

  it("the reference's views (read ahead): the file's bytes, refused outside the file; their descriptors let go at rest, at close, and made again by a later view", () => {
    const dir = folderIn();
    const bytes = 12 * 1024 * 1024;
    const r = makeScratchRegion(dir, bytes);
    // the open descriptors of the region's file: its own, and those the read-ahead reads through
    const fds = (): number => fdsUnder(r.path).length;
    expect(fds()).toBe(1);
    try {
      const chunk = 4 * 1024 * 1024;
      for (let at = 0; at < bytes; at += chunk) expect(Buffer.compare(r.reference.view!(at, chunk), r.map.bytes.subarray(at, at + chunk)), `chunk at ${at}`).toBe(0);
      expect(fds()).toBeGreaterThan(1); // glibc's threads read through descriptors of their own
      expect(() => r.reference.view!(bytes - 15, 16)).toThrow(`reference read of 16 bytes at ${bytes - 15}: outside the ${bytes} bytes of ${r.path}`);
      r.reference.rest!();
      expect(fds()).toBe(1);
      expect(Buffer.compare(r.reference.view!(chunk, 16), r.map.bytes.subarray(chunk, chunk + 16))).toBe(0);
    } finally {
      r.close(new RegistrationTable());
    }
    expect(fds()).toBe(0); // the file's own descriptor too
    expect(() => r.reference.view!(0, 1)).toThrow(`scratch file ${r.path} is closed: its reference cannot be read`);
  });

  it('close() keeps the mapping while any part of it is registered, and unmaps it once none is; later calls change nothing', () => {
    const dir = folderIn();
    const r = makeScratchRegion(dir, 256 * 1024);
    const table = new RegistrationTable();
    const part = { address: r.map.address + 4096n, bytes: r.map.bytes.subarray(4096, 8192) };
    table.add(part);
    const before = Buffer.from(part.bytes);
    expect(r.close(table)).toBe(false);
    // the file and its folder are gone, the mapping is not
    expect(readdirSync(dir)).toEqual([]);
    expect(mappingCount(r.path)).toBe(1);
    expect(Buffer.from(part.bytes).equals(before)).toBe(true); // still mapped, still the file's bytes
    expect(r.close(table)).toBe(false);
    table.remove(part);
    expect(r.close(table)).toBe(true);
    expect(mappingCount(r.path)).toBe(0);
    expect(r.close(table)).toBe(true); // no second munmap (it would throw)
  });
});

describe("makeScratchRegion: the host's failures are HostFaults and leave nothing behind", () => {
  it('a folder with less free space than asked: ENOSPC, with the free space, before anything is made', () => {
    const dir = tmpfs('size=1m');
    const e = thrown(() => makeScratchRegion(dir, 2 * MiB));
    expect(e).toBeInstanceOf(HostFault);
    expect((e as InstanceType<typeof HostFault>).code).toBe('ENOSPC');
    expect((e as Error).message).toBe(`the host: scratch folder ${dir} has 1 MiB free, less than the 2 MiB asked while making the probe's scratch file`);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a folder that does not exist, or is read-only: a HostFault without an errno code', () => {
    const missing = join(work, 'missing');
    const e = thrown(() => makeScratchRegion(missing, MiB));
    expect(e).toBeInstanceOf(HostFault);
    expect((e as InstanceType<typeof HostFault>).code).toBeUndefined();
    expect((e as Error).message).toBe(`the host: scratch folder ${missing} does not exist while making the probe's scratch file`);
    const ro = tmpfs('ro,size=4m');
    const f = thrown(() => makeScratchRegion(ro, MiB));
    expect(f).toBeInstanceOf(HostFault);
    expect((f as Error).message).toBe(`the host: scratch folder ${ro} is not writable while making the probe's scratch file`);
    expect(existsSync(missing)).toBe(false);
  });

  it('no inode for the private folder\'s lock file (nr_inodes=2): ENOSPC while making the folder, nothing left', () => {
    const dir = tmpfs('size=4m,nr_inodes=2');
    const e = thrown(() => makeScratchRegion(dir, MiB));
    expect(e).toBeInstanceOf(HostFault);
    expect((e as InstanceType<typeof HostFault>).code).toBe('ENOSPC');
    expect((e as Error).message).toBe(`the host: no space left in ${dir} (ENOSPC) while making the probe's scratch file`);
    expect(readdirSync(dir)).toEqual([]);
    expect(fdsUnder(dir)).toEqual([]);
  });

  it('no inode for the region file itself (nr_inodes=3): ENOSPC, the locked folder removed', () => {
    const dir = tmpfs('size=4m,nr_inodes=3');
    const e = thrown(() => makeScratchRegion(dir, MiB));
    expect(e).toBeInstanceOf(HostFault);
    expect((e as Error).message).toBe(`the host: no space left in ${dir} (ENOSPC) while making the probe's scratch file`);
    expect(readdirSync(dir)).toEqual([]);
    expect(fdsUnder(dir)).toEqual([]);
  });

  it('mmap failing with ENOMEM after the file is written: "out of memory", the file closed and removed', () => {
    const dir = folderIn();
    const maps = mappingCount(dir);
    inject.mmapFails = true;
    const e = thrown(() => makeScratchRegion(dir, MiB));
    expect(inject.mmapFails).toBe(false); // the injected failure was the one hit
    expect(e).toBeInstanceOf(HostFault);
    expect((e as InstanceType<typeof HostFault>).code).toBe('ENOMEM');
    expect((e as Error).message).toBe("the host: out of memory (ENOMEM) while making the probe's scratch file");
    expect(readdirSync(dir)).toEqual([]);
    expect(fdsUnder(dir)).toEqual([]);
    expect(mappingCount(dir)).toBe(maps);
    // and the next one works
    const r = makeScratchRegion(dir, MiB);
    expect(r.close(new RegistrationTable())).toBe(true);
    expect(readdirSync(dir)).toEqual([]);
  });
});
