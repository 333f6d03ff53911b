// Vulkan device discovery through koffi. Discovery only: an instance is created to list and describe the
// physical devices, then destroyed; no logical device, memory or registration call is ever made.

import koffi from 'koffi';
import type { KoffiFunc, LibraryHandle } from 'koffi';
import { type ApiLibrary, type ApiDevice, type ApiDiscovery, declareType, discoverWith, pciBusIdText } from './api-library.js';

export type { ApiDevice, ApiDiscovery } from './api-library.js';

/** Environment variable naming the Vulkan loader to load instead of the defaults. */
export const VULKAN_LIBRARY_ENV = 'MAPPED_REG_VULKAN_LIBRARY';
/** Tried in this order when neither a path nor the environment variable is given. */
export const VULKAN_DEFAULT_LIBRARIES: readonly string[] = ['libvulkan.so.1', 'libvulkan.so'];

// ---------------------------------------------------------------------------------------------------------
// C declarations (vulkan/vulkan_core.h)

const VK_SUCCESS = 0;
const VK_INCOMPLETE = 5;
const VK_ERROR_INCOMPATIBLE_DRIVER = -9;

const VK_STRUCTURE_TYPE_APPLICATION_INFO = 0;
const VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1;
const VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001;
const VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT = 1000212000;

const VK_API_VERSION_1_0 = makeApiVersion(1, 0, 0);
const VK_API_VERSION_1_1 = makeApiVersion(1, 1, 0);

const VK_EXT_PCI_BUS_INFO = 'VK_EXT_pci_bus_info';
const VK_MAX_EXTENSION_NAME_SIZE = 256;

const RESULT_NAMES: Record<number, string> = {
  [1]: 'VK_NOT_READY',
  [2]: 'VK_TIMEOUT',
  [5]: 'VK_INCOMPLETE',
  [-1]: 'VK_ERROR_OUT_OF_HOST_MEMORY',
  [-2]: 'VK_ERROR_OUT_OF_DEVICE_MEMORY',
  [-3]: 'VK_ERROR_INITIALIZATION_FAILED',
  [-4]: 'VK_ERROR_DEVICE_LOST',
  [-6]: 'VK_ERROR_LAYER_NOT_PRESENT',
  [-7]: 'VK_ERROR_EXTENSION_NOT_PRESENT',
  [-9]: 'VK_ERROR_INCOMPATIBLE_DRIVER',
  [-13]: 'VK_ERROR_UNKNOWN',
};

/** Vulkan vendor ids (PCI ids, and VkVendorId for vendors without one). */
const VENDOR_NAMES: Record<number, string> = {
  0x1002: 'AMD',
  0x1010: 'ImgTec',
  0x106b: 'Apple',
  0x10de: 'NVIDIA',
  0x13b5: 'ARM',
  0x14e4: 'Broadcom',
  0x5143: 'Qualcomm',
  0x8086: 'Intel',
  0x10001: 'Vivante',
  0x10002: 'VeriSilicon',
  0x10003: 'Kazan',
  0x10004: 'Codeplay',
  0x10005: 'Mesa',
  0x10006: 'PoCL',
};

declareType('VkResult', koffi.type('int32_t'));
declareType('VkStructureType', koffi.type('int32_t'));
declareType('VkPhysicalDeviceType', koffi.type('int32_t'));
declareType('VkFlags', koffi.type('uint32_t'));
declareType('VkBool32', koffi.type('uint32_t'));
declareType('VkDeviceSize', koffi.type('uint64_t'));
declareType('VkSampleCountFlags', koffi.type('uint32_t'));
declareType('VkInstanceCreateFlags', koffi.type('uint32_t'));
// Dispatchable handles: pointers to opaque driver objects.
declareType('VkInstance', koffi.pointer(koffi.opaque()));
declareType('VkPhysicalDevice', koffi.pointer(koffi.opaque()));
// Only ever passed as NULL.
declareType('VkAllocationCallbacks', koffi.opaque());

