// The bench's targets (docs/bench.md, Targets): reported next to the figures, never enforced.
export const TARGETS = {
  /** bench figure / native figure, for the registered and the staged copy. */
  nativeRatio: 0.98,
  /**
   * Peak memory of the run (all its processes together, PSS) and of a device process (VmHWM): 2 x region + 48 MiB
   * (560 MiB at the default 256: the region mapped, one page-locked window of half of it, Node.js and the driver).
   */
  peakMiB: (regionMiB: number): number => 2 * regionMiB + 48,
  /** No GPU: the conformance run's wall time against `node -e 0`'s. */
  noGpuRunOverNodeStart: 10,
  /** With a GPU: the conformance run's wall time, spawn to exit, in ms (one GPU, the default 256 MiB). */
  gpuRunWallMs: 2000,
} as const;
