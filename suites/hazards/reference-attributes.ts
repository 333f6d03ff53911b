// The attributes that describe registration, each held to what the driver then does (the CUDA documentation of
// cuDeviceGetAttribute and cuMemHostRegister; hip-tests reads them and never holds them): a contradiction fails
// with both sides named. What the H200 answered: docs/reference-checks.md.
import type { DeviceOps } from '../../bindings/device-ops.js';
import type { ReferenceAttribute, ReferenceKit } from '../../bindings/reference-kit.js';
import type { CheckContext, Observation } from '../check.js';
import { driverCall, hex, registerServeRelease, succeeded, trialData, trialText, withHeld, withMappedFile, codeText, type Trial, addressText } from './harness.js';
import { readingData, readingText, readingValue, referenceCheck } from './reference-harness.js';

/** Whether a trial registered, served the file's bytes and released at the first try. */
const whole = (t: Trial): boolean => succeeded(t.register) && t.served?.diff === -1 && succeeded(t.unregister);

/**
 * The verdict of an attribute that says whether a registration is supported, against the trial: supported and
 * served, or unsupported and refused, pass; the other two are a contradiction, both sides named. A query that
 * failed is a warn.
 */
function judge(value: number | undefined, said: string, t: Trial, what: string): { status: 'pass' | 'warn' | 'fail'; message?: string } {
  if (value === undefined) return { status: 'warn', message: `the attribute could not be read: ${what} not judged` };
  const registered = succeeded(t.register);
  if (value !== 0 && !registered) return { status: 'fail', message: `${said} says ${what} is supported, and the driver refused it (register ${codeText(t.register)})` };
  if (value === 0 && registered) return { status: 'fail', message: `${said} says ${what} is not supported, and the driver accepted it (register 0)` };
  if (registered && !whole(t)) return { status: 'fail', message: t.served?.diff !== -1 ? 'the registration did not serve the right bytes (a false success)' : 'the release failed' };
  return { status: 'pass' };
}

/**
 * What the two "registration supported" attributes share: a fresh file mapping, the attribute read, a registration
 * with `flags` (of the ops) tried (registered, served, released) and judged against it. `what` names the
 * registration in the verdict, `observedFlags` puts the flags before the trial's text, `because` ends a failure's message.
 */
function supportedAgainstTrial(
  ctx: CheckContext,
  kit: ReferenceKit,
  attribute: ReferenceAttribute,
  o: { flags: (ops: DeviceOps) => number; what: (flags: number) => string; expected: (flags: number) => string; observedFlags?: boolean; because?: string },
): Observation {
  return withMappedFile(ctx, {}, (m, bytes, ops) =>
    withHeld(ops, (held) => {
      const a = kit.attribute(attribute);
      const flags = o.flags(ops);
      const t = registerServeRelease(held, m, bytes, flags);
      const { status, message } = judge(readingValue(a), readingText(a), t, o.what(flags));
      return {
        status,
        expected: o.expected(flags),
        observed: `${readingText(a)}; ${o.observedFlags ? `flags ${hex(flags)}: ` : ''}${trialText(t)}`,
        ...(message ? { message: o.because ? `${message}; ${o.because}` : message } : {}),
        data: { ...readingData(a), ...trialData(t) },
      };
    }),
  );
}

export const hostRegisterAttribute = referenceCheck(
  'hazard.host_register_attribute',
  'HOST_REGISTER_SUPPORTED agrees with what registration of a file mapping does',
  ['hostRegister'],
  (ctx, kit) =>
    supportedAgainstTrial(ctx, kit, 'hostRegister', {
      flags: (ops) => ops.registerFlags,
      what: () => 'host registration',
      expected: (flags) => `registered (flags ${hex(flags)}), served and released where the attribute says 1; refused where it says 0`,
    }),
);

export const readOnlyRegisterAttribute = referenceCheck(
  'hazard.readonly_register_attribute',
  'READ_ONLY_HOST_REGISTER_SUPPORTED agrees with what the read-only flag does on a read-only file mapping',
  ['readOnlyRegister'],
  (ctx, kit) => {
    const flag = ctx.device.native?.kit.readOnlyFlag;
    return supportedAgainstTrial(ctx, kit, 'readOnlyRegister', {
      flags: () => {
        if (flag === undefined) throw new Error(`${ctx.device.id}: a read-only registration attribute without a read-only flag`);
        return flag;
      },
      what: (flags) => `registration with the read-only flag ${hex(flags)}`,
      expected: (flags) => `registered with ${hex(flags)}, served and released where the attribute says 1; refused where it says 0`,
      observedFlags: true,
      // the tool's own register flag follows this attribute (bindings/cuda.ts): a lie here breaks the other checks too
      because: 'the tool takes its register flag from this attribute',
    });
  },
);

