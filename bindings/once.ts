// A release run once: the owner's own call and the clean-up at exit may both ask for it.

/** `release`, run on the first call only; later calls do nothing. */
export function once(release: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    release();
  };
}
