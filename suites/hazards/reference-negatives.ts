// Flags and negatives (hip-tests' hipHostRegister.cc and hipHostUnregister.cc; the CUDA documentation of
// cuMemHostRegister): unknown flag bits, a NULL pointer, a size of 0 and an unregister of NULL are refused with
// a clear error, never a crash, and what each driver returned is kept in the result. A driver that wrongly accepts
// is released at once and fails; a release it then refuses keeps the range in the model's table (and its mapping
// mapped) for the rest of the process.
import type { DeviceOps } from '../../bindings/device-ops.js';
import { pageSize } from '../../bindings/libc.js';
import { registrations } from '../../src/index.js';
import type { ReferenceKit } from '../../bindings/reference-kit.js';
import type { Observation } from '../check.js';
import { type Code, codeText, driverCall, hex, succeeded, withHeld, withMappedFile } from './harness.js';
import { referenceCheck } from './reference-harness.js';

/** The unknown bits tried (hip-tests' Unit_hipHostRegister_Flags), each with the device's own flag beside them (so that only the unknown bits can be why). */
export const UNKNOWN_FLAGS: readonly number[] = [0xf0, 0xfff2, 0xffffffff];

/** Refused as invalid: pass; refused otherwise: warn (a clear error, not the one the references expect); accepted: fail. */
function refusal(c: Code, kit: ReferenceKit): 'pass' | 'warn' | 'fail' {
  return succeeded(c) ? 'fail' : c.code === kit.invalidValue.code ? 'pass' : 'warn';
}

const expectedRefusal = (kit: ReferenceKit): string => `refused with ${kit.invalidValue.code} ${kit.invalidValue.name}`;

export const unknownFlagsRefused = referenceCheck('hazard.unknown_flags_refused', 'register flags with unknown bits (0xf0, 0xfff2, 0xffffffff) are refused', [], (ctx, kit) =>
  withMappedFile(ctx, { size: 4 * pageSize() }, (m, _bytes, ops) =>
    withHeld(ops, (held) => {
      const own = ops.registerFlags;
      const expected = `with the device's own flags (${hex(own)}) register 0 and unregister 0; with unknown bits added, each ${expectedRefusal(kit)}`;
      // the device's own flags first: a refusal with the unknown bits then cannot be for another reason
      const control = held.register(m, own);
      const controlRelease = succeeded(control) ? held.unregister(m) : undefined;
      if (!succeeded(control) || !succeeded(controlRelease)) {
        return { status: 'fail', expected, observed: `flags ${hex(own)}: register ${codeText(control)}${controlRelease ? `, unregister ${codeText(controlRelease)}` : ''}`, message: 'the device\'s own flags did not register and release: nothing to compare with' };
      }
      const tries: { flags: number; register: Code; unregister?: Code }[] = [];
      for (const bits of UNKNOWN_FLAGS) {
        const flags = (bits | own) >>> 0;
        const register = held.register(m, flags);
        // accepted: released at once (a refused release fails the check at its end, withHeld)
        tries.push({ flags, register, ...(succeeded(register) ? { unregister: held.unregister(m) } : {}) });
      }
      const each = tries.map((t) => refusal(t.register, kit));
      const status = each.includes('fail') ? 'fail' : each.includes('warn') ? 'warn' : 'pass';
      return {
        status,
        expected,
        observed: [`flags ${hex(own)}: register 0, unregister 0`, ...tries.map((t) => `flags ${hex(t.flags)}: register ${codeText(t.register)}${t.unregister ? `, unregister ${codeText(t.unregister)}` : ''}`)].join('; '),
        ...(status === 'fail' ? { message: 'the driver accepted flags it does not know (a false success)' } : status === 'warn' ? { message: 'refused, but not as an invalid value' } : {}),
        data: { own, tries: tries.map((t) => ({ flags: t.flags, register: t.register.code, registerName: t.register.name, ...(t.unregister ? { unregister: t.unregister.code } : {}) })) },
      };
    }),
  ),
);

/**
 * Register a raw range the driver should refuse; when it accepts, release it at once. A release that fails leaves the
 * range recorded as held (`keep`: the mapping to keep mapped, where the raw range says too little).
 */
function refusedRaw(ops: DeviceOps, kit: ReferenceKit, o: { address: bigint; length: number; flags: number; what: string; keep?: { address: bigint; bytes: Uint8Array } }): Observation {
  const expected = `${o.what}: ${expectedRefusal(kit)}`;
  const reg = driverCall(() => ops.registerAddress(o.address, o.length, o.flags));
  let un: Code | undefined;
  if (succeeded(reg)) {
    un = driverCall(() => ops.unregisterAddress(o.address));
    if (!succeeded(un) && o.keep) {
      // the raw entry says nothing the mapping's release can see (a size of 0): the whole mapping is kept instead
      registrations.remove({ address: o.address, bytes: new Uint8Array(o.length) });
      registrations.add(o.keep);
      registrations.noteReleaseFailure(o.keep);
    }
  }
  const status = refusal(reg, kit);
  return {
    status,
    expected,
    observed: `register ${hex(o.address)} (+${o.length}) flags ${hex(o.flags)}: ${codeText(reg)}${un ? `; unregister ${codeText(un)}` : ''}`,
    ...(status === 'fail'
      ? { message: `the driver accepted ${o.what} (a false success)${un && !succeeded(un) ? ', and would not release it: kept in the table until the process ends' : ''}` }
      : status === 'warn'
        ? { message: 'refused, but not as an invalid value' }
        : {}),
    data: { register: reg.code, registerName: reg.name, ...(un ? { unregister: un.code, unregisterName: un.name } : {}) },
  };
}

export const nullPointerRefused = referenceCheck('hazard.null_pointer_refused', 'register of a NULL pointer is refused', [], (ctx, kit) =>
  withMappedFile(ctx, { size: pageSize() }, (_m, _bytes, ops) => refusedRaw(ops, kit, { address: 0n, length: pageSize(), flags: ops.registerFlags, what: `a NULL pointer of ${pageSize()} bytes` })),
);

export const zeroSizeRefused = referenceCheck('hazard.zero_size_refused', 'register of a size of 0 (at a mapped file page) is refused', [], (ctx, kit) =>
  withMappedFile(ctx, { size: pageSize() }, (m, _bytes, ops) => refusedRaw(ops, kit, { address: m.address, length: 0, flags: ops.registerFlags, what: 'a size of 0', keep: m })),
);

export const unregisterNullRefused = referenceCheck('hazard.unregister_null_refused', 'unregister of NULL is refused with a clear error, not a crash', [], (ctx, kit) =>
  withMappedFile(ctx, { size: pageSize() }, (_m, _bytes, ops) => {
    const un = driverCall(() => ops.unregisterAddress(0n));
    const status = refusal(un, kit);
    return {
      status,
      expected: `unregister of NULL: ${expectedRefusal(kit)}`,
      observed: `unregister of NULL: ${codeText(un)}`,
      ...(status === 'fail' ? { message: 'the driver said it released NULL (a false success)' } : status === 'warn' ? { message: 'refused, but not as an invalid value' } : {}),
      data: { unregister: un.code, unregisterName: un.name },
    };
  }),
);
