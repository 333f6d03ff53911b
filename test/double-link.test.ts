// The double's shared link (MAPPED_REG_DOUBLE_LINK_FILE, MAPPED_REG_DOUBLE_LINK_GBPS; test/double/README.md): the
// host-to-device copies of every process naming one file share G GB/s. Each copy here runs in a child process of
// its own (a few lines of koffi against the CUDA double), its copy timed around the call with CLOCK_MONOTONIC,
// which every process shares. Only lower bounds are asserted; they follow from the pacing: a copy never passes
// more than G alone, two copies in flight together never more than G between them, and a copy that shares the
// link with k - 1 others advances at G / k.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDoubles } from './double/build.js';
import { ROOT, cleanEnv } from './support/command.js';
import { loadDouble } from './support/drivers.js';
import { waitUntil } from './support/processes.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-double-link-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const doubles = buildDoubles();
const MiB = 1024 * 1024;
let serial = 0;

/**
 * A child that maps the CUDA double, allocates N bytes page-locked and on the device, writes DIR/NAME.ready, waits
 * for DIR/go, times one host-to-device copy and writes DIR/NAME.json: { start, end } in ns of CLOCK_MONOTONIC.
 */
const CHILD = `
import koffi from 'koffi';
import { existsSync, writeFileSync } from 'node:fs';
const [lib, dir, name, n] = process.argv.slice(1);
const bytes = Number(n);
const cu = koffi.load(lib);
const call = (proto, ...args) => { const r = cu.func(proto)(...args); if (r !== 0) { console.error(proto + ': ' + r); process.exit(3); } };
call('int cuInit(unsigned int)', 0);
const dev = [0], ctx = [null], dptr = [0], host = [null];
call('int cuDeviceGet(_Out_ int *d, int ordinal)', dev, 0);
call('int cuDevicePrimaryCtxRetain(_Out_ void **ctx, int dev)', ctx, dev[0]);
call('int cuCtxSetCurrent(void *ctx)', ctx[0]);
call('int cuMemAlloc_v2(_Out_ uint64_t *p, size_t n)', dptr, bytes);
call('int cuMemHostAlloc(_Out_ void **p, size_t n, unsigned int flags)', host, bytes, 0);
writeFileSync(dir + '/' + name + '.ready', '');
while (!existsSync(dir + '/go')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
const start = process.hrtime.bigint();
call('int cuMemcpyHtoD_v2(uint64_t dst, void *src, size_t n)', dptr[0], host[0], bytes);
const end = process.hrtime.bigint();
writeFileSync(dir + '/' + name + '.json', JSON.stringify({ start: String(start), end: String(end) }));
`;

interface Copier {
  child: ChildProcess;
  name: string;
  /** Resolves with the exit status (null when killed). */
  exit: Promise<number | null>;
  stderr(): string;
}

function copier(dir: string, name: string, bytes: number, env: Record<string, string>): Copier {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, doubles.cuda, dir, name, String(bytes)], {
    cwd: ROOT,
    env: cleanEnv(env),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  return { child, name, exit, stderr: () => err };
}

/** The copy's { start, end } in ns, once its child has exited 0. */
async function timed(dir: string, c: Copier): Promise<{ start: bigint; end: bigint }> {
  expect(await c.exit, c.stderr()).toBe(0);
  const j = JSON.parse(readFileSync(join(dir, `${c.name}.json`), 'utf8')) as { start: string; end: string };
  return { start: BigInt(j.start), end: BigInt(j.end) };
}

/** Starts the copiers, waits until each is ready (its buffers allocated), then lets them copy together. */
async function together(dir: string, names: string[], bytes: number, env: Record<string, string>): Promise<Copier[]> {
  const cs = names.map((n) => copier(dir, n, bytes, env));
  await waitUntil(() => names.every((n) => existsSync(join(dir, `${n}.ready`))), 60_000, `${names.join(', ')} ready`);
  writeFileSync(join(dir, 'go'), '');
  return cs;
}

/** n bytes at G GB/s, in ns. */
const ns = (bytes: number, gbps: number): bigint => BigInt(Math.ceil((bytes / (gbps * 1e9)) * 1e9));

