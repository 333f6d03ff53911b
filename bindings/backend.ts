// What a backend module states (bindings/backends/*.ts) and what its discovery gives: the shapes the registry
// (registry.ts) and discovery (discovery.ts) share. Kept apart from both so that neither the modules nor the
// registry import discovery.ts: the import graph stays a tree.
import { errorText } from '../src/fatal.js';
import type { Device, DeviceType, RegistrationPolicy } from '../src/device.js';
import type { Backend, BackendReport } from '../results/types.js';
import type { DeviceOps, WithOpsOptions } from './device-ops.js';
import { DriverError, type DriverApi } from './errors.js';
import type { ReferenceKit } from './reference-kit.js';

export interface DiscoveredDevice {
  readonly id: string;
  readonly backend: Backend;
  readonly name: string;
  readonly pciBusId: string | null;
  readonly driver: { readonly name: string; readonly version: string };
  /** The integrated answer: null when the backend does not say or the query failed (see integratedError). */
  readonly integrated: boolean | null;
  readonly integratedError?: string;
  readonly type: DeviceType;
  readonly totalMemBytes?: number;
  /** Backend attributes read at discovery (CUDA: the five of the facts file), by name. */
  readonly attributes?: Readonly<Record<string, number | string>>;
  /** The model's view of the device: what staticVerdict and probe take. */
  readonly device: Device;
  /**
   * A device of a backend that registers (CUDA, HIP, one added to the registry): its ops, with the extras the
   * hazard checks need (registerWithFlags, raw addresses), and its kit. Registrations made through these are NOT
   * recorded in the model's table: the caller records them.
   */
  readonly native?: NativeDevice;
}

/** One result code of a driver, with its name. */
export interface DriverCode {
  readonly code: number;
  readonly name: string;
}

/**
 * What a backend whose driver registers host memory states about that driver: the name its messages give it,
 * the codes the hazard checks compare with, and how the model reads its integrated query.
 */
export interface RegisteringDriver {
  readonly api: DriverApi;
  /** "Host memory not registered": CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, hipErrorHostMemoryNotRegistered (713 both). */
  readonly notRegistered: DriverCode;
  /** "Invalid value": CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue (1 both). */
  readonly invalidValue: DriverCode;
  readonly policy: RegistrationPolicy;
}

/**
 * What the hazard checks and the bench need of a driver beyond its ops, stated by its backend module so that
 * no caller has to tell one driver from another.
 */
export interface NativeKit {
  /** The variable a child process loads this same library from (MAPPED_REG_CUDA_LIBRARY, MAPPED_REG_HIP_LIBRARY). */
  readonly libraryEnv: string;
  /** The driver's "host memory not registered" (its module's RegisteringDriver.notRegistered). */
  readonly notRegistered: DriverCode;
  /** The reset of this device's context, registrations included (hazard.context_reset). */
  readonly contextReset: {
    /** The C call, for the check's text: cuDevicePrimaryCtxReset_v2, hipDeviceReset. */
    readonly call: string;
    reset(): void;
    /**
     * CUDA: gives back the primary context retain withCudaOps kept for a registration that was outstanding when
     * the context was reset (a reset releases no retain). Absent where with…Ops keeps nothing (HIP).
     */
    readonly releaseKept?: () => void;
  };
  /** The register flag asking for a read-only pin (CUDA's READ_ONLY, 0x08); absent where there is none (HIP's 0x8 is not one). */
  readonly readOnlyFlag?: number;
  /** One cheap driver call for the bench's call cost: its C name and the call (the integrated attribute), made ready. */
  attributeCall(): { readonly call: string; readonly query: () => number };
  /** What the reference checks ask beyond the ops (attributes, free memory, device addresses, a second context, the other devices): bindings/reference-kit.ts; absent where a module states none (the reference checks are then skipped). */
  readonly reference?: ReferenceKit;
}

