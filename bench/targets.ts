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
  /** No GPU: the conformance run's wall time against `node -e 0`'s. */
  noGpuRunOverNodeStart: 10,
  /** With a GPU: the conformance run's wall time, spawn to exit, in ms (one GPU, the default 256 MiB). */
  gpuRunWallMs: 2000,
} as const;