declareType(
  'VkApplicationInfo',
  koffi.struct({
    sType: 'VkStructureType',
    pNext: 'const void *',
    pApplicationName: 'const char *',
    applicationVersion: 'uint32_t',
    pEngineName: 'const char *',
    engineVersion: 'uint32_t',
    apiVersion: 'uint32_t',
  }),
);

declareType(
  'VkInstanceCreateInfo',
  koffi.struct({
    sType: 'VkStructureType',
    pNext: 'const void *',
    flags: 'VkInstanceCreateFlags',
    pApplicationInfo: 'const VkApplicationInfo *',
    enabledLayerCount: 'uint32_t',
    ppEnabledLayerNames: 'const char **',
    enabledExtensionCount: 'uint32_t',
    ppEnabledExtensionNames: 'const char **',
  }),
);

// Member for member as in vulkan_core.h: only deviceName/deviceType/ids/versions are read, but the driver
// writes the whole struct, so its size and every offset must match the C layout (824 bytes on LP64).
declareType(
  'VkPhysicalDeviceLimits',
  koffi.struct({
    maxImageDimension1D: 'uint32_t',
    maxImageDimension2D: 'uint32_t',
    maxImageDimension3D: 'uint32_t',
    maxImageDimensionCube: 'uint32_t',
    maxImageArrayLayers: 'uint32_t',
    maxTexelBufferElements: 'uint32_t',
    maxUniformBufferRange: 'uint32_t',
    maxStorageBufferRange: 'uint32_t',
    maxPushConstantsSize: 'uint32_t',
    maxMemoryAllocationCount: 'uint32_t',
    maxSamplerAllocationCount: 'uint32_t',
    bufferImageGranularity: 'VkDeviceSize',
    sparseAddressSpaceSize: 'VkDeviceSize',
    maxBoundDescriptorSets: 'uint32_t',
    maxPerStageDescriptorSamplers: 'uint32_t',
    maxPerStageDescriptorUniformBuffers: 'uint32_t',
    maxPerStageDescriptorStorageBuffers: 'uint32_t',
    maxPerStageDescriptorSampledImages: 'uint32_t',
    maxPerStageDescriptorStorageImages: 'uint32_t',
    maxPerStageDescriptorInputAttachments: 'uint32_t',
    maxPerStageResources: 'uint32_t',
    maxDescriptorSetSamplers: 'uint32_t',
    maxDescriptorSetUniformBuffers: 'uint32_t',
    maxDescriptorSetUniformBuffersDynamic: 'uint32_t',
    maxDescriptorSetStorageBuffers: 'uint32_t',
    maxDescriptorSetStorageBuffersDynamic: 'uint32_t',
    maxDescriptorSetSampledImages: 'uint32_t',
    maxDescriptorSetStorageImages: 'uint32_t',
    maxDescriptorSetInputAttachments: 'uint32_t',
    maxVertexInputAttributes: 'uint32_t',
    maxVertexInputBindings: 'uint32_t',
    maxVertexInputAttributeOffset: 'uint32_t',
    maxVertexInputBindingStride: 'uint32_t',
    maxVertexOutputComponents: 'uint32_t',
    maxTessellationGenerationLevel: 'uint32_t',
    maxTessellationPatchSize: 'uint32_t',
    maxTessellationControlPerVertexInputComponents: 'uint32_t',
    maxTessellationControlPerVertexOutputComponents: 'uint32_t',
    maxTessellationControlPerPatchOutputComponents: 'uint32_t',
    maxTessellationControlTotalOutputComponents: 'uint32_t',
    maxTessellationEvaluationInputComponents: 'uint32_t',
    maxTessellationEvaluationOutputComponents: 'uint32_t',
    maxGeometryShaderInvocations: 'uint32_t',
    maxGeometryInputComponents: 'uint32_t',
    maxGeometryOutputComponents: 'uint32_t',
    maxGeometryOutputVertices: 'uint32_t',
    maxGeometryTotalOutputComponents: 'uint32_t',
    maxFragmentInputComponents: 'uint32_t',
    maxFragmentOutputAttachments: 'uint32_t',
    maxFragmentDualSrcAttachments: 'uint32_t',
    maxFragmentCombinedOutputResources: 'uint32_t',
    maxComputeSharedMemorySize: 'uint32_t',
    maxComputeWorkGroupCount: 'uint32_t [3]',
    maxComputeWorkGroupInvocations: 'uint32_t',
    maxComputeWorkGroupSize: 'uint32_t [3]',
    subPixelPrecisionBits: 'uint32_t',
    subTexelPrecisionBits: 'uint32_t',
    mipmapPrecisionBits: 'uint32_t',
    maxDrawIndexedIndexValue: 'uint32_t',
    maxDrawIndirectCount: 'uint32_t',
    maxSamplerLodBias: 'float',
    maxSamplerAnisotropy: 'float',
    maxViewports: 'uint32_t',
    maxViewportDimensions: 'uint32_t [2]',
    viewportBoundsRange: 'float [2]',
    viewportSubPixelBits: 'uint32_t',
    minMemoryMapAlignment: 'size_t',
    minTexelBufferOffsetAlignment: 'VkDeviceSize',
    minUniformBufferOffsetAlignment: 'VkDeviceSize',
    minStorageBufferOffsetAlignment: 'VkDeviceSize',
    minTexelOffset: 'int32_t',
    maxTexelOffset: 'uint32_t',
    minTexelGatherOffset: 'int32_t',
    maxTexelGatherOffset: 'uint32_t',
    minInterpolationOffset: 'float',
    maxInterpolationOffset: 'float',
    subPixelInterpolationOffsetBits: 'uint32_t',
    maxFramebufferWidth: 'uint32_t',
    maxFramebufferHeight: 'uint32_t',
    maxFramebufferLayers: 'uint32_t',
    framebufferColorSampleCounts: 'VkSampleCountFlags',
    framebufferDepthSampleCounts: 'VkSampleCountFlags',
    framebufferStencilSampleCounts: 'VkSampleCountFlags',
    framebufferNoAttachmentsSampleCounts: 'VkSampleCountFlags',
    maxColorAttachments: 'uint32_t',
    sampledImageColorSampleCounts: 'VkSampleCountFlags',
    sampledImageIntegerSampleCounts: 'VkSampleCountFlags',
    sampledImageDepthSampleCounts: 'VkSampleCountFlags',
    sampledImageStencilSampleCounts: 'VkSampleCountFlags',
    storageImageSampleCounts: 'VkSampleCountFlags',
    maxSampleMaskWords: 'uint32_t',
    timestampComputeAndGraphics: 'VkBool32',
    timestampPeriod: 'float',
    maxClipDistances: 'uint32_t',
    maxCullDistances: 'uint32_t',
    maxCombinedClipAndCullDistances: 'uint32_t',
    discreteQueuePriorities: 'uint32_t',
    pointSizeRange: 'float [2]',
    lineWidthRange: 'float [2]',
    pointSizeGranularity: 'float',
    lineWidthGranularity: 'float',
    strictLines: 'VkBool32',
    standardSampleLocations: 'VkBool32',
    optimalBufferCopyOffsetAlignment: 'VkDeviceSize',
    optimalBufferCopyRowPitchAlignment: 'VkDeviceSize',
    nonCoherentAtomSize: 'VkDeviceSize',
  }),
);

