// How many runs of a device `history compare` and `history report` judge its figures on, on each side (--last-runs):
// a module of its own, below history/, so that the options (cli/options.ts) read the default without loading history/.

/** The default: ten runs see the spread between runs of a loaded host (docs/gate.md, "Noise between runs, too"). */
export const DEFAULT_LAST_RUNS = 10;

/** The most --last-runs: every run of a device's driver on a host that runs the suite each hour for a month and more. */
export const MAX_LAST_RUNS = 1000;
