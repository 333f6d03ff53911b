// The probe's reference read ahead by glibc's POSIX AIO threads (bindings/read-ahead.ts), on real files through
// the real libc: every view holds the file's bytes as a pread made then would, a chunk served once and only
// fresh, what was not read ahead (or came back short, or from a libc that lays its struct out otherwise) read by
// the caller's own read, and everything let go at close.
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readAhead } from '../bindings/read-ahead.js';
import { preadFully } from '../bindings/libc.js';
import { fdsUnder } from './support/fds.js';

const work = mkdtempSync(join(tmpdir(), 'mapped-reg-read-ahead-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const CHUNK = 64 * 1024;
let serial = 0;

/** A file of `length` random bytes, open for reading and writing; the caller's own read, counted. */
function file(length: number) {
  const path = join(work, `f${serial++}`);
  const bytes = randomBytes(length);
  writeFileSync(path, bytes);
  const fd = openSync(path, 'r+');
  const reads: [number, number][] = [];
  const readHere = (offset: number, into: Uint8Array): void => {
    reads.push([offset, into.length]);
    const done = preadFully(fd, into, offset);
    if (done < into.length) throw new Error(`ended at ${offset + done}`);
  };
  return { path, bytes, fd, reads, readHere };
}

/** The open descriptors of the file at `path`: the test's own, and those the read-ahead reads through. */
const openFds = (path: string): number => fdsUnder(path).length;

/** Reads `offsets` of file `f` through a read-ahead (with `o`), each view held to the file's bytes; then closes both. */
function viewsAgree(f: ReturnType<typeof file>, offsets: number[], o?: Parameters<typeof readAhead>[4]): void {
  const r = readAhead(f.fd, f.bytes.length, CHUNK, f.readHere, o);
  try {
    for (const at of offsets) {
      const n = Math.min(CHUNK, f.bytes.length - at);
      expect(Buffer.compare(r.view(at, n), f.bytes.subarray(at, at + n)), `chunk at ${at}`).toBe(0);
    }
  } finally {
    r.close();
    closeSync(f.fd);
  }
}

/** The chunks' offsets of a file of `length` bytes, in order. */
const inOrder = (length: number): number[] => Array.from({ length: Math.ceil(length / CHUNK) }, (_, i) => i * CHUNK);

describe('the reference read ahead', () => {
  it("a run of chunks in order: each view the file's bytes, every chunk after the first read by glibc's threads", () => {
    const f = file(10 * CHUNK + 123);
    viewsAgree(f, inOrder(f.bytes.length));
    // the first chunk, and the first 4 KiB of the first chunk read ahead (the struct's layout held to the file)
    expect(f.reads).toEqual([
      [0, CHUNK],
      [CHUNK, 4096],
    ]);
  });

  it("two runs interleaved, as the probe's round trips ask (the other window's chunk, then this one's): the right bytes, read ahead", () => {
    const w = 6 * CHUNK;
    const f = file(2 * w);
    viewsAgree(f, inOrder(w).flatMap((at) => [w + at, at]));
    // each run's first chunk read here, and the layout check; the other ten chunks came from glibc's threads
    expect(f.reads.filter(([, n]) => n === CHUNK)).toHaveLength(2);
  });

  it('a chunk asked for again is read again: a view never serves bytes the file no longer holds', () => {
    const f = file(4 * CHUNK);
    // slots to spare: the first chunk's is not needed for the chunks read ahead
    const r = readAhead(f.fd, f.bytes.length, CHUNK, f.readHere, { slots: 8 });
    try {
      expect(r.view(0, CHUNK)[0]).toBe(f.bytes[0]);
      const changed = (f.bytes[0]! + 1) & 0xff;
      writeSync(f.fd, Uint8Array.of(changed), 0, 1, 0);
      expect(r.view(CHUNK, CHUNK)[0]).toBe(f.bytes[CHUNK]);
      expect(r.view(0, CHUNK)[0]).toBe(changed);
    } finally {
      r.close();
      closeSync(f.fd);
    }
  });

  it("a file cut under a chunk read ahead: the caller's own read says so, as it did without reading ahead", () => {
    const f = file(4 * CHUNK);
    const r = readAhead(f.fd, f.bytes.length, CHUNK, f.readHere);
    try {
      r.view(0, CHUNK); // the next chunks are asked for now
      ftruncateSync(f.fd, CHUNK + 100);
      expect(() => {
        r.view(CHUNK, CHUNK);
        r.view(2 * CHUNK, CHUNK);
      }).toThrow(`ended at ${CHUNK + 100}`);
    } finally {
      r.close();
      closeSync(f.fd);
    }
  });

  it('a libc whose reads bring other bytes (a struct laid out otherwise) reads nothing ahead: every chunk read here, right', () => {
    const f = file(6 * CHUNK);
    // requests that succeed and bring nothing: the slots keep what they held
    let asked = 0;
    const liar = { read: () => (asked++, 0), error: () => 0, result: () => CHUNK, suspend: () => 0 };
    viewsAgree(f, inOrder(f.bytes.length), { aio: liar });
    expect(asked).toBeGreaterThan(0);
    expect(f.reads.filter(([, n]) => n === CHUNK)).toHaveLength(6);
  });

  it("a read of glibc's that came back short is not served: that chunk is read here", async () => {
    const f = file(6 * CHUNK);
    const { aio } = await import('../bindings/libc.js');
    const real = aio();
    if (typeof real === 'string') throw new Error(real);
    // glibc's reads, each said to have read half of what it did
    const short = { ...real, result: (cb: bigint) => Math.floor(real.result(cb) / 2) };
    viewsAgree(f, inOrder(f.bytes.length), { aio: short });
    expect(f.reads.filter(([, n]) => n === CHUNK)).toHaveLength(6);
  });

  it('close waits for the reads still running, then lets go of its descriptors (and its memory); a view after it is refused', () => {
    const f = file(8 * CHUNK);
    const r = readAhead(f.fd, f.bytes.length, CHUNK, f.readHere);
    r.view(0, CHUNK);
    expect(openFds(f.path)).toBe(4);
    r.close();
    r.close(); // once
    expect(openFds(f.path)).toBe(1);
    expect(() => r.view(CHUNK, CHUNK)).toThrow('closed');
    closeSync(f.fd);
  });

  it('a view longer than a chunk is refused', () => {
    const f = file(4 * CHUNK);
    const r = readAhead(f.fd, f.bytes.length, CHUNK, f.readHere);
    try {
      expect(() => r.view(0, CHUNK + 1)).toThrow(RangeError);
    } finally {
      r.close();
      closeSync(f.fd);
    }
  });
});
