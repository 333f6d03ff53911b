// The bench's targets (docs/bench.md, Targets): reported next to the figures, never enforced.
export const TARGETS = {
  /** bench figure / native figure, for the registered and the staged copy. */
  nativeRatio: 0.98,
  /**
   * Peak memory of the run (all its processes together, PSS) and of a device process (VmHWM): region + 256 MiB
   * (512 MiB at the default 256: at the timed copies, window 1 of the region and one page-locked window, half of it
   * each; 256 MiB for Node.js, Vitest, the driver's code and context, and the command).
   */
  peakMiB: (regionMiB: number): number => regionMiB + 256,
  /**
   * A device process's peak resident set (VmHWM): 2 x region + 48 MiB (560 MiB at 256). Its resident set counts what
   * PSS shares (Node.js's code, with the command) in full, and it peaks while the round trips are compared, with the
   * whole region mapped and registered (window 2 leaves it before the timed copies).
   */
  runnerPeakMiB: (regionMiB: number): number => 2 * regionMiB + 48,
  /** No GPU: the conformance run's wall time against `node -e 0`'s. */
  noGpuRunOverNodeStart: 10,
  /** With a GPU: the conformance run's wall time, spawn to exit, in ms (one GPU, the default 256 MiB). */
  gpuRunWallMs: 2000,
} as const;
