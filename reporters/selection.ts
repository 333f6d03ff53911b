// The checks the user's selection left out (--check, --skip, --skips-file: cli/select-checks.ts), as the terminal
// summary and the Markdown summary tell them: one entry per reason, with the checks it left out. They are told
// apart from the checks that do not apply to a device by their reason, which cli/select-checks.ts writes.
import type { RunResult } from '../results/types.js';

/** A skip reason the selection wrote. */
export const isSelectionSkip = (message: string | undefined): boolean => message !== undefined && /^(skipped by |not selected by )/.test(message);

/** Each reason of the selection, with the check ids it left out (on any device), in the order first met. */
export function selectionSkips(result: RunResult): { reason: string; ids: string[] }[] {
  const byReason = new Map<string, string[]>();
  for (const d of result.devices) {
    for (const c of d.checks) {
      if (c.status !== 'skip' || !isSelectionSkip(c.message)) continue;
      const ids = byReason.get(c.message!) ?? [];
      if (!ids.includes(c.id)) ids.push(c.id);
      byReason.set(c.message!, ids);
    }
  }
  return [...byReason].map(([reason, ids]) => ({ reason, ids }));
}
