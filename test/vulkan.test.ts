// ApiDiscovery against the real Vulkan loader with Mesa's lavapipe (CI installs libvulkan1 and
// mesa-vulkan-drivers: a missing library fails these tests, it does not skip them), and against a small fake
// libvulkan compiled here with cc for what lavapipe cannot show (GPU types, PCI bus ids, failing calls).

import { join } from 'node:path';
import koffi from 'koffi';
import { beforeAll, describe, expect, it } from 'vitest';
import { discoverVulkan, VULKAN_DEFAULT_LIBRARIES, VULKAN_LIBRARY_ENV } from '../bindings/vulkan.js';
import { compiledFake } from './support/compiled-fake.js';
import { discoverInMode, discoverSystemLibrary, expectNoDevices, type FakeModes } from './support/fake-api-modes.js';
import { describeUnusableLibrary } from './support/unusable-library.js';

// A stand-in for the loader: it exports the entry points the binding binds, checks what it is given, and
// counts instances so the test can see each one destroyed. The limits block is opaque here: its member
// layout is checked against vulkan_core.h below.
const FAKE_VULKAN_C = String.raw`
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAKE_VERSION(major, minor, patch) (((uint32_t)(major) << 22) | ((uint32_t)(minor) << 12) | (uint32_t)(patch))

typedef struct { int32_t sType; const void *pNext; const char *pApplicationName; uint32_t applicationVersion;
                 const char *pEngineName; uint32_t engineVersion; uint32_t apiVersion; } VkApplicationInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; const VkApplicationInfo *pApplicationInfo;
                 uint32_t enabledLayerCount; const char *const *ppEnabledLayerNames;
                 uint32_t enabledExtensionCount; const char *const *ppEnabledExtensionNames; } VkInstanceCreateInfo;
typedef struct { uint32_t apiVersion, driverVersion, vendorID, deviceID; int32_t deviceType; char deviceName[256];
                 uint8_t pipelineCacheUUID[16]; _Alignas(8) unsigned char limits[504]; uint32_t sparse[5]; } VkPhysicalDeviceProperties;
typedef struct { int32_t sType; void *pNext; } VkBaseOutStructure;
typedef struct { int32_t sType; void *pNext; VkPhysicalDeviceProperties properties; } VkPhysicalDeviceProperties2;
typedef struct { int32_t sType; void *pNext; uint32_t pciDomain, pciBus, pciDevice, pciFunction; } VkPhysicalDevicePCIBusInfoPropertiesEXT;
typedef struct { char extensionName[256]; uint32_t specVersion; } VkExtensionProperties;

typedef struct { const char *name; uint32_t api, driver, vendor; int32_t type; int pci_ext; uint32_t pci[4]; } device_t;

static device_t devices[] = {
  { "Fake Intel iGPU", MAKE_VERSION(1, 3, 250), MAKE_VERSION(23, 1, 4), 0x8086, 1, 1, {0, 0, 2, 0} },
  { "Fake NVIDIA dGPU", MAKE_VERSION(1, 3, 260), (535u << 22) | (154u << 14) | (5u << 6), 0x10de, 2, 1, {1, 0x3b, 0, 0} },
  /* Vulkan 1.0 device: its PCI extension must not be queried through vkGetPhysicalDeviceProperties2. */
  { "Fake virtio GPU", MAKE_VERSION(1, 0, 3), MAKE_VERSION(0, 9, 1), 0x1af4, 3, 1, {0, 0, 7, 0} },
  { "Fake other device", MAKE_VERSION(1, 2, 0), MAKE_VERSION(2, 0, 0), 0x10006, 0, 0, {0} },
};
#define DEVICE_COUNT 4

static int live_instances, created_instances, instance_token;
static uint32_t last_api_version;
int fake_live_instances(void) { return live_instances; }
int fake_created_instances(void) { return created_instances; }
uint32_t fake_last_api_version(void) { return last_api_version; }

static const char *mode(void) { const char *m = getenv("FAKE_VK_MODE"); return m ? m : "full"; }

int32_t vkEnumerateInstanceVersion(uint32_t *version) { *version = MAKE_VERSION(1, 3, 250); return 0; }

int32_t vkCreateInstance(const VkInstanceCreateInfo *info, const void *allocator, void **instance) {
  if (!strcmp(mode(), "create-fail")) return -3;
  if (!strcmp(mode(), "no-driver")) return -9;
  if (!info || info->sType != 1 || info->pNext || info->enabledLayerCount || info->enabledExtensionCount || allocator) return -13;
  if (!info->pApplicationInfo || info->pApplicationInfo->sType != 0 || !info->pApplicationInfo->pApplicationName) return -13;
  last_api_version = info->pApplicationInfo->apiVersion;
  live_instances++;
  created_instances++;
  *instance = &instance_token;
  return 0;
}

void vkDestroyInstance(void *instance, const void *allocator) { if (instance == &instance_token) live_instances--; }

int32_t vkEnumeratePhysicalDevices(void *instance, uint32_t *count, void **out) {
  if (instance != &instance_token) return -13;
  if (!strcmp(mode(), "enum-fail")) return -3;
  if (!out) { *count = DEVICE_COUNT; return 0; }
  uint32_t n = *count < DEVICE_COUNT ? *count : DEVICE_COUNT;
  for (uint32_t i = 0; i < n; i++) out[i] = &devices[i];
  *count = n;
  return n < DEVICE_COUNT ? 5 : 0;
}

void vkGetPhysicalDeviceProperties(void *device, VkPhysicalDeviceProperties *p) {
  device_t *d = device;
  memset(p, 0xA5, sizeof *p); /* garbage everywhere the binding must not read */
  p->apiVersion = d->api; p->driverVersion = d->driver; p->vendorID = d->vendor; p->deviceID = 0x1234;
  p->deviceType = d->type;
  memset(p->deviceName, 0, sizeof p->deviceName);
  strcpy(p->deviceName, d->name);
}

int32_t vkEnumerateDeviceExtensionProperties(void *device, const char *layer, uint32_t *count, VkExtensionProperties *out) {
  device_t *d = device;
  static const char *names[] = { "VK_KHR_swapchain", "VK_EXT_pci_bus_info" };
  uint32_t total = d->pci_ext ? 2 : 1;
  if (layer) return -6;
  if (!strcmp(mode(), "ext-fail")) return -1;
  if (!out) { *count = total; return 0; }
  uint32_t n = *count < total ? *count : total;
  for (uint32_t i = 0; i < n; i++) { memset(out[i].extensionName, 0, 256); strcpy(out[i].extensionName, names[i]); out[i].specVersion = 1; }
  *count = n;
  return n < total ? 5 : 0;
}

void vkGetPhysicalDeviceProperties2(void *device, VkPhysicalDeviceProperties2 *p) {
  device_t *d = device;
  if (p->sType != 1000059001) abort();
  if ((d->api >> 12) < ((1u << 10) | 1u)) abort(); /* only for Vulkan >= 1.1 devices */
  vkGetPhysicalDeviceProperties(device, &p->properties);
  for (VkBaseOutStructure *s = p->pNext; s; s = s->pNext) {
    if (s->sType == 1000212000) {
      if (!d->pci_ext) abort();
      VkPhysicalDevicePCIBusInfoPropertiesEXT *bus = (void *)s;
      bus->pciDomain = d->pci[0]; bus->pciBus = d->pci[1]; bus->pciDevice = d->pci[2]; bus->pciFunction = d->pci[3];
    }
  }
}
`;

