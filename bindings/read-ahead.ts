// A file's bytes read ahead while this thread works on those already read: the probe's reference (bindings/scratch.ts),
// which the probe reads a chunk at a time, in order, and compares (src/probe.ts). Each chunk is asked of glibc's
// POSIX AIO (aio_read(3)), whose threads pread it into a slot of memory of our own while this thread compares the
// one before: on the H200 a pread of the 256 MiB region took some 40 ms, its comparison some 15, one after the other.
// Requests on one descriptor run in order on one of glibc's threads: the file is read through a few descriptors
// of its own (dup), so that as many chunks are read at once. A chunk that was not read ahead, or whose read
// failed or came short, is read here as before (`readHere`): the same bytes, the same errors. Nothing here decides
// what bytes are right; it only says when they are read.
import { type Aio, EINPROGRESS, type Mapping, MAP, PROT, aio, closeFd, dup, mmap, munmap } from './libc.js';

/** The bytes of a file read ahead, a chunk at a time. */
export interface ReadAhead {
  /**
   * The file's `length` bytes at `offset` (`length` at most the chunk), as a view that holds until the next call;
   * then the next chunks of the same run of reads are asked for.
   */
  view(offset: number, length: number): Uint8Array;
  /** Waits for the reads still running, and lets go of the memory and the descriptors. */
  close(): void;
}

/** struct aiocb of glibc on 64-bit Linux (x86-64 and arm64 alike): its size and the fields written here. */
const AIOCB = { size: 168, fildes: 0, buf: 16, nbytes: 24, sigevNotify: 44, offset: 128 } as const;
/** sigevent's "tell nobody": the request is polled (aio_error), never signalled. */
const SIGEV_NONE = 1;

interface Slot {
  /** The file's offset and length it holds, or is being read with (-1: nothing). */
  offset: number;
  length: number;
  /** A request of glibc's runs into it: it is neither read nor asked again until it is waited for. */
  running: boolean;
  /** When it was asked for (performance.now()); a chunk is served once, and only while it is fresh. */
  askedAt: number;
}

/** A chunk read ahead longer ago than this is read again: its bytes are the file's of a moment ago, not of long ago. */
const FRESH_MS = 500;

/** A run of reads, each at the end of the one before: where its next read will likely be. */
interface Run {
  next: number;
  length: number;
}

/**
 * Reads `fd` (`fileLength` bytes) ahead, `chunk` bytes a read, with `descriptors` of glibc's threads and `slots`
 * chunks of memory (the caller's view among them). `readHere(offset, into)` is the caller's own read, used where a
 * chunk was not read ahead. Where glibc has no POSIX AIO, every chunk is read here.
 */
