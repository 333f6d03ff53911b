// The driver double itself: its profiles and faults behave as test/double/README.md says. The libraries
// are loaded directly with koffi (the few functions needed are declared here), with mmap/munmap/mprotect
// from libc for real file-backed mappings.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  ftruncateSync,
  openSync,
  rmSync,
  statSync,
  statfsSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import koffi from 'koffi';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAP, PROT } from '../bindings/libc.js';
import { buildDoubles, type DoublePaths } from './double/build.js';
import { ROOT } from './support/command.js';
import { capturingStderr } from './support/stderr.js';
import { diskTempDir } from './support/temp-dir.js';

// ------------------------------------------------------------------ libc

const PAGE = 4096;
// the bindings need no fixed placement: only this file's hole-making does
const MAP_FIXED = 0x10;
const MAP_FAILED = 0xffffffffffffffffn;
const TMPFS_MAGIC = 0x01021994;

const libc = koffi.load('libc.so.6');
const mmap = libc.func('void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)');
const munmap = libc.func('int munmap(void *addr, size_t length)');
const mprotect = libc.func('int mprotect(void *addr, size_t len, int prot)');
const memfd_create = libc.func('int memfd_create(const char *name, unsigned int flags)');

interface Mapping {
  addr: bigint;
  len: number;
}

const mappings = new Set<Mapping>();
const fds = new Set<number>();

function map(len: number, prot: number, flags: number, fd = -1, offset = 0): Mapping {
  const addr = BigInt(mmap(null, len, prot, flags, fd, offset));
  if (addr === MAP_FAILED || addr === 0n) throw new Error(`mmap failed: errno ${koffi.errno()}`);
  const m = { addr, len };
  mappings.add(m);
  return m;
}

function anon(len: number, prot = PROT.READ | PROT.WRITE): Mapping {
  return map(len, prot, MAP.PRIVATE | MAP.ANONYMOUS);
}

function unmap(m: Mapping): void {
  if (!mappings.delete(m)) return;
  if (munmap(m.addr, m.len) !== 0) throw new Error(`munmap failed: errno ${koffi.errno()}`);
}

function bytesAt(addr: bigint, len: number): Uint8Array {
  return new Uint8Array(koffi.view(addr, len));
}

function openFd(path: string, flags: string): number {
  const fd = openSync(path, flags);
  fds.add(fd);
  return fd;
}

function closeFd(fd: number): void {
  if (fds.delete(fd)) closeSync(fd);
}

let scratch = '';
let fileSeq = 0;

/** A file of `data` in the scratch directory (a temp folder of this file's own, on a disk-backed file system). */
function scratchFile(data: Uint8Array): string {
  const path = join(scratch, `f${fileSeq++}`);
  writeFileSync(path, data);
  return path;
}

/** Maps a whole file; the descriptor is closed at once (the mapping keeps the file). */
function mapFile(path: string, prot: number, flags: number, len = statSync(path).size): Mapping {
  const fd = openFd(path, prot & PROT.WRITE ? 'r+' : 'r');
  try {
    return map(len, prot, flags, fd);
  } finally {
    closeFd(fd);
  }
}

/** `data` in a file of /dev/shm (tmpfs) named `name` and this pid, mapped shared and read-only for `use`, then unmapped; the file removed whatever `use` does. */
function onTmpfs(name: string, data: Buffer, use: (t: Mapping) => void): void {
  const path = join('/dev/shm', `${name}-${process.pid}`);
  writeFileSync(path, data);
  try {
    const t = mapFile(path, PROT.READ, MAP.SHARED);
    use(t);
    unmap(t);
  } finally {
    rmSync(path, { force: true });
  }
}

/**
 * Maps a whole file with an unmapped page right after it (a mapping of its own, placed inside a
 * reservation whose last page is then given back), so that a range running past its end is not covered
 * by whatever mapping the kernel happened to put next to it.
 */
function mapFileBeforeHole(path: string, prot: number): Mapping {
  const len = statSync(path).size;
  const reservation = anon(len + PAGE, PROT.NONE);
  const fd = openFd(path, 'r');
  try {
    const addr = BigInt(mmap(reservation.addr, len, prot, MAP.SHARED | MAP_FIXED, fd, 0));
    if (addr !== reservation.addr) throw new Error(`mmap MAP_FIXED failed: errno ${koffi.errno()}`);
  } finally {
    closeFd(fd);
  }
  mappings.delete(reservation);
  expect(munmap(reservation.addr + BigInt(len), PAGE)).toBe(0);
  const m = { addr: reservation.addr, len };
  mappings.add(m);
  return m;
}

/** An address with nothing mapped there: the middle page of a reservation of three. */
function hole(): { addr: bigint; release: () => void } {
  const r = anon(3 * PAGE, PROT.NONE);
  mappings.delete(r);
  const addr = r.addr + BigInt(PAGE);
  expect(munmap(addr, PAGE)).toBe(0);
  const before = { addr: r.addr, len: PAGE };
  const after = { addr: addr + BigInt(PAGE), len: PAGE };
  mappings.add(before);
  mappings.add(after);
  return {
    addr,
    release: () => {
      unmap(before);
      unmap(after);
    },
  };
}

function isTmpfs(path: string): boolean {
  return Number(statfsSync(path).type) === TMPFS_MAGIC;
}

// ------------------------------------------------------------------ the doubles

let paths: DoublePaths;

/** What koffi declares a C function as. */
type CFunction = ReturnType<ReturnType<typeof koffi.load>['func']>;

/** Each of `prototypes` declared from the library at `path`, under its key. */
function declare<K extends string>(path: string, prototypes: Readonly<Record<K, string>>): Record<K, CFunction> {
  const lib = koffi.load(path);
  return Object.fromEntries(Object.entries<string>(prototypes).map(([key, prototype]) => [key, lib.func(prototype)])) as Record<K, CFunction>;
}

/** The double's own controls (common.c), the same in every library it builds. */
const DOUBLE_CONTROLS = {
  doubleReset: 'void double_reset(void)',
  registrations: 'int double_registration_count(void)',
  calls: 'int double_calls(const char *name)',
} as const;

