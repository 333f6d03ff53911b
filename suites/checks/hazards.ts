// The hazard checks: one small check per driver promise about registered host memory (hip-tests' shape:
// hipHostRegister.cc, hipHostUnregister.cc), on the file-backed mappings hip-tests never touches. Each one says
// what the driver returned, by number and name, and whether the bytes that came back were right. What the real
// CUDA driver did on the H200 is in shared/facts/cuda-h200.md; the ROCm 7.2.4 behaviours in the spec.
//
// Discipline: every registration goes through withTrackedOps (so the model's table knows what the driver may
// hold), every registration made is unregistered before the check returns (a failure is part of what it saw),
// every mapping goes back through releaseMapping (which keeps a range still in the table mapped) and every file
// is removed. hazard.unmap_then_unregister unmaps a registered range on purpose: that is its hazard.
// hazard.context_reset resets the device's context, so it comes last.
import { randomFillSync } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DeviceOps } from '../../bindings/device-ops.js';
import { type DriverResult, driverResult } from '../../bindings/errors.js';
import {
  MAP_PRIVATE,
  MAP_SHARED,
  PROT_NONE,
  PROT_READ,
  PROT_WRITE,
  type Mapping,
  closeFd,
  memfdCreate,
  munmap,
  pageSize,
  pwrite,
  statfs,
} from '../../bindings/libc.js';
import { type Host, firstDifference, hostSlice, registrations, staticToString, staticVerdict } from '../../src/index.js';
import type { Check, CheckContext, Observation } from '../check.js';
import { mapFile, releaseMapping, scratchFile, withTrackedOps } from '../context.js';
import type { TruncateArgs, TruncateLine } from '../children/truncate.js';

const MiB = 1024 * 1024;
/** The file of the byte checks: small, many pages. */
const FILE_BYTES = MiB;
/** Where tmpfs is. */
const TMPFS_DIR = '/dev/shm';
/** hazard.truncate_contained: the mapping, the length it is cut to, and the two copies from the cut tail. */
const TRUNCATE_FILE_BYTES = 32 * MiB;
const TRUNCATE_CUT_BYTES = 16 * MiB;
const TRUNCATE_SMALL_BYTES = 4096;
/** How long the truncation child may run before it is killed. */
export const TRUNCATE_CHILD_TIMEOUT_MS = 30_000;

/** Same number in CUDA and HIP. */
const INVALID_VALUE = 1;
const ALREADY_REGISTERED = 712;
const NOT_REGISTERED = 713;

// ---- driver results ----

type Code = DriverResult;
const call = driverResult;

/** `0`, or `712 CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`. */
function text(c: Code): string {
  return c.code === 0 ? '0' : `${c.code} ${c.name}`;
}

const ok = (c: Code | undefined): boolean => c !== undefined && c.code === 0;
const hex = (n: number): string => `0x${n.toString(16)}`;
const addr = (h: Host): string => `0x${h.address.toString(16)}`;
const sizeText = (n: number): string => (n >= MiB && n % MiB === 0 ? `${n / MiB} MiB` : n >= 1024 && n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);

// ---- bytes ----

interface Served {
  copy: Code;
  /** First differing offset from the expected bytes, -1 when equal; null when the copy failed. */
  diff: number | null;
  zeros: boolean;
  /** Whether the bytes were `old` instead (a stale copy), when asked. */
  stale: boolean;
}

/** Round trip of `host` through the device into a page-locked buffer, compared with `expected` (and `old`). */
function serve(ops: DeviceOps, host: Host, expected: Uint8Array, old?: Uint8Array): Served {
  const into = ops.allocHost(host.bytes.length);
  try {
    const copy = call(() => ops.roundTrip(host, into));
    if (copy.code !== 0) return { copy, diff: null, zeros: false, stale: false };
    const diff = firstDifference(into.bytes, expected);
    return { copy, diff, zeros: diff !== -1 && into.bytes.every((b) => b === 0), stale: diff !== -1 && old !== undefined && firstDifference(into.bytes, old) === -1 };
  } finally {
    // A buffer that will not free now is freed (or reported) by withOps when it returns.
    call(() => ops.freeHost(into));
  }
}

function servedText(s: Served): string {
  if (s.diff === null) return `copy ${text(s.copy)}`;
  if (s.diff === -1) return 'bytes equal';
  if (s.stale) return 'stale bytes (the old ones)';
  return `bytes differ at offset ${s.diff}${s.zeros ? ' (all zeros)' : ''}`;
}

// ---- registrations of one check ----

/** The registrations a check made through its ops, so that whatever it did not release is released at the end. */
class Held {
  readonly live: Host[] = [];
  constructor(readonly ops: DeviceOps) {}

