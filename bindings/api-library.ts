// Loading a discovery-only API library (OpenCL, Vulkan): the candidates to try, and one load that never throws:
// a missing library is a note ("OpenCL: libOpenCL.so.1 not found (tried ...)"), not an error.
import koffi from 'koffi';
import type { LibraryHandle, TypeObject } from 'koffi';

/** A device as a discovery-only API describes it. */
export interface ApiDevice {
  /** Position in this backend's list (stable order: OpenCL platform then device order; Vulkan's enumeration order). */
  index: number;
  name: string;
  type: 'cpu' | 'gpu' | 'integrated-gpu' | 'virtual-gpu' | 'accelerator' | 'other';
  /** true for integrated GPUs, false for discrete, null when unknown/not applicable. */
  integrated: boolean | null;
  /** Vendor name or id text. */
  vendor: string;
  /** As the API gives it (Vulkan: decoded with the vendor's packing). */
  driverVersion: string;
  /** "0000:00:06.0" form when the API exposes it (Vulkan: VK_EXT_pci_bus_info). */
  pciBusId: string | null;
  /** OpenCL platform name; Vulkan: api version text. */
  platform?: string;
}

export interface ApiDiscovery {
  library: string | null;
  tried: string[];
  devices: ApiDevice[];
  error?: string;
}

export interface Loaded<Api> {
  api: Api | null;
  library: string | null;
  tried: string[];
  error?: string;
}

export interface ApiLibrary<Api> {
  /** "OpenCL", "Vulkan": the start of every message. */
  readonly label: string;
  /** "an OpenCL library", "a Vulkan library". */
  readonly what: string;
  readonly env: string;
  readonly defaults: readonly string[];
  /** Declares the functions; throws when a symbol is missing. */
  bind(lib: LibraryHandle): Api;
}

/** The path given, else the environment variable, else the default names in order. */
export function candidates(library: ApiLibrary<unknown>, libraryPath: string | undefined): string[] {
  if (libraryPath !== undefined && libraryPath !== '') return [libraryPath];
  const fromEnv = process.env[library.env];
  if (fromEnv !== undefined && fromEnv !== '') return [fromEnv];
  return [...library.defaults];
}

function messageOf(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.replace(/^Failed to load shared library: /, '');
}

/** Bound libraries by the name they were loaded under: loaded once, kept for the life of the process. */
const bound = new Map<string, unknown>();

/**
 * Discovery through `library` (OpenCL, Vulkan): loads it from `libraryPath`, else its candidates, and lets `list`
 * fill the devices and the errors. Never throws: an unexpected failure is one more error, and the errors come
 * back in `error` after the library's label, with every device `list` could still describe.
 */
export function discoverWith<Api>(library: ApiLibrary<Api>, libraryPath: string | undefined, list: (api: Api, devices: ApiDevice[], errors: string[]) => void): ApiDiscovery {
  const loaded = loadApi(library, candidates(library, libraryPath));
  if (loaded.api === null) return { library: null, tried: loaded.tried, devices: [], error: loaded.error ?? `${library.label}: not loaded` };
  const devices: ApiDevice[] = [];
  const errors: string[] = [];
  try {
    list(loaded.api, devices, errors);
  } catch (e) {
    errors.push(`unexpected failure: ${e instanceof Error ? e.message : String(e)}`);
  }
  const result: ApiDiscovery = { library: loaded.library, tried: loaded.tried, devices };
  if (errors.length > 0) result.error = `${library.label}: ${errors.join('; ')}`;
  return result;
}

/** The first of `names` that loads and binds. */
export function loadApi<Api>(library: ApiLibrary<Api>, names: string[]): Loaded<Api> {
  const tried: string[] = [];
  const failures: string[] = [];
  let allMissing = true;
  for (const name of names) {
    tried.push(name);
    const key = `${library.label}\0${name}`;
    const cached = bound.get(key) as Api | undefined;
    if (cached) return { api: cached, library: name, tried };
    let lib: LibraryHandle;
    try {
      lib = koffi.load(name);
    } catch (e) {
      const reason = messageOf(e);
      if (!/No such file or directory/.test(reason)) allMissing = false;
      failures.push(`${name}: ${reason}`);
      continue;
    }
    try {
      const api = library.bind(lib);
      bound.set(key, api);
      return { api, library: name, tried };
    } catch (e) {
      allMissing = false;
      failures.push(`${name}: not ${library.what} (${messageOf(e)})`);
      lib.unload();
    }
  }
  const first = names[0] ?? '(none)';
  const error = allMissing
    ? `${library.label}: ${first} not found (tried ${tried.join(', ')})`
    : `${library.label}: could not load ${first} (tried ${tried.join(', ')}): ${failures.join('; ')}`;
  return { api: null, library: null, tried, error };
}

/**
 * Declares a named koffi type once per process. koffi's type names are process-wide, and this module can be
 * evaluated more than once in a process (test runners re-import modules): a second evaluation reuses the
 * type when its layout matches and refuses a clash with an unrelated type of the same name.
 */
export function declareType(name: string, anonymous: TypeObject): TypeObject {
  let existing: TypeObject;
  try {
    existing = koffi.type(name);
  } catch {
    return koffi.alias(name, anonymous);
  }
  if (existing.primitive !== anonymous.primitive || existing.size !== anonymous.size || existing.alignment !== anonymous.alignment) {
    throw new Error(`koffi type '${name}' is already declared with another layout`);
  }
  return existing;
}

const hex = (value: number, digits: number): string => value.toString(16).padStart(digits, '0');

/** A PCI address as sysfs and CUDA write it, in lower case: `dddd:bb:dd.f`. */
export function pciBusIdText(domain: number, bus: number, device: number, fn: number): string {
  return `${hex(domain, 4)}:${hex(bus, 2)}:${hex(device, 2)}.${fn.toString(16)}`;
}
