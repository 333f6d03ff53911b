// The bench's targets (docs/bench.md, Targets): reported next to the figures, never enforced.
export const TARGETS = {
  /** bench figure / native figure, for the registered and the staged copy. */
  nativeRatio: 0.98,
  /** Peak memory of the run (all its processes together, PSS) and of a device process (VmHWM): 2 x region + 200 MiB. */
  peakMiB: (regionMiB: number): number => 2 * regionMiB + 200,
  /** No GPU: the conformance run's wall time against `node -e 0`'s. */
  noGpuRunOverNodeStart: 30,
} as const;
