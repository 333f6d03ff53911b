/*
 * HIP driver double: libamdhip64_double.so, with the ABI of libamdhip64.so (the functions below only).
 *
 * Profiles: rocm724 (default; HIP on ROCm 7.2.4 as the spec describes it, with its five bugs),
 * rocm-fixed (the same with those bugs fixed), nodevice (libamdhip64.so.5 on a machine with no AMD GPU,
 * as in docs/facts-h200.md). Faults and codes: README.md beside this file.
 *
 * hipDeviceAttribute_t numbers. HIP's attribute enum is implicit (each value is its position), so the
 * numbers come from counting the enumerators in the headers, checked against generated bindings that
 * print them. hipDeviceAttributeIntegrated:
 *   = 16 in HIP 5.x, 6.x and 7.x alike (the layout that opens hipDeviceAttributeCudaCompatibleBegin = 0,
 *     hipDeviceAttributeEccEnabled = 0, AccessPolicyMaxWindowSize 1, AsyncEngineCount 2,
 *     CanMapHostMemory 3, ..., HostNativeAtomicSupported 15, Integrated 16):
 *     - HIP 5.5: include/hip/hip_runtime_api.h of ROCm 5.5 (the mirror monorimet/rocm-5.5-libs,
 *       commit 035e0f583d87);
 *     - ROCm/HIP include/hip/hip_runtime_api.h at commit 00904d4aa0d8 (a 2021 development header with
 *       this layout, the one HIP 5.0 shipped);
 *     - HIP 7.x: ROCm/rocm-systems projects/hip/include/hip/hip_runtime_api.h at commit 003a5d106dc3
 *       (HostRegisterSupported = 90 there);
 *     - generated bindings agree: a Julia binding of HIP 6 (hipDeviceProp_tR0600) and ROCm's hipfort
 *       enums (HIP 7) list Integrated = 16, PageableMemoryAccess = 65, HostRegisterSupported = 90.
 *     The number did NOT change between HIP 5 and HIP 6/7. What changed in 6.0 is elsewhere:
 *     hipDeviceAttributeHostRegisterSupported (90) is new (HIPIFY's table: added in 6.0.0), and 5.x's
 *     hipDeviceAttributeName/Uuid/Arch/GcnArch/GcnArchName became Unused1..5 (same numbers).
 *   = 25 in HIP 4.x: ROCm/HIP include/hip/hip_runtime_api.h at commit 746dcac4d568, where the enum opens
 *     hipDeviceAttributeMaxThreadsPerBlock = 0, ..., IsMultiGpuBoard 24, Integrated 25 (16 there is
 *     L2CacheSize, which the double answers non-zero, as a real 4.x runtime would).
 *   The double answers at the number of the major version it reports: 4 or less: the 4.x layout;
 *   5 and more: the 5.x-7.x layout.
 * HIP_VERSION encoding (hip_version.h): HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 +
 * HIP_VERSION_PATCH, where PATCH is HIP's build number (5.7.1 is 5.7.31921 = 50731921), not ROCm's
 * point release: 7.2.4 cannot be written exactly; the default 70204000 decodes as major 7, minor 2.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

/* hipError_t values: common.c's table of results (dbl_api_code), column HIP. */
typedef int hipError_t;

/* hipHostRegister flags (hip_runtime_api.h). hipHostRegisterReadOnly: "This flag is ignored On AMD
 * devices"; hipExtHostRegisterCoarseGrained shares its bit. */
#define hipHostRegisterPortable 0x1
#define hipHostRegisterMapped 0x2
#define hipHostRegisterIoMemory 0x4
#define hipHostRegisterReadOnly 0x08
#define hipExtHostRegisterUncached 0x80000000u
/* hipHostMalloc flags that exclude each other */
#define hipHostMallocCoherent 0x40000000u
#define hipHostMallocNonCoherent 0x80000000u

#define hipMemcpyHostToDevice 1
#define hipMemcpyDeviceToHost 2
#define hipMemcpyDeviceToDevice 3

/* hipDeviceAttribute_t of HIP 4.x (ROCm/HIP 746dcac4: the members before Integrated, which are stable) */
#define ATTR4_MAX_THREADS_PER_BLOCK 0
#define ATTR4_WARP_SIZE 9
#define ATTR4_MULTIPROCESSOR_COUNT 14
#define ATTR4_L2_CACHE_SIZE 16
#define ATTR4_COMPUTE_CAPABILITY_MAJOR 18
#define ATTR4_COMPUTE_CAPABILITY_MINOR 19
#define ATTR4_PCI_BUS_ID 21
#define ATTR4_PCI_DEVICE_ID 22
#define ATTR4_INTEGRATED 25