/** A device of a driver that registers, as the hazard checks, the truncation child and the bench use it. */
export interface NativeDevice {
  /** The driver's name in its messages (RegisteringDriver.api). */
  readonly api: DriverApi;
  /** The driver library loaded: what a child process loads again, named in kit.libraryEnv. */
  readonly library: string;
  readonly ordinal: number;
  readonly kit: NativeKit;
  /** options.log: where a failed or deliberately skipped release goes (default: a process warning). */
  withOps<T>(bytes: number, f: (ops: DeviceOps) => T, options?: WithOpsOptions): T;
  /**
   * Keeps the device's context for the rest of the process, so that each withOps does not create it again
   * (CUDA: one primary context retain, never released: the last release destroys the context, and making it
   * again cost about 0.2 s on the H200, once per check; HIP keeps its context for the process anyway: nothing
   * to do). Idempotent. For a process that uses the device until it exits, such as a device's runner.
   */
  keepContext(): void;
}

/** What one backend's discovery found: its devices and its report. */
export interface BackendDiscovery {
  readonly devices: DiscoveredDevice[];
  readonly report: BackendReport;
}

/** What every backend module states (bindings/backends/). */
interface BackendFacts {
  readonly id: Backend;
  /** The framework name its devices give the model (src/device.ts: frameworkFamily), e.g. 'CUDA', 'Native'. */
  readonly framework: string;
  /** The variable naming the library to load instead of the default search; null when the backend loads none. */
  readonly libraryEnv: string | null;
  /**
   * The backends of one group are discovered by one process of a run (cli/select-devices.ts), at the same time as the
   * other groups: a driver that registers gets a group of its own, so that its process keeps its device.
   */
  readonly group: string;
  /** The form of its device ids, as a regular expression's source: `cuda:\d+`, `cpu` (the schema's id pattern holds them all). */
  readonly deviceId: string;
  discover(): BackendDiscovery;
}

/**
 * A backend, as the registry holds it: one module per backend (bindings/backends/). One whose driver registers
 * host memory (CUDA, HIP) says how (`driver`): its devices carry native ops and are probed.
 */
export type BackendModule = BackendFacts &
  (
    | { readonly registers: false }
    | {
        readonly registers: true;
        readonly driver: RegisteringDriver;
        /**
         * Its discovery's report when no candidate of its library can be found (bindings/library-search.ts), told
         * without loading anything: the same report its discover() gives then; or, for a library found under a
         * default name, when the device node its driver needs is missing under `root` (no device, nothing loaded).
         * Undefined when a process must load it to tell.
         */
        readonly notFound?: (env?: NodeJS.ProcessEnv, root?: string) => BackendReport | undefined;
        /**
         * How many devices its discovery will likely find, from the device nodes under `root`'s /dev (and the
         * driver's variable that hides devices), read before any driver is loaded: an estimate, for starting the
         * other GPUs' runners while the discovery runs (cli/spare-runner.ts). Undefined where it cannot be told.
         */
        readonly expectedDevices?: (env?: NodeJS.ProcessEnv, root?: string) => number | undefined;
      }
  );

// ---- what the modules' discoveries share ----

/** A query answered once, at discovery, and replayed to the model (which asks the backend's hook once). */
export type Answer = { ok: true; value: boolean } | { ok: false; error: unknown };

export function ask(q: () => boolean): Answer {
  try {
    return { ok: true, value: q() };
  } catch (error) {
    return { ok: false, error };
  }
}

export const replay = (a: Answer) => (): boolean => {
  if (!a.ok) throw a.error;
  return a.value;
};

/**
 * The report of a GPU driver library that loaded and then failed (its init returned anything but "no device",
 * or a later call of the discovery failed): the run's error, said once (DriverError's text already names the
 * API, the call and the code).
 */
export function failedToStart(backend: Backend, path: string, e: unknown): BackendReport {
  const message = errorText(e);
  const initError = e instanceof DriverError ? { message, call: e.call, code: e.code, codeName: e.codeName } : { message };
  return { backend, library: path, devices: 0, note: message, initError };
}

/** The report of a library that did not load (not there, not a driver): a note, not an error. */
export function notLoaded(backend: Backend, e: unknown): BackendDiscovery {
  return { devices: [], report: { backend, library: null, devices: 0, note: errorText(e) } };
}