  register(host: Host, flags: number): Code {
    const c = call(() => this.ops.registerWithFlags(host, flags));
    if (c.code === 0) this.live.push(host);
    return c;
  }

  unregister(host: Host): Code {
    const c = call(() => this.ops.unregister(host));
    if (c.code === 0) {
      const i = this.live.indexOf(host);
      if (i >= 0) this.live.splice(i, 1);
    }
    return c;
  }

  /** One more unregister for each registration still live; what each returned. */
  releaseAll(): { host: Host; code: Code }[] {
    return [...this.live].map((host) => ({ host, code: this.unregister(host) }));
  }
}

/**
 * Runs `body` with the check's registrations, then releases what it left registered. A release here that
 * fails is added to the observation and makes it fail: the range stays in the model's table, mapped.
 */
function session(ops: DeviceOps, body: (held: Held) => Observation): Observation {
  const held = new Held(ops);
  let o: Observation | undefined;
  try {
    o = body(held);
  } finally {
    const left = held.releaseAll();
    if (o !== undefined && left.length > 0) {
      const failed = left.filter((l) => l.code.code !== 0);
      o = {
        ...o,
        observed: `${o.observed}; release at the end: ${left.map((l) => `unregister ${addr(l.host)} ${text(l.code)}`).join(', ')}`,
        data: { ...o.data, cleanup: left.map((l) => ({ address: addr(l.host), code: l.code.code, name: l.code.name })) },
        ...(failed.length > 0
          ? {
              status: 'fail' as const,
              message: [o.message, `${failed.length} registration(s) could not be released: kept in the table, mapped, until the process ends`].filter(Boolean).join('; '),
            }
          : {}),
      };
    }
  }
  return o;
}

// ---- files and mappings ----

function withFile<T>(dir: string, size: number, f: (file: ReturnType<typeof scratchFile>) => T): T {
  const file = scratchFile(dir, size);
  try {
    return f(file);
  } finally {
    file.remove();
  }
}

function withMapping<T>(ctx: CheckContext, fd: number, size: number, prot: number, flags: number, f: (m: Mapping) => T): T {
  const m = mapFile(fd, size, prot, flags);
  try {
    return f(m);
  } finally {
    if (!releaseMapping(m)) ctx.log(`mapping ${addr(m)} (+${m.length}) kept mapped: the driver may still hold it`);
  }
}

/** A mapping of a fresh scratch file of `size` random bytes, and the ops, for `f`. */
function withMappedFile(
  ctx: CheckContext,
  options: { dir?: string; size?: number; prot?: number; flags?: number },
  f: (m: Mapping, bytes: Uint8Array, ops: DeviceOps, fd: number) => Observation,
): Observation {
  const size = options.size ?? FILE_BYTES;
  return withFile(options.dir ?? ctx.options.scratchDir, size, (file) =>
    withMapping(ctx, file.fd, size, options.prot ?? PROT_READ, options.flags ?? MAP_SHARED, (m) => withTrackedOps(ctx, size, (ops) => f(m, file.bytes, ops, file.fd))),
  );
}

// ---- applies ----

/** The hazard checks need registration: CUDA and HIP devices. */
export function hasRegistration(ctx: CheckContext): true | string {
  if (ctx.device.native) return true;
  const s = staticVerdict(ctx.device.device);
  return `no registration on ${ctx.device.backend} (static verdict: ${staticToString(s)})`;
}

// ---- one check per promise ----

/** Register `host`, and when that worked, copy it through the device and release it. */
interface Trial {
  flags: number;
  register: Code;
  served?: Served;
  unregister?: Code;
}

function registerServeRelease(held: Held, host: Host, bytes: Uint8Array, flags: number): Trial {
  const register = held.register(host, flags);
  if (!ok(register)) return { flags, register };
  const served = serve(held.ops, host, bytes);
  return { flags, register, served, unregister: held.unregister(host) };
}

function trialText(t: Trial): string {
  if (!t.served || !t.unregister) return `register ${text(t.register)}`;
  return `register 0; ${servedText(t.served)}; unregister ${text(t.unregister)}`;
}

function trialData(t: Trial): Record<string, unknown> {
  return {
    flags: t.flags,
    register: t.register.code,
    registerName: t.register.name,
    ...(t.served ? { copy: t.served.copy.code, firstDifference: t.served.diff, zeros: t.served.zeros } : {}),
    ...(t.unregister ? { unregister: t.unregister.code, unregisterName: t.unregister.name } : {}),
  };
}

