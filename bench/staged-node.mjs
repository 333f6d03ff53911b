// The same copies as bench/native/staged.c, from Node.js through the project's bindings (dist/), best of N, plain
// loop: where does the staged copy's time go? Run: node bench/staged-node.mjs FILE MIB [RUNS]
import { openSync } from 'node:fs';
import { loadCuda, READ_ONLY } from '../dist/bindings/cuda.js';
import { MAP, PROT, memcpy, mmap } from '../dist/bindings/libc.js';

const [file, mib, runsArg] = process.argv.slice(2);
const n = Number(mib) * 1024 * 1024;
const runs = Number(runsArg ?? 7);
const cuda = loadCuda();
cuda.devices();
const ctx = cuda.primaryCtxRetain(0);
cuda.ctxSetCurrent(ctx);
const d = cuda.memAlloc(n);
const map = mmap(n, PROT.READ, MAP.SHARED, openSync(file, 'r'), 0);
const pinned = cuda.memHostAlloc(n);
let sum = 0;
for (let i = 0; i < n; i += 4096) sum += map.bytes[i];
const best = (label, body) => {
  let b = Infinity;
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    body();
    b = Math.min(b, performance.now() - t0);
  }
  console.log(`${label.padEnd(40)} ${(n / (b / 1000) / 1e9).toFixed(2).padStart(8)} GB/s  (best of ${runs}, ${mib} MiB)`);
};
best('pageable (not registered)', () => cuda.memcpyHtoD(d, map));
best('staged: Uint8Array.set + copy', () => { pinned.bytes.set(map.bytes); cuda.memcpyHtoD(d, pinned); });
best('Uint8Array.set mapping -> pinned alone', () => pinned.bytes.set(map.bytes));
best('libc memcpy mapping -> pinned alone', () => memcpy(pinned, map, n));
best('Buffer.copy mapping -> pinned alone', () => Buffer.from(map.bytes.buffer, map.bytes.byteOffset, n).copy(pinned.bytes));
best('page-locked alone', () => cuda.memcpyHtoD(d, pinned));
cuda.hostRegister(map, READ_ONLY);
best('registered (READ_ONLY)', () => cuda.memcpyHtoD(d, map));
best('staged, source registered', () => { pinned.bytes.set(map.bytes); cuda.memcpyHtoD(d, pinned); });
best('memcpy, source registered', () => memcpy(pinned, map, n));
cuda.hostUnregister(map);
console.log('checksum', sum);