/** The CUDA double's functions this file calls, by a short name. */
const CUDA_CALLS = {
  init: 'int cuInit(unsigned int flags)',
  driverVersion: 'int cuDriverGetVersion(_Out_ int *version)',
  deviceCount: 'int cuDeviceGetCount(_Out_ int *count)',
  deviceGet: 'int cuDeviceGet(_Out_ int *dev, int ordinal)',
  deviceName: 'int cuDeviceGetName(_Out_ uint8_t *name, int len, int dev)',
  pciBusId: 'int cuDeviceGetPCIBusId(_Out_ uint8_t *busid, int len, int dev)',
  totalMem: 'int cuDeviceTotalMem_v2(_Out_ size_t *bytes, int dev)',
  attribute: 'int cuDeviceGetAttribute(_Out_ int *value, int attrib, int dev)',
  retain: 'int cuDevicePrimaryCtxRetain(_Out_ void **ctx, int dev)',
  release: 'int cuDevicePrimaryCtxRelease_v2(int dev)',
  reset: 'int cuDevicePrimaryCtxReset_v2(int dev)',
  setCurrent: 'int cuCtxSetCurrent(void *ctx)',
  synchronize: 'int cuCtxSynchronize(void)',
  memAlloc: 'int cuMemAlloc_v2(_Out_ uint64_t *dptr, size_t bytes)',
  memFree: 'int cuMemFree_v2(uint64_t dptr)',
  hostAlloc: 'int cuMemHostAlloc(_Out_ void **p, size_t bytes, unsigned int flags)',
  freeHost: 'int cuMemFreeHost(void *p)',
  register: 'int cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags)',
  unregister: 'int cuMemHostUnregister(void *p)',
  htod: 'int cuMemcpyHtoD_v2(uint64_t dst, void *src, size_t bytes)',
  dtoh: 'int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes)',
  errorName: 'int cuGetErrorName(int error, _Out_ const char **str)',
  errorString: 'int cuGetErrorString(int error, _Out_ const char **str)',
  ...DOUBLE_CONTROLS,
} as const;

/** The HIP double's functions this file calls, by a short name. */
const HIP_CALLS = {
  runtimeVersion: 'int hipRuntimeGetVersion(_Out_ int *version)',
  driverVersion: 'int hipDriverGetVersion(_Out_ int *version)',
  init: 'int hipInit(unsigned int flags)',
  deviceCount: 'int hipGetDeviceCount(_Out_ int *count)',
  deviceName: 'int hipDeviceGetName(_Out_ uint8_t *name, int len, int dev)',
  pciBusId: 'int hipDeviceGetPCIBusId(_Out_ uint8_t *busid, int len, int dev)',
  totalMem: 'int hipDeviceTotalMem(_Out_ size_t *bytes, int dev)',
  attribute: 'int hipDeviceGetAttribute(_Out_ int *value, int attr, int dev)',
  setDevice: 'int hipSetDevice(int dev)',
  synchronize: 'int hipDeviceSynchronize(void)',
  deviceReset: 'int hipDeviceReset(void)',
  malloc: 'int hipMalloc(_Out_ void **p, size_t bytes)',
  free: 'int hipFree(void *p)',
  hostMalloc: 'int hipHostMalloc(_Out_ void **p, size_t bytes, unsigned int flags)',
  hostFree: 'int hipHostFree(void *p)',
  register: 'int hipHostRegister(void *p, size_t bytes, unsigned int flags)',
  unregister: 'int hipHostUnregister(void *p)',
  memcpy: 'int hipMemcpy(void *dst, void *src, size_t bytes, int kind)',
  errorName: 'const char *hipGetErrorName(int error)',
  errorString: 'const char *hipGetErrorString(int error)',
  ...DOUBLE_CONTROLS,
} as const;

let cu: Record<keyof typeof CUDA_CALLS, CFunction>;
let hip: Record<keyof typeof HIP_CALLS, CFunction>;

const CU = {
  SUCCESS: 0,
  INVALID_VALUE: 1,
  NOT_INITIALIZED: 3,
  NO_DEVICE: 100,
  INVALID_DEVICE: 101,
  INVALID_CONTEXT: 201,
  ALREADY_REGISTERED: 712,
  NOT_REGISTERED: 713,
  NOT_SUPPORTED: 801,
  UNKNOWN: 999,
  READ_ONLY: 0x08,
  ATTR_INTEGRATED: 18,
  ATTR_CAN_MAP_HOST_MEMORY: 19,
  ATTR_PAGEABLE_MEMORY_ACCESS: 88,
  ATTR_HOST_REGISTER_SUPPORTED: 99,
  ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED: 113,
} as const;

const HIP = {
  SUCCESS: 0,
  INVALID_VALUE: 1,
  NO_DEVICE: 100,
  ALREADY_REGISTERED: 712,
  NOT_REGISTERED: 713,
  HtoD: 1,
  DtoH: 2,
  ATTR_INTEGRATED: 16,
  ATTR_CAN_MAP_HOST_MEMORY: 3,
  ATTR_HOST_REGISTER_SUPPORTED: 90,
} as const;

const ENV_KEYS = [
  'MAPPED_REG_DOUBLE_PROFILE',
  'MAPPED_REG_DOUBLE_FAULTS',
  'MAPPED_REG_DOUBLE_DEVICES',
  'MAPPED_REG_DOUBLE_HIP_VERSION',
  'CC',
] as const;
const savedEnv = new Map<string, string | undefined>(ENV_KEYS.map((k) => [k, process.env[k]]));

function setEnv(vars: Partial<Record<(typeof ENV_KEYS)[number], string>>): void {
  for (const [k, v] of Object.entries(vars)) process.env[k] = v;
}

/** cuInit(0) of a setting the double refuses: the line it says on stderr is captured, not printed among the run's output. */
const refusedInit = (): number => capturingStderr(() => cu.init(0)).value as number;

beforeAll(() => {
  paths = buildDoubles();
  cu = declare(paths.cuda, CUDA_CALLS);
  hip = declare(paths.hip, HIP_CALLS);
  scratch = diskTempDir('mapped-reg-double-test-');
});