/* hipDeviceAttribute_t (HIP 5.x, 6.x, 7.x: see the header comment) */
#define ATTR_CAN_MAP_HOST_MEMORY 3
#define ATTR_INTEGRATED 16
#define ATTR_COMPUTE_CAPABILITY_MAJOR 23
#define ATTR_COMPUTE_CAPABILITY_MINOR 61
#define ATTR_MULTIPROCESSOR_COUNT 63
#define ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM 4
#define ATTR_PAGEABLE_MEMORY_ACCESS 65
#define ATTR_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES 66
#define ATTR_PCI_BUS_ID 67
#define ATTR_PCI_DEVICE_ID 68
#define ATTR_PCI_DOMAIN_ID 69
#define ATTR_WARP_SIZE 87
#define ATTR_HOST_REGISTER_SUPPORTED 90 /* HIP >= 6.0 only */

static const char *const NAMES[] = {
    "hipRuntimeGetVersion", "hipDriverGetVersion", "hipInit", "hipGetDeviceCount", "hipDeviceGetName",
    "hipDeviceGetPCIBusId", "hipDeviceTotalMem", "hipDeviceGetAttribute", "hipSetDevice",
    "hipDeviceSynchronize", "hipDeviceReset", "hipMalloc", "hipFree", "hipHostMalloc", "hipHostFree",
    "hipHostRegister", "hipHostUnregister", "hipMemcpy", "hipGetErrorName", "hipGetErrorString",
    /* the reference checks' calls (reference.c, reference_copies.c) */
    "hipStreamCreate", "hipStreamSynchronize", "hipStreamDestroy", "hipMemcpyAsync", "hipHostGetDevicePointer",
    "hipPointerGetAttribute",
    "hipMemGetInfo",
    /* the device's clock (events.c) */
    "hipEventCreate", "hipEventRecord", "hipEventSynchronize", "hipEventElapsedTime", "hipEventDestroy",
};

/* What every profile of the HIP double shares: HIP's register flags, read-only mappings registered without a flag
 * (ignored on AMD), and HIP's results of the faulty calls. */
static const profile_t HIP_BASE = {
    .api = API_HIP, .readonly_flag = hipHostRegisterReadOnly, .readonly_needs_flag = 0,
    .valid_flags = hipHostRegisterPortable | hipHostRegisterMapped | hipHostRegisterIoMemory | hipHostRegisterReadOnly |
                   hipExtHostRegisterUncached,
    .unregister_fault_result = DR_NOT_REGISTERED, .integrated_fail_result = DR_INVALID_VALUE};

/* Profiles of the HIP double: rocm724 (with its bugs) the default, rocm-fixed, nodevice. "cuda" names the CUDA
 * double's profile: set for a CUDA double in the same process, it leaves this one on its default. Anything else is
 * refused. */
static const dbl_profile_choice_t PROFILES[] = {
    {"rocm724", {"cuda"}, 0, 1}, {"rocm-fixed", {NULL}, 0, 0}, {"nodevice", {NULL}, 1, 0}};

DBL_DRIVER(hipError_t, API_HIP, NAMES, HIP_BASE, PROFILES)

/* HIP initializes itself on the first call that needs a device: so does the double. */
static int ensure_init(void) {
  if (g.initialized) return DR_OK;
  return dbl_init(API_HIP, parse_profile);
}

static int check_device(int dev) {
  int r = ensure_init();
  if (r != DR_OK) return r;
  if (dev < 0 || dev >= g.ndevices) return DR_INVALID_DEVICE;
  return DR_OK;
}

/* The version this double reports: the one read at init, or (before a successful init) the
 * environment's, with the profile's default. */
static int reported_version(long *v) {
  if (g.initialized) {
    *v = g.hip_version;
    return DR_OK;
  }
  const char *pname = dbl_profile_name();
  int nodev = pname && strcmp(pname, "nodevice") == 0;
  if (dbl_env_long("MAPPED_REG_DOUBLE_HIP_VERSION", nodev ? 50731921L : DBL_BUILD_HIP_VERSION, v) != 0) {
    return DR_INVALID_VALUE;
  }
  return DR_OK;
}

/* ---------------------------------------------------------------- versions, init, devices */

/* Both version calls report the same number. */
static hipError_t version_into(int *version) {
  if (!version) return code(DR_INVALID_VALUE);
  long v;
  int r = reported_version(&v);
  if (r == DR_OK) *version = (int)v;
  return code(r);
}

DBL_API hipError_t hipRuntimeGetVersion(int *version) {
  DBL_ENTER();
  return version_into(version);
}

DBL_API hipError_t hipDriverGetVersion(int *version) {
  DBL_ENTER();
  return version_into(version);
}

DBL_INIT_CALL(hipError_t, hipInit, API_HIP)