/** Registered and served right and released at the first try, or refused: pass. Wrong bytes or a failed release: fail. */
function servesOrRefuses(held: Held, host: Host, bytes: Uint8Array, flags: number, what: string): Observation {
  const expected = `${what}: refused, or registered (flags ${hex(flags)}) serving the file's bytes and released at the first try`;
  const t = registerServeRelease(held, host, bytes, flags);
  if (!ok(t.register)) return { expected, observed: `refused: register ${text(t.register)}`, data: trialData(t) };
  const good = t.served?.diff === -1 && ok(t.unregister);
  return {
    status: good ? 'pass' : 'fail',
    expected,
    observed: trialText(t),
    ...(good ? {} : { message: t.served?.diff !== -1 ? 'a registration the driver accepted did not serve the right bytes (a false success)' : 'the release failed' }),
    data: trialData(t),
  };
}

function truncateChildScript(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  // Compiled, this file is dist/suites/checks/hazards.js and the child is beside it in dist/suites/children/.
  const sibling = join(here, '..', 'children', 'truncate.js');
  if (existsSync(sibling)) return sibling;
  // From the TypeScript sources (suites/checks/hazards.ts, under Vitest): the compiled child in the project's dist/.
  return join(here, '..', '..', 'dist', 'suites', 'children', 'truncate.js');
}

function parseLines(stdout: string): TruncateLine[] {
  const lines: TruncateLine[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as TruncateLine);
    } catch {
      // a partial line from a process that died mid-write
    }
  }
  return lines;
}

type CopyLine = Extract<TruncateLine, { step: 'large' | 'small'; code: number }>;

/** What one copy from the cut tail did, from the child's lines and how it ended. */
function copyOutcome(lines: TruncateLine[], step: 'large' | 'small', end: string): { text: string; data: Record<string, unknown> } {
  const begun = lines.some((l) => l.step === step && 'phase' in l);
  const result = lines.find((l): l is CopyLine => l.step === step && 'code' in l);
  if (result) {
    if (result.code !== 0) return { text: `${result.code} ${result.name}`, data: { code: result.code, name: result.name } };
    const bytes =
      result.bytes === 'stale'
        ? 'stale bytes (the file no longer has them)'
        : result.bytes === 'zeros'
          ? 'zeros'
          : `bytes neither stale nor zeros (first difference from the old bytes at offset ${result.firstDifference})`;
    return { text: `0, ${bytes}`, data: { code: 0, bytes: result.bytes, ...(result.firstDifference !== undefined ? { firstDifference: result.firstDifference } : {}) } };
  }
  if (begun) return { text: end, data: { ended: end } };
  return { text: 'not reached', data: { reached: false } };
}

