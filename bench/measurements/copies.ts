// Host-to-device copies (`copies`; docs/bench.md): of the whole region from the mapping, unregistered
// (pageable), staged through the page-locked buffer, from that buffer alone, and registered; and what the probe
// times, a window of half the region staged with window 1 registered (window 2 released, as the probe does).
import { type Host, hostSlice, windowSize } from '../../src/index.js';
import type { DeviceSession } from '../session.js';
import { copy, time } from '../timing.js';
import { MiB } from '../units.js';
import { type Measurement, always } from './measurement.js';

const hasPinned = (s: DeviceSession): boolean => s.pinned !== undefined;

/**
 * A copy of the whole region, timed over the options' runs, into copies[key]. `timed` prepares the copy (outside
 * the timing) and returns it.
 */
function wholeRegionCopy(
  key: 'pageable' | 'staged' | 'pageLocked',
  m: Pick<Measurement<DeviceSession>, 'title' | 'description' | 'applies'> & { label: string; task: string; timed(s: DeviceSession): () => void },
): Measurement<DeviceSession> {
  return {
    key: `copies.${key}`,
    title: m.title,
    description: m.description,
    applies: m.applies,
    run(s) {
      s.result.copies[key] = copy(m.label, s.bytes, time(m.task, m.timed(s), { iterations: s.options.runs }));
    },
  };
}

export const pageable = wholeRegionCopy('pageable', {
  title: 'pageable copy',
  description: 'the copy from the mapping, not registered: the driver stages it itself',
  applies: always,
  label: 'pageable (not registered)',
  task: 'pageable',
  timed(s) {
    const map = s.region.map;
    return () => s.ops.upload(map);
  },
});

export const staged = wholeRegionCopy('staged', {
  title: 'staged copy',
  description: 'Uint8Array.set of the mapping into page-locked memory, then the copy from there; the mapping not registered',
  applies: hasPinned,
  label: 'staged: memcpy into page-locked + copy',
  task: 'staged',
  timed(s) {
    const map = s.region.map;
    const p = s.pinned!;
    return () => s.stage(map, p);
  },
});

export const pageLocked = wholeRegionCopy('pageLocked', {
  title: 'page-locked copy',
  description: 'the copy from the page-locked buffer alone: what the link and the copy engine give',
  applies: hasPinned,
  label: 'page-locked alone',
  task: 'page-locked',
  timed(s) {
    const p = s.pinned!;
    return () => s.ops.upload(p);
  },
});

export const registered: Measurement<DeviceSession> = {
  key: 'copies.registered',
  title: 'registered copy',
  description: 'the copy from the mapping, registered once beforehand with the flags the suite uses',
  applies: always,
  run(s) {
    const map = s.region.map;
    s.register(map);
    try {
      const flags = s.ops.registerFlags;
      const readOnly = s.native.kit.readOnlyFlag;
      const label = readOnly !== undefined && flags & readOnly ? 'registered (READ_ONLY)' : `registered (flags 0x${flags.toString(16)})`;
      s.result.copies.registered = copy(label, s.bytes, time('registered', () => s.ops.upload(map), { iterations: s.options.runs }));
    } finally {
      s.unregister(map);
    }
  },
};

/**
 * What the probe times: a window of half the region (rounded down to 64 KiB), staged, with window 1 registered: as
 * the probe, both windows are registered, then window 2 is released before the timed copies.
 */
export const stagedHalf: Measurement<DeviceSession> = {
  key: 'copies.stagedHalf',
  title: 'staged copy of the probe window',
  description: "the probe's staged copy: a window of half the region, staged, window 1 registered (window 2 registered, then released, as the probe does)",
  applies: hasPinned,
  run(s) {
    const map = s.region.map;
    const w = windowSize(s.bytes);
    const windows = [hostSlice(map, 0, w), hostSlice(map, w, w)];
    const done: Host[] = [];
    try {
      for (const win of windows) {
        s.register(win);
        done.push(win);
      }
      s.unregister(windows[1]!);
      done.pop();
      const staging = hostSlice(s.pinned!, 0, w);
      s.result.copies.stagedHalf = copy(`staged, ${+(w / MiB).toFixed(2)} MiB window, source registered (as the probe)`, w, time('staged half', () => s.stage(windows[0]!, staging), { iterations: s.options.runs }));
    } finally {
      for (const win of done.reverse()) s.unregister(win);
    }
  },
};
