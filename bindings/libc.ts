// The few libc calls the suite needs (files, mappings, file systems), through koffi. Linux only, 64-bit
// (x64 and arm64 share the constants and the struct statfs layout used here, except O_NOFOLLOW and the system
// call numbers, chosen per architecture). All calls are synchronous;
// a failing call throws a LibcError carrying errno.

import { readdirSync, readFileSync } from 'node:fs';
import { constants as bufferConstants } from 'node:buffer';
import koffi from 'koffi';
import type { Host } from '../src/ops.js';
import { errorText } from '../src/fatal.js';

/** mmap(2)'s protection bits (PROT_*). */
export const PROT = { NONE: 0x0, READ: 0x1, WRITE: 0x2 } as const;
/** mmap(2)'s mapping flags (MAP_*). */
export const MAP = { SHARED: 0x01, PRIVATE: 0x02, ANONYMOUS: 0x20 } as const;

/** open(2)'s access modes (O_*): exactly one of them, or'd with any of OPEN_FLAGS. */
export const OPEN_ACCESS = { RDONLY: 0o0, WRONLY: 0o1, RDWR: 0o2 } as const;
/** open(2)'s creation and status flags (O_*). */
export const OPEN_FLAGS = {
  CREAT: 0o100,
  EXCL: 0o200,
  /** open fails with ELOOP when the last part of the path is a symbolic link (its value differs on arm64). */
  NOFOLLOW: process.arch === 'arm64' ? 0o100000 : 0o400000,
  TRUNC: 0o1000,
  /** open of a FIFO returns at once instead of waiting for the other end. */
  NONBLOCK: 0o4000,
  CLOEXEC: 0o2000000,
} as const;

export const MFD_CLOEXEC = 0x1;

const SC_PAGESIZE = 30;
const ST_RDONLY = 1;
const MAP_FAILED = 0xffffffffffffffffn;

/** A libc call failed; errno says why. */
export class LibcError extends Error {
  readonly call: string;
  readonly errno: number;
  /** Symbolic name such as 'EINVAL', when koffi knows the number. */
  readonly code?: string;

  constructor(call: string, errno: number, detail?: string) {
    const code = errnoName(errno);
    const text = libc().strerror(errno);
    super(`${call}: ${text} (${code ?? `errno ${errno}`})${detail === undefined ? '' : `: ${detail}`}`);
    this.name = 'LibcError';
    this.call = call;
    this.errno = errno;
    if (code !== undefined) this.code = code;
  }
}

// ---- the library, loaded on first use ----

/** Fields of struct statfs we read; koffi fills the object (64-bit integers come back as number or bigint). */
interface StatfsRaw {
  f_type: number | bigint;
  f_bsize: number | bigint;
  f_bavail: number | bigint;
  f_flags: number | bigint;
}

/** Typed views of the koffi functions (koffi's own type for them is `(...args: any[]) => any`). */
interface Libc {
  /** Variadic: the mode goes as the pair ('uint32_t', mode). */
  open(path: string, flags: number, modeType: 'uint32_t', mode: number): number;
  close(fd: number): number;
  pread(fd: number, buf: Uint8Array, count: number, offset: number): number;
  pwrite(fd: number, buf: Uint8Array, count: number, offset: number): number;
  ftruncate(fd: number, length: number): number;
  memfd_create(name: string, flags: number): number;
  mmap(addr: null, length: number, prot: number, flags: number, fd: number, offset: number): bigint;
  munmap(addr: bigint, length: number): number;
  mprotect(addr: bigint, length: number, prot: number): number;
  madvise(addr: bigint, length: number, advice: number): number;
  statfs(path: string, out: StatfsRaw): number;
  sysconf(name: number): number;
  strerror(errnum: number): string;
  flock(fd: number, operation: number): number;
  /** Variadic: the struct flock goes as the pair ('void *', its bytes). */
  fcntl(fd: number, cmd: number, argType: 'void *', arg: Uint8Array): number;
  prctl(option: number, arg2: number, arg3: number, arg4: number, arg5: number): number;
  getppid(): number;
  pause(): number;
  _exit(status: number): void;
  posix_fadvise(fd: number, offset: number, len: number, advice: number): number;
  mincore(addr: bigint, length: number, vec: Uint8Array): number;
  memcpy(dst: bigint, src: bigint, n: number): bigint;
  dup(fd: number): number;
  /** Variadic: each argument goes as a pair (koffi type, value). */
  syscall(number: number, ...typedArgs: unknown[]): number;
}

