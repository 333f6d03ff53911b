import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostSlice } from '../src/ops.js';
import {
  LibcError,
  MAP,
  MFD_CLOEXEC,
  POSIX_FADV_DONTNEED,
  OPEN_ACCESS,
  OPEN_FLAGS,
  PROT,
  closeFd,
  dropPages,
  fsName,
  ftruncate,
  mappingCount,
  memcpy,
  memfdCreate,
  mincore,
  mmap,
  mprotect,
  munmap,
  openFdCount,
  openFile,
  pageSize,
  posixFadvise,
  pread,
  preadFully,
  pwrite,
  statfs,
  type Mapping,
} from '../bindings/libc.js';
import { fdsUnder } from './support/fds.js';

let dir = '';
let serial = 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'libc-test-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh path in the temp dir, with `data` written through node:fs when given. */
function tempFile(data?: Uint8Array): string {
  const path = join(dir, `f${serial++}`);
  if (data) writeFileSync(path, data);
  return path;
}

/** Runs `body` with the file open, closing it afterwards. */
function withFd<T>(path: string, flags: number, body: (fd: number) => T): T {
  const fd = openFile(path, flags | OPEN_FLAGS.CLOEXEC);
  try {
    return body(fd);
  } finally {
    closeFd(fd);
  }
}

/** Runs `body` with a mapping, unmapping it afterwards. */
function withMapping<T>(m: Mapping, body: (m: Mapping) => T): T {
  try {
    return body(m);
  } finally {
    munmap(m);
  }
}

