// The timing lock under the load of a host of several GPUs, without a GPU (issue 32: 8 GPUs in little more than one).
// Each "device" is a process that does what a GPU's runner does with the lock (bindings/timing-lock.ts): its
// timed copies held exclusive (TIMED ms), its hazards (HAZARDS ms), then the reference checks' copies held shared
// twice (SHARED ms each); each device's truncation child holds it shared while its driver starts (CHILD ms), just
// after its runner starts. The devices start STAGGER ms apart. It prints when the last device's timed copies were
// done (their least is devices x TIMED) and when the last device was done, and each device's wait for its timed
// copies. The holds are sleeps: the figures are the lock's order, not this machine's speed.
//   npm run build && node scripts/lock-contention.mjs [DEVICES] [REPEATS]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TIMED = 95; // the double's timed copies at 16 MiB, the lock's share as on the H200 (docs/bench.md)
const HAZARDS = 150;
const SHARED = 150;
const CHILD = 120;
const STAGGER = 30;
const LOCK_MODULE = join(process.cwd(), 'dist/bindings/timing-lock.js');
const self = fileURLToPath(import.meta.url);
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, ms));

const [role, path, startArg] = process.argv.slice(2);
if (role === 'device' || role === 'child') {
  const { acquireTimingLock } = await import(LOCK_MODULE);
  // loaded: the common start (epoch ms) comes on stdin once every process is
  process.stdout.write('ready\n');
  const t0 = await new Promise((done) => process.stdin.once('data', (d) => done(Number(String(d)))));
  process.stdin.destroy();
  const now = () => Date.now() - t0;
  sleep(Number(startArg) - now());
  if (role === 'child') {
    const held = acquireTimingLock({ path, shared: true });
    sleep(CHILD);
    held.release();
  } else {
    const asked = now();
    const timed = acquireTimingLock({ path });
    const waited = now() - asked;
    sleep(TIMED);
    timed.release();
    const timedDone = now();
    sleep(HAZARDS);
    for (let i = 0; i < 2; i++) {
      const shared = acquireTimingLock({ path, shared: true });
      sleep(SHARED);
      shared.release();
      sleep(20);
    }
    console.log(JSON.stringify({ waited, timedDone, end: now() }));
  }
} else {
  const devices = Number(process.argv[2] ?? 8);
  const repeats = Number(process.argv[3] ?? 3);
  const work = mkdtempSync(join(tmpdir(), 'mapped-reg-lock-contention-'));
  /** A process of `role`, loaded: `go(t0)` starts it, `done` is what it printed. */
  const load = (role, lock, start) => {
    const c = spawn(process.execPath, [self, role, lock, String(start)], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    const ready = new Promise((ok) => c.stdout.on('data', () => out.includes('ready\n') && ok()));
    const done = new Promise((ok) => c.on('close', () => ok(out.replace('ready\n', ''))));
    return { ready, done, go: (t0) => c.stdin.write(`${t0}\n`) };
  };
  try {
    console.log(`${devices} devices, timed copies ${TIMED} ms each (least for the last one: ${devices * TIMED} ms)`);
    for (let r = 0; r < repeats; r++) {
      const lock = join(work, `lock-${r}`);
      const starts = Array.from({ length: devices }, (_, i) => STAGGER * i);
      const procs = [...starts.map((s) => load('device', lock, s)), ...starts.map((s) => load('child', lock, s + 50))];
      await Promise.all(procs.map((p) => p.ready));
      const t0 = Date.now() + 20;
      for (const p of procs) p.go(t0);
      const results = (await Promise.all(procs.slice(0, devices).map((p) => p.done))).map((o) => JSON.parse(o));
      await Promise.all(procs.map((p) => p.done));
      const last = (k) => Math.max(...results.map((x) => x[k]));
      console.log(`the last timed copies done at ${last('timedDone')} ms, every device done at ${last('end')} ms; the timed copies' waits, ms: ${results.map((x) => x.waited).join(' ')}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
