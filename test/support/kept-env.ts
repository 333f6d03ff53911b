// Environment variables a test file changes and must give back as it found them.

export interface KeptEnv {
  /** Unsets every kept variable (a test file starts from none of them). */
  clear(): void;
  /** Gives `key` back the value it had when kept. */
  restore(key: string): void;
  restoreAll(): void;
}

/** Keeps the values `keys` have now, to give them back after the tests change them. */
export function keepEnv(keys: string[]): KeptEnv {
  const saved = new Map(keys.map((k) => [k, process.env[k]]));
  const restore = (key: string): void => {
    const v = saved.get(key);
    if (v === undefined) delete process.env[key];
    else process.env[key] = v;
  };
  return {
    clear: () => keys.forEach((k) => delete process.env[k]),
    restore,
    restoreAll: () => keys.forEach(restore),
  };
}
