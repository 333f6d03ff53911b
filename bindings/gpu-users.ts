// Other users of a GPU and of its link, as the vendor's management library sees them: NVML (libnvidia-ml.so.1,
// shipped with the NVIDIA driver) for CUDA devices, AMD SMI (libamd_smi.so) for HIP devices. Opening never
// throws: a missing library, a failed init or a device the library does not know is a note. Nothing here can
// block the thread: a library path that is not a regular file (a named pipe, which the loader's open would wait
// on forever) is a note before it is loaded, and a device's runner loads the library before its first check
// (loadGpuUsersLibrary), so that loading it is never inside a check's time.
//
// NVML prototypes, codes and nvmlProcessInfo_t's layout: NVML 12.2.140's nvml.h (NVIDIA/go-nvml
// gen/nvml/nvml.h, "NVML VERSION: 12.2.140"). AMD SMI: amd_smi 23.1.1.0's include/amd_smi/amdsmi.h
// (ROCm/amdsmi, the ROCm 6.0 series).

import { statSync } from 'node:fs';
import koffi from 'koffi';
import type { LibraryHandle } from 'koffi';
import { cString } from './driver-kit.js';
import { ownChildPids } from './own-children.js';
import { declarePrototypes } from './errors.js';
import { fileKind } from '../results/read.js';
import { processName } from './small-file.js';

export const NVML_LIBRARY = 'libnvidia-ml.so.1';
export const NVML_LIBRARY_ENV = 'MAPPED_REG_NVML_LIBRARY';
export const AMDSMI_LIBRARY = 'libamd_smi.so';
export const AMDSMI_LIBRARY_ENV = 'MAPPED_REG_AMDSMI_LIBRARY';

export interface GpuProcess { pid: number; name: string; usedMiB: number | null; kind: 'compute' | 'graphics' }
export interface GpuUsersSample {
  source: 'nvml' | 'amd-smi';
  /** Processes with a context on the device, other than the excluded pids and this process's own helpers (./own-children.ts) (a pid listed as both compute and graphics: once, kind compute). */
  processes: GpuProcess[];
  /** The device's PCIe traffic in MB/s (1e6 bytes/s) as the library reports it; null when it cannot. rx: host to device. */
  pcieRxMBps: number | null;
  pcieTxMBps: number | null;
}
export interface GpuUsersMonitor { readonly source: 'nvml' | 'amd-smi'; sample(excludePids: readonly number[]): GpuUsersSample; close(): void }

// ---- NVML ----

// nvmlReturn_t (nvml.h 12.2.140)
const NVML_SUCCESS = 0;
const NVML_ERROR_NOT_SUPPORTED = 3;
const NVML_ERROR_INSUFFICIENT_SIZE = 7;
const NVML_ERROR_NAMES: ReadonlyMap<number, string> = new Map([
  [1, 'NVML_ERROR_UNINITIALIZED'],
  [2, 'NVML_ERROR_INVALID_ARGUMENT'],
  [3, 'NVML_ERROR_NOT_SUPPORTED'],
  [4, 'NVML_ERROR_NO_PERMISSION'],
  [6, 'NVML_ERROR_NOT_FOUND'],
  [7, 'NVML_ERROR_INSUFFICIENT_SIZE'],
  [9, 'NVML_ERROR_DRIVER_NOT_LOADED'],
  [12, 'NVML_ERROR_LIBRARY_NOT_FOUND'],
  [15, 'NVML_ERROR_GPU_IS_LOST'],
  [17, 'NVML_ERROR_OPERATING_SYSTEM'],
  [18, 'NVML_ERROR_LIB_RM_VERSION_MISMATCH'],
  [999, 'NVML_ERROR_UNKNOWN'],
]);
// nvmlPcieUtilCounter_t
const NVML_PCIE_UTIL_TX_BYTES = 0;
const NVML_PCIE_UTIL_RX_BYTES = 1;
/**
 * nvmlDeviceGetPcieThroughput reports KB/s ("1KB granularity"); NVML's documentation does not say which KB. We
 * read it as 1000 bytes: the same header writes MiB where it means 1024-based units (memorySizeMB "in MiB").
 * Read the other way the figures would be 2.4% higher.
 */
