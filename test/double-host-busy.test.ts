// The host-busy double (test/double/host_busy.c, README "Host memory busy"): preloaded into a Node process, it
// paces each memmove of at least 1 MiB, the call V8 makes for Uint8Array.prototype.set, to
// MAPPED_REG_DOUBLE_HOST_COPY_GBPS. Each case is a child `node -e` timing one `a.set(b)` of 4 MiB; only lower
// bounds on time are asserted (a paced copy is never shorter than n / G). Without the variable the library is
// loaded (a malformed value stops the same preload at load) and the copy brings the same bytes, silently.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildDoubles } from './double/build.js';
import { ROOT, cleanEnv } from './support/command.js';

const doubles = buildDoubles();
const MiB = 1024 * 1024;

/** Copies `bytes` with Uint8Array.prototype.set in a child; prints the ms it took and a checksum of the target. */
const CHILD = `
const n = Number(process.argv[1]);
const a = new Uint8Array(n), b = new Uint8Array(n);
for (let i = 0; i < n; i++) b[i] = i * 7;
const t0 = process.hrtime.bigint();
a.set(b);
const ns = process.hrtime.bigint() - t0;
let sum = 0;
for (let i = 0; i < n; i++) sum = (sum + a[i] * (i % 251)) % 1000000007;
console.log(JSON.stringify({ ns: String(ns), sum }));
`;

function copy(bytes: number, env: Record<string, string>): { ns: bigint; sum: number; status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, ['-e', CHILD, String(bytes)], { cwd: ROOT, env: cleanEnv(env), encoding: 'utf8' });
  if (r.status !== 0) return { ns: -1n, sum: -1, status: r.status, stderr: r.stderr };
  const j = JSON.parse(r.stdout) as { ns: string; sum: number };
  return { ns: BigInt(j.ns), sum: j.sum, status: r.status, stderr: r.stderr };
}

/** n bytes at G GB/s, in ns. */
const ns = (bytes: number, gbps: number): bigint => BigInt(Math.ceil((bytes / (gbps * 1e9)) * 1e9));

describe('host-busy double: LD_PRELOAD, MAPPED_REG_DOUBLE_HOST_COPY_GBPS', () => {
  const bytes = 4 * MiB;

  it('a.set(b) of 4 MiB paced at 0.05 GB/s takes at least 4 MiB / 0.05 GB/s, and copies the right bytes', () => {
    const plain = copy(bytes, {});
    const paced = copy(bytes, { LD_PRELOAD: doubles.hostBusy, MAPPED_REG_DOUBLE_HOST_COPY_GBPS: '0.05' });
    expect(paced.status, paced.stderr).toBe(0);
    expect(paced.ns).toBeGreaterThanOrEqual(ns(bytes, 0.05)); // 84 ms
    expect(paced.sum).toBe(plain.sum);
  });

  it('without the variable the library changes nothing: the same bytes, nothing on stderr, exit 0', () => {
    const r = spawnSync(process.execPath, ['-e', CHILD, String(bytes)], { cwd: ROOT, env: cleanEnv({ LD_PRELOAD: doubles.hostBusy }), encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect((JSON.parse(r.stdout) as { sum: number }).sum).toBe(copy(bytes, {}).sum);
    // empty is unset too
    const empty = copy(bytes, { LD_PRELOAD: doubles.hostBusy, MAPPED_REG_DOUBLE_HOST_COPY_GBPS: '' });
    expect([empty.status, empty.stderr]).toEqual([0, '']);
  });

  it('the driver doubles never call memmove (their copies keep their own rates under this library): only memcpy', () => {
    for (const lib of [doubles.cuda, doubles.hip]) {
      const nm = spawnSync('nm', ['-D', '--undefined-only', lib], { encoding: 'utf8' });
      expect(nm.status, `nm: ${nm.error?.message ?? nm.stderr}`).toBe(0);
      expect(nm.stdout, lib).toMatch(/\bmemcpy\b/);
      expect(nm.stdout, lib).not.toMatch(/\bmemmove\b/);
    }
  });

  it('a malformed value stops the process at load: exit 2 and one line naming the variable', () => {
    for (const value of ['0', 'fast', '1e3', '-1', '0x10', '1.2.3']) {
      const r = spawnSync(process.execPath, ['-e', 'console.log("ran")'], { cwd: ROOT, env: cleanEnv({ LD_PRELOAD: doubles.hostBusy, MAPPED_REG_DOUBLE_HOST_COPY_GBPS: value }), encoding: 'utf8' });
      expect(r.status, value).toBe(2);
      expect(r.stdout, value).toBe('');
      expect(r.stderr, value).toBe(`mapped-reg host-busy double: MAPPED_REG_DOUBLE_HOST_COPY_GBPS '${value}' is not known: a positive decimal in GB/s (see test/double/README.md)\n`);
    }
  });
});