export function readAhead(fd: number, fileLength: number, chunk: number, readHere: (offset: number, into: Uint8Array) => void, o: { descriptors?: number; slots?: number; aio?: Aio } = {}): ReadAhead {
  const slotCount = Math.max(2, o.slots ?? 4);
  // `o.aio`: the tests' stand-in for glibc's calls
  const calls: Aio | string = o.aio ?? aio();
  const memory: Mapping = mmap(slotCount * chunk, PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
  // the requests' structs, and the one-entry list aio_suspend waits on
  const control: Mapping = mmap(slotCount * AIOCB.size + 8, PROT.READ | PROT.WRITE, MAP.PRIVATE | MAP.ANONYMOUS, -1, 0);
  const fields = new DataView(control.bytes.buffer, control.bytes.byteOffset, control.bytes.byteLength);
  const listAt = slotCount * AIOCB.size;
  const descriptors: number[] = [];
  let ahead = typeof calls !== 'string';
  if (ahead) {
    try {
      for (let i = 0; i < Math.max(1, o.descriptors ?? 3); i++) descriptors.push(dup(fd));
    } catch {
      ahead = descriptors.length > 0;
    }
  }
  const slots: Slot[] = Array.from({ length: slotCount }, () => ({ offset: -1, length: 0, running: false, askedAt: 0 }));
  const bytesOf = (i: number, length: number): Uint8Array => memory.bytes.subarray(i * chunk, i * chunk + length);
  const cbOf = (i: number): bigint => control.address + BigInt(i * AIOCB.size);
  let current = -1;
  let turn = 0;
  /** glibc's layout of the struct, checked on the first read that came back against the same bytes read here. */
  let layoutChecked = false;
  const runs: Run[] = [];
  let closed = false;

  const ask = (i: number, offset: number, length: number): void => {
    const at = i * AIOCB.size;
    control.bytes.fill(0, at, at + AIOCB.size);
    fields.setInt32(at + AIOCB.fildes, descriptors[turn++ % descriptors.length]!, true);
    fields.setBigUint64(at + AIOCB.buf, memory.address + BigInt(i * chunk), true);
    fields.setBigUint64(at + AIOCB.nbytes, BigInt(length), true);
    fields.setInt32(at + AIOCB.sigevNotify, SIGEV_NONE, true);
    fields.setBigInt64(at + AIOCB.offset, BigInt(offset), true);
    slots[i] = { offset, length, running: false, askedAt: performance.now() };
    if ((calls as Aio).read(cbOf(i)) === 0) slots[i]!.running = true;
    else slots[i]!.offset = -1; // not queued (EAGAIN): read here when it is asked for
  };

  /** Waits for slot i's request; whether it read the whole chunk (else the slot holds nothing). */
  const settle = (i: number): boolean => {
    const s = slots[i]!;
    if (!s.running) return s.offset >= 0;
    const a = calls as Aio;
    const cb = cbOf(i);
    fields.setBigUint64(listAt, cb, true);
    let error: number;
    while ((error = a.error(cb)) === EINPROGRESS) a.suspend(control.address + BigInt(listAt), 1);
    const failed = error !== 0;
    const got = a.result(cb);
    s.running = false;
    if (failed || got !== s.length) {
      s.offset = -1;
      return false;
    }
    return true;
  };

  /** The chunks the runs will likely ask for next, the current run's first. */
  const wanted = (run: Run): [number, number][] => {
    const out: [number, number][] = [];
    const add = (offset: number, length: number): void => {
      const n = Math.min(length, fileLength - offset);
      if (n > 0 && !out.some(([o2]) => o2 === offset)) out.push([offset, n]);
    };
    add(run.next, run.length);
    for (const r of runs) if (r !== run) add(r.next, r.length);
    add(run.next + run.length, run.length);
    return out;
  };

  /** A slot that may take a new request: not the caller's view, no request running into it. */
  const idle = (s: Slot, i: number): boolean => i !== current && !s.running;

  const readAheadOf = (run: Run): void => {
    const want = wanted(run);
    for (const [offset, length] of want) {
      if (slots.some((s) => s.offset === offset && s.length === length)) continue;
      // a slot holding nothing first, else one holding a chunk no run wants next
      let free = slots.findIndex((s, i) => idle(s, i) && s.offset < 0);
      if (free < 0) free = slots.findIndex((s, i) => idle(s, i) && !want.some(([w]) => w === s.offset));
      if (free < 0) return;
      ask(free, offset, length);
    }
  };

  return {
    view(offset, length) {
      if (closed) throw new Error('read-ahead: closed');
      if (!(Number.isSafeInteger(length) && length > 0 && length <= chunk)) throw new RangeError(`read-ahead: ${length} bytes, at most ${chunk} a view`);
      // a chunk read ahead is served once (asked again, it is read again), and only while fresh
      let i = slots.findIndex((s, k) => k !== current && s.offset === offset && s.length === length);
      let ready = i >= 0 && settle(i) && performance.now() - slots[i]!.askedAt <= FRESH_MS;
      if (ready && !layoutChecked) {
        // the struct as laid out here, held to the bytes read here: a libc that lays it out otherwise reads nothing ahead
        const probe = new Uint8Array(Math.min(4096, length));
        readHere(offset, probe);
        layoutChecked = true;
        if (Buffer.compare(probe, bytesOf(i, probe.length)) !== 0) {
          ahead = false;
          ready = false;
        }
      }
      // once the layout was found wrong, no chunk read ahead is trusted, those asked for before the check too
      if (!ahead) ready = false;
      if (!ready) {
        if (i < 0) i = slots.findIndex(idle);
        if (i < 0) {
          i = slots.findIndex((_, k) => k !== current);
          settle(i);
        }
        readHere(offset, bytesOf(i, length));
        slots[i] = { offset, length, running: false, askedAt: performance.now() };
      }
      // the chunk served before is let go: its view held until this call
      if (current >= 0 && current !== i) slots[current]!.offset = -1;
      current = i;
      let run = runs.find((r) => r.next === offset);
      if (run) run.next = offset + length;
      else {
        run = { next: offset + length, length };
        runs.unshift(run);
        runs.length = Math.min(runs.length, 2);
      }
      if (ahead) readAheadOf(run);
      return bytesOf(i, length);
    },
    close() {
      if (closed) return;
      closed = true;
      // glibc's threads write into the slots and read the structs until their requests end
      for (let i = 0; i < slots.length; i++) settle(i);
      for (const d of descriptors) closeFd(d);
      munmap(memory);
      munmap(control);
    },
  };
}