afterEach(() => {
  cu.doubleReset();
  hip.doubleReset();
  for (const m of [...mappings]) unmap(m);
  for (const fd of [...fds]) closeFd(fd);
  for (const [k, v] of savedEnv) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** cuInit, the primary context of device 0, made current. */
function cudaUp(): void {
  expect(cu.init(0)).toBe(CU.SUCCESS);
  const ctx: [bigint | null] = [null];
  expect(cu.retain(ctx, 0)).toBe(CU.SUCCESS);
  expect(cu.setCurrent(ctx[0])).toBe(CU.SUCCESS);
}

function cudaName(code: number): string | null {
  const out: [string | null] = [null];
  cu.errorName(code, out);
  return out[0];
}

function cudaAttr(attr: number): { rc: number; value: number } {
  const out = [-1];
  const rc = cu.attribute(out, attr, 0) as number;
  return { rc, value: out[0]! };
}

function hipAttr(attr: number): { rc: number; value: number } {
  const out = [-1];
  const rc = hip.attribute(out, attr, 0) as number;
  return { rc, value: out[0]! };
}

interface RoundTrip {
  htod: number;
  dtoh: number;
  bytes: Uint8Array;
}

/** Copies len bytes at src to a fresh device buffer and back into fresh host memory. */
function cudaRoundTrip(src: bigint, len: number): RoundTrip {
  const dev: [number | bigint] = [0];
  expect(cu.memAlloc(dev, len)).toBe(CU.SUCCESS);
  const out = anon(Math.ceil(len / PAGE) * PAGE);
  try {
    const htod = cu.htod(dev[0], src, len) as number;
    const dtoh = htod === 0 ? (cu.dtoh(out.addr, dev[0], len) as number) : -1;
    return { htod, dtoh, bytes: bytesAt(out.addr, len).slice() };
  } finally {
    unmap(out);
    expect(cu.memFree(dev[0])).toBe(CU.SUCCESS);
  }
}

function hipRoundTrip(src: bigint, len: number): RoundTrip {
  const dev: [bigint | null] = [null];
  expect(hip.malloc(dev, len)).toBe(HIP.SUCCESS);
  const out = anon(Math.ceil(len / PAGE) * PAGE);
  try {
    const htod = hip.memcpy(dev[0], src, len, HIP.HtoD) as number;
    const dtoh = htod === 0 ? (hip.memcpy(out.addr, dev[0], len, HIP.DtoH) as number) : -1;
    return { htod, dtoh, bytes: bytesAt(out.addr, len).slice() };
  } finally {
    unmap(out);
    expect(hip.free(dev[0])).toBe(HIP.SUCCESS);
  }
}

function countDiffs(a: Uint8Array, b: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) n++;
  return n;
}

function readString(fn: (buf: Buffer, len: number, dev: number) => number, dev = 0): string {
  const buf = Buffer.alloc(64);
  expect(fn(buf, buf.length, dev)).toBe(0);
  return buf.toString('latin1').replace(/\0[\s\S]*$/, '');
}

/** What a double's device-query calls need: its name, PCI bus id and memory size of a device. */
interface DeviceQueries {
  deviceName(buf: Buffer, len: number, dev: number): number;
  pciBusId(buf: Buffer, len: number, dev: number): number;
  totalMem(out: number[], dev: number): number;
}

/** Device 0 of a double: named `name`, at 0000:00:00.0, 80 GiB, and each attribute of `attrs` read (rc 0) as its value. */
function expectDevice0(api: DeviceQueries, attr: (a: number) => { rc: number; value: number }, name: string, attrs: [number, number][]): void {
  expect(readString(api.deviceName)).toBe(name);
  expect(readString(api.pciBusId)).toBe('0000:00:00.0');
  const mem = [0];
  expect(api.totalMem(mem, 0)).toBe(0);
  expect(mem[0]).toBe(80 * 2 ** 30);
  for (const [a, value] of attrs) expect(attr(a), `attribute ${a}`).toEqual({ rc: 0, value });
}

/** What a double's registration calls need: register, unregister and its count of registrations. */
type RegistrationCalls = Pick<typeof cu & typeof hip, 'register' | 'unregister' | 'registrations'>;

/** `m` registered, then released twice in vain (each answering `failed`, the registration kept), then for good. */
function expectTwoFailedReleases(api: RegistrationCalls, m: Mapping, failed: number): void {
  expect(api.register(m.addr, m.len, 0)).toBe(0);
  expect(api.unregister(m.addr)).toBe(failed);
  expect(api.unregister(m.addr)).toBe(failed);
  expect(api.registrations()).toBe(1);
  expect(api.unregister(m.addr)).toBe(0);
  expect(api.registrations()).toBe(0);
}

// ------------------------------------------------------------------ build

describe('buildDoubles', () => {
  it('builds both libraries once and reuses them while the sources are unchanged', () => {
    expect(paths.cuda).toMatch(/test\/double\/build\/libcuda_double\.so$/);
    expect(paths.hip).toMatch(/test\/double\/build\/libamdhip64_double\.so$/);
    const before = [statSync(paths.cuda).mtimeMs, statSync(paths.hip).mtimeMs];
    expect(buildDoubles()).toEqual(paths);
    expect([statSync(paths.cuda).mtimeMs, statSync(paths.hip).mtimeMs]).toEqual(before);
  });

  it('throws a clear error when the C compiler is missing', () => {
    setEnv({ CC: 'no-such-c-compiler-for-the-double' });
    expect(() => buildDoubles()).toThrow(/no C compiler: 'no-such-c-compiler-for-the-double' was not found/);
    // the libraries already built are left as they were
    expect(existsSync(paths.cuda)).toBe(true);
  });
});

// ------------------------------------------------------------------ CUDA, profile cuda

describe('CUDA double, profile cuda (as measured on the H200)', () => {
  it('reports one H200-like device', () => {
    const v = [0];
    expect(cu.driverVersion(v)).toBe(0);
    expect(v[0]).toBe(13000);
    cudaUp();
    const n = [0];
    expect(cu.deviceCount(n)).toBe(0);
    expect(n[0]).toBe(1);
    const d = [-1];
    expect(cu.deviceGet(d, 0)).toBe(0);
    expect(d[0]).toBe(0);
    expect(cu.deviceGet(d, 1)).toBe(CU.INVALID_DEVICE);
    expectDevice0(cu, cudaAttr, 'Double CUDA Device', [
      [CU.ATTR_INTEGRATED, 0],
      [CU.ATTR_CAN_MAP_HOST_MEMORY, 1],
      [CU.ATTR_PAGEABLE_MEMORY_ACCESS, 0],
      [CU.ATTR_HOST_REGISTER_SUPPORTED, 1],
      [CU.ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED, 1],
    ]);
    expect(cudaAttr(4242).rc).toBe(CU.INVALID_VALUE);
    expect(cu.synchronize()).toBe(0);
  });

  it('honours MAPPED_REG_DOUBLE_DEVICES', () => {
    setEnv({ MAPPED_REG_DOUBLE_DEVICES: '2' });
    cudaUp();
    const n = [0];
    expect(cu.deviceCount(n)).toBe(0);
    expect(n[0]).toBe(2);
    expect(readString(cu.pciBusId, 1)).toBe('0000:00:01.0');
  });

  it('names its error codes', () => {
    expect(cudaName(712)).toBe('CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED');
    expect(cudaName(713)).toBe('CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED');
    expect(cudaName(1)).toBe('CUDA_ERROR_INVALID_VALUE');
    const s: [string | null] = [null];
    expect(cu.errorString(713, s)).toBe(0);
    expect(s[0]).toMatch(/not correspond to a registered/);
    expect(cu.errorName(12345, s)).toBe(CU.INVALID_VALUE);
  });

  it('refuses memory calls before cuInit and without a current context', () => {
    const m = anon(PAGE);
    expect(cu.register(m.addr, PAGE, 0)).toBe(CU.NOT_INITIALIZED);
    expect(cu.init(0)).toBe(0);
    expect(cu.register(m.addr, PAGE, 0)).toBe(CU.INVALID_CONTEXT);
    expect(cu.setCurrent(0x1234n)).toBe(CU.INVALID_CONTEXT);
    unmap(m);
  });
});

describe('CUDA double, profile cuda: registration', () => {
  it('registers a read-only MAP.SHARED file mapping only with READ_ONLY; twice 712; unregister 0 then 713', () => {
    cudaUp();
    const data = randomBytes(4 * PAGE);
    const m = mapFile(scratchFile(data), PROT.READ, MAP.SHARED);
    expect(cu.register(m.addr, m.len, 0)).toBe(CU.INVALID_VALUE);
    expect(cu.register(m.addr, m.len, CU.READ_ONLY)).toBe(CU.SUCCESS);
    expect(cu.registrations()).toBe(1);
    expect(cu.register(m.addr, m.len, CU.READ_ONLY)).toBe(CU.ALREADY_REGISTERED);
    expect(cu.register(m.addr + BigInt(PAGE), PAGE, CU.READ_ONLY)).toBe(CU.ALREADY_REGISTERED);

    const trip = cudaRoundTrip(m.addr, m.len);
    expect(trip.htod).toBe(0);
    expect(trip.dtoh).toBe(0);
    expect(Buffer.from(trip.bytes).equals(data)).toBe(true);

    expect(cu.unregister(m.addr + BigInt(PAGE))).toBe(CU.INVALID_VALUE); // interior pointer
    expect(cu.registrations()).toBe(1);
    expect(cu.unregister(m.addr)).toBe(CU.SUCCESS);
    expect(cu.unregister(m.addr)).toBe(CU.NOT_REGISTERED);
    expect(cu.registrations()).toBe(0);
    unmap(m);
  });

  it('accepts adjacent ranges, unaligned pointers and sizes; refuses bad arguments without sticking', () => {
    cudaUp();
    const data = randomBytes(4 * PAGE);
    const m = mapFileBeforeHole(scratchFile(data), PROT.READ);
    const second = m.addr + BigInt(2 * PAGE);
    expect(cu.register(m.addr, 2 * PAGE, CU.READ_ONLY)).toBe(0);
    expect(cu.register(second, 2 * PAGE, CU.READ_ONLY)).toBe(0); // adjacent
    expect(cu.unregister(m.addr)).toBe(0);
    expect(cu.unregister(second)).toBe(0);

    expect(cu.register(null, PAGE, CU.READ_ONLY)).toBe(CU.INVALID_VALUE);
    expect(cu.register(m.addr, 0, CU.READ_ONLY)).toBe(CU.INVALID_VALUE);
    expect(cu.register(m.addr, PAGE, 0xf0)).toBe(CU.INVALID_VALUE);
    expect(cu.register(m.addr, 5 * PAGE, CU.READ_ONLY)).toBe(CU.INVALID_VALUE); // past the end of the mapping
    expect(cu.register(m.addr, m.len, CU.READ_ONLY | 0x01)).toBe(0); // not sticky; PORTABLE is fine
    expect(cu.unregister(m.addr)).toBe(0);

    const p = m.addr + 100n;
    const len = 2 * PAGE + 17;
    expect(cu.register(p, len, CU.READ_ONLY)).toBe(0);
    const trip = cudaRoundTrip(p, len);
    expect(Buffer.from(trip.bytes).equals(data.subarray(100, 100 + len))).toBe(true);
    expect(cu.unregister(p)).toBe(0);
    expect(cu.unregister(0n)).toBe(CU.INVALID_VALUE);
    expect(cu.unregister(m.addr)).toBe(CU.NOT_REGISTERED); // never registered
    expect(cu.registrations()).toBe(0);
    unmap(m);
  });
});

describe('CUDA double, profile cuda: kinds of mapping', () => {
  it('treats writable, private, memfd, anonymous and tmpfs mappings as the H200 did', () => {
    cudaUp();
    // MAP.SHARED writable mapping of a regular file: the kernel refuses a writable long-term pin
    const path = scratchFile(randomBytes(2 * PAGE));
    const shared = mapFile(path, PROT.READ | PROT.WRITE, MAP.SHARED);
    const regular = !isTmpfs(path);
    expect(cu.register(shared.addr, shared.len, 0)).toBe(regular ? CU.INVALID_VALUE : 0);
    if (!regular) expect(cu.unregister(shared.addr)).toBe(0);
    expect(cu.register(shared.addr, shared.len, CU.READ_ONLY)).toBe(0);
    expect(cu.unregister(shared.addr)).toBe(0);
    unmap(shared);

    // MAP.PRIVATE read-only
    const priv = mapFile(path, PROT.READ, MAP.PRIVATE);
    expect(cu.register(priv.addr, priv.len, 0)).toBe(CU.INVALID_VALUE);
    expect(cu.register(priv.addr, priv.len, CU.READ_ONLY)).toBe(0);
    expect(cu.unregister(priv.addr)).toBe(0);
    unmap(priv);

    // memfd, read-write, flags 0
    const data = randomBytes(2 * PAGE);
    const mfd = memfd_create('double-test', 0) as number;
    expect(mfd).toBeGreaterThanOrEqual(0);
    fds.add(mfd);
    ftruncateSync(mfd, data.length);
    writeSync(mfd, data, 0, data.length, 0);
    const mem = map(data.length, PROT.READ | PROT.WRITE, MAP.SHARED, mfd);
    closeFd(mfd);
    expect(cu.register(mem.addr, mem.len, 0)).toBe(0);
    expect(Buffer.from(cudaRoundTrip(mem.addr, mem.len).bytes).equals(data)).toBe(true);
    expect(cu.unregister(mem.addr)).toBe(0);
    unmap(mem);

    // anonymous read-write, flags 0
    const a = anon(2 * PAGE);
    bytesAt(a.addr, a.len).set(data);
    expect(cu.register(a.addr, a.len, 0)).toBe(0);
    expect(Buffer.from(cudaRoundTrip(a.addr, a.len).bytes).equals(data)).toBe(true);
    expect(cu.unregister(a.addr)).toBe(0);
    unmap(a);

    // a file on tmpfs (/dev/shm), READ_ONLY: right bytes
    expect(isTmpfs('/dev/shm')).toBe(true);
    onTmpfs('mapped-reg-double', data, (t) => {
      expect(cu.register(t.addr, t.len, CU.READ_ONLY)).toBe(0);
      expect(Buffer.from(cudaRoundTrip(t.addr, t.len).bytes).equals(data)).toBe(true);
      expect(cu.unregister(t.addr)).toBe(0);
    });
    expect(cu.registrations()).toBe(0);
  });
});

describe('CUDA double, profile cuda: unusable ranges and lost registrations', () => {
  it('refuses PROT.NONE and unmapped ranges with an error code, never a crash', () => {
    cudaUp();
    const m = mapFile(scratchFile(randomBytes(2 * PAGE)), PROT.NONE, MAP.SHARED);
    expect(cu.register(m.addr, m.len, 0)).toBe(CU.INVALID_VALUE);
    expect(cu.register(m.addr, m.len, CU.READ_ONLY)).toBe(CU.INVALID_VALUE);
    expect(cudaRoundTrip(m.addr, m.len).htod).toBe(CU.INVALID_VALUE);

    // a page turned PROT.NONE inside a readable mapping
    const a = anon(3 * PAGE);
    expect(mprotect(a.addr + BigInt(PAGE), PAGE, PROT.NONE)).toBe(0);
    expect(cu.register(a.addr, a.len, 0)).toBe(CU.INVALID_VALUE);
    expect(cudaRoundTrip(a.addr, a.len).htod).toBe(CU.INVALID_VALUE);

    const dev: [number | bigint] = [0];
    expect(cu.memAlloc(dev, PAGE)).toBe(0);
    const gone = hole();
    expect(cu.register(gone.addr, PAGE, 0)).toBe(CU.INVALID_VALUE);
    expect(cu.htod(dev[0], gone.addr, PAGE)).toBe(CU.INVALID_VALUE);
    expect(cu.dtoh(gone.addr, dev[0], PAGE)).toBe(CU.INVALID_VALUE);
    gone.release();
    expect(cu.memFree(dev[0])).toBe(0);
    expect(cu.registrations()).toBe(0);
    unmap(m);
    unmap(a);
  });

  it('refuses a large copy (over 64 KiB: not read by the CPU) from the truncated tail of a registered file', () => {
    cudaUp();
    const path = scratchFile(randomBytes(40 * PAGE));
    const m = mapFile(path, PROT.READ, MAP.SHARED);
    expect(cu.register(m.addr, m.len, CU.READ_ONLY)).toBe(0);
    truncateSync(path, PAGE);
    expect(cudaRoundTrip(m.addr + BigInt(2 * PAGE), 20 * PAGE).htod).toBe(CU.INVALID_VALUE);
    expect(cudaRoundTrip(m.addr, PAGE).htod).toBe(0);
    expect(cu.unregister(m.addr)).toBe(0);
    unmap(m);
  });

  it('munmap while registered, then unregister: 0; the address can be registered again', () => {
    cudaUp();
    const m = anon(2 * PAGE);
    const addr = m.addr;
    expect(cu.register(addr, m.len, 0)).toBe(0);
    unmap(m);
    expect(cu.unregister(addr)).toBe(0);
    const again = map(2 * PAGE, PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS);
    expect(cu.register(again.addr, again.len, 0)).toBe(0);
    expect(cu.unregister(again.addr)).toBe(0);
    unmap(again);
  });

  it('drops every registration with the primary context reset', () => {
    cudaUp();
    const m = anon(2 * PAGE);
    expect(cu.register(m.addr, m.len, 0)).toBe(0);
    expect(cu.release(0)).toBe(0); // refcount to 0: the context goes, and its registrations
    expect(cu.reset(0)).toBe(0);
    expect(cu.registrations()).toBe(0);
    expect(cu.unregister(m.addr)).toBe(CU.INVALID_CONTEXT); // no live context any more
    cudaUp();
    expect(cu.unregister(m.addr)).toBe(CU.NOT_REGISTERED);
    expect(cu.register(m.addr, m.len, 0)).toBe(0);
    expect(cu.reset(0)).toBe(0); // reset alone drops them too
    expect(cu.unregister(m.addr)).toBe(CU.NOT_REGISTERED);
    unmap(m);
  });
});

describe('CUDA double, profile cuda: page-locked memory, call counts and configuration', () => {
  it('refuses to register page-locked memory of its own (712) and copies from it correctly', () => {
    cudaUp();
    const p: [bigint | null] = [null];
    expect(cu.hostAlloc(p, 2 * PAGE, 0)).toBe(0);
    expect(cu.register(p[0], PAGE, 0)).toBe(CU.ALREADY_REGISTERED);
    const data = randomBytes(2 * PAGE);
    bytesAt(p[0]!, data.length).set(data);
    expect(Buffer.from(cudaRoundTrip(p[0]!, data.length).bytes).equals(data)).toBe(true);
    expect(cu.freeHost(p[0])).toBe(0);
    expect(cu.freeHost(p[0])).toBe(CU.INVALID_VALUE);
  });

  it('counts calls per API function (none to register on a static path)', () => {
    expect(cu.calls('cuMemHostRegister_v2')).toBe(0);
    cudaUp();
    expect(cudaAttr(CU.ATTR_INTEGRATED).rc).toBe(0);
    expect(cu.calls('cuInit')).toBe(1);
    expect(cu.calls('cuDeviceGetAttribute')).toBe(1);
    expect(cu.calls('cuMemHostRegister_v2')).toBe(0);
    expect(cu.calls('cuMemHostUnregister')).toBe(0);
    const m = anon(PAGE);
    cu.register(m.addr, PAGE, 0);
    cu.register(m.addr, PAGE, 0);
    expect(cu.calls('cuMemHostRegister_v2')).toBe(2);
    expect(cu.calls('cuMemHostRegister')).toBe(-1); // not a function of the double
    cu.doubleReset();
    expect(cu.calls('cuMemHostRegister_v2')).toBe(0);
    expect(cu.registrations()).toBe(0);
    unmap(m);
  });

  it('refuses an unknown profile or fault at cuInit', () => {
    setEnv({ MAPPED_REG_DOUBLE_PROFILE: 'no-such-profile' });
    expect(refusedInit()).toBe(CU.INVALID_VALUE);
    setEnv({ MAPPED_REG_DOUBLE_PROFILE: 'cuda', MAPPED_REG_DOUBLE_FAULTS: 'wrong_bytes,no_such_fault' });
    expect(refusedInit()).toBe(CU.INVALID_VALUE);
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'unregister_fails=x' });
    expect(refusedInit()).toBe(CU.INVALID_VALUE);
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: ' wrong_bytes , integrated ' });
    expect(cu.init(0)).toBe(0);
  });
});

