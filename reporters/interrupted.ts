// What a run that a signal stopped left undone, in one line: the JUnit's `run.interrupted` error and the terminal's
// last line (INTERRUPTED: ...) say the same.
import { plural } from '../results/format.js';
import type { RunResult } from '../results/types.js';

/** The signal (if known) and the devices it left incomplete. */
export function interruptedText(result: RunResult, stoppedBy: string | undefined): string {
  const cut = result.devices.filter((d) => d.incomplete).map((d) => d.id);
  return (
    `the run was interrupted${stoppedBy ? ` by ${stoppedBy}` : ''} before every check reported: ` +
    `${cut.length ? `${plural(cut.length, 'device')} incomplete (${cut.slice(0, 10).join(', ')}${cut.length > 10 ? ', ...' : ''})` : 'no device finished its checks'}; ` +
    'what is missing was not run, and no gate was made'
  );
}
