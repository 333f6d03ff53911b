// The few ways figures and counts are written in every report and message, in one place so that they agree.

export const MiB = 1024 * 1024;

/** A figure with two decimals; '-' when there is none (or it is not finite). */
export const twoDecimals = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(2));

/** GB/s with two decimals. */
export const gbpsText = (x: number): string => `${x.toFixed(2)} GB/s`;

/** A fraction as a percentage with one decimal (0.253 -> "25.3%"). */
export const percent = (x: number): string => `${(x * 100).toFixed(1)}%`;

/** "1 device", "2 devices". */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** White space folded to single spaces: a driver's or a file's text on one line. */
export const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();