const NVML_BYTES_PER_KB = 1000;
/** What the receive side's cell holds until NVML writes its value (a rate NVML never reports: 4 TB/s). */
const RX_PENDING = 0xffffffff;
/** How long the receive side's value is waited for once the transmit side is read: NVML samples for some 20 ms. */
const RX_WAIT_MS = 100;
/** Waited on (never notified) to pause this thread a millisecond at a time. */
const pause = new Int32Array(new SharedArrayBuffer(4));
/** nvmlProcessInfo_v2_t (= nvmlProcessInfo_t): pid u32 @0, (pad), usedGpuMemory u64 @8, gpuInstanceId u32 @16, computeInstanceId u32 @20. */
const PROCESS_INFO_BYTES = 24;
/** NVML_VALUE_NOT_AVAILABLE (-1) in the unsigned long long usedGpuMemory. */
const VALUE_NOT_AVAILABLE = 0xffffffffffffffffn;
const PROCESS_NAME_BYTES = 256;

const NVML_PROTOTYPES = {
  nvmlInit_v2: 'int nvmlInit_v2(void)',
  nvmlShutdown: 'int nvmlShutdown(void)',
  nvmlErrorString: 'const char *nvmlErrorString(int result)',
  nvmlDeviceGetHandleByPciBusId_v2: 'int nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, _Out_ void **device)',
  nvmlDeviceGetComputeRunningProcesses_v3: 'int nvmlDeviceGetComputeRunningProcesses_v3(void *device, _Inout_ unsigned int *infoCount, void *infos)',
  nvmlDeviceGetGraphicsRunningProcesses_v3: 'int nvmlDeviceGetGraphicsRunningProcesses_v3(void *device, _Inout_ unsigned int *infoCount, void *infos)',
  nvmlSystemGetProcessName: 'int nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)',
  nvmlDeviceGetPcieThroughput: 'int nvmlDeviceGetPcieThroughput(void *device, int counter, _Out_ unsigned int *value)',
  // the same function, its value written straight into memory of ours: called on one of koffi's worker threads
  nvmlDeviceGetPcieThroughputInto: 'int nvmlDeviceGetPcieThroughput(void *device, int counter, unsigned int *value)',
} as const;

/** An opaque nvmlDevice_t as koffi hands it back; only ever passed back to NVML. */
type Handle = unknown;

/** Typed views of the koffi functions (koffi's own type for them is `(...args: any[]) => any`). */
interface NvmlFunctions {
  nvmlInit_v2(): number;
  nvmlShutdown(): number;
  nvmlErrorString(result: number): string | null;
  nvmlDeviceGetHandleByPciBusId_v2(busId: string, out: [Handle]): number;
  nvmlDeviceGetComputeRunningProcesses_v3(device: Handle, count: [number], infos: Buffer | null): number;
  nvmlDeviceGetGraphicsRunningProcesses_v3(device: Handle, count: [number], infos: Buffer | null): number;
  nvmlSystemGetProcessName(pid: number, name: Buffer, length: number): number;
  nvmlDeviceGetPcieThroughput(device: Handle, counter: number, out: [number]): number;
  nvmlDeviceGetPcieThroughputInto: { async(device: Handle, counter: number, value: unknown, done: (err: unknown, result: number) => void): void };
}

// ---- AMD SMI ----

/** amdsmi_init_flags_t AMDSMI_INIT_AMD_GPUS (1 << 1). */
const AMDSMI_INIT_AMD_GPUS = 2;
const AMDSMI_PROTOTYPES = {
  amdsmi_init: 'int amdsmi_init(uint64_t init_flags)',
  amdsmi_shut_down: 'int amdsmi_shut_down(void)',
  // amdsmi_bdf_t is a union of a uint64_t bit-field struct (function 3 bits, device 5, bus 8, domain 48, from bit 0)
  // and uint64_t as_uint: passed by value it is that one 64-bit integer.
  amdsmi_get_processor_handle_from_bdf: 'int amdsmi_get_processor_handle_from_bdf(uint64_t bdf, _Out_ void **processor_handle)',
} as const;

interface AmdSmiFunctions {
  amdsmi_init(flags: bigint): number;
  amdsmi_shut_down(): number;
  amdsmi_get_processor_handle_from_bdf(bdf: bigint, out: [Handle]): number;
}

// ---- loading: once per library path, for the life of the process ----

/** Each library's functions, or why it could not be bound, by label and path. */
const loaded = new Map<string, unknown>();

function messageOf(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/^Failed to load shared library: /, '');
}

/**
 * The library's functions, or a note: "<label>: <path> not found" / "could not load" / "is not <label> (no symbol
 * X)" / "is not a regular file". Either is kept for the life of the process: a library is loaded (or found not
 * to be one) once, before the checks (loadGpuUsersLibrary), never again inside one.
 */
