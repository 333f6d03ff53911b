// The child process of hazard.truncate_contained. A file is cut (ftruncate to `cut` bytes) while its read-only
// shared mapping is registered, then the device copies from the cut tail: a large copy and a small one. On the
// H200 (docs/facts-h200.md) the 16 MiB copy returned 0 with the stale pinned bytes and the 4 KiB copy
// killed the process with SIGBUS (small copies are read by the CPU): so this runs in its own process, and the
// parent reads what happened from the lines printed here and from how the process ended.
//
// Run as `node dist/suites/hazards/truncate-child.js '<TruncateArgs as JSON>'`, with the driver library to load in
// its backend's variable (NativeKit.libraryEnv: MAPPED_REG_CUDA_LIBRARY, MAPPED_REG_HIP_LIBRARY; the parent passes
// the one it loaded). It knows the built-in backends only (bindings/registry.ts). The parent made the
// file and removes it, whatever happens here. Every step prints one JSON line (a TruncateLine) on stdout with a
// synchronous write, before ("begin") and after a copy, so a line is never lost to a signal. The lines and the
// arguments are the protocol of ./truncate.ts, which starts this process and reads them.
//
// Started early (`truncate-child.js --early '<EarlyStart as JSON>'`, by ./truncate-early.ts as soon as the device's
// runner knows its device): the child makes its start (Node.js, its imports, the library, the driver's init and the
// device's context) while the runner probes, the driver's init inside the host-wide timing lock, held shared
// (bindings/timing-lock.ts) so that it never lands inside anyone's timed copies while other devices' children
// start beside it, then waits for its arguments, one
// JSON line on stdin, and goes on as above. Its start is told in EarlyLines (`{"early": ...}`), kept apart from
// the check's lines. Standard input closed before the arguments came (the runner died, or its check never came):
// it exits at once, having registered nothing.
//
// No Vitest here (suites/check.ts imports it): bindings and the model only.
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { type DiscoveredDevice, discover } from '../../bindings/discovery.js';
import { backendOfDevice } from '../../bindings/registry.js';
import type { DeviceOps } from '../../bindings/device-ops.js';
import { driverResult } from '../../bindings/errors.js';
import { MAP, PROT, ftruncate, getppid, mmap, munmap, preadFully, setParentDeathSignal } from '../../bindings/libc.js';
import { TimingLockTimeout, acquireTimingLock } from '../../bindings/timing-lock.js';
import { type Host, firstDifference, hostSlice } from '../../src/index.js';
import type { EarlyLine, EarlyStart, TruncateArgs, TruncateLine } from './truncate.js';

function say(line: TruncateLine | EarlyLine): void {
  writeSync(1, `${JSON.stringify(line)}\n`);
}

const codeOf = driverResult;

function readFully(fd: number, into: Uint8Array, offset: number): void {
  const done = preadFully(fd, into, offset);
  if (done < into.length) throw new Error(`the file ended at ${offset + done} bytes, before ${offset + into.length}`);
}

/** Device round trip of `host` (the cut tail), compared with the bytes it held before the cut. Never reads the tail itself. */
function copyStep(step: 'large' | 'small', ops: DeviceOps, host: Host, old: Uint8Array): void {
  say({ step, phase: 'begin', bytes: host.bytes.length });
  const into = ops.allocHost(host.bytes.length);
  try {
    const r = codeOf(() => ops.roundTrip(host, into));
    if (r.code !== 0) {
      say({ step, ...r });
      return;
    }
    const diff = firstDifference(into.bytes, old);
    const zeros = into.bytes.every((b) => b === 0);
    say({ step, ...r, bytes: diff === -1 ? 'stale' : zeros ? 'zeros' : 'other', ...(diff === -1 ? {} : { firstDifference: diff }) });
  } finally {
    codeOf(() => ops.freeHost(into));
  }
}

/** The device's native ops, discovered (the driver's init): throws where it is not found or does not register. */
function nativeOf(id: string): NonNullable<DiscoveredDevice['native']> {
  const backend = backendOfDevice(id)?.id;
  if (backend === undefined) throw new Error(`unknown backend in device id ${id}`);
  const found = discover([backend]);
  const device = found.devices.find((d) => d.id === id);
  const native = device?.native;
  if (!native) {
    const note = found.backends.find((b) => b.backend === backend)?.note;
    throw new Error(`device ${id} ${device ? 'has no registration ops' : 'not found'}${note ? `: ${note}` : ''}`);
  }
  return native;
}