// ------------------------------------------------------------------ HIP profiles

describe('HIP double, profile rocm724 (ROCm 7.2.4 as the spec describes it)', () => {
  it('reports HIP 7.2 by default and its device', () => {
    const v = [0];
    expect(hip.runtimeVersion(v)).toBe(0);
    expect(v[0]).toBe(70204000);
    expect(Math.floor(v[0]! / 10_000_000)).toBe(7);
    expect(hip.init(0)).toBe(0);
    const n = [0];
    expect(hip.deviceCount(n)).toBe(0);
    expect(n[0]).toBe(1);
    expectDevice0(hip, hipAttr, 'Double HIP Device', [
      [HIP.ATTR_INTEGRATED, 0],
      [HIP.ATTR_CAN_MAP_HOST_MEMORY, 1],
      [HIP.ATTR_HOST_REGISTER_SUPPORTED, 1],
    ]);
    expect(hipAttr(18).rc).toBe(HIP.INVALID_VALUE); // CUDA's number for integrated means nothing here
    expect(hipAttr(4242).rc).toBe(HIP.INVALID_VALUE);
    expect(hip.errorName(713)).toBe('hipErrorHostMemoryNotRegistered');
    expect(hip.errorName(712)).toBe('hipErrorHostMemoryAlreadyRegistered');
    expect(hip.errorName(2)).toBe('hipErrorOutOfMemory');
    expect(hip.errorName(4242)).toBe('hipErrorUnknown');
    expect(hip.errorString(100)).toMatch(/no ROCm-capable device/);
    expect(hip.setDevice(1)).toBe(101);
    expect(hip.synchronize()).toBe(0);
  });

  it('answers the attribute numbers of the HIP version it reports', () => {
    setEnv({ MAPPED_REG_DOUBLE_HIP_VERSION: '50731921' });
    expect(hip.init(0)).toBe(0);
    const v = [0];
    expect(hip.runtimeVersion(v)).toBe(0);
    expect(v[0]).toBe(50731921);
    expect(hipAttr(HIP.ATTR_INTEGRATED)).toEqual({ rc: 0, value: 0 }); // 16 in HIP 5 as in 6 and 7
    expect(hipAttr(HIP.ATTR_HOST_REGISTER_SUPPORTED).rc).toBe(HIP.INVALID_VALUE); // new in HIP 6.0
    setEnv({ MAPPED_REG_DOUBLE_HIP_VERSION: '60342134' });
    expect(hip.init(0)).toBe(0);
    expect(hipAttr(HIP.ATTR_HOST_REGISTER_SUPPORTED)).toEqual({ rc: 0, value: 1 });
    // HIP 4.x numbered the enum differently: integrated is 25, and 16 is the L2 cache size
    setEnv({ MAPPED_REG_DOUBLE_HIP_VERSION: '40421432', MAPPED_REG_DOUBLE_FAULTS: 'integrated' });
    expect(hip.init(0)).toBe(0);
    expect(hipAttr(25)).toEqual({ rc: 0, value: 1 });
    expect(hipAttr(HIP.ATTR_INTEGRATED)).toEqual({ rc: 0, value: 6 << 20 });
    expect(hipAttr(HIP.ATTR_HOST_REGISTER_SUPPORTED).rc).toBe(HIP.INVALID_VALUE);
  });

  it('initializes itself on first use, as HIP does', () => {
    const n = [0];
    expect(hip.deviceCount(n)).toBe(0);
    expect(n[0]).toBe(1);
    expect(hip.calls('hipInit')).toBe(0);
  });
});