declareType(
  'VkPhysicalDeviceSparseProperties',
  koffi.struct({
    residencyStandard2DBlockShape: 'VkBool32',
    residencyStandard2DMultisampleBlockShape: 'VkBool32',
    residencyStandard3DBlockShape: 'VkBool32',
    residencyAlignedMipSize: 'VkBool32',
    residencyNonResidentStrict: 'VkBool32',
  }),
);

// registered by name: the prototypes below refer to it as a string
declareType(
  'VkPhysicalDeviceProperties',
  koffi.struct({
    apiVersion: 'uint32_t',
    driverVersion: 'uint32_t',
    vendorID: 'uint32_t',
    deviceID: 'uint32_t',
    deviceType: 'VkPhysicalDeviceType',
    deviceName: 'char [256]', // VK_MAX_PHYSICAL_DEVICE_NAME_SIZE
    pipelineCacheUUID: 'uint8_t [16]', // VK_UUID_SIZE
    limits: 'VkPhysicalDeviceLimits',
    sparseProperties: 'VkPhysicalDeviceSparseProperties',
  }),
);

const VkPhysicalDeviceProperties2 = declareType(
  'VkPhysicalDeviceProperties2',
  koffi.struct({
    sType: 'VkStructureType',
    pNext: 'void *',
    properties: 'VkPhysicalDeviceProperties',
  }),
);

