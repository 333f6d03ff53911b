// ApiDiscovery against the real OpenCL ICD loader with PoCL's CPU device (CI installs ocl-icd-libopencl1 and
// pocl-opencl-icd: a missing library fails these tests, it does not skip them), and against a small fake
// libOpenCL compiled here with cc for what PoCL cannot show (GPUs, PCI bus ids, failing calls).

import { describe, expect, it } from 'vitest';
import { discoverOpenCL, OPENCL_DEFAULT_LIBRARIES, OPENCL_LIBRARY_ENV } from '../bindings/opencl.js';
import { compiledFake } from './support/compiled-fake.js';
import { discoverSystemLibrary, expectNoDevices, type FakeModes } from './support/fake-api-modes.js';
import { describeUnusableLibrary } from './support/unusable-library.js';

const FAKE_OPENCL_C = String.raw`
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;

typedef struct { const char *name; cl_int devices_rc; int first, count; } platform_t;
typedef struct {
  const char *name, *vendor, *driver, *extensions;
  cl_ulong type; cl_uint unified; cl_int name_rc; cl_uint pci[4];
} device_t;

static device_t devices[] = {
  /* platform 0 */
  { "Fake iGPU", "FakeVendor", "1.2.3", "cl_khr_icd", 1 << 2, 1, 0, {0} },
  { "Fake dGPU", "FakeVendor", "550.54", "cl_khr_icd cl_khr_pci_bus_info", 1 << 2, 0, 0, {0, 0x65, 0, 0} },
  { "Fake Accelerator", "FakeVendor", "7", "", 1 << 3, 0, 0, {0} },
  { "Nameless", "FakeVendor", "9", "", 1 << 2, 0, -30, {0} },
  /* platform 3 */
  { "Fake CPU", "FakeCPUVendor", "2.0", "", (1 << 0) | (1 << 1), 1, 0, {0} },
};

static platform_t platforms[] = {
  { "Fake GPU Platform", 0, 0, 4 },
  { "Broken Platform", -6, 0, 0 },
  { "Empty Platform", -1, 0, 0 },
  { "Fake CPU Platform", 0, 4, 1 },
};

static const char *mode(void) { const char *m = getenv("FAKE_CL_MODE"); return m ? m : "full"; }

static cl_int info(const void *data, size_t size, size_t value_size, void *value, size_t *size_ret) {
  if (size_ret) *size_ret = size;
  if (value) {
    if (value_size < size) return -30;
    memcpy(value, data, size);
  }
  return 0;
}

cl_int clGetPlatformIDs(cl_uint num_entries, void **out, cl_uint *num_platforms) {
  if (!strcmp(mode(), "none")) return -1001;
  if (!strcmp(mode(), "fail")) return -6;
  if (!out && !num_platforms) return -30;
  if (num_platforms) *num_platforms = 4;
  for (cl_uint i = 0; out && i < num_entries && i < 4; i++) out[i] = &platforms[i];
  return 0;
}

cl_int clGetPlatformInfo(void *platform, cl_uint param, size_t value_size, void *value, size_t *size_ret) {
  platform_t *p = platform;
  if (param != 0x0902) return -30;
  return info(p->name, strlen(p->name) + 1, value_size, value, size_ret);
}

cl_int clGetDeviceIDs(void *platform, cl_ulong type, cl_uint num_entries, void **out, cl_uint *num_devices) {
  platform_t *p = platform;
  if (type != 0xFFFFFFFFull) return -31;
  if (p->devices_rc) return p->devices_rc;
  if (num_devices) *num_devices = p->count;
  for (cl_uint i = 0; out && i < num_entries && i < (cl_uint)p->count; i++) out[i] = &devices[p->first + i];
  return 0;
}

cl_int clGetDeviceInfo(void *device, cl_uint param, size_t value_size, void *value, size_t *size_ret) {
  device_t *d = device;
  switch (param) {
    case 0x1000: return info(&d->type, sizeof d->type, value_size, value, size_ret);
    case 0x102B: return d->name_rc ? d->name_rc : info(d->name, strlen(d->name) + 1, value_size, value, size_ret);
    case 0x102C: return info(d->vendor, strlen(d->vendor) + 1, value_size, value, size_ret);
    case 0x102D: return info(d->driver, strlen(d->driver) + 1, value_size, value, size_ret);
    case 0x1030: return info(d->extensions, strlen(d->extensions) + 1, value_size, value, size_ret);
    case 0x1035: return info(&d->unified, sizeof d->unified, value_size, value, size_ret);
    case 0x410F: return strstr(d->extensions, "cl_khr_pci_bus_info") ? info(d->pci, sizeof d->pci, value_size, value, size_ret) : -30;
    default: return -30;
  }
}
`;

