// Release: a registration releases at the first try, a pointer never registered (or inside a registration) is
// refused as such, and a registration whose range was unmapped still releases. What the H200 did:
// docs/hazards.md. hazard.unmap_then_unregister unmaps a registered range on purpose: that is its hazard.
import type { Mapping } from '../../bindings/libc.js';
import { pageSize, munmap } from '../../bindings/libc.js';
import { mapFile, releaseMapping, withTrackedOps } from '../context.js';
import {
  FILE_BYTES,
  addressText,
  driverCall,
  hazard,
  notRegistered,
  nothingTo,
  succeeded,
  registerOrNothingTo,
  serveCopy,
  servedText,
  withHeld,
  codeText,
  withFile,
  withMappedFile,
} from './harness.js';

export const unregisterAfterRegister = hazard('hazard.unregister_after_register', 'a successful registration releases at the first try', (ctx) =>
  withMappedFile(ctx, {}, (m, _bytes, ops) =>
    withHeld(ops, (held) => {
      const expected = 'unregister 0 at the first try';
      const reg = registerOrNothingTo(held, m, { expected, nothingTo: 'release' });
      if (nothingTo(reg)) return reg.refused;
      const un = held.unregister(m);
      // A second unregister of the released range: recorded, not judged here.
      const again = succeeded(un) ? driverCall(() => ops.unregister(m)) : undefined;
      return {
        status: succeeded(un) ? 'pass' : 'fail',
        expected,
        observed: `register 0; unregister ${codeText(un)}${again ? `; again ${codeText(again)}` : ''}`,
        ...(succeeded(un) ? {} : { message: 'the release failed at the first try' }),
        data: { register: 0, unregister: un.code, unregisterName: un.name, ...(again ? { again: again.code, againName: again.name } : {}) },
      };
    }),
  ),
);

export const unregisterUnknown = hazard('hazard.unregister_unknown', 'unregister of a pointer never registered says not registered', (ctx) =>
  withMappedFile(ctx, { size: 4 * pageSize() }, (m, _bytes, ops) => {
    const nr = notRegistered(ctx);
    const expected = `${nr.code} (${nr.name})`;
    const un = driverCall(() => ops.unregisterAddress(m.address));
    const good = un.code === nr.code;
    return {
      status: good ? 'pass' : 'fail',
      expected,
      observed: `unregister of a mapping never registered: ${codeText(un)}`,
      ...(good ? {} : { message: un.code === 0 ? 'the driver released a range it never registered' : 'refused, but not as "not registered"' }),
      data: { unregister: un.code, unregisterName: un.name },
    };
  }),
);

export const unregisterInterior = hazard('hazard.unregister_interior', 'unregister of a pointer inside a registration is refused and the registration stays', (ctx) => {
  const page = pageSize();
  return withMappedFile(ctx, { size: 4 * page }, (m, _bytes, ops) =>
    withHeld(ops, (held) => {
      const expected = 'refused, then the unregister of the start 0 at the first try';
      const reg = registerOrNothingTo(held, m, { expected, nothingTo: 'release' });
      if (nothingTo(reg)) return reg.refused;
      const interior = driverCall(() => ops.unregisterAddress(m.address + BigInt(page)));
      const start = held.unregister(m);
      const good = !succeeded(interior) && succeeded(start);
      return {
        status: good ? 'pass' : 'fail',
        expected,
        observed: `register 0; unregister at +${page}: ${codeText(interior)}; unregister of the start: ${codeText(start)}`,
        ...(good ? {} : { message: succeeded(interior) ? 'an interior pointer released the registration' : 'the registration did not stay whole: its start would not release' }),
        data: { register: 0, interior: interior.code, interiorName: interior.name, start: start.code, startName: start.name },
      };
    }),
  );
});

export const unmapThenUnregister = hazard('hazard.unmap_then_unregister', 'munmap while registered, then unregister succeeds and the address registers again', (ctx) => {
  const size = FILE_BYTES;
  return withFile(ctx.options.scratchDir, size, (file) => {
    const m = mapFile(file.fd, size);
    let unmapped = false;
    let again: Mapping | undefined;
    try {
      return withTrackedOps(ctx, size, (ops) =>
        withHeld(ops, (held) => {
          const expected = 'unregister 0 after the munmap (and the address, when mapped again there, registers again)';
          const reg = registerOrNothingTo(held, m, { expected, nothingTo: 'unmap under' });
          if (nothingTo(reg)) return reg.refused;
          munmap(m); // the hazard under test: the range is registered
          unmapped = true;
          const un = held.unregister(m);
          again = mapFile(file.fd, size);
          const same = again.address === m.address;
          const reg2 = held.register(again, ops.registerFlags);
          const served = succeeded(reg2) ? serveCopy(ops, again, file.bytes) : undefined;
          const un2 = succeeded(reg2) ? held.unregister(again) : undefined;
          const status = !succeeded(un) ? 'fail' : same && !succeeded(reg2) ? 'warn' : 'pass';
          return {
            status,
            expected,
            observed: `register 0; munmap; unregister ${codeText(un)}; mapped again ${same ? 'at the same address' : `elsewhere (${addressText(again)}, not ${addressText(m)})`}: register ${codeText(reg2)}${served ? `, ${servedText(served)}` : ''}${un2 ? `, unregister ${codeText(un2)}` : ''}`,
            ...(status === 'fail' ? { message: 'the unregister of an unmapped registration failed: the driver may hold the range' } : status === 'warn' ? { message: 'the address of the unmapped registration would not register again' } : {}),
            data: { register: 0, unregister: un.code, unregisterName: un.name, sameAddress: same, again: reg2.code, againName: reg2.name, ...(served ? { againBytes: served.diff } : {}), ...(un2 ? { againRelease: un2.code } : {}) },
          };
        }),
      );
    } finally {
      if (!unmapped && !releaseMapping(m)) ctx.log(`mapping ${addressText(m)} kept mapped: the driver may still hold it`);
      if (again && !releaseMapping(again)) ctx.log(`mapping ${addressText(again)} kept mapped: the driver may still hold it`);
    }
  });
});