function bind<F>(label: string, path: string, prototypes: Record<string, string>): F | { note: string } {
  const key = `${label}\0${path}`;
  if (loaded.has(key)) return loaded.get(key) as F | { note: string };
  const bound = bindOnce<F>(label, path, prototypes);
  loaded.set(key, bound);
  return bound;
}

function bindOnce<F>(label: string, path: string, prototypes: Record<string, string>): F | { note: string } {
  // a path (not a name the loader searches for): only a regular file is handed to the loader, whose open would
  // wait forever on a named pipe with no writer
  if (path.includes('/')) {
    let st;
    try {
      st = statSync(path);
    } catch {
      st = undefined; // missing: the loader says so below
    }
    if (st !== undefined && !st.isFile()) return { note: `${label}: ${path} is not a regular file (${fileKind(st)})` };
  }
  let lib: LibraryHandle;
  try {
    lib = koffi.load(path);
  } catch (e) {
    const reason = messageOf(e);
    if (/No such file or directory/.test(reason)) return { note: `${label}: ${path} not found` };
    return { note: `${label}: could not load ${path}: ${reason}` };
  }
  const declared = declarePrototypes<F>(lib, prototypes);
  if ('missing' in declared) return { note: `${label}: ${path} is not ${label} (${declared.missing})` };
  return declared.functions;
}

function libraryPath(env: string, fallback: string): string {
  const fromEnv = process.env[env];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : fallback;
}

function isNote(x: unknown): x is { note: string } {
  return typeof x === 'object' && x !== null && 'note' in x;
}

// ---- the NVML monitor ----

function nvmlError(c: NvmlFunctions, code: number): string {
  const text = c.nvmlErrorString(code);
  const name = NVML_ERROR_NAMES.get(code) ?? `NVML error ${code}`;
  return text ? `${code} ${name} (${text})` : `${code} ${name}`;
}

interface RawProcess { pid: number; usedMiB: number | null }

function decodeProcesses(buf: Buffer, count: number): RawProcess[] {
  const out: RawProcess[] = [];
  for (let i = 0; i < count; i++) {
    const at = i * PROCESS_INFO_BYTES;
    const bytes = buf.readBigUInt64LE(at + 8);
    out.push({ pid: buf.readUInt32LE(at), usedMiB: bytes === VALUE_NOT_AVAILABLE ? null : Number(bytes) / (1024 * 1024) });
  }
  return out;
}

/** <proc>/<pid>/comm (proc: env MAPPED_REG_PROC_ROOT, else /proc), read without blocking; else ''. */
const commOf = (pid: number): string => processName(pid, process.env.MAPPED_REG_PROC_ROOT || '/proc');

/** NVML initialized and the device at `pciBusId` found, or why not (NVML then shut down again). */
function nvmlDevice(c: NvmlFunctions, pciBusId: string): { device: Handle } | { note: string } {
  const init = c.nvmlInit_v2();
  if (init !== NVML_SUCCESS) return { note: `NVML: nvmlInit_v2 failed: ${nvmlError(c, init)}` };
  const handleOut: [Handle] = [null];
  let found = c.nvmlDeviceGetHandleByPciBusId_v2(pciBusId, handleOut);
  // NVML writes bus ids with an 8-digit domain (00000000:06:00.0); CUDA's 4-digit form is tried first, then that one
  const long = /^[0-9a-f]{4}:/i.test(pciBusId) ? `0000${pciBusId}` : undefined;
  if (found !== NVML_SUCCESS && long) found = c.nvmlDeviceGetHandleByPciBusId_v2(long, handleOut);
  if (found !== NVML_SUCCESS) {
    c.nvmlShutdown();
    return { note: `NVML: no device at ${pciBusId}: nvmlDeviceGetHandleByPciBusId_v2 failed: ${nvmlError(c, found)}` };
  }
  return { device: handleOut[0] };
}

