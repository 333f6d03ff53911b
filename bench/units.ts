// Binary sizes (region sizes, per-GiB costs). Speeds are decimal GB/s (timing.ts), as in the facts file.
export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