/** The link file's slots: [pid, copies in flight] of each word that is not 0 (layout in test/double/README.md). */
function slots(file: string): [number, number][] {
  const b = readFileSync(file);
  expect(b.subarray(0, 7).toString()).toBe('MRLINK1');
  const out: [number, number][] = [];
  for (let off = 8; off + 8 <= b.length && off < 8 + 64 * 8; off += 8) {
    const w = b.readBigUInt64LE(off);
    if (w !== 0n) out.push([Number(w >> 32n), Number(w & 0xffffffffn)]);
  }
  return out;
}

function folder(): { dir: string; file: string } {
  const dir = mkdtempSync(join(work, `case-${serial++}-`));
  return { dir, file: join(dir, 'link') };
}

describe('cuda double: MAPPED_REG_DOUBLE_LINK_FILE, MAPPED_REG_DOUBLE_LINK_GBPS', () => {
  const bytes = 16 * MiB;
  const G = 0.25; // 16 MiB: 67 ms alone

  it('a copy alone on the link takes at least n / G', async () => {
    const { dir, file } = folder();
    const [a] = await together(dir, ['a'], bytes, { MAPPED_REG_DOUBLE_LINK_FILE: file, MAPPED_REG_DOUBLE_LINK_GBPS: String(G) });
    const t = await timed(dir, a!);
    expect(t.end - t.start).toBeGreaterThanOrEqual(ns(bytes, G));
    // the double created the file; the copier's slot is left with nothing in flight
    expect(slots(file).map(([, active]) => active)).toEqual([0]);
  });

  it('two processes copying at once share G: each takes at least n / G, and both together at least 2n / G', async () => {
    const { dir, file } = folder();
    const cs = await together(dir, ['a', 'b'], bytes, { MAPPED_REG_DOUBLE_LINK_FILE: file, MAPPED_REG_DOUBLE_LINK_GBPS: String(G) });
    const [a, b] = [await timed(dir, cs[0]!), await timed(dir, cs[1]!)];
    for (const t of [a, b]) expect(t.end - t.start).toBeGreaterThanOrEqual(ns(bytes, G));
    const first = a.start < b.start ? a.start : b.start;
    const last = a.end > b.end ? a.end : b.end;
    expect(last - first).toBeGreaterThanOrEqual(ns(2 * bytes, G));
  });

  it('a copy that shares the link with another in flight the whole time advances at G / 2: at least 2n / G', async () => {
    const { dir, file } = folder();
    // a slot of a live process (this test's own) with one copy in flight, written as the layout says
    const b = Buffer.alloc(8 + 64 * 8);
    b.write('MRLINK1', 0);
    b.writeBigUInt64LE((BigInt(process.pid) << 32n) | 1n, 8);
    writeFileSync(file, b);
    const [a] = await together(dir, ['a'], bytes, { MAPPED_REG_DOUBLE_LINK_FILE: file, MAPPED_REG_DOUBLE_LINK_GBPS: String(G) });
    const t = await timed(dir, a!);
    expect(t.end - t.start).toBeGreaterThanOrEqual(ns(2 * bytes, G));
    expect(slots(file)).toContainEqual([process.pid, 1]);
  });

  it('a process killed in a copy leaves a slot that the next copy ignores and frees', async () => {
    const { dir, file } = folder();
    const env = { MAPPED_REG_DOUBLE_LINK_FILE: file, MAPPED_REG_DOUBLE_LINK_GBPS: '0.001' }; // 16 s: killed in it
    const [slow] = await together(dir, ['slow'], bytes, env);
    const pid = slow!.child.pid!;
    await waitUntil(() => existsSync(file) && slots(file).some(([p, active]) => p === pid && active === 1), 60_000, 'the slow copy in flight');
    slow!.child.kill('SIGKILL');
    expect(await slow!.exit).toBeNull();
    expect(slots(file)).toContainEqual([pid, 1]); // what it left behind
    const next = copier(dir, 'next', bytes, { ...env, MAPPED_REG_DOUBLE_LINK_GBPS: String(G) });
    const t = await timed(dir, next);
    expect(t.end - t.start).toBeGreaterThanOrEqual(ns(bytes, G));
    expect(slots(file).filter(([p]) => p === pid)).toEqual([]);
    expect(slots(file)).toEqual([[next.child.pid!, 0]]);
  });
});