describe('HIP double, profile rocm724: registration', () => {
  it('registers a read-only file mapping with flags 0 and copies the right bytes', () => {
    const data = randomBytes(4 * PAGE);
    const m = mapFile(scratchFile(data), PROT.READ, MAP.SHARED);
    expect(hip.register(m.addr, m.len, 0)).toBe(0);
    const trip = hipRoundTrip(m.addr, m.len);
    expect(trip).toMatchObject({ htod: 0, dtoh: 0 });
    expect(Buffer.from(trip.bytes).equals(data)).toBe(true);
    expect(hip.unregister(m.addr + BigInt(PAGE))).toBe(HIP.INVALID_VALUE);
    expect(hip.unregister(m.addr)).toBe(0);
    expect(hip.unregister(m.addr)).toBe(HIP.NOT_REGISTERED);
    expect(hip.registrations()).toBe(0);
    unmap(m);
  });

  it('accepts PROT.NONE, then cannot release it (713) and refuses to copy from it', () => {
    const m = mapFile(scratchFile(randomBytes(2 * PAGE)), PROT.NONE, MAP.SHARED);
    expect(hip.register(m.addr, m.len, 0)).toBe(0);
    expect(hipRoundTrip(m.addr, m.len).htod).toBe(HIP.INVALID_VALUE);
    expect(hip.unregister(m.addr)).toBe(HIP.NOT_REGISTERED);
    expect(hip.unregister(m.addr)).toBe(HIP.NOT_REGISTERED);
    expect(hip.registrations()).toBe(1); // still in the table
    hip.doubleReset();
    expect(hip.registrations()).toBe(0);
    unmap(m);
  });

  it('accepts the same range twice and overlapping ranges, then cannot release them (713)', () => {
    const m = anon(4 * PAGE);
    expect(hip.register(m.addr, 2 * PAGE, 0)).toBe(0);
    expect(hip.register(m.addr, 2 * PAGE, 0)).toBe(0);
    expect(hip.unregister(m.addr)).toBe(HIP.NOT_REGISTERED);
    expect(hip.registrations()).toBe(2);
    const b = m.addr + BigInt(2 * PAGE);
    expect(hip.register(b, PAGE, 0)).toBe(0); // adjacent: fine, and releasable
    expect(hip.unregister(b)).toBe(0);
    expect(hip.register(b, 2 * PAGE, 0)).toBe(0);
    expect(hip.register(b + BigInt(PAGE), PAGE, 0)).toBe(0); // overlapping
    expect(hip.unregister(b + BigInt(PAGE))).toBe(HIP.NOT_REGISTERED);
    expect(hip.unregister(b)).toBe(HIP.NOT_REGISTERED);
    expect(hip.registrations()).toBe(4);
    hip.doubleReset();
    unmap(m);
  });

  it('serves zeros from a registered tmpfs file', () => {
    const data = randomBytes(2 * PAGE);
    onTmpfs('mapped-reg-double-hip', data, (t) => {
      const before = hipRoundTrip(t.addr, t.len); // not registered: right bytes
      expect(Buffer.from(before.bytes).equals(data)).toBe(true);
      expect(hip.register(t.addr, t.len, 0)).toBe(0);
      const trip = hipRoundTrip(t.addr, t.len);
      expect(trip).toMatchObject({ htod: 0, dtoh: 0 });
      expect(trip.bytes.every((b) => b === 0)).toBe(true);
      expect(hip.unregister(t.addr)).toBe(0); // a single registration is released
    });
  });
});

