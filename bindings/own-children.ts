// The helper processes of this process that may hold a context on its GPU while it times copies (the truncation
// child, started while the probe runs: suites/hazards/truncate-early.ts). The look at the GPU's other users
// (./gpu-users.ts) leaves them out as it leaves out the process itself: they are the run's own, not another user
// of the GPU that could slow its copies (they never copy while the timing lock is held).

/** Each source gives a child's pid (0 or less: none yet, or gone). */
const sources = new Set<() => number>();

/** Counts the child `pid()` gives as this process's own until the returned function is called. */
export function addOwnChild(pid: () => number): () => void {
  sources.add(pid);
  return () => {
    sources.delete(pid);
  };
}

/** The pids of this process's own helper children now. */
export function ownChildPids(): number[] {
  return [...sources].map((f) => f()).filter((p) => p > 0);
}
