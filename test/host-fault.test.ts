// bindings/host-fault.ts in this process: the host's own errno (a full disk, a read-only file system, no file
// descriptors or memory) becomes a HostFault with its reason; anything else passes through as it was thrown.
// ENOSPC and EROFS come from real failing calls (/dev/full; a read-only tmpfs mounted here, as root, like CI); the
// other codes from NodeJS.ErrnoExceptions made as node:fs makes them.
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOST_ERRNO, HostFault, asHostFault, hostCall, isHostFault } from '../bindings/host-fault.js';
import { LibcError, OPEN_ACCESS, OPEN_FLAGS, closeFd, openFile, pwrite } from '../bindings/libc.js';
import { thrown } from './support/thrown.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-host-fault-'));
/** A tmpfs mounted read-only in a private folder (unmounted in afterAll). */
let readOnly = '';

beforeAll(() => {
  readOnly = mkdtempSync(join(work, 'ro-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', readOnly]);
});
afterAll(() => {
  if (readOnly) spawnSync('umount', [readOnly]);
  rmSync(work, { recursive: true, force: true });
});

/** An error as node:fs throws it: message, errno, code, syscall, path. */
function errnoException(code: string, errno: number, syscall = 'write', path?: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`${code}: made up by the test, ${syscall}`);
  e.code = code;
  e.errno = -errno;
  e.syscall = syscall;
  if (path !== undefined) e.path = path;
  return e;
}

/** A write to /dev/full through node:fs: a real ENOSPC. */
function writeDevFull(): void {
  const fd = openSync('/dev/full', 'w');
  try {
    writeSync(fd, Buffer.from('x'));
  } finally {
    closeSync(fd);
  }
}

describe('HostFault', () => {
  it('says "the host: " and the reason, carries the code, is an Error named HostFault', () => {
    const f = new HostFault('no space left in /x (ENOSPC) while testing', 'ENOSPC');
    expect(f).toBeInstanceOf(Error);
    expect(f.name).toBe('HostFault');
    expect(f.message).toBe('the host: no space left in /x (ENOSPC) while testing');
    expect(f.code).toBe('ENOSPC');
    expect(new HostFault('too little free space').code).toBeUndefined();
  });

  it('isHostFault: a HostFault, or any Error named HostFault (another copy of the module); nothing else', () => {
    expect(isHostFault(new HostFault('r'))).toBe(true);
    const other = new Error('the host: from another copy');
    other.name = 'HostFault';
    expect(isHostFault(other)).toBe(true);
    expect(isHostFault(new Error('the host: a plain Error'))).toBe(false);
    expect(isHostFault({ name: 'HostFault', message: 'the host: not an Error' })).toBe(false);
    expect(isHostFault('HostFault')).toBe(false);
    expect(isHostFault(null)).toBe(false);
    expect(isHostFault(undefined)).toBe(false);
  });
});