const VkPhysicalDevicePCIBusInfoPropertiesEXT = declareType(
  'VkPhysicalDevicePCIBusInfoPropertiesEXT',
  koffi.struct({
    sType: 'VkStructureType',
    pNext: 'void *',
    pciDomain: 'uint32_t',
    pciBus: 'uint32_t',
    pciDevice: 'uint32_t',
    pciFunction: 'uint32_t',
  }),
);

const VkExtensionProperties = declareType(
  'VkExtensionProperties',
  koffi.struct({
    extensionName: 'char [256]', // VK_MAX_EXTENSION_NAME_SIZE
    specVersion: 'uint32_t',
  }),
);

/** What koffi gives back for the fields of VkPhysicalDeviceProperties this module reads. */
interface PhysicalDeviceProperties {
  apiVersion: number;
  driverVersion: number;
  vendorID: number;
  deviceID: number;
  deviceType: number;
  deviceName: string;
}

interface ApplicationInfo {
  sType: number;
  pNext: null;
  pApplicationName: string;
  applicationVersion: number;
  pEngineName: string | null;
  engineVersion: number;
  apiVersion: number;
}

interface InstanceCreateInfo {
  sType: number;
  pNext: null;
  flags: number;
  pApplicationInfo: ApplicationInfo;
  enabledLayerCount: number;
  ppEnabledLayerNames: null;
  enabledExtensionCount: number;
  ppEnabledExtensionNames: null;
}

/** Handles are BigInt addresses (koffi 3); output arrays of handles are JS arrays koffi fills in. */
type Handle = bigint;

interface VulkanApi {
  vkCreateInstance: KoffiFunc<(createInfo: InstanceCreateInfo, allocator: null, instance: (Handle | null)[]) => number>;
  vkDestroyInstance: KoffiFunc<(instance: Handle, allocator: null) => void>;
  vkEnumeratePhysicalDevices: KoffiFunc<(instance: Handle, count: number[], devices: (Handle | null)[] | null) => number>;
  vkGetPhysicalDeviceProperties: KoffiFunc<(device: Handle, properties: Partial<PhysicalDeviceProperties>) => void>;
  vkEnumerateDeviceExtensionProperties: KoffiFunc<(device: Handle, layerName: null, count: number[], properties: Buffer | null) => number>;
  /** Vulkan 1.1 entry points: null when the loader predates them. */
  vkEnumerateInstanceVersion: KoffiFunc<(version: number[]) => number> | null;
  vkGetPhysicalDeviceProperties2: KoffiFunc<(device: Handle, properties: bigint) => void> | null;
}