describe('MAPPED_REG_DOUBLE_LINK_FILE, MAPPED_REG_DOUBLE_LINK_GBPS configured wrong (the CUDA and the HIP double)', () => {
  it('a malformed or half configuration makes init fail with INVALID_VALUE and one line naming the variable', () => {
    const { dir, file } = folder();
    const bad: [Record<string, string>, RegExp][] = [
      [{ MAPPED_REG_DOUBLE_LINK_FILE: file, MAPPED_REG_DOUBLE_LINK_GBPS: '0' }, /MAPPED_REG_DOUBLE_LINK_GBPS '0' is not known/],
      [{ MAPPED_REG_DOUBLE_LINK_FILE: file, MAPPED_REG_DOUBLE_LINK_GBPS: '1e3' }, /MAPPED_REG_DOUBLE_LINK_GBPS '1e3' is not known/],
      [{ MAPPED_REG_DOUBLE_LINK_FILE: file, MAPPED_REG_DOUBLE_LINK_GBPS: '-2' }, /MAPPED_REG_DOUBLE_LINK_GBPS '-2' is not known/],
      [{ MAPPED_REG_DOUBLE_LINK_FILE: file }, /MAPPED_REG_DOUBLE_LINK_FILE is set without MAPPED_REG_DOUBLE_LINK_GBPS/],
      [{ MAPPED_REG_DOUBLE_LINK_GBPS: '1' }, /MAPPED_REG_DOUBLE_LINK_GBPS is set without MAPPED_REG_DOUBLE_LINK_FILE/],
      [{ MAPPED_REG_DOUBLE_LINK_FILE: join(dir, 'no', 'such', 'folder'), MAPPED_REG_DOUBLE_LINK_GBPS: '1' }, /MAPPED_REG_DOUBLE_LINK_FILE '.*' cannot be opened read-write/],
    ];
    for (const [env, line] of bad) {
      const c = spawnInit(env);
      expect(c.stdout, JSON.stringify(env)).toBe('1\n'); // cuInit: 1 CUDA_ERROR_INVALID_VALUE
      expect(c.stderr.trim().split('\n'), JSON.stringify(env)).toHaveLength(1);
      expect(c.stderr, JSON.stringify(env)).toMatch(line);
    }
    expect(spawnInit({ MAPPED_REG_DOUBLE_LINK_FILE: file, MAPPED_REG_DOUBLE_LINK_GBPS: '.5' }).stdout).toBe('0\n');
  });

  it('the HIP double reads the same variables', () => {
    const saved = { ...process.env };
    process.env['MAPPED_REG_DOUBLE_LINK_GBPS'] = 'fast';
    process.env['MAPPED_REG_DOUBLE_LINK_FILE'] = join(work, 'hip-link');
    try {
      const loaded = loadDouble('hip', { profile: 'rocm-fixed' });
      expect(loaded.discovery.devices.filter((d) => d.backend === 'hip')).toEqual([]);
      expect(loaded.discovery.backends.find((b) => b.backend === 'hip')?.note ?? '').toMatch(/1 hipErrorInvalidValue/);
    } finally {
      for (const k of ['MAPPED_REG_DOUBLE_LINK_GBPS', 'MAPPED_REG_DOUBLE_LINK_FILE']) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
    }
  });
});

/** cuInit's result (printed) in a child with `env`, and what the double printed on stderr. */
function spawnInit(env: Record<string, string>): { stdout: string; stderr: string } {
  const code = `import koffi from 'koffi'; console.log(koffi.load(process.argv[1]).func('int cuInit(unsigned int)')(0));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code, doubles.cuda], { cwd: ROOT, env: cleanEnv(env), encoding: 'utf8' });
  return { stdout: r.stdout, stderr: r.stderr };
}
