// Host-to-device copies (`copies`; docs/bench.md): of the whole region from the mapping, unregistered
// (pageable), staged through the page-locked buffer, from that buffer alone, and registered; and what the probe
// times, a window of half the region staged while both windows are registered.
import { type Host, hostSlice, windowSize } from '../../src/index.js';
import type { DeviceSession } from '../session.js';
import { copy, time } from '../timing.js';
import { MiB } from '../units.js';
import { type Measurement, always } from './measurement.js';

const hasPinned = (s: DeviceSession): boolean => s.pinned !== undefined;

export const pageable: Measurement<DeviceSession> = {
  key: 'copies.pageable',
  title: 'pageable copy',
  description: 'the copy from the mapping, not registered: the driver stages it itself',
  applies: always,
  run(s) {
    const map = s.region.map;
    s.result.copies.pageable = copy('pageable (not registered)', s.bytes, time('pageable', () => s.ops.upload(map), { iterations: s.options.runs }));
  },
};

export const staged: Measurement<DeviceSession> = {
  key: 'copies.staged',
  title: 'staged copy',
  description: 'Uint8Array.set of the mapping into page-locked memory, then the copy from there; the mapping not registered',
  applies: hasPinned,
  run(s) {
    const map = s.region.map;
    const p = s.pinned!;
    s.result.copies.staged = copy('staged: memcpy into page-locked + copy', s.bytes, time('staged', () => s.stage(map, p), { iterations: s.options.runs }));
  },
};

export const pageLocked: Measurement<DeviceSession> = {
  key: 'copies.pageLocked',
  title: 'page-locked copy',
  description: 'the copy from the page-locked buffer alone: what the link and the copy engine give',
  applies: hasPinned,
  run(s) {
    const p = s.pinned!;
    s.result.copies.pageLocked = copy('page-locked alone', s.bytes, time('page-locked', () => s.ops.upload(p), { iterations: s.options.runs }));
  },
};

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

/** What the probe times: a window of half the region (rounded down to 64 KiB), staged, while both windows are registered. */
export const stagedHalf: Measurement<DeviceSession> = {
  key: 'copies.stagedHalf',
  title: 'staged copy of the probe window',
  description: "the probe's staged copy: a window of half the region, staged, while both windows are registered",
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
      const staging = hostSlice(s.pinned!, 0, w);
      s.result.copies.stagedHalf = copy(`staged, ${+(w / MiB).toFixed(2)} MiB window, source registered (as the probe)`, w, time('staged half', () => s.stage(windows[0]!, staging), { iterations: s.options.runs }));
    } finally {
      for (const win of done.reverse()) s.unregister(win);
    }
  },
};
