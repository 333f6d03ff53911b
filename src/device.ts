// A device as the model sees it, and the static verdict (spec: static_verdict). No FFI: the backend's
// integrated query and its registration ops come in as functions supplied by the bindings.
import type { Ops } from './ops.js';
import { isFatal } from './fatal.js';
import {
  Decided,
  Device_kind_unknown,
  Integrated_gpu,
  Kernel_hazard,
  Not_measured,
  Not_needed,
  Refused,
  Self_test_required,
  type Refusal,
  type Static,
} from './verdict.js';

export type DeviceType = 'cpu' | 'gpu' | 'accelerator' | 'other';

export interface Device {
  /** Stable id across runs: `cuda:0`, `hip:0`, `opencl:0`, `vulkan:0`, `cpu`. */
  readonly id: string;
  /** The framework (backend) name, e.g. `CUDA`, `HIP`, `OpenCL`, `Vulkan`, `Metal`, `Native`. */
  readonly framework: string;
  readonly name: string;
  readonly type: DeviceType;
  /**
   * Shared_memory_query: true for an integrated device, false for a discrete one, undefined when the backend
   * cannot say; throws when the query failed. Absent for a backend that has no such query.
   */
  readonly sharedMemoryQuery?: () => boolean | undefined;
  /**
   * The registration ops of this device: a device buffer of `bytes` bytes, released when `f` returns or
   * throws. Absent for a backend that cannot register host memory.
   */
  readonly withOps?: <T>(bytes: number, f: (ops: Ops) => T) => T;
  /**
   * Present when the device's backend registers host memory: how the model reads its integrated query. Given
   * by the backend (bindings/backends/), so that the model names no driver: a backend added to the registry
   * brings its own.
   */
  readonly registration?: RegistrationPolicy;
}

/** What a failed integrated query means on a backend that registers host memory. */
export interface RegistrationPolicy {
  /** 'integrated': the driver counts a failed query as an integrated device (HIP); 'unknown': a device of unknown kind (CUDA). */
  readonly failedQuery: 'integrated' | 'unknown';
}

/**
 * The framework names the model knows ("listed"). A name is handled as a listed one when it is that name or a
 * family variant of it.
 */
export const LISTED_FRAMEWORKS = ['cuda', 'hip', 'opencl', 'vulkan', 'metal', 'native', 'cpu'] as const;
export type Family = (typeof LISTED_FRAMEWORKS)[number];

/**
 * The family of a framework name, or undefined when the name is neither listed nor a family variant.
 *
 * The one rule: compared without case and surrounding blanks, a name is a FAMILY VARIANT of a listed name when
 * it starts with that name and the character right after it is not a letter (a digit, '-', '_', '.', ' ', ...).
 * So `CUDA-12.4`, `cuda12`, `HIP_ROCm7`, `OpenCL 3.0` and `Vulkan1.3` are variants; `cudax`, `hipster` and
 * `ROCm` are not (and are refused as Not_measured).
 */
export function frameworkFamily(framework: string): Family | undefined {
  const name = framework.trim().toLowerCase();
  for (const listed of LISTED_FRAMEWORKS) {
    if (name === listed) return listed;
    if (name.startsWith(listed) && !/^[a-z]/.test(name.slice(listed.length))) return listed;
  }
  return undefined;
}

/** What a failed integrated query is refused as, by the backend's policy. */
const FAILED_QUERY: { readonly [F in RegistrationPolicy['failedQuery']]: Refusal } = { integrated: Integrated_gpu, unknown: Device_kind_unknown };

/** The opt-in a caller may set to ask for registration on Vulkan. The model ignores it: Vulkan is refused. */
export const VULKAN_OPT_IN_ENV = 'MAPPED_REG_VULKAN_HOST_REGISTER';

/**
 * Decided from the device and its backend alone; never registers or copies anything.
 * Order: Vulkan first (before any query, whatever the opt-in says); a framework neither listed nor a variant,
 * on a backend that does not register: Not_measured; a CPU device, a Native/CPU backend and Metal: Not_needed;
 * a backend that registers (Device.registration: CUDA, HIP, one added to the registry) asks the integrated
 * query once (integrated: Integrated_gpu; discrete: Self_test_required; no answer: Device_kind_unknown; a
 * failed query: as its policy says, Integrated_gpu on HIP, Device_kind_unknown on CUDA); any other device (GPU
 * OpenCL): Not_measured.
 */
export function staticVerdict(device: Device): Static {
  const family = frameworkFamily(device.framework);
  if (family === 'vulkan') {
    const optIn = process.env[VULKAN_OPT_IN_ENV];
    const ignored = optIn ? `; ${VULKAN_OPT_IN_ENV}=${optIn} is ignored` : '';
    return Decided(Refused(Kernel_hazard(`registering host memory through Vulkan crashed the Linux kernel on AMD GPUs (kernel oopses, Sarek issues #503/#504), so it is never tried${ignored}`)));
  }
  if (family === undefined && !device.registration) {
    return Decided(Refused(Not_measured(`framework "${device.framework}" is neither listed nor a family variant of a listed one`)));
  }
  if (device.type === 'cpu' || family === 'native' || family === 'cpu') {
    return Decided(Not_needed('a CPU device reads host memory directly'));
  }
  if (family === 'metal') return Decided(Not_needed('Metal: unified memory, the device reads host memory directly'));
  if (device.registration) return askedVerdict(device, device.registration);
  return Decided(Refused(Not_measured(`no measurement shows registration of file mappings on ${device.framework} ${device.type} devices`)));
}

/** The verdict of a device whose backend registers: its integrated query, asked once, read by its policy. */
function askedVerdict(device: Device, policy: RegistrationPolicy): Static {
  if (!device.sharedMemoryQuery) return Decided(Refused(Device_kind_unknown));
  let integrated: boolean | undefined;
  try {
    integrated = device.sharedMemoryQuery();
  } catch (e) {
    if (isFatal(e)) throw e;
    return Decided(Refused(FAILED_QUERY[policy.failedQuery]));
  }
  if (integrated === true) return Decided(Refused(Integrated_gpu));
  if (integrated === false) return Self_test_required;
  return Decided(Refused(Device_kind_unknown));
}
