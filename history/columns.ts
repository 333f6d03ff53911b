// What version 2 of the history store added to its devices table. Apart from history/store.ts so that a module
// that needs the names loads no engine (history/fleet-compare.ts is loaded where DuckDB may be missing).

/** The columns version 2 added to `devices`, in order: the control copy, registered / page-locked, the machine. */
export const DEVICE_COLUMNS_2 = ['page_locked DOUBLE', 'pl_ratio DOUBLE', 'busy BOOLEAN', 'machine VARCHAR'] as const;
