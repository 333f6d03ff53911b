// The harness of the hazard checks: driver results as text, the round trip through the device, the registrations
// a check holds (released at its end whatever it did), scratch files and mappings that go back whatever happens,
// and the openings the checks share. No check is defined here: one file per family (./index.ts lists them).
//
// Discipline: every registration goes through withTrackedOps (so the model's table knows what the driver may
// hold), every registration made is unregistered before the check returns (a failure is part of what it saw),
// every mapping goes back through releaseMapping (which keeps a range still in the table mapped) and every file
// is removed.
import type { DriverCode } from '../../bindings/backend.js';
import type { DeviceOps } from '../../bindings/device-ops.js';
import { type DriverResult, driverResult } from '../../bindings/errors.js';
import { MAP, PROT, type Mapping } from '../../bindings/libc.js';
import { type Host, firstDifference, staticToString, staticVerdict, verdictName } from '../../src/index.js';
import type { Check, CheckContext, Observation } from '../check.js';
import { mapFile, releaseMapping, scratchFile, withTrackedOps } from '../context.js';
import { MiB } from '../../results/format.js';

export { MiB };
/** The file of the byte checks: small, many pages. */
export const FILE_BYTES = MiB;

// ---- driver results ----

export type Code = DriverResult;
export const driverCall = driverResult;

/** The device's driver's "host memory not registered" (its module says which code: 713 on CUDA and HIP). */
export const notRegistered = (ctx: CheckContext): DriverCode => ctx.device.native!.kit.notRegistered;

/** `0`, or `712 CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`. */
export function codeText(c: Code): string {
  return c.code === 0 ? '0' : `${c.code} ${c.name}`;
}

export const succeeded = (c: Code | undefined): boolean => c !== undefined && c.code === 0;
/** A number or an address (bigint) in hex: `0x7f00`. */
export const hex = (n: number | bigint): string => `0x${n.toString(16)}`;
export const addressText = (h: Host): string => `0x${h.address.toString(16)}`;
export const sizeText = (n: number): string => (n >= MiB && n % MiB === 0 ? `${n / MiB} MiB` : n >= 1024 && n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);

// ---- bytes ----

export interface Served {
  copy: Code;
  /** First differing offset from the expected bytes, -1 when equal; null when the copy failed. */
  diff: number | null;
  zeros: boolean;
  /** Whether the bytes were `old` instead (a stale copy), when asked. */
  stale: boolean;
}

/** Round trip of `host` through the device into a page-locked buffer, compared with `expected` (and `old`). */
export function serveCopy(ops: DeviceOps, host: Host, expected: Uint8Array, old?: Uint8Array): Served {
  const into = ops.allocHost(host.bytes.length);
  try {
    const copy = driverCall(() => ops.roundTrip(host, into));
    if (copy.code !== 0) return { copy, diff: null, zeros: false, stale: false };
    const diff = firstDifference(into.bytes, expected);
    return { copy, diff, zeros: diff !== -1 && into.bytes.every((b) => b === 0), stale: diff !== -1 && old !== undefined && firstDifference(into.bytes, old) === -1 };
  } finally {
    // A buffer that will not free now is freed (or reported) by withOps when it returns.
    driverCall(() => ops.freeHost(into));
  }
}

export function servedText(s: Served): string {
  if (s.diff === null) return `copy ${codeText(s.copy)}`;
  if (s.diff === -1) return 'bytes equal';
  if (s.stale) return 'stale bytes (the old ones)';
  return `bytes differ at offset ${s.diff}${s.zeros ? ' (all zeros)' : ''}`;
}

// ---- registrations of one check ----

/** The registrations a check made through its ops, so that whatever it did not release is released at the end. */
export class Held {
  readonly live: Host[] = [];
  constructor(readonly ops: DeviceOps) {}

  register(host: Host, flags: number): Code {
    const c = driverCall(() => this.ops.registerWithFlags(host, flags));
    if (c.code === 0) this.live.push(host);
    return c;
  }