const fake = compiledFake('vulkan-test-', FAKE_VULKAN_C, 'libfakevulkan', [VULKAN_LIBRARY_ENV, 'FAKE_VK_MODE', 'VK_DRIVER_FILES', 'VK_ICD_FILENAMES']);
const modes: FakeModes = { discover: discoverVulkan, fake, modeVariable: 'FAKE_VK_MODE' };
let counters: { live: () => number; created: () => number; apiVersion: () => number } | undefined;

beforeAll(() => {
  const lib = koffi.load(fake.library);
  counters = {
    live: lib.func('int fake_live_instances(void)'),
    created: lib.func('int fake_created_instances(void)'),
    apiVersion: lib.func('uint32_t fake_last_api_version(void)'),
  };
});

describe('discoverVulkan on this machine (loader + lavapipe)', () => {
  it('finds the lavapipe CPU device through libvulkan.so.1', () => {
    const found = discoverSystemLibrary(discoverVulkan, VULKAN_LIBRARY_ENV, 'libvulkan.so.1');
    const lavapipe = found.devices.filter((d) => d.type === 'cpu' && d.name.includes('llvmpipe'));
    expect(lavapipe.length).toBeGreaterThanOrEqual(1);
    for (const device of lavapipe) {
      expect(device.integrated).toBeNull();
      expect(device.vendor).toBe('Mesa (0x10005)');
      expect(device.driverVersion).toMatch(/^\d+\.\d+\.\d+$/);
      expect(device.platform).toMatch(/^Vulkan 1\.\d+\.\d+$/);
    }
  });

  it('treats a loader that finds no driver as zero devices', () => {
    process.env.VK_DRIVER_FILES = join(fake.dir, 'no-such-icd.json');
    process.env.VK_ICD_FILENAMES = join(fake.dir, 'no-such-icd.json');
    expect(discoverVulkan('libvulkan.so.1')).toEqual({ library: 'libvulkan.so.1', tried: ['libvulkan.so.1'], devices: [] });
  });

  it('declares VkPhysicalDeviceProperties with the C layout (vulkan_core.h, LP64)', () => {
    // Offsets from offsetof() on vulkan_core.h 1.3.239, x86-64; every member of the koffi declaration was
    // compared with the C compiler's layout when it was written.
    expect(koffi.sizeof('VkPhysicalDeviceProperties')).toBe(824);
    expect(koffi.sizeof('VkPhysicalDeviceLimits')).toBe(504);
    expect(koffi.sizeof('VkPhysicalDeviceSparseProperties')).toBe(20);
    const at = (type: string, member: string) => koffi.offsetof(type, member);
    expect(at('VkPhysicalDeviceProperties', 'deviceType')).toBe(16);
    expect(at('VkPhysicalDeviceProperties', 'deviceName')).toBe(20);
    expect(at('VkPhysicalDeviceProperties', 'pipelineCacheUUID')).toBe(276);
    expect(at('VkPhysicalDeviceProperties', 'limits')).toBe(296);
    expect(at('VkPhysicalDeviceProperties', 'sparseProperties')).toBe(800);
    expect(at('VkPhysicalDeviceLimits', 'bufferImageGranularity')).toBe(48);
    expect(at('VkPhysicalDeviceLimits', 'maxComputeWorkGroupCount')).toBe(220);
    expect(at('VkPhysicalDeviceLimits', 'minMemoryMapAlignment')).toBe(304);
    expect(at('VkPhysicalDeviceLimits', 'timestampPeriod')).toBe(424);
    expect(at('VkPhysicalDeviceLimits', 'nonCoherentAtomSize')).toBe(496);
    expect(koffi.sizeof('VkApplicationInfo')).toBe(48);
    expect(koffi.sizeof('VkInstanceCreateInfo')).toBe(64);
    expect(koffi.sizeof('VkPhysicalDeviceProperties2')).toBe(840);
    expect(koffi.sizeof('VkPhysicalDevicePCIBusInfoPropertiesEXT')).toBe(32);
    expect(koffi.sizeof('VkExtensionProperties')).toBe(260);
  });
});

