import { describe, expect, it } from 'vitest';
import { RegistrationTable, hostSlice, registrations, trackedOps } from '../src/index.js';
import { MemoryOps, memHost } from './support/memory-ops.js';

describe('hostSlice', () => {
  it('shares memory and moves the address', () => {
    const h = memHost(new Uint8Array(100));
    const s = hostSlice(h, 10, 20);
    expect(s.address).toBe(h.address + 10n);
    s.bytes[0] = 7;
    expect(h.bytes[10]).toBe(7);
    expect(s.bytes.length).toBe(20);
  });
  it.each([[-1, 10], [0, 101], [95, 10], [1.5, 2], [0, -1]])('refuses [%d, +%d) outside a range of 100 bytes', (o, l) => {
    expect(() => hostSlice(memHost(new Uint8Array(100)), o, l)).toThrow(RangeError);
  });
});

describe('RegistrationTable', () => {
  it('adds, finds overlaps, counts release failures and removes one entry per successful release', () => {
    const t = new RegistrationTable();
    const a = { address: 0x10000n, bytes: new Uint8Array(0x1000) };
    t.add(a);
    t.add(a); // a driver that accepted the same range twice: two entries
    expect(t.size).toBe(2);
    expect(t.isPinned({ address: 0x10fffn, bytes: new Uint8Array(1) })).toBe(true);
    expect(t.isPinned({ address: 0x11000n, bytes: new Uint8Array(1) })).toBe(false); // adjacent
    expect(t.isPinned({ address: 0xf000n, bytes: new Uint8Array(0x1000) })).toBe(false);
    expect(t.overlapping(0xf000n, 0x1001)).toHaveLength(2);
    t.noteReleaseFailure(a);
    expect(t.held()).toHaveLength(1);
    t.remove(a);
    expect(t.size).toBe(1);
    t.remove(a);
    expect(t.size).toBe(0);
    t.remove(a); // nothing left: no-op
    t.noteReleaseFailure(a);
    expect(t.entries()).toEqual([]);
  });

  it('returns copies: callers cannot edit the table', () => {
    const t = new RegistrationTable();
    const a = { address: 0x10000n, bytes: new Uint8Array(16) };
    t.add(a);
    t.entries()[0]!.releaseFailures = 9;
    expect(t.entries()[0]!.releaseFailures).toBe(0);
  });
});

describe('trackedOps', () => {
  it('records successful registrations, keeps a range whose release failed, and is not applied twice', () => {
    const table = new RegistrationTable();
    const ops = new MemoryOps(4096, { unregisterFails: 1 });
    const t = trackedOps(ops, table);
    expect(trackedOps(t, table)).toBe(t);
    expect(trackedOps(t, new RegistrationTable())).not.toBe(t);
    const h = memHost(new Uint8Array(4096));
    t.register(h);
    expect(table.size).toBe(1);
    expect(() => t.unregister(h)).toThrow(/injected/);
    expect(table.held()).toHaveLength(1);
    t.unregister(h);
    expect(table.size).toBe(0);
    const buf = t.allocHost(4096);
    t.roundTrip(h, buf);
    t.upload(h);
    t.freeHost(buf);
    expect(ops.calls).toMatchObject({ register: 1, unregister: 2, allocHost: 1, freeHost: 1, roundTrip: 1, upload: 1 });
  });

  it('a refused registration is not recorded', () => {
    const table = new RegistrationTable();
    const t = trackedOps(new MemoryOps(16, { throwIn: { op: 'register', error: new Error('712') } }), table);
    expect(() => t.register(memHost(new Uint8Array(16)))).toThrow('712');
    expect(table.size).toBe(0);
  });

  it('uses the process table by default', () => {
    const h = memHost(new Uint8Array(16));
    const t = trackedOps(new MemoryOps(16));
    t.register(h);
    expect(registrations.isPinned(h)).toBe(true);
    t.unregister(h);
    expect(registrations.isPinned(h)).toBe(false);
  });
});