describe('HIP double, profile rocm-fixed', () => {
  it('refuses PROT.NONE, double and overlapping registrations; tmpfs copies are right', () => {
    setEnv({ MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed' });
    expect(hip.init(0)).toBe(0);
    const none = mapFile(scratchFile(randomBytes(2 * PAGE)), PROT.NONE, MAP.SHARED);
    expect(hip.register(none.addr, none.len, 0)).toBe(HIP.INVALID_VALUE);
    unmap(none);

    const m = anon(4 * PAGE);
    expect(hip.register(m.addr, 2 * PAGE, 0)).toBe(0);
    expect(hip.register(m.addr, 2 * PAGE, 0)).toBe(HIP.ALREADY_REGISTERED);
    expect(hip.register(m.addr + BigInt(PAGE), 2 * PAGE, 0)).toBe(HIP.ALREADY_REGISTERED);
    expect(hip.unregister(m.addr)).toBe(0);
    expect(hip.registrations()).toBe(0);
    unmap(m);

    const data = randomBytes(2 * PAGE);
    onTmpfs('mapped-reg-double-fixed', data, (t) => {
      expect(hip.register(t.addr, t.len, 0)).toBe(0);
      expect(Buffer.from(hipRoundTrip(t.addr, t.len).bytes).equals(data)).toBe(true);
      expect(hip.unregister(t.addr)).toBe(0);
    });
  });
});

describe('HIP double, profile nodevice (libamdhip64.so.5 without an AMD GPU)', () => {
  it('answers its version and no device', () => {
    setEnv({ MAPPED_REG_DOUBLE_PROFILE: 'nodevice' });
    const v = [0];
    expect(hip.runtimeVersion(v)).toBe(0);
    expect(v[0]).toBe(50731921);
    expect(hip.init(0)).toBe(HIP.NO_DEVICE);
    const n = [7];
    expect(hip.deviceCount(n)).toBe(HIP.NO_DEVICE);
    expect(n[0]).toBe(0);
    const p: [bigint | null] = [null];
    expect(hip.malloc(p, PAGE)).toBe(HIP.NO_DEVICE);
    setEnv({ MAPPED_REG_DOUBLE_HIP_VERSION: '60342134' });
    expect(hip.runtimeVersion(v)).toBe(0);
    expect(v[0]).toBe(60342134);
  });
});

// ------------------------------------------------------------------ faults

describe('faults', () => {
  it('integrated: the integrated attribute answers 1', () => {
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'integrated' });
    cudaUp();
    expect(cudaAttr(CU.ATTR_INTEGRATED)).toEqual({ rc: 0, value: 1 });
    expect(hip.init(0)).toBe(0);
    expect(hipAttr(HIP.ATTR_INTEGRATED)).toEqual({ rc: 0, value: 1 });
  });

  it('integrated_query_fails: the query fails (CUDA 801, HIP 1), other attributes still answer', () => {
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'integrated_query_fails' });
    cudaUp();
    expect(cudaAttr(CU.ATTR_INTEGRATED).rc).toBe(CU.NOT_SUPPORTED);
    expect(cudaAttr(CU.ATTR_CAN_MAP_HOST_MEMORY)).toEqual({ rc: 0, value: 1 });
    expect(hip.init(0)).toBe(0);
    expect(hipAttr(HIP.ATTR_INTEGRATED).rc).toBe(HIP.INVALID_VALUE);
    expect(hipAttr(HIP.ATTR_CAN_MAP_HOST_MEMORY)).toEqual({ rc: 0, value: 1 });
  });

  it('unregister_fails=2: two failed releases (CUDA 999, HIP 713), the third succeeds', () => {
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'unregister_fails=2' });
    cudaUp();
    const m = anon(2 * PAGE);
    expectTwoFailedReleases(cu, m, CU.UNKNOWN);
    setEnv({ MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed' });
    expect(hip.init(0)).toBe(0);
    expectTwoFailedReleases(hip, m, HIP.NOT_REGISTERED);
    unmap(m);
  });
});