DBL_API hipError_t hipGetDeviceCount(int *count) {
  DBL_ENTER();
  if (!count) return code(DR_INVALID_VALUE);
  int r = ensure_init();
  *count = r == DR_OK ? g.ndevices : 0;
  return code(r);
}

DBL_DEVICE_QUERIES(hipError_t, hipDeviceGetName, hipDeviceGetPCIBusId, hipDeviceTotalMem, "Double HIP Device")

/* The value of attribute `attr` of a device checked already, in the layout of HIP 4.x. */
static int attribute4(int *value, int attr, int dev) {
  switch (attr) {
    case ATTR4_INTEGRATED: return dbl_integrated(value);
    case ATTR4_MAX_THREADS_PER_BLOCK: *value = 1024; return DR_OK;
    case ATTR4_WARP_SIZE: *value = 32; return DR_OK;
    case ATTR4_MULTIPROCESSOR_COUNT: *value = 48; return DR_OK;
    case ATTR4_L2_CACHE_SIZE: *value = 6 << 20; return DR_OK;
    case ATTR4_COMPUTE_CAPABILITY_MAJOR: *value = 11; return DR_OK;
    case ATTR4_COMPUTE_CAPABILITY_MINOR: *value = 0; return DR_OK;
    case ATTR4_PCI_BUS_ID: *value = 0; return DR_OK;
    case ATTR4_PCI_DEVICE_ID: *value = dbl_physical(dev); return DR_OK;
    default: return DR_INVALID_VALUE;
  }
}

/* The value of attribute `attr` of a device checked already, in the layout of the major version reported. */
static int attribute(int *value, int attr, int dev) {
  long major = g.hip_version / 10000000L;
  if (major <= 4) return attribute4(value, attr, dev);
  switch (attr) {
    case ATTR_INTEGRATED: return dbl_integrated(value);
    case ATTR_CAN_MAP_HOST_MEMORY: *value = 1; return DR_OK;
    case ATTR_COMPUTE_CAPABILITY_MAJOR: *value = 11; return DR_OK; /* gfx1100 (RX 7900 XTX) */
    case ATTR_COMPUTE_CAPABILITY_MINOR: *value = 0; return DR_OK;
    case ATTR_MULTIPROCESSOR_COUNT: *value = 48; return DR_OK;
    /* the attributes the reference checks hold to behaviour: reference.c (MAPPED_REG_DOUBLE_ATTRIBUTES, its lies) */
    case ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return dbl_ref_attribute(REF_HOST_POINTER, value);
    case ATTR_PAGEABLE_MEMORY_ACCESS: return dbl_ref_attribute(REF_PAGEABLE_ACCESS, value);
    case ATTR_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: return dbl_ref_attribute(REF_PAGE_TABLES, value);
    case ATTR_PCI_BUS_ID: *value = 0; return DR_OK;
    case ATTR_PCI_DEVICE_ID: *value = dbl_physical(dev); return DR_OK;
    case ATTR_PCI_DOMAIN_ID: *value = 0; return DR_OK;
    case ATTR_WARP_SIZE: *value = 32; return DR_OK;
    case ATTR_HOST_REGISTER_SUPPORTED:
      if (major < 6) return DR_INVALID_VALUE; /* not in HIP 5's enum */
      return dbl_ref_attribute(REF_HOST_REGISTER, value);
    default: return DR_INVALID_VALUE;
  }
}

DBL_API hipError_t hipDeviceGetAttribute(int *value, int attr, int dev) {
  DBL_ENTER();
  DBL_RETURN_AFTER(dbl_check_out(check_device, dev, value), attribute(value, attr, dev));
}

DBL_API hipError_t hipSetDevice(int dev) {
  DBL_ENTER();
  int r = check_device(dev);
  if (r == DR_OK) g.current_device = dev;
  return code(r);
}

DBL_API hipError_t hipDeviceSynchronize(void) {
  DBL_ENTER();
  return code(ensure_init());
}

DBL_API hipError_t hipDeviceReset(void) {
  DBL_ENTER();
  int r = ensure_init();
  if (r == DR_OK) dbl_reset_device(g.current_device); /* allocations and registrations of the current device */
  return code(r);
}

/* ---------------------------------------------------------------- memory */

/* The memory calls below: each runs its engine call only once the runtime has initialized itself. */

DBL_API hipError_t hipMalloc(void **ptr, size_t size) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_alloc_into(dbl_dalloc, size, g.current_device, ptr));
}

DBL_API hipError_t hipFree(void *ptr) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_free_unless_null(dbl_dfree, ptr));
}

DBL_API hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  if ((flags & hipHostMallocCoherent) && (flags & hipHostMallocNonCoherent)) return code(DR_INVALID_VALUE);
  return code(dbl_alloc_into(dbl_halloc, size, g.current_device, ptr));
}

