// The registration flags on file mappings: a mapping the device cannot read is refused whatever the flags, and a
// read-only mapping registers with the read-only flag. What the H200 did: docs/hazards.md.
import { PROT, pageSize } from '../../bindings/libc.js';
import { type Code, hazard, hex, succeeded, registerServeRelease, withHeld, codeText, trialData, trialText, withMappedFile } from './harness.js';

export const protNoneRefused = hazard('hazard.prot_none_refused', 'a PROT_NONE file mapping is refused, with flags 0 and with the read-only flag', (ctx) =>
  withMappedFile(ctx, { prot: PROT.NONE, size: 4 * pageSize() }, (m, _bytes, ops) =>
    withHeld(ops, (held) => {
      const tries: { flags: number; register: Code; unregister?: Code }[] = [];
      for (const flags of [...new Set([0, ops.registerFlags])]) {
        const t: { flags: number; register: Code; unregister?: Code } = { flags, register: held.register(m, flags) };
        tries.push(t);
        if (succeeded(t.register)) {
          t.unregister = held.unregister(m);
          if (!succeeded(t.unregister)) break; // still held: a second try would be a double registration
        }
      }
      const accepted = tries.filter((t) => succeeded(t.register));
      return {
        status: accepted.length === 0 ? 'pass' : 'fail',
        expected: `refused with flags ${[...new Set([0, ops.registerFlags])].map(hex).join(' and ')}`,
        observed: tries.map((t) => `flags ${hex(t.flags)}: register ${codeText(t.register)}${t.unregister ? `, unregister ${codeText(t.unregister)}` : ''}`).join('; '),
        ...(accepted.length ? { message: 'the driver accepted a mapping it cannot read (a false success)' } : {}),
        data: { tries: tries.map((t) => ({ flags: t.flags, register: t.register.code, registerName: t.register.name, ...(t.unregister ? { unregister: t.unregister.code } : {}) })) },
      };
    }),
  ),
);

export const readonlyMapping = hazard('hazard.readonly_mapping', 'a read-only shared file mapping registers with the read-only flag, serves its bytes and releases', (ctx) =>
  withMappedFile(ctx, {}, (m, bytes, ops) =>
    withHeld(ops, (held) => {
      const flags = ops.registerFlags;
      const expected = `registered with flags ${hex(flags)}, the file's bytes served, released at the first try${flags !== 0 ? ' (flags 0 may be refused)' : ''}`;
      // Flags 0 first (on CUDA a read-only mapping needs READ_ONLY: recorded, not judged); then the flag the device uses.
      let flags0: Code | undefined;
      let flags0Release: Code | undefined;
      if (flags !== 0) {
        flags0 = held.register(m, 0);
        if (succeeded(flags0)) flags0Release = held.unregister(m);
        if (flags0Release && !succeeded(flags0Release)) {
          return { status: 'fail', expected, observed: `flags 0: register 0, unregister ${codeText(flags0Release)}`, message: 'the release failed', data: { flags0: 0, flags0Release: flags0Release.code } };
        }
      }
      const t = registerServeRelease(held, m, bytes, flags);
      flags0 ??= t.register;
      const good = succeeded(t.register) && t.served?.diff === -1 && succeeded(t.unregister);
      const flags0Text = flags !== 0 ? `flags 0: register ${codeText(flags0)}${flags0Release ? `, unregister ${codeText(flags0Release)}` : ''}; ` : '';
      return {
        status: good ? 'pass' : 'fail',
        expected,
        observed: `${flags0Text}flags ${hex(flags)}: ${trialText(t)}`,
        ...(good
          ? {}
          : { message: !succeeded(t.register) ? 'a read-only mapping would not register with the read-only flag' : t.served?.diff !== -1 ? 'wrong bytes (a false success)' : 'the release failed' }),
        data: { ...trialData(t), flags0: flags0.code, flags0Name: flags0.name, ...(flags0Release ? { flags0Release: flags0Release.code } : {}) },
      };
    }),
  ),
);