describeUnusableLibrary(
  { api: 'Vulkan', discover: discoverVulkan, env: VULKAN_LIBRARY_ENV, soname: 'libvulkan.so.1', unversioned: 'libvulkan.so', defaults: VULKAN_DEFAULT_LIBRARIES, other: 'the Vulkan loader', notIt: 'not a Vulkan library', symbol: 'vkCreateInstance', dir: () => fake.dir },
  'discoverVulkan when the library is not usable',
);

describe('discoverVulkan against a fake loader', () => {
  it('maps device types, decodes versions, reads VK_EXT_pci_bus_info and destroys its instance', () => {
    const before = counters?.created() ?? 0;
    const found = discoverVulkan(fake.library);
    expect(found.error).toBeUndefined();
    expect(found.library).toBe(fake.library);
    expect(found.devices).toEqual([
      { index: 0, name: 'Fake Intel iGPU', type: 'integrated-gpu', integrated: true, vendor: 'Intel (0x8086)', driverVersion: '23.1.4', pciBusId: '0000:00:02.0', platform: 'Vulkan 1.3.250' },
      { index: 1, name: 'Fake NVIDIA dGPU', type: 'gpu', integrated: false, vendor: 'NVIDIA (0x10de)', driverVersion: '535.154.5.0', pciBusId: '0001:3b:00.0', platform: 'Vulkan 1.3.260' },
      { index: 2, name: 'Fake virtio GPU', type: 'virtual-gpu', integrated: null, vendor: '0x1af4', driverVersion: '0.9.1', pciBusId: null, platform: 'Vulkan 1.0.3' },
      { index: 3, name: 'Fake other device', type: 'other', integrated: null, vendor: 'PoCL (0x10006)', driverVersion: '2.0.0', pciBusId: null, platform: 'Vulkan 1.2.0' },
    ]);
    expect(counters?.created()).toBe(before + 1);
    expect(counters?.live()).toBe(0);
    expect(counters?.apiVersion()).toBe((1 << 22) | (1 << 12)); // VK_API_VERSION_1_1, the loader being 1.3
  });

  it('names a failing vkCreateInstance with its VkResult', () => {
    expectNoDevices(modes, 'create-fail', 'Vulkan: vkCreateInstance returned VK_ERROR_INITIALIZATION_FAILED (-3)');
  });

  it('treats VK_ERROR_INCOMPATIBLE_DRIVER from vkCreateInstance as zero devices', () => {
    expectNoDevices(modes, 'no-driver');
  });

  it('names a failing vkEnumeratePhysicalDevices and still destroys the instance', () => {
    expectNoDevices(modes, 'enum-fail', 'Vulkan: vkEnumeratePhysicalDevices returned VK_ERROR_INITIALIZATION_FAILED (-3)');
    expect(counters?.live()).toBe(0);
  });

  it('keeps the devices when the PCI extension query fails', () => {
    const found = discoverInMode(modes, 'ext-fail');
    expect(found.devices.map((d) => [d.name, d.pciBusId])).toEqual([
      ['Fake Intel iGPU', null],
      ['Fake NVIDIA dGPU', null],
      ['Fake virtio GPU', null],
      ['Fake other device', null],
    ]);
    expect(found.error).toBe(
      'Vulkan: vkEnumerateDeviceExtensionProperties[device 0] returned VK_ERROR_OUT_OF_HOST_MEMORY (-1); ' +
        'vkEnumerateDeviceExtensionProperties[device 1] returned VK_ERROR_OUT_OF_HOST_MEMORY (-1); ' +
        'vkEnumerateDeviceExtensionProperties[device 3] returned VK_ERROR_OUT_OF_HOST_MEMORY (-1)',
    );
  });
});