const PROTOTYPES = {
  vkCreateInstance:
    'VkResult vkCreateInstance(const VkInstanceCreateInfo *pCreateInfo, const VkAllocationCallbacks *pAllocator, _Out_ VkInstance *pInstance)',
  vkDestroyInstance: 'void vkDestroyInstance(VkInstance instance, const VkAllocationCallbacks *pAllocator)',
  vkEnumeratePhysicalDevices:
    'VkResult vkEnumeratePhysicalDevices(VkInstance instance, _Inout_ uint32_t *pPhysicalDeviceCount, _Out_ VkPhysicalDevice *pPhysicalDevices)',
  vkGetPhysicalDeviceProperties:
    'void vkGetPhysicalDeviceProperties(VkPhysicalDevice physicalDevice, _Out_ VkPhysicalDeviceProperties *pProperties)',
  vkEnumerateDeviceExtensionProperties:
    'VkResult vkEnumerateDeviceExtensionProperties(VkPhysicalDevice physicalDevice, const char *pLayerName, _Inout_ uint32_t *pPropertyCount, _Out_ VkExtensionProperties *pProperties)',
  vkEnumerateInstanceVersion: 'VkResult vkEnumerateInstanceVersion(_Out_ uint32_t *pApiVersion)',
  vkGetPhysicalDeviceProperties2:
    'void vkGetPhysicalDeviceProperties2(VkPhysicalDevice physicalDevice, VkPhysicalDeviceProperties2 *pProperties)',
} as const;

function bind(lib: LibraryHandle): VulkanApi {
  const optional = (prototype: string) => {
    try {
      return lib.func(prototype);
    } catch {
      return null;
    }
  };
  return {
    vkCreateInstance: lib.func(PROTOTYPES.vkCreateInstance),
    vkDestroyInstance: lib.func(PROTOTYPES.vkDestroyInstance),
    vkEnumeratePhysicalDevices: lib.func(PROTOTYPES.vkEnumeratePhysicalDevices),
    vkGetPhysicalDeviceProperties: lib.func(PROTOTYPES.vkGetPhysicalDeviceProperties),
    vkEnumerateDeviceExtensionProperties: lib.func(PROTOTYPES.vkEnumerateDeviceExtensionProperties),
    vkEnumerateInstanceVersion: optional(PROTOTYPES.vkEnumerateInstanceVersion),
    vkGetPhysicalDeviceProperties2: optional(PROTOTYPES.vkGetPhysicalDeviceProperties2),
  } as VulkanApi;
}

// ---------------------------------------------------------------------------------------------------------
// Loading

const LIBRARY: ApiLibrary<VulkanApi> = { label: 'Vulkan', what: 'a Vulkan library', env: VULKAN_LIBRARY_ENV, defaults: VULKAN_DEFAULT_LIBRARIES, bind };

// ---------------------------------------------------------------------------------------------------------
// Queries

function makeApiVersion(major: number, minor: number, patch: number): number {
  return ((major << 22) | (minor << 12) | patch) >>> 0;
}

function resultText(code: number): string {
  const name = RESULT_NAMES[code];
  return name ? `${name} (${code})` : `VkResult ${code}`;
}

/** VK_API_VERSION_MAJOR/MINOR/PATCH (variant bits dropped). */
function apiVersionText(version: number): string {
  return `${(version >>> 22) & 0x7f}.${(version >>> 12) & 0x3ff}.${version & 0xfff}`;
}

/** driverVersion is packed by vendor convention: NVIDIA uses 10.8.8.6 bits, everyone else on Linux VK_MAKE_VERSION. */
function driverVersionText(vendorID: number, version: number): string {
  if (vendorID === 0x10de) {
    return `${(version >>> 22) & 0x3ff}.${(version >>> 14) & 0xff}.${(version >>> 6) & 0xff}.${version & 0x3f}`;
  }
  return `${(version >>> 22) & 0x3ff}.${(version >>> 12) & 0x3ff}.${version & 0xfff}`;
}

function vendorText(vendorID: number): string {
  const id = `0x${vendorID.toString(16).padStart(4, '0')}`;
  const name = VENDOR_NAMES[vendorID];
  return name ? `${name} (${id})` : id;
}

