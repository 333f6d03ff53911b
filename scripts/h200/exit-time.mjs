// How long a process that holds a CUDA context takes to end, as its parent sees it (issue 32: the runner's exit,
// some 140 ms before the command's end in the H200's profile). Each child retains device 0's primary context,
// copies 64 MiB to it, then: `live` exits with the context alive (the driver tears it down in the exit);
// `released` releases it first (the last release destroys it), `reset` resets it first; either timed in the child;
// `quick` exits with the context alive by _exit (no exit handlers of the C library, no driver destructors).
// The parent times from the child's last line to its exit event. On the GPU machine, from the project's root:
//   node scripts/h200/exit-time.mjs [REPEATS]
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = process.cwd();
const repeats = Number(process.argv[2] ?? 5);
const child = (mode) => `
const { loadCuda } = await import(${JSON.stringify(join(root, 'dist/bindings/cuda.js'))});
const { exitNow } = await import(${JSON.stringify(join(root, 'dist/bindings/libc.js'))});
const d = loadCuda();
d.devices();
const ctx = d.primaryCtxRetain(0);
d.ctxSetCurrent(ctx);
const dev = d.memAlloc(64 * 1024 * 1024);
d.memFree(dev);
let teardownMs = 0;
const t0 = performance.now();
if (${JSON.stringify(mode)} === 'released') d.primaryCtxRelease(0);
if (${JSON.stringify(mode)} === 'reset') d.primaryCtxReset(0);
teardownMs = performance.now() - t0;
process.stdout.write(JSON.stringify({ teardownMs }) + '\\n', () => {
  // quick: the C library's exit handlers and the driver's destructors skipped (bindings/libc.ts exitNow), as a
  // discovering process that checks nothing ends; the kernel frees the context
  if (${JSON.stringify(mode)} === 'quick') { process.on('exit', () => exitNow(0)); }
  process.exit(0);
});
`;

function once(mode) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--input-type=module', '-e', child(mode)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let line = '';
    let at = 0;
    p.stdout.on('data', (b) => {
      line += b;
      if (line.includes('\n') && !at) at = performance.now();
    });
    p.on('exit', (code) => resolve({ code, exitMs: performance.now() - at, ...JSON.parse(line || '{}') }));
  });
}

for (let i = 0; i < repeats; i++) {
  for (const mode of ['live', 'released', 'reset', 'quick']) {
    const r = await once(mode);
    console.log(`${mode.padEnd(9)} teardown in the child ${r.teardownMs?.toFixed(1)} ms, its last line to its exit ${r.exitMs.toFixed(1)} ms (status ${r.code})`);
  }
}
