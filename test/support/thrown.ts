// What a call threw, for tests that look into the error itself (its class, fields and message) rather than only
// match its message.

/** What `f` threw; fails the test when it returns instead. */
export function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw, nothing was thrown');
}
