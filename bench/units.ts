// Binary sizes (region sizes, per-GiB costs). Speeds are decimal GB/s (timing.ts), as in the facts file.
import { MiB } from '../results/format.js';

export { MiB };
export const GiB = 1024 * MiB;