describe('faults: stuck registrations, fault lists and wrong bytes', () => {
  it('stuck_registration=2: the second registration since init is never released; the others are', () => {
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'stuck_registration=2' });
    cudaUp();
    const [a, b, c] = [anon(2 * PAGE), anon(2 * PAGE), anon(2 * PAGE)];
    for (const m of [a, b, c]) expect(cu.register(m.addr, m.len, 0)).toBe(0);
    expect(cu.unregister(a.addr)).toBe(0);
    for (let i = 0; i < 5; i++) expect(cu.unregister(b.addr)).toBe(CU.UNKNOWN);
    expect(cu.unregister(c.addr)).toBe(0);
    expect(cu.registrations()).toBe(1);

    setEnv({ MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed', MAPPED_REG_DOUBLE_FAULTS: 'stuck_registration=1' });
    expect(hip.init(0)).toBe(0);
    expect(hip.register(a.addr, a.len, 0)).toBe(0);
    expect(hip.unregister(a.addr)).toBe(HIP.NOT_REGISTERED);
    expect(hip.registrations()).toBe(1);
    hip.doubleReset();
    cu.doubleReset();
    for (const m of [a, b, c]) unmap(m);
  });

  it('refuses a valued fault out of range and an unknown one-promise name', () => {
    for (const faults of ['stuck_registration=0', 'stuck_registration=x', 'register_max=0', 'register_max=-1', 'register_max=', 'accept_everything', 'tmpfs_zeros=1']) {
      setEnv({ MAPPED_REG_DOUBLE_FAULTS: faults });
      expect(refusedInit(), faults).toBe(CU.INVALID_VALUE);
    }
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'register_max=8192,accept_prot_none,stale_after_write' });
    expect(cu.init(0)).toBe(0);
  });

  it('wrong_bytes: a copy from a registered range differs; unregistered and page-locked copies do not', () => {
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'wrong_bytes' });
    cudaUp();
    const data = randomBytes(4 * PAGE);
    const m = mapFile(scratchFile(data), PROT.READ, MAP.SHARED);
    expect(Buffer.from(cudaRoundTrip(m.addr, m.len).bytes).equals(data)).toBe(true);
    expect(cu.register(m.addr, m.len, CU.READ_ONLY)).toBe(0);
    const trip = cudaRoundTrip(m.addr, m.len);
    expect(trip).toMatchObject({ htod: 0, dtoh: 0 });
    expect(countDiffs(trip.bytes, data)).toBe(1);
    expect(cu.unregister(m.addr)).toBe(0);
    unmap(m);

    const p: [bigint | null] = [null];
    expect(cu.hostAlloc(p, data.length, 0)).toBe(0);
    bytesAt(p[0]!, data.length).set(data);
    expect(Buffer.from(cudaRoundTrip(p[0]!, data.length).bytes).equals(data)).toBe(true);
    expect(cu.freeHost(p[0])).toBe(0);

    setEnv({ MAPPED_REG_DOUBLE_PROFILE: 'rocm-fixed' });
    expect(hip.init(0)).toBe(0);
    const a = anon(data.length);
    bytesAt(a.addr, a.len).set(data);
    expect(hip.register(a.addr, a.len, 0)).toBe(0);
    expect(countDiffs(hipRoundTrip(a.addr, a.len).bytes, data)).toBe(1);
    expect(hip.unregister(a.addr)).toBe(0);
    unmap(a);
  });
});