DBL_API hipError_t hipHostFree(void *ptr) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_free_unless_null(dbl_hfree, ptr));
}

DBL_API hipError_t hipHostRegister(void *ptr, size_t size, unsigned int flags) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_register((uintptr_t)ptr, size, flags, g.current_device));
}

DBL_API hipError_t hipHostUnregister(void *ptr) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_unregister((uintptr_t)ptr));
}

DBL_API hipError_t hipMemcpy(void *dst, const void *src, size_t size, int kind) {
  double entry = dbl_now(); /* paced copies are timed from here */
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  switch (kind) {
    case hipMemcpyHostToDevice: return code(dbl_htod((uintptr_t)dst, (uintptr_t)src, size, g.current_device, entry));
    case hipMemcpyDeviceToHost: return code(dbl_dtoh((uintptr_t)dst, (uintptr_t)src, size));
    case hipMemcpyDeviceToDevice: return code(dbl_dtod((uintptr_t)dst, (uintptr_t)src, size));
    default: return code(DR_INVALID_MEMCPY_DIRECTION); /* the double copies host<->device and device<->device only */
  }
}

/* ---------------------------------------------------------------- the reference checks' calls (reference.c, reference_copies.c) */

DBL_API hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_ref_mem_info(free_bytes, total_bytes));
}

DBL_API hipError_t hipStreamCreate(void **stream) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_stream_create(g.current_device, g.current_device, stream));
}

DBL_API hipError_t hipStreamSynchronize(void *stream) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_stream_sync(stream));
}

DBL_API hipError_t hipStreamDestroy(void *stream) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_stream_destroy(stream));
}

/* Host to device only (the double's async copies); other kinds: hipErrorInvalidMemcpyDirection. */
DBL_API hipError_t hipMemcpyAsync(void *dst, const void *src, size_t size, int kind, void *stream) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  if (kind != hipMemcpyHostToDevice) return code(DR_INVALID_MEMCPY_DIRECTION);
  return code(dbl_htod_async((uintptr_t)dst, (uintptr_t)src, size, stream, g.current_device, g.current_device));
}

DBL_API hipError_t hipHostGetDevicePointer(void **devPtr, void *hstPtr, unsigned int flags) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  if (flags != 0 || !devPtr) return code(DR_INVALID_VALUE);
  uintptr_t d = 0;
  r = dbl_ref_device_pointer((uintptr_t)hstPtr, &d);
  if (r == DR_OK) *devPtr = (void *)d;
  return code(r);
}

#define HIP_POINTER_ATTRIBUTE_DEVICE_POINTER 3

/* HIP_POINTER_ATTRIBUTE_DEVICE_POINTER only; any other attribute is hipErrorInvalidValue here. */
DBL_API hipError_t hipPointerGetAttribute(void *data, int attribute, void *ptr) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  if (!data || attribute != HIP_POINTER_ATTRIBUTE_DEVICE_POINTER) return code(DR_INVALID_VALUE);
  uintptr_t d = 0;
  r = dbl_pointer_device_pointer((uintptr_t)ptr, &d);
  if (r == DR_OK) *(void **)data = (void *)d;
  return code(r);
}

/* ---------------------------------------------------------------- errors */

/* Like HIP: an unknown code reads as hipErrorUnknown. */
static const dbl_error_t *find_error(int error) {
  const dbl_error_t *e = dbl_api_error(API_HIP, error);
  return e ? e : dbl_api_error(API_HIP, code(DR_UNKNOWN));
}

DBL_API const char *hipGetErrorName(hipError_t error) {
  DBL_ENTER();
  return find_error(error)->name;
}

DBL_API const char *hipGetErrorString(hipError_t error) {
  DBL_ENTER();
  return find_error(error)->text;
}

/* ---------------------------------------------------------------- the device's clock (events.c) */

DBL_API hipError_t hipEventCreate(void **event) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_event_create(event));
}

DBL_API hipError_t hipEventRecord(void *event, void *stream) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_event_record(event, stream, g.current_device));
}

DBL_API hipError_t hipEventSynchronize(void *event) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_event_sync(event));
}

DBL_API hipError_t hipEventElapsedTime(float *ms, void *start, void *stop) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_event_elapsed(ms, start, stop));
}

DBL_API hipError_t hipEventDestroy(void *event) {
  DBL_ENTER();
  DBL_RETURN_AFTER(ensure_init(), dbl_event_destroy(event));
}

/* ---------------------------------------------------------------- test exports */

DBL_API void double_reset(void) {
  pthread_mutex_lock(&g_mu);
  dbl_reset_all();
  pthread_mutex_unlock(&g_mu);
}