describe('asHostFault: real failing calls', () => {
  it('ENOSPC: a write to /dev/full (node:fs) is "no space left in <where>"', () => {
    const e = thrown(writeDevFull);
    expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
    const f = asHostFault(e, '/dev/full', 'writing a byte');
    expect(f).toBeInstanceOf(HostFault);
    expect((f as HostFault).message).toBe('the host: no space left in /dev/full (ENOSPC) while writing a byte');
    expect((f as HostFault).code).toBe('ENOSPC');
  });

  it('ENOSPC: a pwrite to /dev/full through the libc bindings (a LibcError) is the same HostFault', () => {
    const fd = openFile('/dev/full', OPEN_ACCESS.WRONLY | OPEN_FLAGS.CLOEXEC);
    let e: unknown;
    try {
      e = thrown(() => pwrite(fd, Uint8Array.of(1), 0));
    } finally {
      closeFd(fd);
    }
    expect(e).toBeInstanceOf(LibcError);
    const f = asHostFault(e, '/dev/full', 'writing a byte') as HostFault;
    expect(isHostFault(f)).toBe(true);
    expect(f.message).toBe('the host: no space left in /dev/full (ENOSPC) while writing a byte');
    expect(f.code).toBe('ENOSPC');
  });

  it('EROFS: making a file on a read-only tmpfs is "<where> is on a read-only file system", and nothing is made', () => {
    const e = thrown(() => writeFileSync(join(readOnly, 'f'), 'x'));
    expect((e as NodeJS.ErrnoException).code).toBe('EROFS');
    const f = asHostFault(e, readOnly, "making the check's file") as HostFault;
    expect(f).toBeInstanceOf(HostFault);
    expect(f.message).toBe(`the host: ${readOnly} is on a read-only file system (EROFS) while making the check's file`);
    expect(f.code).toBe('EROFS');
    expect(readdirSync(readOnly)).toEqual([]);
  });

  it('ENOENT (a missing folder) and EISDIR are not the host running out of anything: passed through, the same object', () => {
    const missing = thrown(() => writeFileSync(join(work, 'no-such-folder', 'f'), 'x'));
    expect((missing as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(asHostFault(missing, work, 'writing')).toBe(missing);
    const isDir = thrown(() => writeFileSync(work, 'x'));
    expect((isDir as NodeJS.ErrnoException).code).toBe('EISDIR');
    expect(asHostFault(isDir, work, 'writing')).toBe(isDir);
  });
});

describe('asHostFault: each host errno, as node:fs reports it', () => {
  const cases: [code: string, errno: number, message: string][] = [
    ['ENOSPC', 28, 'no space left in /scratch'],
    ['EDQUOT', 122, 'disk quota exceeded in /scratch'],
    ['EROFS', 30, '/scratch is on a read-only file system'],
    ['EFBIG', 27, 'file too large for /scratch'],
    ['EMFILE', 24, 'too many open files in the process'],
    ['ENFILE', 23, 'too many open files on the system'],
    ['ENOMEM', 12, 'out of memory'],
    ['EIO', 5, 'an I/O error in /scratch'],
  ];

  it('the codes mapped are exactly these eight', () => {
    expect(Object.keys(HOST_ERRNO).sort()).toEqual(cases.map(([code]) => code).sort());
  });

  it.each(cases)('%s (errno %i): "the host: %s (<code>) while <doing>"', (code, errno, message) => {
    const e = errnoException(code, errno, 'write', '/scratch/f');
    const f = asHostFault(e, '/scratch', "making the probe's scratch file");
    expect(f).not.toBe(e);
    expect(f).toBeInstanceOf(HostFault);
    expect((f as HostFault).message).toBe(`the host: ${message} (${code}) while making the probe's scratch file`);
    expect((f as HostFault).code).toBe(code);
  });

  it('other errno codes, errors without a code, and what is not an Error at all pass through untouched', () => {
    for (const [code, errno] of [
      ['EACCES', 13],
      ['EPERM', 1],
      ['EBADF', 9],
      ['EINVAL', 22],
      ['EAGAIN', 11],
      ['EEXIST', 17],
    ] as const) {
      const e = errnoException(code, errno);
      expect(asHostFault(e, '/scratch', 'writing'), code).toBe(e);
    }
    const plain = new RangeError('scratch size must be a positive number of bytes, not 0');
    expect(asHostFault(plain, '/scratch', 'writing')).toBe(plain);
    // a number where the name would be (koffi's errno) is not a code
    const numeric = Object.assign(new Error('numeric code'), { code: 28 });
    expect(asHostFault(numeric, '/scratch', 'writing')).toBe(numeric);
    for (const v of ['ENOSPC', 28, null, undefined, { code: 'ENOSPC-ish' }]) expect(asHostFault(v, '/scratch', 'writing')).toBe(v);
  });

  it('a HostFault is returned as it is, not wrapped again', () => {
    const f = new HostFault('no space left in /a (ENOSPC) while making it', 'ENOSPC');
    expect(asHostFault(f, '/b', 'doing something else')).toBe(f);
    expect(f.message).toBe('the host: no space left in /a (ENOSPC) while making it');
  });
});

describe('hostCall', () => {
  it("returns what the call returns, and calls it once", () => {
    let calls = 0;
    expect(
      hostCall('/scratch', 'counting', () => {
        calls++;
        return 42;
      }),
    ).toBe(42);
    expect(calls).toBe(1);
  });

  it('a real ENOSPC (/dev/full) comes out as a HostFault', () => {
    const f = thrown(() => hostCall('/dev/full', 'filling it', writeDevFull));
    expect(f).toBeInstanceOf(HostFault);
    expect((f as HostFault).message).toBe('the host: no space left in /dev/full (ENOSPC) while filling it');
  });

  it('a real EROFS comes out as a HostFault naming the folder', () => {
    const f = thrown(() => hostCall(readOnly, "making the check's file", () => writeFileSync(join(readOnly, 'g'), 'x')));
    expect(isHostFault(f)).toBe(true);
    expect((f as HostFault).code).toBe('EROFS');
    expect((f as HostFault).message).toBe(`the host: ${readOnly} is on a read-only file system (EROFS) while making the check's file`);
  });

  it('anything else is rethrown as it was (the same object)', () => {
    const missing = thrown(() => hostCall(work, 'opening', () => openSync(join(work, 'missing'), 'r')));
    expect((missing as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(missing).not.toBeInstanceOf(HostFault);
    const own = new TypeError('a bug of ours');
    expect(
      thrown(() =>
        hostCall(work, 'opening', () => {
          throw own;
        }),
      ),
    ).toBe(own);
  });
});
