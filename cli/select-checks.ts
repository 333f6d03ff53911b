// Which checks a run runs: --check GLOB (only these), --skip GLOB and --skips-file FILE (not these), the way
// deqp-runner's --include-tests / --skips and Vitest's -t select tests. Globs over check ids, `*` and `?` (the
// expectations file's globs, results/expectations.ts), matched against the catalog (suites/catalog.ts).
//
// - With --check, a check no --check glob matches is `skip`, "not selected by --check G[, --check G2]"; a check
//   it matches brings the checks it needs with it (probe.release and timing.* need probe.verdict: they read the
//   report of its self-test), which run and are reported as any other.
// - A check a --skip glob or a skips file's line matches is `skip`, "skipped by --skip G" or "skipped by
//   FILE:LINE G" (the first that matches, the command line's first), even when --check selects it; the checks
//   that need it are skipped with it: "skipped by --skip probe.verdict (it needs probe.verdict)". A check known
//   to hang a driver is thus never started, nor a check that would run its code for it.
// - A glob that matches no check is bad input (exit 2, nothing run), and so is a skips file that cannot be read.
//
// A skips file: one glob a line; `#` starts a comment; blank lines are ignored.
import { InputError, inputName, readInput, TEXT_INPUT_BYTES } from '../results/read.js';
import { globToRegExp } from '../results/expectations.js';
import type { CatalogEntry } from '../suites/catalog.js';
import { UsageError } from './usage-error.js';

/** A glob that skips checks, and where it was given: `--skip` or `FILE:LINE`. */
export interface SkipRule {
  glob: string;
  source: string;
}

/** What the user asked for. */
export interface CheckSelection {
  /** --check globs; empty: every check. */
  checks: readonly string[];
  /** --skip globs, then the skips file's lines. */
  skips: readonly SkipRule[];
}

const LIST_HINT = 'the check ids: mapped-reg-conformance list --checks';

/** The globs of a skips file, each with its FILE:LINE; a file that cannot be read, or a line of two words, is bad input. */
export async function readSkipsFile(file: string): Promise<SkipRule[]> {
  let text: string;
  try {
    text = await readInput(file, TEXT_INPUT_BYTES);
  } catch (e) {
    if (e instanceof InputError) throw new UsageError(`--skips-file ${e.message.replace(/cannot read it/, 'cannot be read')}`);
    throw e;
  }
  const rules: SkipRule[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    const where = `${inputName(file)}:${i + 1}`;
    if (/\s/.test(line)) throw new UsageError(`${where}: one glob a line, not "${line}"`);
    rules.push({ glob: line, source: where });
  });
  return rules;
}

/** How a rule is told: "--skip G" or "FILE:LINE G". */
const told = (r: SkipRule): string => (r.source === '--skip' ? `--skip ${r.glob}` : `${r.source} ${r.glob}`);

/**
 * The checks the selection leaves out, each with the reason it is reported `skip` with (none: every check runs).
 * A glob that matches no check of the catalog is a UsageError, named with where it was given.
 */
export function selectChecks(catalog: readonly CatalogEntry[], s: CheckSelection): Record<string, string> {
  const ids = catalog.map((c) => c.id);
  const matches = (glob: string): string[] => {
    const re = globToRegExp(glob);
    return ids.filter((id) => re.test(id));
  };
  for (const glob of s.checks) if (matches(glob).length === 0) throw new UsageError(`--check ${glob} matches no check (${LIST_HINT})`);
  for (const r of s.skips) {
    if (matches(r.glob).length === 0) throw new UsageError(`${r.source === '--skip' ? '--skip' : `${r.source}:`} ${r.glob} matches no check (${LIST_HINT})`);
  }
  const needs = new Map(catalog.map((c) => [c.id, c.needs]));

  // --check: what the globs match, and what that needs, transitively
  const selected = new Set(s.checks.length === 0 ? ids : s.checks.flatMap(matches));
  for (const id of [...selected]) {
    const stack = [...(needs.get(id) ?? [])];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (!selected.has(n)) {
        selected.add(n);
        stack.push(...(needs.get(n) ?? []));
      }
    }
  }

  const out: Record<string, string> = {};
  // --skip and the skips file: the first rule that matches
  const skippedBy = new Map<string, string>();
  for (const r of s.skips) for (const id of matches(r.glob)) if (!skippedBy.has(id)) skippedBy.set(id, told(r));
  for (const id of ids) {
    const by = skippedBy.get(id);
    if (by !== undefined) out[id] = `skipped by ${by}`;
    else if (!selected.has(id)) out[id] = `not selected by ${s.checks.map((g) => `--check ${g}`).join(', ')}`;
  }
  // the checks that need a skipped one go with it (in catalog order a check comes after what it needs; a loop
  // until nothing changes, whatever the order)
  for (let changed = true; changed; ) {
    changed = false;
    for (const id of ids) {
      if (out[id] !== undefined) continue;
      const gone = (needs.get(id) ?? []).find((n) => skippedBy.has(n) || (out[n] !== undefined && out[n]!.startsWith('skipped by ')));
      if (gone !== undefined) {
        out[id] = `${out[gone]!.replace(/ \(it needs [^)]*\)$/, '')} (it needs ${gone})`;
        changed = true;
      }
    }
  }
  return out;
}