const DEVICE_TYPES: Record<number, Pick<ApiDevice, 'type' | 'integrated'>> = {
  1: { type: 'integrated-gpu', integrated: true }, // VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU
  2: { type: 'gpu', integrated: false }, // VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
  3: { type: 'virtual-gpu', integrated: null }, // VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU
  4: { type: 'cpu', integrated: null }, // VK_PHYSICAL_DEVICE_TYPE_CPU
};

function deviceExtensions(api: VulkanApi, device: Handle, where: string, errors: string[]): string[] | null {
  const count = [0];
  let rc = api.vkEnumerateDeviceExtensionProperties(device, null, count, null);
  if (rc !== VK_SUCCESS) {
    errors.push(`vkEnumerateDeviceExtensionProperties[${where}] returned ${resultText(rc)}`);
    return null;
  }
  const stride = VkExtensionProperties.size;
  const buffer = Buffer.alloc(stride * (count[0] ?? 0));
  rc = api.vkEnumerateDeviceExtensionProperties(device, null, count, buffer);
  if (rc !== VK_SUCCESS && rc !== VK_INCOMPLETE) {
    errors.push(`vkEnumerateDeviceExtensionProperties[${where}] returned ${resultText(rc)}`);
    return null;
  }
  const names: string[] = [];
  for (let i = 0; i < (count[0] ?? 0); i++) {
    const start = i * stride;
    const end = buffer.indexOf(0, start);
    names.push(buffer.toString('latin1', start, end < 0 || end > start + VK_MAX_EXTENSION_NAME_SIZE ? start + VK_MAX_EXTENSION_NAME_SIZE : end));
  }
  return names;
}