  unregister(host: Host): Code {
    const c = driverCall(() => this.ops.unregister(host));
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
export function withHeld(ops: DeviceOps, body: (held: Held) => Observation): Observation {
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
        observed: `${o.observed}; release at the end: ${left.map((l) => `unregister ${addressText(l.host)} ${codeText(l.code)}`).join(', ')}`,
        data: { ...o.data, cleanup: left.map((l) => ({ address: addressText(l.host), code: l.code.code, name: l.code.name })) },
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

/** The first registration of a check was refused: there is nothing to do what the check asks (`refused` is its result). */
export interface NothingTo {
  refused: Observation;
}

/**
 * The opening most checks share: register `host` (with the device's read-only flag unless `flags` is given) and
 * go on; when the driver refuses, the check fails, saying what it returned and that there was nothing to
 * `nothingTo` (e.g. 'release'). `label` starts the observed text (default `register`), `key` names the code in
 * the data (default `register`).
 */
export function registerOrNothingTo(
  held: Held,
  host: Host,
  o: { expected: string; nothingTo: string; label?: string; key?: string; flags?: number },
): Code | NothingTo {
  const c = held.register(host, o.flags ?? held.ops.registerFlags);
  if (succeeded(c)) return c;
  return { refused: { status: 'fail', expected: o.expected, observed: `${o.label ?? 'register'} ${codeText(c)}`, message: `nothing to ${o.nothingTo}`, data: { [o.key ?? 'register']: c.code } } };
}

/** Whether the opening found nothing to do (see registerOrNothingTo). */
export const nothingTo = (c: Code | NothingTo): c is NothingTo => 'refused' in c;

// ---- files and mappings ----

export function withFile<T>(dir: string, size: number, f: (file: ReturnType<typeof scratchFile>) => T): T {
  const file = scratchFile(dir, size);
  try {
    return f(file);
  } finally {
    file.remove();
  }
}

export function withMapping<T>(ctx: CheckContext, fd: number, size: number, prot: number, flags: number, f: (m: Mapping) => T): T {
  const m = mapFile(fd, size, prot, flags);
  try {
    return f(m);
  } finally {
    if (!releaseMapping(m)) ctx.log(`mapping ${addressText(m)} (+${m.length}) kept mapped: the driver may still hold it`);
  }
}

/** A mapping of a fresh scratch file of `size` random bytes, and the ops, for `f`. */
export function withMappedFile(
  ctx: CheckContext,
  options: { dir?: string; size?: number; prot?: number; flags?: number },
  f: (m: Mapping, bytes: Uint8Array, ops: DeviceOps, fd: number) => Observation,
): Observation {
  const size = options.size ?? FILE_BYTES;
  return withFile(options.dir ?? ctx.options.scratchDir, size, (file) =>
    withMapping(ctx, file.fd, size, options.prot ?? PROT.READ, options.flags ?? MAP.SHARED, (m) => withTrackedOps(ctx, size, (ops) => f(m, file.bytes, ops, file.fd))),
  );
}

// ---- applies ----

/** The hazard checks need registration: the devices of a driver that registers (CUDA, HIP), which carry native ops. */
export function hasRegistration(ctx: CheckContext): true | string {
  if (ctx.device.native) return true;
  const s = staticVerdict(ctx.device.device);
  // the verdict's name alone: static.verdict tells its reason, once
  return `no registration on ${ctx.device.backend}, static verdict ${s.kind === 'Decided' ? verdictName(s.verdict) : staticToString(s)}`;
}

/** A hazard check: suite `hazards`, applies where the device registers. */
export const hazard = (id: string, title: string, run: (ctx: CheckContext) => Observation): Check => ({ id, suite: 'hazards', title, applies: hasRegistration, run });

// ---- register, serve, release ----

/** Register `host`, and when that worked, copy it through the device and release it. */
export interface Trial {
  flags: number;
  register: Code;
  served?: Served;
  unregister?: Code;
}

export function registerServeRelease(held: Held, host: Host, bytes: Uint8Array, flags: number): Trial {
  const register = held.register(host, flags);
  if (!succeeded(register)) return { flags, register };
  const served = serveCopy(held.ops, host, bytes);
  return { flags, register, served, unregister: held.unregister(host) };
}

export function trialText(t: Trial): string {
  if (!t.served || !t.unregister) return `register ${codeText(t.register)}`;
  return `register 0; ${servedText(t.served)}; unregister ${codeText(t.unregister)}`;
}

export function trialData(t: Trial): Record<string, unknown> {
  return {
    flags: t.flags,
    register: t.register.code,
    registerName: t.register.name,
    ...(t.served ? { copy: t.served.copy.code, firstDifference: t.served.diff, zeros: t.served.zeros } : {}),
    ...(t.unregister ? { unregister: t.unregister.code, unregisterName: t.unregister.name } : {}),
  };
}

/** Registered and served right and released at the first try, or refused: pass. Wrong bytes or a failed release: fail. */
export function servesOrRefuses(held: Held, host: Host, bytes: Uint8Array, flags: number, what: string): Observation {
  const expected = `${what}: refused, or registered (flags ${hex(flags)}) serving the file's bytes and released at the first try`;
  const t = registerServeRelease(held, host, bytes, flags);
  if (!succeeded(t.register)) return { expected, observed: `refused: register ${codeText(t.register)}`, data: trialData(t) };
  const good = t.served?.diff === -1 && succeeded(t.unregister);
  return {
    status: good ? 'pass' : 'fail',
    expected,
    observed: trialText(t),
    ...(good ? {} : { message: t.served?.diff !== -1 ? 'a registration the driver accepted did not serve the right bytes (a false success)' : 'the release failed' }),
    data: trialData(t),
  };
}