let loaded: Libc | undefined;

function libc(): Libc {
  return (loaded ??= load());
}

function load(): Libc {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    throw new Error(`bindings/libc: Linux x64 or arm64 only, not ${process.platform} ${process.arch}`);
  }
  const lib = koffi.load('libc.so.6');
  statfsStruct();
  return {
    open: lib.func('int open(const char *path, int flags, ...)'),
    close: lib.func('int close(int fd)'),
    pread: lib.func('intptr_t pread(int fd, void *buf, size_t count, int64_t offset)'),
    pwrite: lib.func('intptr_t pwrite(int fd, const void *buf, size_t count, int64_t offset)'),
    ftruncate: lib.func('int ftruncate(int fd, int64_t length)'),
    memfd_create: lib.func('int memfd_create(const char *name, unsigned int flags)'),
    mmap: lib.func('void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)'),
    munmap: lib.func('int munmap(void *addr, size_t length)'),
    mprotect: lib.func('int mprotect(void *addr, size_t length, int prot)'),
    madvise: lib.func('int madvise(void *addr, size_t length, int advice)'),
    statfs: lib.func('int statfs(const char *path, _Out_ libc_statfs *buf)'),
    sysconf: lib.func('long sysconf(int name)'),
    strerror: lib.func('const char *strerror(int errnum)'),
    flock: lib.func('int flock(int fd, int operation)'),
    fcntl: lib.func('int fcntl(int fd, int cmd, ...)'),
    // variadic in glibc; the kernel reads five register-sized arguments, which is what this declares
    prctl: lib.func('int prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4, unsigned long arg5)'),
    getppid: lib.func('int getppid(void)'),
    pause: lib.func('int pause(void)'),
    _exit: lib.func('void _exit(int status)'),
    posix_fadvise: lib.func('int posix_fadvise(int fd, int64_t offset, int64_t len, int advice)'),
    mincore: lib.func('int mincore(void *addr, size_t length, uint8_t *vec)'),
    memcpy: lib.func('void *memcpy(void *dst, const void *src, size_t n)'),
    dup: lib.func('int dup(int oldfd)'),
    syscall: lib.func('long syscall(long number, ...)'),
  };
}

/** struct statfs of 64-bit Linux glibc. koffi type names are process-wide, so reuse it if already declared. */
function statfsStruct(): void {
  try {
    koffi.type('libc_statfs');
  } catch {
    koffi.struct('libc_statfs', {
      f_type: 'long',
      f_bsize: 'long',
      f_blocks: 'unsigned long',
      f_bfree: 'unsigned long',
      f_bavail: 'unsigned long',
      f_files: 'unsigned long',
      f_ffree: 'unsigned long',
      f_fsid: koffi.array('int', 2),
      f_namelen: 'long',
      f_frsize: 'long',
      f_flags: 'long',
      f_spare: koffi.array('long', 4),
    });
  }
}

let errnoNames: Map<number, string> | undefined;

function errnoName(errno: number): string | undefined {
  if (errnoNames === undefined) {
    errnoNames = new Map();
    // Aliases share a number (EAGAIN/EWOULDBLOCK): the first name, alphabetically, wins.
    for (const [name, value] of Object.entries(koffi.os.errno)) if (!errnoNames.has(value)) errnoNames.set(value, name);
  }
  return errnoNames.get(errno);
}

/** Throws the errno of the call that just failed. Must run before anything else can call into libc. */
function fail(call: string, detail?: string): never {
  throw new LibcError(call, koffi.errno(), detail);
}

function check(call: string, result: number, detail?: string): number {
  return result < 0 ? fail(call, detail) : result;
}

