// A range registered twice, or overlapping a registration: refused, and every registration that succeeded
// releases (ROCm 7.2.4 accepted both, then could not release: 713). What the H200 did: docs/hazards.md.
import { pageSize } from '../../bindings/libc.js';
import { hostSlice } from '../../src/index.js';
import { type Code, hazard, nothingTo, succeeded, registerOrNothingTo, withHeld, codeText, withMappedFile } from './harness.js';

export const doubleRegistrationRefused = hazard('hazard.double_registration_refused', 'the same range registered twice: the second registration is refused', (ctx) =>
  withMappedFile(ctx, {}, (m, _bytes, ops) =>
    withHeld(ops, (held) => {
      const expected = 'the second registration refused';
      const first = registerOrNothingTo(held, m, { expected, nothingTo: 'register twice', label: 'the first registration:', key: 'first' });
      if (nothingTo(first)) return first.refused;
      const second = held.register(m, ops.registerFlags);
      const releases = held.releaseAll().map((r) => r.code);
      return {
        status: succeeded(second) ? 'fail' : 'pass',
        expected,
        observed: `register 0; again ${codeText(second)}; unregister ${releases.map(codeText).join(', ')}`,
        ...(succeeded(second) ? { message: 'the driver accepted the same range twice (a false success)' } : {}),
        data: { first: 0, second: second.code, secondName: second.name, releases: releases.map((c) => c.code) },
      };
    }),
  ),
);

export const overlapRefused = hazard('hazard.overlap_refused', 'a range overlapping a registered one is refused; an adjacent one is accepted', (ctx) => {
  const page = pageSize();
  return withMappedFile(ctx, { size: 4 * page }, (m, _bytes, ops) =>
    withHeld(ops, (held) => {
      const expected = 'a range overlapping a registration by one page refused; an adjacent range accepted';
      const flags = ops.registerFlags;
      const a = hostSlice(m, 0, 2 * page);
      const adjacent = hostSlice(m, 2 * page, 2 * page);
      const overlapping = hostSlice(m, page, 2 * page);
      const first = registerOrNothingTo(held, a, { expected, nothingTo: 'overlap', label: 'pages 0-1: register', key: 'first', flags });
      if (nothingTo(first)) return first.refused;
      const adj = held.register(adjacent, flags);
      const adjRelease = succeeded(adj) ? held.unregister(adjacent) : undefined;
      const over = held.register(overlapping, flags);
      const releases = held.releaseAll().map((r) => r.code);
      const status = succeeded(over) ? 'fail' : succeeded(adj) ? 'pass' : 'warn';
      return {
        status,
        expected,
        observed: `pages 0-1: register 0; adjacent pages 2-3: register ${codeText(adj)}${adjRelease ? `, unregister ${codeText(adjRelease)}` : ''}; overlapping pages 1-2: register ${codeText(over)}; unregister ${releases.map(codeText).join(', ')}`,
        ...(status === 'fail' ? { message: 'the driver accepted an overlapping range (a false success)' } : status === 'warn' ? { message: 'an adjacent range was refused' } : {}),
        data: { first: 0, adjacent: adj.code, adjacentName: adj.name, ...(adjRelease ? { adjacentRelease: adjRelease.code } : {}), overlap: over.code, overlapName: over.name, releases: releases.map((c) => c.code) },
      };
    }),
  );
});

export const releaseAfterDoubleRegistration = hazard('hazard.release_after_double_registration', 'a range registered twice releases once per successful registration', (ctx) =>
  withMappedFile(ctx, {}, (m, _bytes, ops) =>
    withHeld(ops, (held) => {
      const expected = 'every registration that succeeded released';
      const first = registerOrNothingTo(held, m, { expected, nothingTo: 'release', key: 'first' });
      if (nothingTo(first)) return first.refused;
      const second = held.register(m, ops.registerFlags);
      const n = held.live.length;
      const releases: Code[] = [];
      for (let i = 0; i < n; i++) releases.push(held.unregister(m));
      const good = releases.every(succeeded);
      return {
        status: good ? 'pass' : 'fail',
        expected,
        observed: `register 0; again ${codeText(second)}; ${n} unregister${n === 1 ? '' : 's'}: ${releases.map(codeText).join(', ')}`,
        ...(good ? {} : { message: 'a registration the driver accepted cannot be released (ROCm 7.2.4: hipHostUnregister fails with 713)' }),
        data: { first: 0, second: second.code, secondName: second.name, releases: releases.map((c) => c.code), releaseNames: releases.map((c) => c.name) },
      };
    }),
  ),
);
