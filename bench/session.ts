// What the measurements of one device share: the device, the options, its scratch region and its figures so far
// (DeviceContext); and, while the device's ops are held, the copy machinery (DeviceSession): registration
// through the model's table, the page-locked buffer, the staged copy.
import type { DeviceOps } from '../bindings/device-ops.js';
import type { DiscoveredDevice, NativeDevice } from '../bindings/discovery.js';
import type { Mapping } from '../bindings/libc.js';
import type { ScratchRegion } from '../bindings/scratch.js';
import { type Host, type Ops, trackedOps } from '../src/index.js';
import type { NativeBinary } from './native/native.js';
import type { Options } from './bench-options.js';
import type { DeviceBench } from './result.js';

export interface DeviceContext {
  readonly device: DiscoveredDevice;
  readonly native: NativeDevice;
  readonly options: Options;
  /** The region's size: every whole-region copy and registration is of this many bytes. */
  readonly bytes: number;
  readonly region: ScratchRegion;
  /** The native reference built for this bench run. */
  readonly nativeBinary: NativeBinary;
  /** The device's figures so far: each measurement fills its own key. */
  readonly result: DeviceBench;
  /** Mappings a measurement could not unregister: never unmapped, named under errors. */
  readonly kept: Mapping[];
}

/** A device's context while its ops are held (inside withOps): the context's fields, and the copy machinery. */
// the context's fields are the interface's, copied in by the constructor (declaring them again would be a second list)
export interface DeviceSession extends DeviceContext {}

export class DeviceSession {
  /** The page-locked buffer of the region's size (staging and the page-locked copy), once allocated. */
  pinned?: Host;
  private readonly tracked: Ops;

  constructor(
    c: DeviceContext,
    readonly ops: DeviceOps,
  ) {
    Object.assign(this, c);
    // registrations go through the model's table, as the probe's do, so that a mapping still held is known
    this.tracked = trackedOps(ops);
  }

  register(h: Host): void {
    this.tracked.register(h);
  }

  unregister(h: Host): void {
    this.tracked.unregister(h);
  }

  allocPinned(): void {
    this.pinned = this.ops.allocHost(this.bytes);
  }

  freePinned(): void {
    if (this.pinned) this.ops.freeHost(this.pinned);
  }

  /** The staged copy: the bytes into page-locked memory (Uint8Array.set, a memcpy), then the copy. */
  stage(from: Host, pinned: Host): void {
    pinned.bytes.set(from.bytes);
    this.ops.upload(pinned);
  }
}
