// What versions 2 and 3 of the history store added to its devices table. Apart from history/store.ts so that a module
// that needs the names loads no engine (history/fleet-compare.ts is loaded where DuckDB may be missing).

/** The columns version 2 added to `devices`, in order: the control copy, registered / page-locked, the machine. */
export const DEVICE_COLUMNS_2 = ['page_locked DOUBLE', 'pl_ratio DOUBLE', 'busy BOOLEAN', 'machine VARCHAR'] as const;

/**
 * The columns version 3 added to `devices`: the copy's size and the rounds of the pair (registered and page-locked
 * ms as taken, JSON), what the decision (results/decision.ts) judges a figure with its noise by.
 */
export const DEVICE_COLUMNS_3 = ['bytes DOUBLE', 'rounds VARCHAR'] as const;

/** The columns each version added, by the version that added them. */
export const ADDED_COLUMNS: Readonly<Record<number, readonly string[]>> = { 2: DEVICE_COLUMNS_2, 3: DEVICE_COLUMNS_3 };

/** The columns a store of `version` lacks, as NULLs of their types (a store read as it is, not upgraded). */
export function missingColumns(version: number): string {
  return Object.entries(ADDED_COLUMNS)
    .filter(([v]) => Number(v) > version)
    .flatMap(([, cols]) => cols.map((col) => `, NULL::${col.split(' ')[1]} AS ${col.split(' ')[0]}`))
    .join('');
}
