// What registration costs per GiB (`registration.cold`, `registration.warm`; docs/bench.md): register and
// unregister of the whole mapping, each its own tinybench task, with the page cache cold and then warm.
import { MAP, PROT, type Mapping, mmap, munmap } from '../../bindings/libc.js';
import { registrations } from '../../src/index.js';
import { evict, residentFraction } from '../page-cache.js';
import { say } from '../progress.js';
import type { RegistrationCost } from '../result.js';
import type { DeviceSession } from '../session.js';
import { type Stat, time } from '../timing.js';
import { GiB } from '../units.js';
import { type Measurement, always } from './measurement.js';

function cost(bytes: number, reg: Stat, unreg: Stat): RegistrationCost {
  const perGiB = (s: Stat): { best: number; median: number } => ({ best: (s.bestMs * GiB) / bytes, median: (s.medianMs * GiB) / bytes });
  const r = perGiB(reg);
  const u = perGiB(unreg);
  return { registerMsPerGiB: r, unregisterMsPerGiB: u, totalMsPerGiB: { best: r.best + u.best, median: r.median + u.median }, register: reg, unregister: unreg };
}

/**
 * Runs before anything touches region.map (pages mapped into a process cannot be dropped): each iteration maps
 * the file afresh, drops its pages, then registers (the driver pins them, reading them from the disk), and
 * unmaps afterwards.
 */
export const registrationCold: Measurement<DeviceSession> = {
  key: 'registration.cold',
  title: 'registration, cold page cache',
  description: 'register and unregister of the whole region, ms per GiB, its pages dropped from the page cache before each',
  applies: always,
  run(s) {
    const { bytes, region, options: o } = s;
    say(`${s.device.id}: registration with a cold page cache`);
    let m: Mapping | undefined;
    const methods = new Set<string>();
    const failures = new Set<string>();
    let residentAfterMax: number | undefined;
    const fresh = (): Mapping => {
      const map = mmap(bytes, PROT.READ, MAP.SHARED, region.fd, 0);
      const e = evict(region.fd, o.dropCaches);
      e.methods.forEach((x) => methods.add(x));
      e.failures.forEach((x) => failures.add(x));
      const f = residentFraction(map);
      if (f !== undefined) residentAfterMax = Math.max(residentAfterMax ?? 0, f);
      return map;
    };
    const drop = (): void => {
      if (m && !registrations.isPinned(m)) munmap(m);
      else if (m) s.kept.push(m);
      m = undefined;
    };
    // no warm-up: each iteration needs its own fresh mapping, dropped from the page cache
    const timeCold = (task: string, f: () => void, hooks: { beforeEach: () => void; afterEach: () => void }): Stat => time(task, f, { iterations: o.runs, warmup: false, hooks });
    const reg = timeCold('register (cold)', () => s.register(m!), {
      beforeEach: () => {
        m = fresh();
      },
      afterEach: () => {
        try {
          if (m && registrations.isPinned(m)) s.unregister(m);
        } finally {
          drop();
        }
      },
    });
    const unreg = timeCold('unregister (cold)', () => s.unregister(m!), {
      beforeEach: () => {
        m = fresh();
        s.register(m);
      },
      afterEach: drop,
    });
    s.result.registration.cold = { ...cost(bytes, reg, unreg), eviction: { methods: [...methods], failures: [...failures], ...(residentAfterMax !== undefined ? { residentAfterMax } : {}) } };
  },
};

/** The file's pages are in memory (and mapped after the first registration). */
export const registrationWarm: Measurement<DeviceSession> = {
  key: 'registration.warm',
  title: 'registration, warm page cache',
  description: 'register and unregister of the whole region, ms per GiB, its pages in the page cache',
  applies: always,
  run(s) {
    const map = s.region.map;
    say(`${s.device.id}: registration with a warm page cache`);
    const reg = time('register (warm)', () => s.register(map), { iterations: s.options.runs, hooks: { afterEach: () => s.unregister(map) } });
    const unreg = time('unregister (warm)', () => s.unregister(map), { iterations: s.options.runs, hooks: { beforeEach: () => s.register(map) } });
    s.result.registration.warm = cost(s.bytes, reg, unreg);
  },
};
