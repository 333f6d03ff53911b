// The reference checks: the promises hip-tests, cuda-samples and the CUDA documentation test, on a file-backed
// mapping, in the order they run (before hazard.context_reset, which must come after every check that uses the
// device's context: ./index.ts).
// docs/reference-checks.md lists them beside the reference tests they answer. Each family has its file; what they
// share is ./reference-harness.ts (the copies' machinery: ./reference-copies-harness.ts).
import type { Check } from '../check.js';
import { hostPointerAttribute, hostRegisterAttribute, pageTablesAttribute, readOnlyRegisterAttribute } from './reference-attributes.js';
import { referenceCopyChecks } from './reference-copies.js';
import { nullPointerRefused, unknownFlagsRefused, unregisterNullRefused, zeroSizeRefused } from './reference-negatives.js';
import { registerCycles } from './reference-repetition.js';

export const referenceChecks: readonly Check[] = [
  // attributes held to behaviour
  hostRegisterAttribute,
  readOnlyRegisterAttribute,
  hostPointerAttribute,
  pageTablesAttribute,
  // repetition
  registerCycles,
  // flags and negatives
  unknownFlagsRefused,
  nullPointerRefused,
  zeroSizeRefused,
  unregisterNullRefused,
  // copies: from a second context (PORTABLE), on a created stream, through the device pointer, to every GPU at once
  ...referenceCopyChecks,
];
