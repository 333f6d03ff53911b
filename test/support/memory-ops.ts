// An in-memory double of Ops with fault injection, a fake clock that the copies advance, and a spy.
import type { Host, Ops } from '../../src/ops.js';

export type OpName = Exclude<keyof Ops, 'deviceClock'>;

export interface Faults {
  /** Copies from a registered range whose address is in this set come back with one byte flipped. */
  corruptWindows?: bigint[];
  /** The register call "succeeds" but the device never reads the range: round trips leave `into` as it was. */
  registerLies?: boolean;
  /** The device serves the bytes of the previous round trip again (stale copy). */
  stale?: boolean;
  /** Each registered range's unregister fails its first n calls. */
  unregisterFails?: number;
  /** By start address: that range's unregister fails its first n calls (over `unregisterFails`); Infinity: never released. */
  unregisterFailsFor?: Map<bigint, number>;
  /** freeHost fails its first n calls (each buffer). */
  freeFails?: number;
  /** Throw this error from the given op, on its n-th call (1-based, default 1). */
  throwIn?: { op: OpName; error: unknown; onCall?: number };
  /** During the n-th round trip, write into the map (the file changed under the probe). */
  mutateMapOnRoundTrip?: { map: Host; onCall: number };
  /** Milliseconds one upload of a registered range adds to the clock: a number, or one entry per call. */
  registeredUploadMs?: number | number[];
  /** Milliseconds one upload from page-locked memory adds to the clock. */
  stagedUploadMs?: number | number[];
  /** The clock returns this instead of its time (NaN: no valid duration). */
  clockValue?: number;
  /**
   * The duration the clock shows for every upload of that kind: its first reading after the upload is the time
   * before it plus this (0, negative, NaN, Infinity), whatever the upload cost; later readings go on from the time.
   */
  uploadDurationMs?: { registered?: number | number[]; staged?: number | number[] };
  /** Milliseconds one host copy into a page-locked buffer (its `bytes.set`, the staged copy's memcpy) adds to the clock. */
  stagingCopyMs?: number;
}

/** The bytes of a page-locked buffer of MemoryOps: a copy into them (`set`) is seen, and may cost time. */
class PinnedBytes extends Uint8Array {
  onSet: ((source: ArrayLike<number>) => void) | undefined;
  override set(array: ArrayLike<number>, offset?: number): void {
    this.onSet?.(array);
    super.set(array, offset);
  }
}

let nextAddress = 0x7f00_0000_0000n;

/** A host range at a fresh page-aligned fake address (64 KiB aligned unless an offset is given). */
export function memHost(bytes: Uint8Array, offsetFromAlignment = 0): Host {
  const address = nextAddress + BigInt(offsetFromAlignment);
  nextAddress += BigInt(Math.ceil((bytes.length + offsetFromAlignment) / 65536) + 1) * 65536n;
  return { address, bytes };
}

/** Deterministic, pseudo-random, non-repeating bytes (a region whose two windows differ). */
export function randomBytes(length: number, seed = 1): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

interface Live {
  host: Host;
  failures: number;
}

export class MemoryOps implements Ops {
  readonly calls: Record<OpName, number> = { register: 0, unregister: 0, allocHost: 0, freeHost: 0, roundTrip: 0, upload: 0 };
  /**
   * Every call in order, with the range it touched; `hostCopy` is a copy into a page-locked buffer (its address),
   * with `source`, the view copied from.
   */
  readonly trace: { op: OpName | 'hostCopy'; address?: bigint; length?: number; source?: ArrayLike<number> }[] = [];
  readonly live: Live[] = [];
  readonly allocated = new Set<Host>();
  readonly device: Uint8Array;
  #time = 1000;
  #uploads = { registered: 0, staged: 0 };
  #lastServed: Uint8Array | undefined;
  readonly #freeFailures = new Map<Host, number>();

  constructor(
    deviceBytes: number,
    readonly faults: Faults = {},
  ) {
    this.device = new Uint8Array(deviceBytes);
  }

