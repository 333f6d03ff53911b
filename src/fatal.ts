// The errors the probe never turns into a verdict (spec: Out_of_memory, Stack_overflow and Sys.Break are
// re-raised). JavaScript has no such classes, so they are recognised here, in one place.

/** An interrupt (SIGINT) raised into running code by the command: Sys.Break. */
export class Interrupted extends Error {
  constructor(message = 'interrupted') {
    super(message);
    this.name = 'Interrupted';
  }
}

/** The host ran out of memory: Out_of_memory. */
export class OutOfMemory extends Error {
  constructor(message = 'out of memory') {
    super(message);
    this.name = 'OutOfMemory';
  }
}

/** V8's messages for a stack overflow and for a failed host allocation. */
const STACK_OVERFLOW = /Maximum call stack size exceeded/;
const HOST_OOM = /Array buffer allocation failed|out of memory/i;

export function isFatal(e: unknown): boolean {
  if (e instanceof Interrupted || e instanceof OutOfMemory) return true;
  return e instanceof RangeError && (STACK_OVERFLOW.test(e.message) || HOST_OOM.test(e.message));
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
