// What the driver double's profiles are expected to show.

/** The spec's five ROCm 7.2.4 behaviours, as the checks that see them fail (the double's `rocm724` profile). */
export const ROCM724_FAILS: readonly string[] = [
  'hazard.prot_none_refused',
  'hazard.tmpfs_bytes',
  'hazard.double_registration_refused',
  'hazard.overlap_refused',
  'hazard.release_after_double_registration',
];