function size(what: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what}: ${n} is not a non-negative safe integer`);
  return n;
}

// ---- files ----

/** open(2). `mode` (default 0o666, less the umask, like node:fs) only matters with O_CREAT. */
export function openFile(path: string, flags: number, mode = 0o666): number {
  return check('open', libc().open(path, flags, 'uint32_t', mode), path);
}

export function closeFd(fd: number): void {
  check('close', libc().close(fd));
}

/** One pread(2) into `into`; may read less than asked. Returns bytes read (0 at end of file). */
export function pread(fd: number, into: Uint8Array, offset: number): number {
  return check('pread', libc().pread(fd, into, into.length, size('pread offset', offset)));
}

/**
 * Blocks this thread for good in a native call, as a driver call that never returns does (the test hooks' hang):
 * no event loop turn and no JavaScript signal handler runs again, only a signal that ends the process ends it. It
 * sleeps where a spin loop would burn a core for as long as the command's watchdog waits.
 */
export function blockForever(): never {
  for (;;) libc().pause(); // returns only when a handled signal interrupts it (EINTR)
}

/**
 * _exit(2): ends the process at once with `status`, without the C library's exit handlers and the loaded libraries'
 * destructors (a driver's or an ICD's own teardown): the kernel frees what the process held, as for a process
 * killed. Its memory leaves with it, not after that teardown.
 */
export function exitNow(status: number): never {
  libc()._exit(status);
  throw new Error('_exit returned'); // never reached
}

/** Reads a page mapped PROT_NONE: a real SIGSEGV, as a driver bug would give (the test hooks' crash). */
export function readProtNonePage(): number {
  return mmap(4096, PROT.NONE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0).bytes[0]!;
}

/** pread until `into` is full or the file ends. Returns bytes read. */
export function preadFully(fd: number, into: Uint8Array, offset: number): number {
  let done = 0;
  while (done < into.length) {
    const n = pread(fd, into.subarray(done), offset + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

/** dup(2): a second descriptor of the same open file (its own number). */
export function dup(fd: number): number {
  return check('dup', libc().dup(fd));
}

/**
 * glibc's POSIX AIO (aio(7)), by the address of a struct aiocb: the request runs on a thread of glibc's own, one
 * per file descriptor, while the caller goes on (bindings/read-ahead.ts lays the struct out).
 */
export interface Aio {
  /** aio_read(3): 0 when queued, else -1 (errno). */
  read(cb: bigint): number;
  /** aio_error(3): EINPROGRESS while it runs, 0 once done, else its error number. */
  error(cb: bigint): number;
  /** aio_return(3), once it is done: the bytes read, or -1. Once per request. */
  result(cb: bigint): number;
  /** aio_suspend(3) on `n` addresses of struct aiocb at `list`, with no timeout: 0, or -1 (EINTR, EAGAIN). */
  suspend(list: bigint, n: number): number;
}

/** aio_error's "still running". */
export const EINPROGRESS = 115;

let aioLoaded: Aio | string | undefined;

/** glibc's AIO calls: libc.so.6's (glibc 2.34 and later), else librt.so.1's; or why there are none. */
export function aio(): Aio | string {
  if (aioLoaded !== undefined) return aioLoaded;
  libc(); // the platform's check
  const whys: string[] = [];
  for (const name of ['libc.so.6', 'librt.so.1']) {
    try {
      const lib = koffi.load(name);
      const read = lib.func('int aio_read(void *cb)');
      const error = lib.func('int aio_error(void *cb)');
      const result = lib.func('intptr_t aio_return(void *cb)');
      const suspend = lib.func('int aio_suspend(void *list, int nent, void *timeout)');
      aioLoaded = {
        read: (cb) => read(cb) as number,
        error: (cb) => error(cb) as number,
        result: (cb) => Number(result(cb)),
        suspend: (list, n) => suspend(list, n, null) as number,
      };
      return aioLoaded;
    } catch (e) {
      whys.push(`${name}: ${errorText(e)}`);
    }
  }
  return (aioLoaded = `no POSIX AIO (${whys.join('; ')})`);
}

/** One pwrite(2) of `from`; may write less. Returns bytes written. */
export function pwrite(fd: number, from: Uint8Array, offset: number): number {
  return check('pwrite', libc().pwrite(fd, from, from.length, size('pwrite offset', offset)));
}

export function ftruncate(fd: number, length: number): void {
  check('ftruncate', libc().ftruncate(fd, size('ftruncate length', length)));
}

/** An anonymous file in memory (memfd_create(2)); close it like any fd. */
export function memfdCreate(name: string, flags = MFD_CLOEXEC): number {
  return check('memfd_create', libc().memfd_create(name, flags), name);
}

/** posix_fadvise(2) advice: the pages of the range are not needed (clean ones leave the page cache). */
export const POSIX_FADV_DONTNEED = 4;

/**
 * posix_fadvise(2) on a range of an open file (len 0: to the end). It returns its error number instead of
 * setting errno: a LibcError carries that number.
 */
export function posixFadvise(fd: number, offset: number, len: number, advice: number): void {
  const r = libc().posix_fadvise(fd, size('posix_fadvise offset', offset), size('posix_fadvise len', len), advice);
  if (r !== 0) throw new LibcError('posix_fadvise', r);
}

// ---- mappings ----

/** A mapping made by mmap. `bytes` is a zero-copy view of it; `length` is what munmap releases. */
export interface Mapping extends Host {
  readonly length: number;
}

const unmapped = new WeakSet<Mapping>();

/**
 * mmap(2) of `length` bytes (the kernel picks the address). For PROT_NONE (or any prot without PROT_READ)
 * a Mapping is still returned, but touching `bytes` kills the process with SIGSEGV: use only its address
 * and length until mprotect makes it readable. `bytes` must not be used after munmap, for the same reason.
 * Views are limited to buffer.constants.MAX_LENGTH bytes (4 GiB on Node 20): longer is refused up front,
 * since koffi.view aborts the process there.
 */
export function mmap(length: number, prot: number, flags: number, fd: number, offset: number): Mapping {
  if (size('mmap length', length) > bufferConstants.MAX_LENGTH) {
    throw new RangeError(`mmap: ${length} bytes is more than a view can hold (${bufferConstants.MAX_LENGTH})`);
  }
  const ptr = libc().mmap(null, length, prot, flags, fd, size('mmap offset', offset));
  if (koffi.address(ptr) === MAP_FAILED) fail('mmap');
  return { address: koffi.address(ptr), bytes: new Uint8Array(koffi.view(ptr, length)), length };
}

/** munmap(2). A second munmap of the same Mapping throws instead of unmapping whatever lives there now. */
export function munmap(m: Mapping): void {
  if (unmapped.has(m)) throw new Error(`munmap: 0x${m.address.toString(16)} was already unmapped`);
  check('munmap', libc().munmap(m.address, m.length));
  unmapped.add(m);
}

/** mprotect(2) of a page-aligned range (EINVAL otherwise). */
export function mprotect(m: Host, prot: number): void {
  check('mprotect', libc().mprotect(m.address, m.bytes.length, prot));
}

/** madvise(2)'s MADV_DONTNEED (linux/mman.h, the same on x64 and arm64). */
export const MADV_DONTNEED = 4;

/**
 * madvise(MADV_DONTNEED) of a page-aligned range: its pages leave this process's memory. Only for a shared
 * mapping of a file (the file keeps the bytes, and a later read maps them again) that no driver holds: on a
 * private or anonymous mapping it would throw the bytes away.
 */
export function dropPages(m: Host): void {
  check('madvise', libc().madvise(m.address, m.bytes.length, MADV_DONTNEED));
}

/**
 * mincore(2): one byte per page of the mapping (of pageSize()), whose lowest bit says whether that page is in
 * the page cache (resident) now.
 */
export function mincore(m: Mapping): Uint8Array {
  const vec = new Uint8Array(Math.ceil(m.length / pageSize()));
  check('mincore', libc().mincore(m.address, m.length, vec));
  return vec;
}

/**
 * memcpy(3) of the first `bytes` of `from` into `to`, by address: libc's own copy, for the bench's Node.js
 * twin of the native reference, which compares it with Uint8Array.set. Both must hold `bytes`.
 */
export function memcpy(to: Host, from: Host, bytes = from.bytes.length): void {
  if (size('memcpy bytes', bytes) > to.bytes.length || bytes > from.bytes.length) {
    throw new RangeError(`memcpy: ${bytes} bytes, from ${from.bytes.length} into ${to.bytes.length}`);
  }
  libc().memcpy(to.address, from.address, bytes);
}

let page: number | undefined;

export function pageSize(): number {
  return (page ??= check('sysconf', libc().sysconf(SC_PAGESIZE)));
}

// ---- locks and processes ----

export const LOCK_SH = 1;
export const LOCK_EX = 2;
export const LOCK_NB = 4;
export const LOCK_UN = 8;

/**
 * flock(2) on an open descriptor. With LOCK_NB, a lock another open file holds gives false (EWOULDBLOCK)
 * instead of waiting; any other failure throws. The lock lives as long as the open file (every descriptor
 * of it closed, or the process dead, releases it), whatever PID namespace the holder is in.
 */
export function flock(fd: number, operation: number): boolean {
  if (libc().flock(fd, operation) === 0) return true;
  const errno = koffi.errno();
  if ((operation & LOCK_NB) !== 0 && errno === koffi.os.errno.EWOULDBLOCK) return false;
  throw new LibcError('flock', errno);
}

// Open file description record locks (fcntl F_OFD_*, Linux 3.15): like flock(2), owned by the open file and let go
// when it is closed (or its process dies), but on a byte range, and independent of flock(2) locks on the same file.
const F_OFD_GETLK = 36;
const F_OFD_SETLK = 37;
export const F_RDLCK = 0;
export const F_WRLCK = 1;
export const F_UNLCK = 2;
/** struct flock on 64-bit Linux: l_type (short) at 0, l_whence (short) at 2, l_start at 8, l_len at 16, l_pid at 24. */
const FLOCK_STRUCT_BYTES = 32;

function recordLock(type: number, start: number, length: number): Uint8Array {
  const bytes = new Uint8Array(FLOCK_STRUCT_BYTES);
  const view = new DataView(bytes.buffer);
  view.setInt16(0, type, true);
  view.setInt16(2, 0, true); // SEEK_SET
  view.setBigInt64(8, BigInt(start), true);
  view.setBigInt64(16, BigInt(length), true);
  return bytes; // l_pid 0, as OFD locks require
}

/**
 * Takes (F_RDLCK, F_WRLCK) or lets go of (F_UNLCK) an open file description's lock on `length` bytes at `start`,
 * without waiting: a range another open file locks in the way gives false; any other failure throws.
 */
export function ofdLock(fd: number, type: number, start: number, length: number): boolean {
  if (libc().fcntl(fd, F_OFD_SETLK, 'void *', recordLock(type, start, length)) === 0) return true;
  const errno = koffi.errno();
  if (errno === koffi.os.errno.EAGAIN || errno === koffi.os.errno.EACCES) return false;
  throw new LibcError('fcntl(F_OFD_SETLK)', errno);
}

/** Whether another open file holds a lock on the range that a lock of `type` would be refused by (F_OFD_GETLK). */
export function ofdLockedAgainst(fd: number, type: number, start: number, length: number): boolean {
  const bytes = recordLock(type, start, length);
  check('fcntl(F_OFD_GETLK)', libc().fcntl(fd, F_OFD_GETLK, 'void *', bytes));
  return new DataView(bytes.buffer).getInt16(0, true) !== F_UNLCK;
}

const PR_SET_PDEATHSIG = 1;

/**
 * prctl(PR_SET_PDEATHSIG, signal): the kernel sends `signal` to this process when the thread that started it
 * ends (its parent dies). Even a process stuck in a native call or a busy loop gets it.
 */
export function setParentDeathSignal(signal: number): void {
  check('prctl', libc().prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0));
}

/** getppid(2): the parent's pid in this process's PID namespace (1, or a subreaper's, once the parent died). */
export function getppid(): number {
  return libc().getppid();
}

// ---- memory policy (NUMA) ----
// glibc has no wrappers for these (libnuma has, and is not required): syscall(2) with the kernel's numbers.

const SYS_MEMPOLICY =
  process.arch === 'arm64'
    ? { mbind: 235, get_mempolicy: 236, set_mempolicy: 237 }
    : { mbind: 237, set_mempolicy: 238, get_mempolicy: 239 };

/**
 * Bits in the node masks passed to the kernel. `maxnode` is one more: the kernel reads one bit less than it is
 * told (as libnuma does, so do we).
 */
export const NODE_MASK_BITS = 1024;

function nodeMask(nodes: readonly number[]): BigUint64Array {
  const mask = new BigUint64Array(NODE_MASK_BITS / 64);
  for (const n of nodes) {
    if (!Number.isInteger(n) || n < 0 || n >= NODE_MASK_BITS) throw new RangeError(`node ${n} is not in 0..${NODE_MASK_BITS - 1}`);
    mask[n >> 6]! |= 1n << BigInt(n & 63);
  }
  return mask;
}

function maskNodes(mask: BigUint64Array): number[] {
  const nodes: number[] = [];
  for (let n = 0; n < NODE_MASK_BITS; n++) if ((mask[n >> 6]! >> BigInt(n & 63)) & 1n) nodes.push(n);
  return nodes;
}

/** set_mempolicy(2) for the calling thread: `mode` (MPOL_*) over `nodes` (none for MPOL_DEFAULT). */
export function setMempolicy(mode: number, nodes: readonly number[]): void {
  const mask = nodeMask(nodes);
  check('set_mempolicy', libc().syscall(SYS_MEMPOLICY.set_mempolicy, 'int', mode, 'void *', mask, 'unsigned long', NODE_MASK_BITS + 1));
}

/** get_mempolicy(2) of the calling thread (flags 0): its mode (MPOL_*, with any mode flags) and nodes. */
export function getMempolicy(): { mode: number; nodes: number[] } {
  const mode = new Int32Array(1);
  const mask = new BigUint64Array(NODE_MASK_BITS / 64);
  check(
    'get_mempolicy',
    libc().syscall(SYS_MEMPOLICY.get_mempolicy, 'int *', mode, 'void *', mask, 'unsigned long', NODE_MASK_BITS + 1, 'void *', null, 'unsigned long', 0),
  );
  return { mode: mode[0]!, nodes: maskNodes(mask) };
}

/** mbind(2) of a page-aligned range: `mode` (MPOL_*) over `nodes`, flags 0 (pages already there stay). */
export function mbind(address: bigint, length: number, mode: number, nodes: readonly number[]): void {
  const mask = nodeMask(nodes);
  check(
    'mbind',
    libc().syscall(
      SYS_MEMPOLICY.mbind,
      'void *',
      address,
      'unsigned long',
      size('mbind length', length),
      'int',
      mode,
      'void *',
      mask,
      'unsigned long',
      NODE_MASK_BITS + 1,
      'unsigned int',
      0,
    ),
  );
}

// ---- file systems ----

export interface FsInfo {
  /** f_type, the file system's magic number. */
  type: number;
  /** A name for the magic ('ext4' stands for ext2/3/4), else 'unknown(0x…)'. */
  fsName: string;
  /** Bytes an unprivileged user may still write (f_bavail * f_bsize). */
  freeBytes: bigint;
  /** Mounted read-only (ST_RDONLY). */
  readOnly: boolean;
}

const FS_NAMES = new Map<number, string>([
  [0xef53, 'ext4'],
  [0x58465342, 'xfs'],
  [0x9123683e, 'btrfs'],
  [0x01021994, 'tmpfs'],
  [0x6969, 'nfs'],
  [0x794c7630, 'overlayfs'],
  [0x2fc12fc1, 'zfs'],
  [0x858458f6, 'ramfs'],
  [0x958458f6, 'hugetlbfs'],
  [0x65735546, 'fuse'],
  [0xf2f52010, 'f2fs'],
  [0x73717368, 'squashfs'],
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
]);

/** A name for an f_type magic, else 'unknown(0x…)'. */
export function fsName(type: number): string {
  return FS_NAMES.get(type) ?? `unknown(0x${type.toString(16)})`;
}

export function statfs(path: string): FsInfo {
  const raw = {} as StatfsRaw; // filled by statfs (_Out_)
  check('statfs', libc().statfs(path, raw), path);
  const type = Number(BigInt.asUintN(32, BigInt(raw.f_type))); // magics are 32-bit; undo any sign extension
  return {
    type,
    fsName: fsName(type),
    freeBytes: BigInt(raw.f_bavail) * BigInt(raw.f_bsize),
    readOnly: (BigInt(raw.f_flags) & BigInt(ST_RDONLY)) !== 0n,
  };
}

// ---- leak checks (node:fs, no FFI) ----

/** Entries of /proc/self/fd, counting the one readdir itself holds: compare counts, not absolutes. */
export function openFdCount(): number {
  return readdirSync('/proc/self/fd').length;
}

/** Lines of /proc/self/maps, or only those containing `match` (a file path, '/memfd:name'). */
export function mappingCount(match?: string): number {
  const lines = readFileSync('/proc/self/maps', 'utf8').split('\n').filter((l) => l !== '');
  return match === undefined ? lines.length : lines.filter((l) => l.includes(match)).length;
}