/** The /proc/self/maps line of the mapping starting at `address`. */
function mapsLine(address: bigint): string | undefined {
  const start = address.toString(16);
  return readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${start}-`));
}

function libcError(fn: () => unknown): LibcError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LibcError);
    return e as LibcError;
  }
  throw new Error('expected a LibcError, nothing was thrown');
}

describe('pageSize', () => {
  it('is a power of two of at least 4 KiB, stable between calls', () => {
    const p = pageSize();
    expect(p).toBeGreaterThanOrEqual(4096);
    expect(p & (p - 1)).toBe(0);
    expect(pageSize()).toBe(p);
  });
});

describe('mmap of a file', () => {
  it('MAP_SHARED PROT_READ shows the bytes node:fs wrote, at a page-aligned address', () => {
    const data = randomBytes(3 * pageSize() + 123);
    const path = tempFile(data);
    withFd(path, OPEN_ACCESS.RDONLY, (fd) =>
      withMapping(mmap(data.length, PROT.READ, MAP.SHARED, fd, 0), (m) => {
        expect(m.length).toBe(data.length);
        expect(m.bytes.length).toBe(data.length);
        expect(m.address).toBeGreaterThan(0n);
        expect(m.address % BigInt(pageSize())).toBe(0n);
        expect(Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.length).equals(data)).toBe(true);
        expect(mapsLine(m.address)).toContain(path);
      }),
    );
  });

  it('honours the file offset', () => {
    const page = pageSize();
    const data = randomBytes(2 * page);
    const path = tempFile(data);
    withFd(path, OPEN_ACCESS.RDONLY, (fd) =>
      withMapping(mmap(page, PROT.READ, MAP.SHARED, fd, page), (m) => {
        expect(Buffer.from(m.bytes).equals(data.subarray(page))).toBe(true);
      }),
    );
  });

  it('sees a later pwrite through the mapping (one page cache)', () => {
    const path = tempFile(new Uint8Array(pageSize()));
    withFd(path, OPEN_ACCESS.RDWR, (fd) =>
      withMapping(mmap(pageSize(), PROT.READ, MAP.SHARED, fd, 0), (m) => {
        expect(m.bytes[10]).toBe(0);
        expect(pwrite(fd, Uint8Array.of(1, 2, 3), 10)).toBe(3);
        expect(Array.from(m.bytes.subarray(9, 14))).toEqual([0, 1, 2, 3, 0]);
      }),
    );
  });

  it('MAP_PRIVATE writes stay out of the file', () => {
    const path = tempFile(new Uint8Array(pageSize()));
    withFd(path, OPEN_ACCESS.RDONLY, (fd) =>
      withMapping(mmap(pageSize(), PROT.READ | PROT.WRITE, MAP.PRIVATE, fd, 0), (m) => {
        m.bytes[0] = 0xaa;
        expect(readFileSync(path)[0]).toBe(0);
      }),
    );
  });
});

describe('pread / pwrite / ftruncate', () => {
  it('round-trip bytes at an offset', () => {
    const path = tempFile();
    const data = randomBytes(10_000);
    withFd(path, OPEN_ACCESS.RDWR | OPEN_FLAGS.CREAT | OPEN_FLAGS.TRUNC, (fd) => {
      expect(pwrite(fd, data, 100)).toBe(data.length);
      const back = new Uint8Array(data.length);
      expect(preadFully(fd, back, 100)).toBe(data.length);
      expect(Buffer.from(back).equals(data)).toBe(true);
      // One pread into a sub-range fills that range only (zero-copy into the typed array's own bytes).
      const into = new Uint8Array(20);
      expect(pread(fd, into.subarray(5, 15), 100)).toBe(10);
      expect(Buffer.from(into.subarray(5, 15)).equals(data.subarray(0, 10))).toBe(true);
      expect(into[4]).toBe(0);
      expect(into[15]).toBe(0);
    });
    const onDisk = readFileSync(path);
    expect(onDisk.length).toBe(100 + data.length);
    expect(onDisk.subarray(100).equals(data)).toBe(true);
  });

  it('preadFully stops at end of file and pread returns 0 past it', () => {
    const path = tempFile(Uint8Array.of(1, 2, 3, 4, 5));
    withFd(path, OPEN_ACCESS.RDONLY, (fd) => {
      const into = new Uint8Array(16);
      expect(preadFully(fd, into, 2)).toBe(3);
      expect(Array.from(into.subarray(0, 4))).toEqual([3, 4, 5, 0]);
      expect(pread(fd, into, 5)).toBe(0);
    });
  });

  it('preadFully loops over short reads (/proc/self/maps gives at most a page per read)', () => {
    withFd('/proc/self/maps', OPEN_ACCESS.RDONLY, (fd) => {
      const one = pread(fd, new Uint8Array(1 << 20), 0);
      expect(one).toBeLessThanOrEqual(pageSize());
      const all = new Uint8Array(1 << 20);
      const n = preadFully(fd, all, 0);
      expect(n).toBeGreaterThan(one);
      expect(n).toBeLessThan(all.length);
      expect(Buffer.from(all.subarray(0, n)).toString('utf8')).toMatch(/\[stack\]\n/);
    });
  });

  it('ftruncate grows with zeros and shrinks', () => {
    const path = tempFile(Uint8Array.of(9, 9, 9));
    withFd(path, OPEN_ACCESS.RDWR, (fd) => {
      ftruncate(fd, 2 * pageSize());
      expect(statSync(path).size).toBe(2 * pageSize());
      withMapping(mmap(2 * pageSize(), PROT.READ, MAP.SHARED, fd, 0), (m) => {
        expect(Array.from(m.bytes.subarray(0, 4))).toEqual([9, 9, 9, 0]);
        expect(m.bytes.every((b, i) => i < 3 || b === 0)).toBe(true);
      });
      ftruncate(fd, 1);
      expect(statSync(path).size).toBe(1);
    });
    expect(Array.from(readFileSync(path))).toEqual([9]);
  });

  it('refuses negative or fractional offsets before calling libc', () => {
    const path = tempFile(Uint8Array.of(1));
    withFd(path, OPEN_ACCESS.RDONLY, (fd) => {
      expect(() => pread(fd, new Uint8Array(1), -1)).toThrow(RangeError);
      expect(() => ftruncate(fd, 1.5)).toThrow(RangeError);
    });
  });
});

describe('memfd', () => {
  it('PROT_READ|PROT_WRITE writes through the view are seen by pread', () => {
    const fd = memfdCreate('libc-test-memfd', MFD_CLOEXEC);
    try {
      ftruncate(fd, pageSize());
      withMapping(mmap(pageSize(), PROT.READ | PROT.WRITE, MAP.SHARED, fd, 0), (m) => {
        expect(mappingCount('/memfd:libc-test-memfd')).toBe(1);
        m.bytes.set([0xde, 0xad, 0xbe, 0xef], 64);
        const back = new Uint8Array(6);
        expect(preadFully(fd, back, 63)).toBe(6);
        expect(Array.from(back)).toEqual([0, 0xde, 0xad, 0xbe, 0xef, 0]);
      });
      expect(mappingCount('/memfd:libc-test-memfd')).toBe(0);
    } finally {
      closeFd(fd);
    }
  });
});

describe('mprotect', () => {
  it('goes to PROT_NONE and back, keeping the contents', () => {
    const page = pageSize();
    withMapping(mmap(2 * page, PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0), (m) => {
      m.bytes[0] = 42;
      mprotect(m, PROT.NONE);
      expect(mapsLine(m.address)).toMatch(/^\S+ ---p /);
      // The kernel refuses to read it (EFAULT) where JS touching it would be SIGSEGV: pwrite passes the
      // view's own address, no copy.
      const path = tempFile();
      withFd(path, OPEN_ACCESS.RDWR | OPEN_FLAGS.CREAT, (fd) => {
        const e = libcError(() => pwrite(fd, m.bytes.subarray(0, 16), 0));
        expect(e.code).toBe('EFAULT');
      });
      mprotect(m, PROT.READ);
      expect(mapsLine(m.address)).toMatch(/^\S+ r--p /);
      expect(m.bytes[0]).toBe(42);
      mprotect(m, PROT.READ | PROT.WRITE);
      m.bytes[1] = 43;
      expect(m.bytes[1]).toBe(43);
    });
  });

  it('can start at PROT_NONE and protect a page-aligned slice', () => {
    const page = pageSize();
    withMapping(mmap(2 * page, PROT.NONE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0), (m) => {
      expect(m.bytes.length).toBe(2 * page);
      const second = hostSlice(m, page, page);
      mprotect(second, PROT.READ | PROT.WRITE);
      second.bytes[0] = 7;
      expect(mapsLine(m.address)).toMatch(/^\S+ ---p /);
      expect(mapsLine(second.address)).toMatch(/^\S+ rw-p /);
    });
  });

  it('rejects an unaligned range with EINVAL', () => {
    withMapping(mmap(pageSize(), PROT.READ, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0), (m) => {
      const e = libcError(() => mprotect(hostSlice(m, 1, 16), PROT.NONE));
      expect(e.call).toBe('mprotect');
      expect(e.code).toBe('EINVAL');
    });
  });
});

describe('statfs', () => {
  it('names /dev/shm tmpfs', () => {
    const fs = statfs('/dev/shm');
    expect(fs.type).toBe(0x01021994);
    expect(fs.fsName).toBe('tmpfs');
    expect(typeof fs.freeBytes).toBe('bigint');
    expect(fs.readOnly).toBe(false);
  });

  it('names the temp dir, with free space that a file write uses', () => {
    const fs = statfs(dir);
    expect(fs.fsName).not.toMatch(/^unknown/);
    expect(fs.freeBytes).toBeGreaterThan(0n);
    expect(fs.readOnly).toBe(false);
  });

  it('names /proc, and reports other magics as unknown(0x…)', () => {
    expect(statfs('/proc').fsName).toBe('proc');
    expect(fsName(0x9123683e)).toBe('btrfs');
    expect(fsName(0x63677270)).toBe('unknown(0x63677270)');
  });

  it('throws ENOENT with the path for a missing one', () => {
    const e = libcError(() => statfs(join(dir, 'missing')));
    expect(e.call).toBe('statfs');
    expect(e.code).toBe('ENOENT');
    expect(e.message).toContain(join(dir, 'missing'));
  });
});

describe('page cache: mincore, posix_fadvise', () => {
  it('mincore: a byte per page, set once an anonymous page is touched', () => {
    const m = mmap(4 * pageSize(), PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
    try {
      expect(Array.from(mincore(m), (b) => b & 1)).toEqual([0, 0, 0, 0]);
      m.bytes[pageSize()] = 1;
      expect(Array.from(mincore(m), (b) => b & 1)).toEqual([0, 1, 0, 0]);
    } finally {
      munmap(m);
    }
  });

  it('mincore of a file just written: its pages are in the page cache, mapped or not', () => {
    const path = tempFile(randomBytes(3 * pageSize()));
    withFd(path, OPEN_ACCESS.RDONLY, (fd) => {
      const m = mmap(3 * pageSize(), PROT.READ, MAP.SHARED, fd, 0);
      try {
        expect(mincore(m)).toHaveLength(3);
        expect(Array.from(mincore(m), (b) => b & 1)).toEqual([1, 1, 1]);
      } finally {
        munmap(m);
      }
    });
  });

  it('dropPages of a shared read-only file mapping: its pages leave the process, the bytes stay the file\'s', () => {
    const pages = 64;
    const bytes = randomBytes(pages * pageSize());
    const path = tempFile(bytes);
    /** The resident set of the mapping at `address`, from /proc/self/smaps (kB). */
    const rssOf = (address: bigint): number => {
      const lines = readFileSync('/proc/self/smaps', 'utf8').split('\n');
      const at = lines.findIndex((l) => l.startsWith(`${address.toString(16)}-`));
      const rss = lines.slice(at + 1).find((l) => l.startsWith('Rss:'));
      return Number(/(\d+) kB/.exec(rss ?? '')?.[1]);
    };
    withFd(path, OPEN_ACCESS.RDONLY, (fd) => {
      const m = mmap(pages * pageSize(), PROT.READ, MAP.SHARED, fd, 0);
      try {
        expect(Buffer.compare(m.bytes, bytes)).toBe(0); // every page touched
        expect(rssOf(m.address)).toBe((pages * pageSize()) / 1024);
        // the second half dropped: the first stays
        dropPages(hostSlice(m, (pages / 2) * pageSize(), (pages / 2) * pageSize()));
        expect(rssOf(m.address)).toBe((pages / 2) * pageSize() / 1024);
        dropPages(m);
        expect(rssOf(m.address)).toBe(0);
        // a later read maps the file's bytes again
        expect(Buffer.compare(m.bytes, bytes)).toBe(0);
        expect(() => dropPages(hostSlice(m, 1, pageSize()))).toThrow(expect.objectContaining({ call: 'madvise', code: 'EINVAL' }));
      } finally {
        munmap(m);
      }
    });
  });

  it('mincore of a range no longer mapped: ENOMEM', () => {
    const m = mmap(pageSize(), PROT.READ, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
    munmap(m);
    expect(() => mincore(m)).toThrow(expect.objectContaining({ call: 'mincore', code: 'ENOMEM' }));
  });

  it('posix_fadvise(DONTNEED) of a file; its error number (not errno) for a bad fd', () => {
    const path = tempFile(randomBytes(2 * pageSize()));
    withFd(path, OPEN_ACCESS.RDONLY, (fd) => posixFadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
    expect(() => posixFadvise(-1, 0, 0, POSIX_FADV_DONTNEED)).toThrow(expect.objectContaining({ name: 'LibcError', call: 'posix_fadvise', code: 'EBADF' }));
    expect(() => posixFadvise(0, -1, 0, POSIX_FADV_DONTNEED)).toThrow(RangeError);
  });
});

describe('memcpy', () => {
  it('copies between two mappings by address, and refuses more bytes than either holds', () => {
    const from = mmap(2 * pageSize(), PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
    const to = mmap(2 * pageSize(), PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
    try {
      from.bytes.set(randomBytes(from.length));
      memcpy(to, from, pageSize() + 3);
      expect(Buffer.compare(to.bytes.subarray(0, pageSize() + 3), from.bytes.subarray(0, pageSize() + 3))).toBe(0);
      expect(to.bytes[pageSize() + 3]).toBe(0);
      memcpy(to, from);
      expect(Buffer.compare(to.bytes, from.bytes)).toBe(0);
      expect(() => memcpy(to, hostSlice(from, 0, pageSize()), pageSize() + 1)).toThrow(RangeError);
    } finally {
      munmap(from);
      munmap(to);
    }
  });
});

describe('errors', () => {
  it('open of a missing file: call open, errno 2, ENOENT, strerror text', () => {
    const path = join(dir, 'does-not-exist');
    const e = libcError(() => openFile(path, OPEN_ACCESS.RDONLY));
    expect(e.call).toBe('open');
    expect(e.errno).toBe(2);
    expect(e.code).toBe('ENOENT');
    expect(e.name).toBe('LibcError');
    expect(e.message).toBe(`open: No such file or directory (ENOENT): ${path}`);
  });

  it('mmap of a bad fd: EBADF; of zero bytes: EINVAL', () => {
    const bad = libcError(() => mmap(pageSize(), PROT.READ, MAP.SHARED, -1, 0));
    expect(bad.call).toBe('mmap');
    expect(bad.code).toBe('EBADF');
    expect(bad.errno).toBe(9);
    expect(bad.message).toBe('mmap: Bad file descriptor (EBADF)');
    expect(libcError(() => mmap(0, PROT.READ, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0)).code).toBe('EINVAL');
  });

  it('close of a closed fd: EBADF', () => {
    const fd = openFile(tempFile(Uint8Array.of(1)), OPEN_ACCESS.RDONLY | OPEN_FLAGS.CLOEXEC);
    closeFd(fd);
    expect(libcError(() => closeFd(fd)).code).toBe('EBADF');
  });

  it('refuses a mapping longer than a view can hold, without mapping it', () => {
    // the process's own mappings come and go meanwhile (V8's heap): look for one of that length, not at the count
    const huge = (): string[] =>
      readFileSync('/proc/self/maps', 'utf8')
        .split('\n')
        .filter((l) => {
          const [from, to] = (l.split(' ')[0] ?? '').split('-').map((x) => BigInt(`0x${x || '0'}`));
          return from !== undefined && to !== undefined && to - from >= 1n << 40n;
        });
    const before = huge();
    expect(() => mmap(Number.MAX_SAFE_INTEGER, PROT.NONE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0)).toThrow(RangeError);
    expect(huge()).toEqual(before);
  });
});

describe('leaks', () => {
  it('munmap releases the mapping; a second munmap throws', () => {
    const path = tempFile(randomBytes(4 * pageSize()));
    // counted by the test's own file: the whole process's mappings move with V8's heap
    withFd(path, OPEN_ACCESS.RDONLY, (fd) => {
      expect(mappingCount(path)).toBe(0);
      const m = mmap(4 * pageSize(), PROT.READ, MAP.SHARED, fd, 0);
      expect(mappingCount(path)).toBe(1);
      munmap(m);
      expect(mappingCount(path)).toBe(0);
      expect(() => munmap(m)).toThrow(/already unmapped/);
    });
  });

  it('many mmap/munmap cycles leave the mapping count where it was', () => {
    const path = tempFile(randomBytes(pageSize()));
    withFd(path, OPEN_ACCESS.RDONLY, (fd) => {
      let most = 0;
      for (let i = 0; i < 200; i++) {
        const m = mmap(pageSize(), PROT.READ, MAP.SHARED, fd, 0);
        most = Math.max(most, mappingCount(path));
        munmap(m);
      }
      expect(most).toBe(1); // the control: each cycle's mapping was seen
      expect(mappingCount(path)).toBe(0);
    });
  });

  it('open/close and memfd loops leave the fd count where it was', () => {
    const path = tempFile(Uint8Array.of(1));
    // counted by what they lead to: the whole process's count moves with V8 and libuv
    for (let i = 0; i < 500; i++) closeFd(openFile(path, OPEN_ACCESS.RDONLY | OPEN_FLAGS.CLOEXEC));
    for (let i = 0; i < 100; i++) closeFd(memfdCreate(`leak-${i}`));
    expect(fdsUnder(path)).toEqual([]);
    expect(fdsUnder('/memfd:leak-')).toEqual([]);
    // the control: an fd left open is seen
    const fd = memfdCreate('leak-control');
    expect(fdsUnder('/memfd:leak-')).toEqual(['/memfd:leak-control (deleted)']);
    closeFd(fd);
  });

  it('openFdCount sees an fd left open', () => {
    const before = openFdCount();
    const fd = openFile(tempFile(Uint8Array.of(1)), OPEN_ACCESS.RDONLY | OPEN_FLAGS.CLOEXEC);
    expect(openFdCount()).toBe(before + 1);
    closeFd(fd);
    expect(openFdCount()).toBe(before);
  });
});
