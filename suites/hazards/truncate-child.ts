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
// No Vitest here (suites/check.ts imports it): bindings and the model only.
import { closeSync, openSync, writeSync } from 'node:fs';
import { discover } from '../../bindings/discovery.js';
import { backendOfDevice } from '../../bindings/registry.js';
import type { DeviceOps } from '../../bindings/device-ops.js';
import { driverResult } from '../../bindings/errors.js';
import { MAP, PROT, ftruncate, mmap, munmap, preadFully, setParentDeathSignal } from '../../bindings/libc.js';
import { type Host, firstDifference, hostSlice } from '../../src/index.js';
import type { TruncateArgs, TruncateLine } from './truncate.js';

function say(line: TruncateLine): void {
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

function main(args: TruncateArgs): number {
  const backend = backendOfDevice(args.device)?.id;
  if (backend === undefined) throw new Error(`unknown backend in device id ${args.device}`);
  const found = discover([backend]);
  const device = found.devices.find((d) => d.id === args.device);
  const native = device?.native;
  if (!native) {
    const note = found.backends.find((b) => b.backend === backend)?.note;
    throw new Error(`device ${args.device} ${device ? 'has no registration ops' : 'not found'}${note ? `: ${note}` : ''}`);
  }
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

try {
  // ends with the device's process that started it (a child stuck in the driver must not outlive a killed runner)
  setParentDeathSignal(9);
  const raw = process.argv[2];
  if (raw === undefined) throw new Error('usage: truncate-child.js <arguments as JSON>');
  const status = main(JSON.parse(raw) as TruncateArgs);
  say({ step: 'done' });
  process.exitCode = status;
} catch (e) {
  say({ step: 'error', message: e instanceof Error ? e.message : String(e) });
  process.exitCode = 1;
}