function truncateContained(ctx: CheckContext): Observation {
  const native = ctx.device.native!;
  const expected =
    'the run survives a file cut under its registration, and what the copies from the cut tail did is recorded (the H200: the 16 MiB copy returns 0 with stale bytes, the 4 KiB copy dies of SIGBUS)';
  const script = truncateChildScript();
  if (!existsSync(script)) {
    return { status: 'fail', expected, observed: 'not run', message: `the child ${script} does not exist: build with tsc -p tsconfig.build.json` };
  }
  const size = TRUNCATE_FILE_BYTES;
  const cut = TRUNCATE_CUT_BYTES;
  // The parent makes and removes the file: a child killed by a signal leaves nothing behind.
  return withFile(ctx.options.scratchDir, size, (file) => {
    const args: TruncateArgs = { device: ctx.device.id, file: file.path, size, cut, large: size - cut, small: TRUNCATE_SMALL_BYTES };
    const libraryEnv = native.api === 'CUDA' ? 'MAPPED_REG_CUDA_LIBRARY' : 'MAPPED_REG_HIP_LIBRARY';
    const started = performance.now();
    const r = spawnSync(process.execPath, [script, JSON.stringify(args)], {
      env: { ...process.env, [libraryEnv]: native.driver.path },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: TRUNCATE_CHILD_TIMEOUT_MS,
      killSignal: 'SIGKILL',
      maxBuffer: 4 * MiB,
    });
    const ms = Math.round(performance.now() - started);
    const timedOut = (r.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
    if (r.error && !timedOut) return { status: 'fail', expected, observed: `the child did not run: ${r.error.message}` };
    const lines = parseLines(r.stdout ?? '');
    const stderr = (r.stderr ?? '').trim();
    const end = timedOut ? `timed out after ${TRUNCATE_CHILD_TIMEOUT_MS / 1000} s (killed)` : r.signal ? `the child died of ${r.signal}` : `the child exited with status ${r.status}`;
    const child = { status: r.status, signal: r.signal, timedOut, ms, ...(stderr ? { stderr: stderr.slice(-2000) } : {}) };
    const reg = lines.find((l): l is Extract<TruncateLine, { step: 'register' }> => l.step === 'register');
    const truncated = lines.some((l) => l.step === 'truncate');
    const error = lines.find((l): l is Extract<TruncateLine, { step: 'error' }> => l.step === 'error');
    if (!truncated) {
      const why = error ? error.message : reg && reg.code !== 0 ? `register ${reg.code} ${reg.name}: nothing to cut under` : `${end}${stderr ? `: ${stderr.split('\n').slice(-3).join(' | ')}` : ''}`;
      return { status: timedOut ? 'warn' : 'fail', expected, observed: `the file was not cut under a registration: ${why}`, data: { child, lines } };
    }
    const large = copyOutcome(lines, 'large', end);
    const small = copyOutcome(lines, 'small', end);
    const un = lines.find((l): l is Extract<TruncateLine, { step: 'unregister' }> => l.step === 'unregister');
    const unText = un ? `unregister ${un.code === 0 ? '0' : `${un.code} ${un.name}`}` : 'unregister not reached';
    const childText = timedOut ? end : r.signal ? `child killed by ${r.signal}` : `child exit ${r.status}`;
    const observed = `register 0 (flags ${hex(reg?.flags ?? 0)}); cut to ${sizeText(cut)}; ${sizeText(size - cut)} copy from the cut tail: ${large.text}; ${sizeText(TRUNCATE_SMALL_BYTES)} copy: ${small.text}; ${unText}; ${childText}; the run went on`;
    return {
      status: timedOut ? 'warn' : 'pass',
      expected,
      observed,
      ...(timedOut ? { message: 'the child hung and was killed: the hazard is contained but what the copy does is not known' } : {}),
      data: { child, large: large.data, small: small.data, ...(un ? { unregister: un.code, unregisterName: un.name } : {}), lines },
    };
  });
}

function contextReset(ctx: CheckContext): Observation {
  const native = ctx.device.native!;
  const how = native.api === 'CUDA' ? 'cuDevicePrimaryCtxReset_v2' : 'hipDeviceReset';
  const expected = `after ${how} while registered, unregister says not registered (${NOT_REGISTERED}; the H200: ${NOT_REGISTERED} CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) and the range registers and releases again`;
  return withFile(ctx.options.scratchDir, FILE_BYTES, (file) =>
    withMapping(ctx, file.fd, FILE_BYTES, PROT_READ, MAP_SHARED, (m) => {
      // Left registered on purpose. withCudaOps then keeps its primary context retain (the last release would
      // drop the registration behind our back), so what the reset does is what is seen.
      let flags = 0;
      const first = withTrackedOps(ctx, FILE_BYTES, (ops) => {
        flags = ops.registerFlags;
        return call(() => ops.registerWithFlags(m, flags));
      });
      if (first.code !== 0) {
        return { status: 'fail', expected, observed: `register ${text(first)}: nothing to reset under`, data: { register: first.code, registerName: first.name } };
      }
      const reset =
        native.api === 'CUDA'
          ? call(() => native.driver.primaryCtxReset(native.ordinal))
          : call(() => {
              native.driver.setDevice(native.ordinal);
              native.driver.deviceReset();
            });
      const after = withTrackedOps(ctx, FILE_BYTES, (ops) => {
        const unregister = call(() => ops.unregister(m));
        if (unregister.code === 0) return { unregister };
        const again = call(() => ops.registerWithFlags(m, flags));
        const release = ok(again) ? call(() => ops.unregister(m)) : undefined;
        // Not released at the first try: once more, as any check cleans up (first-try release is judged elsewhere).
        const retry = release && !ok(release) ? call(() => ops.unregister(m)) : undefined;
        return { unregister, again, release, retry };
      });
      // The driver said it no longer held the range, then took it again and released it: the entry of the first
      // registration, whose unregister failed, is stale. Otherwise it stays (and the mapping with it).
      const gone = after.unregister.code !== 0 && ok(after.again) && (ok(after.release) || ok(after.retry));
      if (gone) registrations.remove(m);
      let retain: Code | undefined;
      if (native.api === 'CUDA') {
        // The retain withCudaOps kept for the first registration: a reset does not release it. Given back once
        // nothing of this range is held any more (else the last release could drop what the table still holds).
        if (!registrations.isPinned(m)) retain = call(() => native.driver.primaryCtxRelease(native.ordinal));
        else ctx.log(`the primary context retain kept for ${addr(m)} stays: the range may still be registered`);
      }
      const good = ok(reset) && after.unregister.code === NOT_REGISTERED && gone && ok(after.release);
      const parts = [
        `register 0`,
        `${how} ${text(reset)}`,
        `unregister after the reset ${text(after.unregister)}`,
        ...(after.again ? [`registered again ${text(after.again)}`] : []),
        ...(after.release ? [`released ${text(after.release)}`] : []),
        ...(after.retry ? [`released on a retry ${text(after.retry)}`] : []),
        ...(retain ? [`the kept context retain released ${text(retain)}`] : []),
      ];
      return {
        status: good ? 'pass' : 'fail',
        expected,
        observed: parts.join('; '),
        ...(good
          ? {}
          : {
              message: !ok(reset)
                ? `${how} failed`
                : after.unregister.code === 0
                  ? 'the registration survived the reset'
                  : after.unregister.code !== NOT_REGISTERED
                    ? 'unregister after the reset failed with another code than not registered'
                    : 'the range could not be registered and released again',
            }),
        data: {
          reset: reset.code,
          resetName: reset.name,
          unregister: after.unregister.code,
          unregisterName: after.unregister.name,
          ...(after.again ? { again: after.again.code, againName: after.again.name } : {}),
          ...(after.release ? { release: after.release.code, releaseName: after.release.name } : {}),
          ...(after.retry ? { retry: after.retry.code } : {}),
          ...(retain ? { retainRelease: retain.code } : {}),
        },
      };
    }),
  );
}

const check = (id: string, title: string, run: (ctx: CheckContext) => Observation): Check => ({ id, suite: 'hazards', title, applies: hasRegistration, run });

export const hazardChecks: Check[] = [
  check('hazard.prot_none_refused', 'a PROT_NONE file mapping is refused, with flags 0 and with the read-only flag', (ctx) =>
    withMappedFile(ctx, { prot: PROT_NONE, size: 4 * pageSize() }, (m, _bytes, ops) =>
      session(ops, (held) => {
        const tries: { flags: number; register: Code; unregister?: Code }[] = [];
        for (const flags of [...new Set([0, ops.registerFlags])]) {
          const t: { flags: number; register: Code; unregister?: Code } = { flags, register: held.register(m, flags) };
          tries.push(t);
          if (ok(t.register)) {
            t.unregister = held.unregister(m);
            if (!ok(t.unregister)) break; // still held: a second try would be a double registration
          }
        }
        const accepted = tries.filter((t) => ok(t.register));
        return {
          status: accepted.length === 0 ? 'pass' : 'fail',
          expected: `refused with flags ${[...new Set([0, ops.registerFlags])].map(hex).join(' and ')} (the H200: ${INVALID_VALUE} CUDA_ERROR_INVALID_VALUE)`,
          observed: tries.map((t) => `flags ${hex(t.flags)}: register ${text(t.register)}${t.unregister ? `, unregister ${text(t.unregister)}` : ''}`).join('; '),
          ...(accepted.length ? { message: 'the driver accepted a mapping it cannot read (a false success)' } : {}),
          data: { tries: tries.map((t) => ({ flags: t.flags, register: t.register.code, registerName: t.register.name, ...(t.unregister ? { unregister: t.unregister.code } : {}) })) },
        };
      }),
    ),
  ),

  check('hazard.readonly_mapping', 'a read-only shared file mapping registers with the read-only flag, serves its bytes and releases', (ctx) =>
    withMappedFile(ctx, {}, (m, bytes, ops) =>
      session(ops, (held) => {
        const flags = ops.registerFlags;
        const expected = `registered with flags ${hex(flags)}, the file's bytes served, released at the first try${flags !== 0 ? ` (flags 0 may be refused: the H200 says ${INVALID_VALUE} CUDA_ERROR_INVALID_VALUE)` : ''}`;
        // Flags 0 first (on CUDA a read-only mapping needs READ_ONLY: recorded, not judged); then the flag the device uses.
        let flags0: Code | undefined;
        let flags0Release: Code | undefined;
        if (flags !== 0) {
          flags0 = held.register(m, 0);
          if (ok(flags0)) flags0Release = held.unregister(m);
          if (flags0Release && !ok(flags0Release)) {
            return { status: 'fail', expected, observed: `flags 0: register 0, unregister ${text(flags0Release)}`, message: 'the release failed', data: { flags0: 0, flags0Release: flags0Release.code } };
          }
        }
        const t = registerServeRelease(held, m, bytes, flags);
        flags0 ??= t.register;
        const good = ok(t.register) && t.served?.diff === -1 && ok(t.unregister);
        const flags0Text = flags !== 0 ? `flags 0: register ${text(flags0)}${flags0Release ? `, unregister ${text(flags0Release)}` : ''}; ` : '';
        return {
          status: good ? 'pass' : 'fail',
          expected,
          observed: `${flags0Text}flags ${hex(flags)}: ${trialText(t)}`,
          ...(good
            ? {}
            : { message: !ok(t.register) ? 'a read-only mapping would not register with the read-only flag' : t.served?.diff !== -1 ? 'wrong bytes (a false success)' : 'the release failed' }),
          data: { ...trialData(t), flags0: flags0.code, flags0Name: flags0.name, ...(flags0Release ? { flags0Release: flags0Release.code } : {}) },
        };
      }),
    ),
  ),

  check('hazard.tmpfs_bytes', 'a file on tmpfs: refused, or registered serving its bytes', (ctx) => {
    let fs: string;
    try {
      fs = statfs(TMPFS_DIR).fsName;
    } catch (e) {
      fs = e instanceof Error ? e.message : String(e);
    }
    if (fs !== 'tmpfs') return { status: 'warn', expected: `a tmpfs at ${TMPFS_DIR}`, observed: `not measured: ${TMPFS_DIR} is ${fs}` };
    return withMappedFile(ctx, { dir: TMPFS_DIR }, (m, bytes, ops) => session(ops, (held) => servesOrRefuses(held, m, bytes, ops.registerFlags, `PROT_READ MAP_SHARED file on tmpfs (${TMPFS_DIR})`)));
  }),

  check('hazard.memfd_bytes', 'a memfd mapped read-write and shared: refused, or registered serving its bytes', (ctx) => {
    const size = FILE_BYTES;
    const fd = memfdCreate('mapped-reg-hazard');
    try {
      const bytes = new Uint8Array(size);
      randomFillSync(bytes);
      for (let done = 0; done < size; ) done += pwrite(fd, bytes.subarray(done), done);
      // Writable memory registers without the read-only flag (the H200: memfd, flags 0: 0).
      return withMapping(ctx, fd, size, PROT_READ | PROT_WRITE, MAP_SHARED, (m) =>
        withTrackedOps(ctx, size, (ops) => session(ops, (held) => servesOrRefuses(held, m, bytes, 0, 'memfd, PROT_READ|PROT_WRITE MAP_SHARED'))),
      );
    } finally {
      closeFd(fd);
    }
  }),

  check('hazard.private_mapping_bytes', 'a private read-only file mapping: refused, or registered serving its bytes', (ctx) =>
    withMappedFile(ctx, { flags: MAP_PRIVATE }, (m, bytes, ops) => session(ops, (held) => servesOrRefuses(held, m, bytes, ops.registerFlags, 'PROT_READ MAP_PRIVATE file'))),
  ),

  check('hazard.double_registration_refused', 'the same range registered twice: the second registration is refused', (ctx) =>
    withMappedFile(ctx, {}, (m, _bytes, ops) =>
      session(ops, (held) => {
        const expected = `the second registration refused (the H200: ${ALREADY_REGISTERED} CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)`;
        const first = held.register(m, ops.registerFlags);
        if (!ok(first)) return { status: 'fail', expected, observed: `the first registration: ${text(first)}`, message: 'nothing to register twice', data: { first: first.code } };
        const second = held.register(m, ops.registerFlags);
        const releases = held.releaseAll().map((r) => r.code);
        return {
          status: ok(second) ? 'fail' : 'pass',
          expected,
          observed: `register 0; again ${text(second)}; unregister ${releases.map(text).join(', ')}`,
          ...(ok(second) ? { message: 'the driver accepted the same range twice (a false success)' } : {}),
          data: { first: 0, second: second.code, secondName: second.name, releases: releases.map((c) => c.code) },
        };
      }),
    ),
  ),

  check('hazard.overlap_refused', 'a range overlapping a registered one is refused; an adjacent one is accepted', (ctx) => {
    const page = pageSize();
    return withMappedFile(ctx, { size: 4 * page }, (m, _bytes, ops) =>
      session(ops, (held) => {
        const expected = `a range overlapping a registration by one page refused (the H200: ${ALREADY_REGISTERED}); an adjacent range accepted (the H200: 0)`;
        const flags = ops.registerFlags;
        const a = hostSlice(m, 0, 2 * page);
        const adjacent = hostSlice(m, 2 * page, 2 * page);
        const overlapping = hostSlice(m, page, 2 * page);
        const first = held.register(a, flags);
        if (!ok(first)) return { status: 'fail', expected, observed: `pages 0-1: register ${text(first)}`, message: 'nothing to overlap', data: { first: first.code } };
        const adj = held.register(adjacent, flags);
        const adjRelease = ok(adj) ? held.unregister(adjacent) : undefined;
        const over = held.register(overlapping, flags);
        const releases = held.releaseAll().map((r) => r.code);
        const status = ok(over) ? 'fail' : ok(adj) ? 'pass' : 'warn';
        return {
          status,
          expected,
          observed: `pages 0-1: register 0; adjacent pages 2-3: register ${text(adj)}${adjRelease ? `, unregister ${text(adjRelease)}` : ''}; overlapping pages 1-2: register ${text(over)}; unregister ${releases.map(text).join(', ')}`,
          ...(status === 'fail' ? { message: 'the driver accepted an overlapping range (a false success)' } : status === 'warn' ? { message: 'an adjacent range was refused' } : {}),
          data: { first: 0, adjacent: adj.code, adjacentName: adj.name, ...(adjRelease ? { adjacentRelease: adjRelease.code } : {}), overlap: over.code, overlapName: over.name, releases: releases.map((c) => c.code) },
        };
      }),
    );
  }),

  check('hazard.release_after_double_registration', 'a range registered twice releases once per successful registration', (ctx) =>
    withMappedFile(ctx, {}, (m, _bytes, ops) =>
      session(ops, (held) => {
        const expected = 'every registration that succeeded released (the H200: the second is refused, one unregister: 0)';
        const first = held.register(m, ops.registerFlags);
        if (!ok(first)) return { status: 'fail', expected, observed: `register ${text(first)}`, message: 'nothing to release', data: { first: first.code } };
        const second = held.register(m, ops.registerFlags);
        const n = held.live.length;
        const releases: Code[] = [];
        for (let i = 0; i < n; i++) releases.push(held.unregister(m));
        const good = releases.every(ok);
        return {
          status: good ? 'pass' : 'fail',
          expected,
          observed: `register 0; again ${text(second)}; ${n} unregister${n === 1 ? '' : 's'}: ${releases.map(text).join(', ')}`,
          ...(good ? {} : { message: 'a registration the driver accepted cannot be released (ROCm 7.2.4: hipHostUnregister fails with 713)' }),
          data: { first: 0, second: second.code, secondName: second.name, releases: releases.map((c) => c.code), releaseNames: releases.map((c) => c.name) },
        };
      }),
    ),
  ),

  check('hazard.unregister_after_register', 'a successful registration releases at the first try', (ctx) =>
    withMappedFile(ctx, {}, (m, _bytes, ops) =>
      session(ops, (held) => {
        const expected = 'unregister 0 at the first try (the H200: 0; again: 713)';
        const reg = held.register(m, ops.registerFlags);
        if (!ok(reg)) return { status: 'fail', expected, observed: `register ${text(reg)}`, message: 'nothing to release', data: { register: reg.code } };
        const un = held.unregister(m);
        // A second unregister of the released range: recorded (the H200: 713), not judged here.
        const again = ok(un) ? call(() => ops.unregister(m)) : undefined;
        return {
          status: ok(un) ? 'pass' : 'fail',
          expected,
          observed: `register 0; unregister ${text(un)}${again ? `; again ${text(again)}` : ''}`,
          ...(ok(un) ? {} : { message: 'the release failed at the first try' }),
          data: { register: 0, unregister: un.code, unregisterName: un.name, ...(again ? { again: again.code, againName: again.name } : {}) },
        };
      }),
    ),
  ),

  check('hazard.unregister_unknown', 'unregister of a pointer never registered says not registered', (ctx) =>
    withMappedFile(ctx, { size: 4 * pageSize() }, (m, _bytes, ops) => {
      const expected = `${NOT_REGISTERED} (${ops.api === 'CUDA' ? 'CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED' : 'hipErrorHostMemoryNotRegistered'})`;
      const un = call(() => ops.unregisterAddress(m.address));
      const good = un.code === NOT_REGISTERED;
      return {
        status: good ? 'pass' : 'fail',
        expected,
        observed: `unregister of a mapping never registered: ${text(un)}`,
        ...(good ? {} : { message: un.code === 0 ? 'the driver released a range it never registered' : 'refused, but not as "not registered"' }),
        data: { unregister: un.code, unregisterName: un.name },
      };
    }),
  ),

  check('hazard.unregister_interior', 'unregister of a pointer inside a registration is refused and the registration stays', (ctx) => {
    const page = pageSize();
    return withMappedFile(ctx, { size: 4 * page }, (m, _bytes, ops) =>
      session(ops, (held) => {
        const expected = `refused (the H200: ${INVALID_VALUE} CUDA_ERROR_INVALID_VALUE), then the unregister of the start 0 at the first try`;
        const reg = held.register(m, ops.registerFlags);
        if (!ok(reg)) return { status: 'fail', expected, observed: `register ${text(reg)}`, message: 'nothing to release', data: { register: reg.code } };
        const interior = call(() => ops.unregisterAddress(m.address + BigInt(page)));
        const start = held.unregister(m);
        const good = !ok(interior) && ok(start);
        return {
          status: good ? 'pass' : 'fail',
          expected,
          observed: `register 0; unregister at +${page}: ${text(interior)}; unregister of the start: ${text(start)}`,
          ...(good ? {} : { message: ok(interior) ? 'an interior pointer released the registration' : 'the registration did not stay whole: its start would not release' }),
          data: { register: 0, interior: interior.code, interiorName: interior.name, start: start.code, startName: start.name },
        };
      }),
    );
  }),

  check('hazard.coherent_after_write', 'a pwrite into the file after registration is seen by the device', (ctx) =>
    withMappedFile(ctx, {}, (m, bytes, ops, fd) =>
      session(ops, (held) => {
        const expected = 'the device copies the file\'s new bytes (the H200: it does, 64 KiB and 64 MiB copies)';
        const reg = held.register(m, ops.registerFlags);
        if (!ok(reg)) return { status: 'fail', expected, observed: `register ${text(reg)}`, message: 'nothing to copy from', data: { register: reg.code } };
        const before = serve(ops, m, bytes);
        // Every byte changes, so a stale copy cannot pass for a fresh one anywhere.
        const fresh = bytes.map((b) => b ^ 0xff);
        for (let done = 0; done < fresh.length; ) done += pwrite(fd, fresh.subarray(done), done);
        const after = serve(ops, m, fresh, bytes);
        const un = held.unregister(m);
        const good = before.diff === -1 && after.diff === -1 && ok(un);
        return {
          status: good ? 'pass' : 'fail',
          expected,
          observed: `register 0; before the write: ${servedText(before)}; after a pwrite of ${sizeText(fresh.length)}: ${after.diff === -1 ? 'the new bytes' : servedText(after)}; unregister ${text(un)}`,
          ...(good ? {} : { message: before.diff !== -1 ? 'wrong bytes before the write' : after.diff !== -1 ? 'the device did not see the write' : 'the release failed' }),
          data: { register: 0, before: before.diff, after: after.diff, stale: after.stale, unregister: un.code },
        };
      }),
    ),
  ),

  check('hazard.truncate_contained', 'a file cut under its registration: copies from the cut tail are contained (in a child process)', truncateContained),

  check('hazard.unmap_then_unregister', 'munmap while registered, then unregister succeeds and the address registers again', (ctx) => {
    const size = FILE_BYTES;
    return withFile(ctx.options.scratchDir, size, (file) => {
      const m = mapFile(file.fd, size);
      let unmapped = false;
      let again: Mapping | undefined;
      try {
        return withTrackedOps(ctx, size, (ops) =>
          session(ops, (held) => {
            const expected = 'unregister 0 after the munmap (the H200: 0, and the same address maps and registers again)';
            const reg = held.register(m, ops.registerFlags);
            if (!ok(reg)) return { status: 'fail', expected, observed: `register ${text(reg)}`, message: 'nothing to unmap under', data: { register: reg.code } };
            munmap(m); // the hazard under test: the range is registered
            unmapped = true;
            const un = held.unregister(m);
            again = mapFile(file.fd, size);
            const same = again.address === m.address;
            const reg2 = held.register(again, ops.registerFlags);
            const served = ok(reg2) ? serve(ops, again, file.bytes) : undefined;
            const un2 = ok(reg2) ? held.unregister(again) : undefined;
            const status = !ok(un) ? 'fail' : same && !ok(reg2) ? 'warn' : 'pass';
            return {
              status,
              expected,
              observed: `register 0; munmap; unregister ${text(un)}; mapped again ${same ? 'at the same address' : `elsewhere (${addr(again)}, not ${addr(m)})`}: register ${text(reg2)}${served ? `, ${servedText(served)}` : ''}${un2 ? `, unregister ${text(un2)}` : ''}`,
              ...(status === 'fail' ? { message: 'the unregister of an unmapped registration failed: the driver may hold the range' } : status === 'warn' ? { message: 'the address of the unmapped registration would not register again' } : {}),
              data: { register: 0, unregister: un.code, unregisterName: un.name, sameAddress: same, again: reg2.code, againName: reg2.name, ...(served ? { againBytes: served.diff } : {}), ...(un2 ? { againRelease: un2.code } : {}) },
            };
          }),
        );
      } finally {
        if (!unmapped && !releaseMapping(m)) ctx.log(`mapping ${addr(m)} kept mapped: the driver may still hold it`);
        if (again && !releaseMapping(again)) ctx.log(`mapping ${addr(again)} kept mapped: the driver may still hold it`);
      }
    });
  }),

  // Last: it resets the device's context, which the other checks use.
  check('hazard.context_reset', 'after a context reset the registration is gone, and the range registers again', contextReset),
];