function main(args: TruncateArgs, started?: NonNullable<DiscoveredDevice['native']>): number {
  const native = started ?? nativeOf(args.device);
  say({ step: 'ready', device: args.device, api: native.api, library: native.library });
  const fd = openSync(args.file, 'r+');
  try {
    const old = new Uint8Array(args.size - args.cut);
    readFully(fd, old, args.cut);
    const m = mmap(args.size, PROT.READ, MAP.SHARED, fd, 0);
    let registered = false;
    try {
      return native.withOps(args.large, (ops) => {
        const reg = codeOf(() => ops.register(m));
        say({ step: 'register', ...reg, flags: ops.registerFlags });
        if (reg.code !== 0) return 2;
        registered = true;
        ftruncate(fd, args.cut);
        say({ step: 'truncate', size: args.cut });
        copyStep('large', ops, hostSlice(m, args.cut, args.large), old.subarray(0, args.large));
        copyStep('small', ops, hostSlice(m, args.cut, args.small), old.subarray(0, args.small));
        const un = codeOf(() => ops.unregister(m));
        say({ step: 'unregister', ...un });
        if (un.code === 0) registered = false;
        return 0;
      });
    } finally {
      // A range the driver may still hold is never unmapped; the process is about to end anyway.
      if (!registered) munmap(m);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The early start: the driver's init and the device's context inside the timing lock, then the arguments from
 * stdin. Undefined when stdin closed first (nothing was registered; the process just ends).
 */
function startEarly(o: EarlyStart): { args: TruncateArgs; native: NonNullable<DiscoveredDevice['native']> } | undefined {
  const t0 = performance.now();
  say({ early: 'lock' });
  let lock: ReturnType<typeof acquireTimingLock>;
  try {
    // shared: other devices' children start beside this one; only timed copies are kept out
    lock = acquireTimingLock({ timeoutMs: o.lockLimitMs, label: `${o.device} truncation child of pid ${process.ppid}`, shared: true });
  } catch (e) {
    if (!(e instanceof TimingLockTimeout)) throw e;
    say({ early: 'fault', message: `the timing lock ${e.path} was still held after ${Math.round(o.lockLimitMs / 100) / 10} s of waiting, ${e.by}: the truncation child did not start` });
    process.exit(3);
  }
  let native: NonNullable<DiscoveredDevice['native']>;
  try {
    say({ early: 'init', lockWaitMs: Math.round(lock.waitedMs) });
    native = nativeOf(o.device);
    // the context now, not at the check: the first withOps then finds it made
    native.keepContext();
  } finally {
    lock.release();
  }
  say({ early: 'started', library: native.library, ms: Math.round(performance.now() - t0) });
  const line = readLine();
  if (line === undefined) return undefined;
  return { args: JSON.parse(line) as TruncateArgs, native };
}

/** The first line on stdin (blocking), or undefined at end of file before one. */
function readLine(): string | undefined {
  const chunk = Buffer.alloc(64 * 1024);
  let text = '';
  for (;;) {
    let n: number;
    try {
      n = readSync(0, chunk, 0, chunk.length, null);
    } catch (e) {
      // a non-blocking pipe with nothing yet: a short sleep, never a spin
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      continue;
    }
    if (n === 0) return undefined;
    text += chunk.toString('utf8', 0, n);
    const end = text.indexOf('\n');
    if (end >= 0) return text.slice(0, end);
  }
}

const early = process.argv[2] === '--early';
let started: ReturnType<typeof startEarly>;
if (early) {
  try {
    // ends with the thread of the device's process that started it, and with the process (a child that waits, or
    // is stuck in the driver, must not outlive a killed runner)
    setParentDeathSignal(9);
    const start = JSON.parse(process.argv[3] ?? '') as EarlyStart;
    // the runner died before the line above: its death signal will never come
    if (getppid() !== start.parentPid) process.exit(4);
    started = startEarly(start);
  } catch (e) {
    // the parent runs the child again, as it always did (spawnSync), and reports what that one says
    say({ early: 'failed', message: e instanceof Error ? e.message : String(e) });
    process.exit(1);
  }
  if (started === undefined) process.exit(0);
}
try {
  // ends with the device's process that started it (a child stuck in the driver must not outlive a killed runner)
  if (!early) setParentDeathSignal(9);
  const raw = process.argv[2];
  if (!started && raw === undefined) throw new Error('usage: truncate-child.js <arguments as JSON> | --early <start as JSON>');
  const status = started ? main(started.args, started.native) : main(JSON.parse(raw!) as TruncateArgs);
  say({ step: 'done' });
  process.exitCode = status;
} catch (e) {
  say({ step: 'error', message: e instanceof Error ? e.message : String(e) });
  process.exitCode = 1;
}