  #shown: number | undefined;

  /** The clock the probe is given (ms). */
  readonly now = (): number => {
    if (this.#shown !== undefined) {
      const shown = this.#shown;
      this.#shown = undefined;
      return shown;
    }
    return this.faults.clockValue ?? this.#time;
  };

  get uploads(): { registered: number; staged: number } {
    return { ...this.#uploads };
  }

  #enter(op: OpName, host?: Host): void {
    this.calls[op] += 1;
    this.trace.push(host ? { op, address: host.address, length: host.bytes.length } : { op });
    const t = this.faults.throwIn;
    if (t && t.op === op && this.calls[op] === (t.onCall ?? 1)) throw t.error;
  }

  #registered(host: Host): Live | undefined {
    return this.live.find((l) => host.address >= l.host.address && host.address + BigInt(host.bytes.length) <= l.host.address + BigInt(l.host.bytes.length));
  }

  register(host: Host): void {
    this.#enter('register', host);
    this.live.push({ host, failures: 0 });
  }

  unregister(host: Host): void {
    this.#enter('unregister', host);
    const i = this.live.findIndex((l) => l.host.address === host.address);
    if (i < 0) throw new Error('713 not registered');
    const l = this.live[i]!;
    if (l.failures < (this.faults.unregisterFailsFor?.get(l.host.address) ?? this.faults.unregisterFails ?? 0)) {
      l.failures += 1;
      throw new Error(`unregister failed (injected, ${l.failures})`);
    }
    this.live.splice(i, 1);
  }

  allocHost(bytes: number): Host {
    this.#enter('allocHost');
    const view = new PinnedBytes(bytes);
    const host = memHost(view);
    view.onSet = (source) => {
      this.trace.push({ op: 'hostCopy', address: host.address, length: source.length, source });
      this.#time += this.faults.stagingCopyMs ?? 0;
    };
    this.allocated.add(host);
    return host;
  }

  freeHost(host: Host): void {
    this.#enter('freeHost', host);
    const failed = this.#freeFailures.get(host) ?? 0;
    if (failed < (this.faults.freeFails ?? 0)) {
      this.#freeFailures.set(host, failed + 1);
      throw new Error('freeHost failed (injected)');
    }
    if (!this.allocated.delete(host)) throw new Error('freeHost of a buffer never allocated');
  }

  roundTrip(host: Host, into: Host): void {
    this.#enter('roundTrip', host);
    const m = this.faults.mutateMapOnRoundTrip;
    if (m && m.onCall === this.calls.roundTrip) m.map.bytes[0] = (m.map.bytes[0]! + 1) & 0xff;
    const reg = this.#registered(host);
    if (reg && this.faults.registerLies) return;
    if (reg && this.faults.stale && this.#lastServed) {
      into.bytes.set(this.#lastServed.subarray(0, into.bytes.length));
      return;
    }
    this.device.set(host.bytes);
    if (reg && this.faults.corruptWindows?.includes(host.address)) {
      const mid = host.bytes.length >> 1;
      this.device[mid] = this.device[mid]! ^ 0xff;
    }
    this.#lastServed = this.device.slice(0, host.bytes.length);
    into.bytes.set(this.device.subarray(0, host.bytes.length));
  }

  upload(host: Host): void {
    this.#enter('upload', host);
    this.device.set(host.bytes);
    const reg = this.#registered(host) !== undefined;
    const n = reg ? this.#uploads.registered++ : this.#uploads.staged++;
    const cost = reg ? (this.faults.registeredUploadMs ?? 2) : (this.faults.stagedUploadMs ?? 10);
    const before = this.#time;
    this.#time += Array.isArray(cost) ? (cost[n] ?? cost[cost.length - 1]!) : cost;
    const shown = reg ? this.faults.uploadDurationMs?.registered : this.faults.uploadDurationMs?.staged;
    if (shown !== undefined) this.#shown = before + (Array.isArray(shown) ? (shown[n] ?? shown[shown.length - 1]!) : shown);
  }
}