describe('faults: slow copies and no device', () => {
  it('slow_registered=5: a registered 32 MiB copy takes clearly longer than a plain one', () => {
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'slow_registered=5' });
    cudaUp();
    const len = 32 << 20;
    // two sources, one registered, their copies alternating round by round, best of 7 each: a load that slows
    // the machine for a while falls on both alike (the fault sleeps 4 x the registered copy's own memcpy)
    const reg = anon(len);
    const plainSrc = anon(len);
    bytesAt(reg.addr, len).fill(0x5a);
    bytesAt(plainSrc.addr, len).fill(0x5a);
    const dev: [number | bigint] = [0];
    expect(cu.memAlloc(dev, len)).toBe(0);
    const timed = (addr: bigint): number => {
      const t0 = process.hrtime.bigint();
      expect(cu.htod(dev[0], addr, len)).toBe(0);
      return Number(process.hrtime.bigint() - t0);
    };
    timed(plainSrc.addr); // warm up: first touch of the device buffer
    expect(cu.register(reg.addr, len, 0)).toBe(0);
    let plain = Infinity;
    let registered = Infinity;
    for (let i = 0; i < 7; i++) {
      plain = Math.min(plain, timed(plainSrc.addr));
      registered = Math.min(registered, timed(reg.addr));
    }
    expect(registered / plain).toBeGreaterThan(2);
    expect(cu.unregister(reg.addr)).toBe(0);
    expect(cu.memFree(dev[0])).toBe(0);
    unmap(reg);
    unmap(plainSrc);
  });

  it('nodevice: init and device count answer 100 for either API', () => {
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'nodevice' });
    expect(cu.init(0)).toBe(CU.NO_DEVICE);
    const n = [5];
    expect(cu.deviceCount(n)).toBe(CU.NO_DEVICE);
    expect(n[0]).toBe(0);
    expect(hip.init(0)).toBe(HIP.NO_DEVICE);
    expect(hip.deviceCount(n)).toBe(HIP.NO_DEVICE);
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: '', MAPPED_REG_DOUBLE_DEVICES: '0' });
    expect(cu.init(0)).toBe(CU.NO_DEVICE);
  });

  it("slow_init=MS: a process's first cuInit takes MS ms more, a later one of the same process does not; a bad value is refused", () => {
    // a process of its own: this one has made its first cuInit long ago
    const script = `const koffi = require(${JSON.stringify(join(ROOT, 'node_modules', 'koffi'))});
      const init = koffi.load(process.argv[1]).func('int cuInit(unsigned int flags)');
      const t0 = performance.now(); const a = init(0); const t1 = performance.now(); const b = init(0); const t2 = performance.now();
      console.log(JSON.stringify({ codes: [a, b], first: t1 - t0, second: t2 - t1 }));`;
    const run = (faults: string) =>
      spawnSync(process.execPath, ['-e', script, paths.cuda], { encoding: 'utf8', env: { ...process.env, MAPPED_REG_DOUBLE_FAULTS: faults }, timeout: 60_000 });
    const slow = run('slow_init=300');
    const r = JSON.parse(slow.stdout) as { codes: number[]; first: number; second: number };
    expect(r.codes).toEqual([CU.SUCCESS, CU.SUCCESS]);
    // a sleep of 300 ms: at least that, however loaded the machine
    expect(r.first).toBeGreaterThanOrEqual(300);
    // slowed again it would be 300 ms at least, too
    expect(r.second).toBeLessThan(300);
    const bad = run('slow_init=soon');
    expect((JSON.parse(bad.stdout) as { codes: number[] }).codes[0]).toBe(CU.INVALID_VALUE);
    expect(bad.stderr).toMatch(/value of fault slow_init/);
  });

  it('init_fails: cuInit answers 999 and nothing is initialized', () => {
    setEnv({ MAPPED_REG_DOUBLE_FAULTS: 'init_fails' });
    expect(cu.init(0)).toBe(CU.UNKNOWN);
    const n = [0];
    expect(cu.deviceCount(n)).toBe(CU.NOT_INITIALIZED);
    expect(hip.init(0)).toBe(999);
  });
});
