// The hazard checks: one small check per driver promise about registered host memory (hip-tests' shape:
// hipHostRegister.cc, hipHostUnregister.cc), on the file-backed mappings hip-tests never touches. Each one says
// what the driver returned, by number and name, and whether the bytes that came back were right; its `expected`
// states the rule it judges. What the real CUDA driver did on the H200, check by check: docs/hazards.md; the
// ROCm 7.2.4 behaviours in the spec.
//
// The harness is ./harness.ts, the truncation child's protocol ./truncate.ts; the checks live by family:
// ./flags.ts, ./mappings.ts, ./overlaps.ts, ./release.ts, ./file-changes.ts, ./reset.ts, and the reference checks
// (./reference.ts: attributes held to behaviour, repetition, flags and negatives, copies).
import type { Check } from '../check.js';
import { coherentAfterWrite, truncateContainedCheck } from './file-changes.js';
import { protNoneRefused, readonlyMapping } from './flags.js';
import { memfdBytes, privateMappingBytes, tmpfsBytes } from './mappings.js';
import { doubleRegistrationRefused, overlapRefused, releaseAfterDoubleRegistration } from './overlaps.js';
import { contextResetCheck } from './reset.js';
import { referenceChecks } from './reference.js';
import { unmapThenUnregister, unregisterAfterRegister, unregisterInterior, unregisterUnknown } from './release.js';

export { TRUNCATE_CHILD_TIMEOUT_MS } from './truncate.js';
export { hasRegistration } from './harness.js';

/**
 * The order they run in, which is the order of every report (and of a device's run: a process that replaces a
 * crashed one runs the checks after the one that crashed). Each check makes its own file and mapping and releases
 * what it registered, so the order matters for one of them only: hazard.context_reset resets the device's context
 * (cuDevicePrimaryCtxReset / hipDeviceReset), which every other check uses, with what it holds: it comes after
 * them. hazard.truncate_contained, whose copies its child makes in a context of its own, comes last, for speed
 * alone: its child starts once the probe is over (its driver's start, cuInit 215 ms on the H200, and its context),
 * and every check before it runs meanwhile.
 */
export const hazardChecks: readonly Check[] = [
  // the registration flags
  protNoneRefused,
  readonlyMapping,
  // kinds of mapping
  tmpfsBytes,
  memfdBytes,
  privateMappingBytes,
  // a range registered twice, overlaps
  doubleRegistrationRefused,
  overlapRefused,
  releaseAfterDoubleRegistration,
  // release
  unregisterAfterRegister,
  unregisterUnknown,
  unregisterInterior,
  // the file changes under its registration
  coherentAfterWrite,
  // release of an unmapped registration
  unmapThenUnregister,
  // the promises the reference suites test (./reference.ts; docs/reference-checks.md)
  ...referenceChecks,
  // after every check that uses the device's context: it resets it
  contextResetCheck,
  // the file cut under its registration, in a child process started once the probe was over (./truncate-early.ts),
  // with a context of its own: last, so that the child's start runs while every check above does
  truncateContainedCheck,
];