/** VK_EXT_pci_bus_info through vkGetPhysicalDeviceProperties2 (Vulkan 1.1), when the device offers it. */
function pciBusId(api: VulkanApi, device: Handle, where: string, errors: string[]): string | null {
  const getProperties2 = api.vkGetPhysicalDeviceProperties2;
  if (getProperties2 === null) return null;
  const extensions = deviceExtensions(api, device, where, errors);
  if (extensions === null || !extensions.includes(VK_EXT_PCI_BUS_INFO)) return null;
  // The chain is plain C memory: properties2.pNext holds the address of the PCI struct.
  const pci: bigint = koffi.alloc(VkPhysicalDevicePCIBusInfoPropertiesEXT, 1);
  const properties2: bigint = koffi.alloc(VkPhysicalDeviceProperties2, 1);
  try {
    koffi.encode(pci, VkPhysicalDevicePCIBusInfoPropertiesEXT, {
      sType: VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT,
      pNext: null,
      pciDomain: 0,
      pciBus: 0,
      pciDevice: 0,
      pciFunction: 0,
    });
    koffi.encode(properties2, 0, 'VkStructureType', VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    koffi.encode(properties2, koffi.offsetof(VkPhysicalDeviceProperties2, 'pNext'), 'void *', pci);
    getProperties2(device, properties2);
    const bus = koffi.decode(pci, VkPhysicalDevicePCIBusInfoPropertiesEXT) as { pciDomain: number; pciBus: number; pciDevice: number; pciFunction: number };
    return pciBusIdText(bus.pciDomain, bus.pciBus, bus.pciDevice, bus.pciFunction);
  } finally {
    koffi.free(properties2);
    koffi.free(pci);
  }
}

function enumeratePhysicalDevices(api: VulkanApi, instance: Handle, errors: string[]): Handle[] {
  // The count can change between the two calls (VK_INCOMPLETE): ask again a few times, then keep what came.
  for (let attempt = 0; ; attempt++) {
    const count = [0];
    let rc = api.vkEnumeratePhysicalDevices(instance, count, null);
    if (rc !== VK_SUCCESS) {
      errors.push(`vkEnumeratePhysicalDevices returned ${resultText(rc)}`);
      return [];
    }
    const n = count[0] ?? 0;
    if (n === 0) return [];
    const out: (Handle | null)[] = new Array<Handle | null>(n).fill(null);
    rc = api.vkEnumeratePhysicalDevices(instance, count, out);
    if (rc === VK_INCOMPLETE && attempt < 3) continue;
    if (rc !== VK_SUCCESS && rc !== VK_INCOMPLETE) {
      errors.push(`vkEnumeratePhysicalDevices returned ${resultText(rc)}`);
      return [];
    }
    return out.slice(0, count[0] ?? n).filter((h): h is Handle => typeof h === 'bigint' && h !== 0n);
  }
}

/**
 * Lists the Vulkan physical devices. Never throws: a missing library, a library that is not the Vulkan loader
 * and failing calls come back in `error` (the call that failed, named with its VkResult), with every device
 * that could still be described. A loader that finds no driver at all (vkCreateInstance gives
 * VK_ERROR_INCOMPATIBLE_DRIVER) means zero devices, not an error.
 */
export function discoverVulkan(libraryPath?: string): ApiDiscovery {
  return discoverWith(LIBRARY, libraryPath, (api, devices, errors) => {
    // Ask for 1.1 (for vkGetPhysicalDeviceProperties2) when the loader has it; a 1.0 loader gets 1.0.
    let instanceVersion = VK_API_VERSION_1_0;
    if (api.vkEnumerateInstanceVersion !== null) {
      const version = [0];
      if (api.vkEnumerateInstanceVersion(version) === VK_SUCCESS) instanceVersion = version[0] ?? VK_API_VERSION_1_0;
    }
    const apiVersion = instanceVersion >= VK_API_VERSION_1_1 ? VK_API_VERSION_1_1 : VK_API_VERSION_1_0;
    const instanceOut: (Handle | null)[] = [null];
    const rc = api.vkCreateInstance(
      {
        sType: VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        pNext: null,
        flags: 0,
        pApplicationInfo: {
          sType: VK_STRUCTURE_TYPE_APPLICATION_INFO,
          pNext: null,
          pApplicationName: 'mapped-reg-conformance',
          applicationVersion: 1,
          pEngineName: null,
          engineVersion: 0,
          apiVersion,
        },
        enabledLayerCount: 0,
        ppEnabledLayerNames: null,
        enabledExtensionCount: 0,
        ppEnabledExtensionNames: null,
      },
      null,
      instanceOut,
    );
    const instance = instanceOut[0];
    if (rc === VK_ERROR_INCOMPATIBLE_DRIVER) {
      // No driver (ICD) present: nothing to list.
    } else if (rc !== VK_SUCCESS || typeof instance !== 'bigint' || instance === 0n) {
      errors.push(`vkCreateInstance returned ${resultText(rc)}`);
    } else {
      try {
        enumeratePhysicalDevices(api, instance, errors).forEach((device, d) => {
          const properties: Partial<PhysicalDeviceProperties> = {};
          api.vkGetPhysicalDeviceProperties(device, properties);
          const vendorID = properties.vendorID ?? 0;
          const deviceApi = properties.apiVersion ?? 0;
          const kind = DEVICE_TYPES[properties.deviceType ?? 0] ?? { type: 'other' as const, integrated: null };
          devices.push({
            index: devices.length,
            name: properties.deviceName ?? '',
            type: kind.type,
            integrated: kind.integrated,
            vendor: vendorText(vendorID),
            driverVersion: driverVersionText(vendorID, properties.driverVersion ?? 0),
            pciBusId: apiVersion >= VK_API_VERSION_1_1 && deviceApi >= VK_API_VERSION_1_1 ? pciBusId(api, device, `device ${d}`, errors) : null,
            platform: `Vulkan ${apiVersionText(deviceApi)}`,
          });
        });
      } finally {
        api.vkDestroyInstance(instance, null);
      }
    }
  });
}