export const hostPointerAttribute = referenceCheck(
  'hazard.host_pointer_attribute',
  'CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: where every device says 1, the device address of a registration is the host address',
  ['hostPointer'],
  (ctx, kit) =>
    withMappedFile(ctx, {}, (m, _bytes, ops) =>
      withHeld(ops, (held) => {
        const a = kit.attribute('hostPointer');
        const all = kit.attributeOnAll('hostPointer');
        const everyOne = all.length > 0 && all.every((r) => readingValue(r) === 1);
        const flags = ops.registerFlags | kit.deviceMapFlag;
        const expected = `registered with ${hex(flags)}; ${kit.devicePointerCall} 0 and equal to the host address where every device says 1 (another address is allowed where one says 0)`;
        const allText = all.length > 1 ? ` (on all ${all.length} devices: ${all.map((r) => readingValue(r) ?? '?').join(', ')})` : '';
        const reg = held.register(m, flags);
        if (!succeeded(reg)) {
          return { status: 'fail', expected, observed: `${readingText(a)}${allText}; register ${codeText(reg)}`, message: 'nothing to ask the device address of', data: { ...readingData(a), register: reg.code, registerName: reg.name } };
        }
        let dptr: bigint | undefined;
        const got = driverCall(() => {
          dptr = kit.devicePointer(ops, m.address);
        });
        const un = held.unregister(m);
        const same = dptr === m.address;
        const pointerText = dptr === undefined ? `${kit.devicePointerCall} ${codeText(got)}` : `device address 0x${dptr.toString(16)}, host address ${addressText(m)}${same ? ' (the same)' : ''}`;
        const message = !succeeded(got)
          ? `${kit.devicePointerCall} refused a registration mapped with ${hex(kit.deviceMapFlag)}`
          : everyOne && !same
            ? `${readingText(a)}${allText} says the device reads a registration at the host's address, and the driver gave another (0x${dptr!.toString(16)}, not ${addressText(m)})`
            : !succeeded(un)
              ? 'the release failed'
              : undefined;
        return {
          status: message ? 'fail' : readingValue(a) === undefined ? 'warn' : 'pass',
          expected,
          observed: `${readingText(a)}${allText}; register 0; ${pointerText}; unregister ${codeText(un)}`,
          ...(message ? { message } : readingValue(a) === undefined ? { message: 'the attribute could not be read: the address not judged' } : {}),
          data: { ...readingData(a), allDevices: all.map((r) => readingValue(r) ?? null), flags, devicePointerCode: got.code, ...(dptr !== undefined ? { devicePointer: `0x${dptr.toString(16)}`, hostPointer: addressText(m), same } : {}), unregister: un.code },
        };
      }),
    ),
);

/** What registration means where the device reads pageable memory through the host's page tables, and where not. */
export const PAGE_TABLES_MEANING = {
  yes: 'the device reads pageable host memory through the host page tables: registration is not what lets it read the file, and (the CUDA documentation says) it does not page-lock the range there, only fills in the pages not yet present, so the staged copy is not the other way',
  no: 'the device does not read pageable memory through the host page tables: a copy from an unregistered mapping is staged by the driver, so registration is what lets it copy straight from the file',
} as const;

export const pageTablesAttribute = referenceCheck(
  'hazard.page_tables_attribute',
  'PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES agrees with PAGEABLE_MEMORY_ACCESS, and registration still serves the file there',
  ['pageTables', 'pageableAccess'],
  (ctx, kit) =>
    withMappedFile(ctx, {}, (m, bytes, ops) =>
      withHeld(ops, (held) => {
        const tables = kit.attribute('pageTables');
        const access = kit.attribute('pageableAccess');
        const t = registerServeRelease(held, m, bytes, ops.registerFlags);
        const usesTables = readingValue(tables);
        const canAccess = readingValue(access);
        const message =
          usesTables === 1 && canAccess === 0
            ? `${readingText(tables)} says the device reads pageable memory through the host page tables, and ${readingText(access)} says it cannot read pageable memory`
            : !whole(t)
              ? `a registration on this host did not ${!succeeded(t.register) ? 'register' : t.served?.diff !== -1 ? 'serve the right bytes' : 'release'}: ${trialText(t)}`
              : undefined;
        const meaning = usesTables === undefined ? undefined : usesTables !== 0 ? PAGE_TABLES_MEANING.yes : PAGE_TABLES_MEANING.no;
        return {
          status: message ? 'fail' : usesTables === undefined || canAccess === undefined ? 'warn' : 'pass',
          expected: 'USES_HOST_PAGE_TABLES 1 only where PAGEABLE_MEMORY_ACCESS is 1; a registration serves the file either way',
          observed: `${readingText(tables)}; ${readingText(access)}; ${trialText(t)}${meaning ? `; ${meaning}` : ''}`,
          ...(message ? { message } : usesTables === undefined || canAccess === undefined ? { message: 'an attribute could not be read: not judged' } : {}),
          data: { pageTables: readingData(tables), pageableAccess: readingData(access), ...trialData(t), ...(meaning ? { meaning } : {}) },
        };
      }),
    ),
);