function openNvml(pciBusId: string): GpuUsersMonitor | { note: string } {
  const path = libraryPath(NVML_LIBRARY_ENV, NVML_LIBRARY);
  const c = bind<NvmlFunctions>('NVML', path, NVML_PROTOTYPES);
  if (isNote(c)) return c;
  const opened = nvmlDevice(c, pciBusId);
  if (isNote(opened)) return opened;
  const { device } = opened;
  // Reused between samples; grown when NVML asks for more room.
  let buffer = Buffer.alloc(32 * PROCESS_INFO_BYTES);
  const nameBuffer = Buffer.alloc(PROCESS_NAME_BYTES);
  let open = true;

  const list = (call: 'nvmlDeviceGetComputeRunningProcesses_v3' | 'nvmlDeviceGetGraphicsRunningProcesses_v3'): RawProcess[] | 'not-supported' => {
    // The count can grow between the call that says "too small" and the next: retry a few times with more room.
    for (let attempt = 0; attempt < 5; attempt++) {
      const capacity = buffer.length / PROCESS_INFO_BYTES;
      const count: [number] = [capacity];
      const r = c[call](device, count, buffer);
      if (r === NVML_SUCCESS) return decodeProcesses(buffer, Math.min(count[0], capacity));
      if (r === NVML_ERROR_NOT_SUPPORTED) return 'not-supported';
      if (r !== NVML_ERROR_INSUFFICIENT_SIZE) throw new Error(`NVML: ${call} failed: ${nvmlError(c, r)}`);
      buffer = Buffer.alloc(Math.max(count[0] + 16, capacity * 2) * PROCESS_INFO_BYTES);
    }
    throw new Error(`NVML: ${call} kept answering ${nvmlError(c, NVML_ERROR_INSUFFICIENT_SIZE)}`);
  };

  const nameOf = (pid: number): string => {
    nameBuffer.fill(0);
    const name = c.nvmlSystemGetProcessName(pid, nameBuffer, PROCESS_NAME_BYTES) === NVML_SUCCESS ? cString(nameBuffer) : '';
    return name !== '' ? name : commOf(pid);
  };

  const throughput = (counter: number): number | null => {
    const out: [number] = [0];
    return c.nvmlDeviceGetPcieThroughput(device, counter, out) === NVML_SUCCESS ? (out[0] * NVML_BYTES_PER_KB) / 1e6 : null;
  };
  // NVML samples each way of the link over some 20 ms (the call blocks that long on the H200): the receive side is
  // read on one of koffi's worker threads while this thread reads the transmit side, so a look costs 20 ms, not 40.
  // The worker writes the value into memory of ours, watched here until it changes (koffi's callback would come only
  // once this thread is idle). NVML writes nothing when the call fails: the side is then read again here, at once
  // where the transmit side failed too (a device without these counters), else after RX_WAIT_MS. The cell is never
  // freed: a call still sampling past that wait may write it later.
  const rxCell: unknown = koffi.alloc('uint32_t', 1);
  const both = (): { rx: number | null; tx: number | null } => {
    koffi.encode(rxCell, 'uint32_t', RX_PENDING);
    try {
      c.nvmlDeviceGetPcieThroughputInto.async(device, NVML_PCIE_UTIL_RX_BYTES, rxCell, () => {});
    } catch {
      return { rx: throughput(NVML_PCIE_UTIL_RX_BYTES), tx: throughput(NVML_PCIE_UTIL_TX_BYTES) };
    }
    const tx = throughput(NVML_PCIE_UTIL_TX_BYTES);
    const until = performance.now() + (tx === null ? 0 : RX_WAIT_MS);
    let value = koffi.decode(rxCell, 'uint32_t') as number;
    while (value === RX_PENDING && performance.now() < until) {
      Atomics.wait(pause, 0, 0, 1);
      value = koffi.decode(rxCell, 'uint32_t') as number;
    }
    return { rx: value === RX_PENDING ? throughput(NVML_PCIE_UTIL_RX_BYTES) : (value * NVML_BYTES_PER_KB) / 1e6, tx };
  };

  return {
    source: 'nvml',
    sample(excludePids) {
      if (!open) throw new Error('NVML: sample() after close()');
      // this process's own helper children (the truncation child started early) are not other users either
      const excluded = new Set([...excludePids, ...ownChildPids()]);
      const compute = list('nvmlDeviceGetComputeRunningProcesses_v3');
      // A device without graphics contexts at all says NOT_SUPPORTED: it has no graphics users.
      const graphics = list('nvmlDeviceGetGraphicsRunningProcesses_v3');
      if (compute === 'not-supported') throw new Error(`NVML: nvmlDeviceGetComputeRunningProcesses_v3 failed: ${nvmlError(c, NVML_ERROR_NOT_SUPPORTED)}`);
      const byPid = new Map<number, GpuProcess>();
      const add = (p: RawProcess, kind: 'compute' | 'graphics'): void => {
        if (excluded.has(p.pid)) return;
        const seen = byPid.get(p.pid);
        if (seen) {
          if (seen.usedMiB === null) seen.usedMiB = p.usedMiB;
          return;
        }
        byPid.set(p.pid, { pid: p.pid, name: nameOf(p.pid), usedMiB: p.usedMiB, kind });
      };
      for (const p of compute) add(p, 'compute');
      if (graphics !== 'not-supported') for (const p of graphics) add(p, 'graphics');
      const link = both();
      return { source: 'nvml', processes: [...byPid.values()], pcieRxMBps: link.rx, pcieTxMBps: link.tx };
    },
    close() {
      if (!open) return;
      open = false;
      c.nvmlShutdown();
    },
  };
}