const fake = compiledFake('opencl-test-', FAKE_OPENCL_C, 'libfakeopencl', [OPENCL_LIBRARY_ENV, 'FAKE_CL_MODE']);
const modes: FakeModes = { discover: discoverOpenCL, fake, modeVariable: 'FAKE_CL_MODE' };

describe('discoverOpenCL on this machine (ICD loader + PoCL)', () => {
  it('finds a PoCL CPU device through libOpenCL.so.1', () => {
    const found = discoverSystemLibrary(discoverOpenCL, OPENCL_LIBRARY_ENV, 'libOpenCL.so.1');
    const pocl = found.devices.filter((d) => d.type === 'cpu' && (d.platform ?? '').includes('Portable Computing Language'));
    expect(pocl.length).toBeGreaterThanOrEqual(1);
    for (const device of pocl) {
      expect(device.name.trim()).not.toBe('');
      expect(device.driverVersion.trim()).not.toBe('');
      expect(device.integrated).toBeNull();
    }
  });

  it('gives the same list when asked again (the library is bound once)', () => {
    const first = discoverOpenCL('libOpenCL.so.1');
    const second = discoverOpenCL('libOpenCL.so.1');
    expect(second).toEqual(first);
    expect(first.devices.length).toBeGreaterThan(0);
  });
});

describeUnusableLibrary(
  { api: 'OpenCL', discover: discoverOpenCL, env: OPENCL_LIBRARY_ENV, soname: 'libOpenCL.so.1', unversioned: 'libOpenCL.so', defaults: OPENCL_DEFAULT_LIBRARIES, other: 'OpenCL', notIt: 'not an OpenCL library', symbol: 'clGetPlatformIDs', dir: () => fake.dir },
  'discoverOpenCL when the library is not usable',
);

describe('discoverOpenCL against a fake driver', () => {
  it('describes GPUs, accelerators and PCI bus ids, and names each failing call with its code', () => {
    const found = discoverOpenCL(fake.library);
    expect(found.library).toBe(fake.library);
    expect(found.devices).toEqual([
      { index: 0, name: 'Fake iGPU', type: 'integrated-gpu', integrated: true, vendor: 'FakeVendor', driverVersion: '1.2.3', pciBusId: null, platform: 'Fake GPU Platform' },
      { index: 1, name: 'Fake dGPU', type: 'gpu', integrated: false, vendor: 'FakeVendor', driverVersion: '550.54', pciBusId: '0000:65:00.0', platform: 'Fake GPU Platform' },
      { index: 2, name: 'Fake Accelerator', type: 'accelerator', integrated: null, vendor: 'FakeVendor', driverVersion: '7', pciBusId: null, platform: 'Fake GPU Platform' },
      // Its name query fails: listed with what could be read, and the failure is in `error`.
      { index: 3, name: '', type: 'gpu', integrated: false, vendor: 'FakeVendor', driverVersion: '9', pciBusId: null, platform: 'Fake GPU Platform' },
      // Platform 1 failed clGetDeviceIDs and platform 2 has no devices: discovery goes on past both.
      { index: 4, name: 'Fake CPU', type: 'cpu', integrated: null, vendor: 'FakeCPUVendor', driverVersion: '2.0', pciBusId: null, platform: 'Fake CPU Platform' },
    ]);
    expect(found.error).toBe(
      'OpenCL: clGetDeviceInfo[platform 0 device 3](CL_DEVICE_NAME) returned CL_INVALID_VALUE (-30); ' +
        'clGetDeviceIDs[platform 1](CL_DEVICE_TYPE_ALL) returned CL_OUT_OF_HOST_MEMORY (-6)',
    );
  });

  it('treats CL_PLATFORM_NOT_FOUND_KHR as zero platforms, not an error', () => {
    expectNoDevices(modes, 'none');
  });

  it('reports another clGetPlatformIDs failure with its code', () => {
    expectNoDevices(modes, 'fail', 'OpenCL: clGetPlatformIDs returned CL_OUT_OF_HOST_MEMORY (-6)');
  });
});