// ---- AMD SMI: the device is looked up, its users are not read ----

/** The 64-bit amdsmi_bdf_t of `dddd:bb:dd.f`, or null when it is not one. */
export function amdSmiBdf(pciBusId: string): bigint | null {
  const m = /^([0-9a-f]{1,8}):([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$/i.exec(pciBusId);
  if (!m) return null;
  const [domain, bus, device, fn] = [m[1], m[2], m[3], m[4]].map((x) => BigInt(`0x${x ?? '0'}`)) as [bigint, bigint, bigint, bigint];
  if (device > 31n) return null;
  return (domain << 16n) | (bus << 8n) | (device << 3n) | fn;
}

function openAmdSmi(pciBusId: string): { note: string } {
  const path = libraryPath(AMDSMI_LIBRARY_ENV, AMDSMI_LIBRARY);
  const bound = bind<AmdSmiFunctions>('AMD SMI', path, AMDSMI_PROTOTYPES);
  if (isNote(bound)) return bound;
  const bdf = amdSmiBdf(pciBusId);
  if (bdf === null) return { note: `AMD SMI: '${pciBusId}' is not a PCI bus id (dddd:bb:dd.f)` };
  const init = bound.amdsmi_init(BigInt(AMDSMI_INIT_AMD_GPUS));
  if (init !== 0) return { note: `AMD SMI: amdsmi_init failed: status ${init}` };
  try {
    const out: [Handle] = [null];
    const r = bound.amdsmi_get_processor_handle_from_bdf(bdf, out);
    if (r !== 0) return { note: `AMD SMI: no device at ${pciBusId}: amdsmi_get_processor_handle_from_bdf failed: status ${r}` };
    // amdsmi_get_gpu_process_list fills amdsmi_proc_info_t, whose layout changes between ROCm releases (ROCm
    // 6.0's has five engine counters and reserved[10]; later ones drop counters and add fields) and that no
    // version call tells apart reliably: a wrong layout would write past our buffer. Not read, said so.
    return { note: `AMD SMI: the device at ${pciBusId} is there, but its other users are not read (amdsmi_proc_info_t differs between ROCm releases)` };
  } finally {
    bound.amdsmi_shut_down();
  }
}

/**
 * Loads the management library of `backend` (NVML for cuda, AMD SMI for hip) once for this process, or says why
 * it cannot (a note, as openGpuUsers would give): a device's runner calls this before its first check, so that a
 * library slow to load (or a path that cannot be loaded) costs no check's --timeout. Never throws.
 */
export function loadGpuUsersLibrary(backend: string): { note: string } | undefined {
  try {
    if (backend === 'cuda') return noteOf(bind<NvmlFunctions>('NVML', libraryPath(NVML_LIBRARY_ENV, NVML_LIBRARY), NVML_PROTOTYPES));
    if (backend === 'hip') return noteOf(bind<AmdSmiFunctions>('AMD SMI', libraryPath(AMDSMI_LIBRARY_ENV, AMDSMI_LIBRARY), AMDSMI_PROTOTYPES));
    return undefined;
  } catch (e) {
    return { note: messageOf(e) };
  }
}

const noteOf = (x: unknown): { note: string } | undefined => (isNote(x) ? x : undefined);

/** A monitor of the device at `pciBusId` (e.g. 0000:00:06.0) for backend 'cuda' (NVML) or 'hip' (AMD SMI), or why there is none (library missing, init failed, device not found). Never throws. */
export function openGpuUsers(backend: string, pciBusId: string): GpuUsersMonitor | { note: string } {
  try {
    if (backend === 'cuda') return openNvml(pciBusId);
    if (backend === 'hip') return openAmdSmi(pciBusId);
    return { note: `no management library for backend '${backend}' (cuda: NVML, hip: AMD SMI)` };
  } catch (e) {
    return { note: `${backend === 'cuda' ? 'NVML' : 'AMD SMI'}: ${messageOf(e)}` };
  }
}
