/*
 * CUDA driver double: libcuda_double.so, with the ABI of libcuda.so.1 (the functions below only).
 *
 * Behaviour (profile "cuda"): what the real driver did on an H200, driver 580.159.04, CUDA 13000, as
 * measured in docs/facts-h200.md. Attribute values from the same file where it lists them;
 * the few others (marked "not measured") are the H200's published values.
 * Profiles, faults and codes: README.md beside this file.
 */
#include "common.h"

#include <string.h>

/* CUresult values: common.c's table of results (dbl_api_code), column CUDA. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

/* cuMemHostRegister flags */
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_IOMEMORY 0x04
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08
/* cuMemHostAlloc flags */
#define CU_MEMHOSTALLOC_ALL 0x07

/* cuDriverGetVersion: DBL_BUILD_CUDA_VERSION (common.h), 13000 unless built otherwise (facts: CUDA driver API version 13000) */

static const char *const NAMES[] = {
    "cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
    "cuDeviceGetPCIBusId", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxReset_v2", "cuCtxSetCurrent", "cuCtxSynchronize",
    "cuMemAlloc_v2", "cuMemFree_v2", "cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister_v2",
    "cuMemHostUnregister", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuGetErrorName", "cuGetErrorString",
    /* the reference checks' calls (reference.c, reference_copies.c) */
    "cuCtxCreate_v2", "cuCtxDestroy_v2", "cuStreamCreate", "cuStreamSynchronize", "cuStreamDestroy_v2",
    "cuMemcpyHtoDAsync_v2", "cuMemHostGetDevicePointer_v2", "cuMemcpyDtoD_v2", "cuPointerGetAttribute",
    "cuMemGetInfo_v2",
    /* the device's clock (events.c) */
    "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime", "cuEventDestroy_v2",
};

/* What every profile of the CUDA double shares: CUDA's register flags, READ_ONLY needed for a read-only mapping,
 * small copies read by the CPU, and CUDA's results of the faulty calls. */
static const profile_t CUDA_BASE = {
    .api = API_CUDA, .readonly_flag = CU_MEMHOSTREGISTER_READ_ONLY, .readonly_needs_flag = 1, .cpu_copy_max = 64 * 1024,
    .valid_flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY,
    .unregister_fault_result = DR_UNKNOWN, .integrated_fail_result = DR_NOT_SUPPORTED,
    /* docs/results/h200-reference-probe.txt: a created context copied a registration without PORTABLE at the
     * registered speed */
    .registrations_portable = 1};

/* The CUDA double knows one profile of its own, "cuda", and "nodevice". The HIP profile names
 * (rocm724, rocm-fixed) describe the HIP library: when a process sets one for its HIP double, the CUDA
 * double loaded beside it keeps its own default ("cuda"). Anything else is refused. */
static const dbl_profile_choice_t PROFILES[] = {{"cuda", {"rocm724", "rocm-fixed"}, 0, 0}, {"nodevice", {NULL}, 1, 0}};

DBL_DRIVER(CUresult, API_CUDA, NAMES, CUDA_BASE, PROFILES)

static int check_init(void) { return g.initialized ? DR_OK : DR_NOT_INITIALIZED; }

static int check_device(int dev) {
  if (!g.initialized) return DR_NOT_INITIALIZED;
  if (dev < 0 || dev >= g.ndevices) return DR_INVALID_DEVICE;
  return DR_OK;
}

/* Contexts made by cuCtxCreate_v2 (beside the primary ones): their id is DBL_MAX_DEVICES + the slot. */
#define DBL_MAX_CREATED 16
static char created_handles[DBL_MAX_CREATED];
static int created_live[DBL_MAX_CREATED];
static int created_dev[DBL_MAX_CREATED];

/* Memory calls need a current, live context (primary, or created); *dev receives its device. */
static int check_ctx(int *dev) {
  if (!g.initialized) return DR_NOT_INITIALIZED;
  if (g.current_context >= DBL_MAX_DEVICES) {
    int k = g.current_context - DBL_MAX_DEVICES;
    if (k >= DBL_MAX_CREATED || !created_live[k]) return DR_INVALID_CONTEXT;
    *dev = created_dev[k];
    return DR_OK;
  }
  if (g.current_ctx < 0 || g.current_ctx >= g.ndevices || g.ctx_refcount[g.current_ctx] <= 0) {
    return DR_INVALID_CONTEXT;
  }
  *dev = g.current_ctx;
  return DR_OK;
}

/* A context handle is the address of its device's slot in this table. */
static char ctx_handles[DBL_MAX_DEVICES];
/* How many times each device's primary context was created (a retain that found no live context). */
static int ctx_created[DBL_MAX_DEVICES];

/* ---------------------------------------------------------------- init and devices */

DBL_INIT_CALL(CUresult, cuInit, API_CUDA)

DBL_API CUresult cuDriverGetVersion(int *version) {
  DBL_ENTER();
  if (!version) return code(DR_INVALID_VALUE);
  *version = DBL_BUILD_CUDA_VERSION;
  return code(DR_OK);
}

DBL_API CUresult cuDeviceGetCount(int *count) {
  DBL_ENTER();
  if (!count) return code(DR_INVALID_VALUE);
  if (!g.initialized) {
    if (g.last_init_result == DR_NO_DEVICE) {
      *count = 0;
      return code(DR_NO_DEVICE);
    }
    return code(DR_NOT_INITIALIZED);
  }
  *count = g.ndevices;
  return code(DR_OK);
}

DBL_API CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  DBL_ENTER();
  int r = dbl_check_out(check_device, ordinal, device);
  if (r == DR_OK) *device = ordinal;
  return code(r);
}

DBL_DEVICE_QUERIES(CUresult, cuDeviceGetName, cuDeviceGetPCIBusId, cuDeviceTotalMem_v2, "Double CUDA Device")

/* The value of attribute `attrib` of a device checked already. */
static int attribute(int *value, int attrib, CUdevice dev) {
  switch (attrib) {
    case 1: *value = 1024; return DR_OK;    /* MAX_THREADS_PER_BLOCK (not measured) */
    case 16: *value = 132; return DR_OK;    /* MULTIPROCESSOR_COUNT (not measured) */
    case 18: return dbl_integrated(value);  /* INTEGRATED: facts 0 */
    case 19: *value = 1; return DR_OK;      /* CAN_MAP_HOST_MEMORY: facts 1 */
    case 33: *value = 0; return DR_OK;      /* PCI_BUS_ID */
    case 34: *value = dbl_physical(dev); return DR_OK; /* PCI_DEVICE_ID: as in the bus id string */
    case 41: *value = 1; return DR_OK;      /* UNIFIED_ADDRESSING (not measured) */
    case 50: *value = 0; return DR_OK;      /* PCI_DOMAIN_ID */
    case 75: *value = 9; return DR_OK;      /* COMPUTE_CAPABILITY_MAJOR (not measured) */
    case 76: *value = 0; return DR_OK;      /* COMPUTE_CAPABILITY_MINOR (not measured) */
    /* the attributes the reference checks hold to behaviour: reference.c (MAPPED_REG_DOUBLE_ATTRIBUTES, its lies) */
    case 88: return dbl_ref_attribute(REF_PAGEABLE_ACCESS, value);   /* PAGEABLE_MEMORY_ACCESS: facts 0 */
    case 91: return dbl_ref_attribute(REF_HOST_POINTER, value);      /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: docs/results/h200-reference-probe.txt 1 */
    case 99: return dbl_ref_attribute(REF_HOST_REGISTER, value);     /* HOST_REGISTER_SUPPORTED: facts 1 */
    case 100: return dbl_ref_attribute(REF_PAGE_TABLES, value);      /* PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: facts 0 */
    case 113: return dbl_ref_attribute(REF_READONLY_REGISTER, value);/* READ_ONLY_HOST_REGISTER_SUPPORTED: facts 1 */
    default: return DR_INVALID_VALUE;
  }
}

DBL_API CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev) {
  DBL_ENTER();
  DBL_RETURN_AFTER(dbl_check_out(check_device, dev, value), attribute(value, attrib, dev));
}

/* ---------------------------------------------------------------- contexts */

DBL_API CUresult cuDevicePrimaryCtxRetain(void **pctx, CUdevice dev) {
  DBL_ENTER();
  int r = dbl_check_out(check_device, dev, pctx);
  if (r != DR_OK) return code(r);
  if (g.ctx_refcount[dev]++ == 0) ctx_created[dev]++;
  *pctx = &ctx_handles[dev];
  return code(DR_OK);
}

DBL_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  DBL_ENTER();
  int r = check_device(dev);
  if (r != DR_OK) return code(r);
  if (g.ctx_refcount[dev] <= 0) return code(DR_INVALID_CONTEXT);
  if (--g.ctx_refcount[dev] == 0) dbl_drop_device(dev); /* the primary context is destroyed */
  return code(DR_OK);
}

DBL_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  DBL_ENTER();
  int r = check_device(dev);
  if (r != DR_OK) return code(r);
  dbl_reset_device(dev); /* facts: a later unregister returns 713 */
  return code(DR_OK);
}

DBL_API CUresult cuCtxSetCurrent(void *ctx) {
  DBL_ENTER();
  int r = check_init();
  if (r != DR_OK) return code(r);
  if (!ctx) {
    g.current_ctx = -1;
    g.current_context = -1;
    return code(DR_OK);
  }
  char *c = ctx;
  if (c >= created_handles && c < created_handles + DBL_MAX_CREATED) {
    int k = (int)(c - created_handles);
    if (!created_live[k]) return code(DR_INVALID_CONTEXT);
    g.current_ctx = created_dev[k];
    g.current_context = DBL_MAX_DEVICES + k;
    return code(DR_OK);
  }
  if (c < ctx_handles || c >= ctx_handles + DBL_MAX_DEVICES) return code(DR_INVALID_CONTEXT);
  int dev = (int)(c - ctx_handles);
  if (dev >= g.ndevices || g.ctx_refcount[dev] <= 0) return code(DR_INVALID_CONTEXT);
  g.current_ctx = dev;
  g.current_context = dev;
  return code(DR_OK);
}

/* A context of its own on `dev`, made current (cuCtxCreate pushes it: the double has no stack, it sets it). */
DBL_API CUresult cuCtxCreate_v2(void **pctx, unsigned int flags, CUdevice dev) {
  DBL_ENTER();
  int r = dbl_check_out(check_device, dev, pctx);
  if (r != DR_OK) return code(r);
  if (flags > 0x1f) return code(DR_INVALID_VALUE);
  for (int k = 0; k < DBL_MAX_CREATED; k++) {
    if (created_live[k]) continue;
    created_live[k] = 1;
    created_dev[k] = dev;
    g.current_ctx = dev;
    g.current_context = DBL_MAX_DEVICES + k;
    *pctx = &created_handles[k];
    return code(DR_OK);
  }
  return code(DR_OUT_OF_MEMORY);
}

/* Destroys a created context (a primary context is not destroyed this way: INVALID_CONTEXT). */
DBL_API CUresult cuCtxDestroy_v2(void *ctx) {
  DBL_ENTER();
  int r = check_init();
  if (r != DR_OK) return code(r);
  char *c = ctx;
  if (!c || c < created_handles || c >= created_handles + DBL_MAX_CREATED || !created_live[c - created_handles]) return code(DR_INVALID_CONTEXT);
  int k = (int)(c - created_handles);
  created_live[k] = 0;
  if (g.current_context == DBL_MAX_DEVICES + k) {
    g.current_ctx = -1;
    g.current_context = -1;
  }
  return code(DR_OK);
}

DBL_API CUresult cuCtxSynchronize(void) {
  DBL_ENTER();
  int dev;
  return code(check_ctx(&dev));
}

/* ---------------------------------------------------------------- memory */

DBL_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  DBL_ENTER();
  int dev, r = check_ctx(&dev);
  if (r != DR_OK) return code(r);
  if (!dptr) return code(DR_INVALID_VALUE);
  uintptr_t p = 0;
  r = dbl_dalloc(bytes, dev, &p);
  if (r == DR_OK) *dptr = (CUdeviceptr)p;
  return code(r);
}

/* The memory calls below: each runs its engine call (which may use `dev`) only in a current, live context. */

DBL_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_dfree((uintptr_t)dptr));
}

DBL_API CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
  DBL_ENTER();
  int dev, r = check_ctx(&dev);
  if (r != DR_OK) return code(r);
  if (flags & ~(unsigned)CU_MEMHOSTALLOC_ALL) return code(DR_INVALID_VALUE);
  return code(dbl_alloc_into(dbl_halloc, bytes, dev, pp));
}

DBL_API CUresult cuMemFreeHost(void *p) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_hfree((uintptr_t)p));
}

DBL_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_register((uintptr_t)p, bytesize, flags, dev));
}

DBL_API CUresult cuMemHostUnregister(void *p) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_unregister((uintptr_t)p));
}

DBL_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  double entry = dbl_now(); /* paced copies are timed from here */
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_htod((uintptr_t)dst, (uintptr_t)src, bytes, dev, entry));
}

DBL_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_dtoh((uintptr_t)dst, (uintptr_t)src, bytes));
}

/* ---------------------------------------------------------------- the reference checks' calls (reference.c, reference_copies.c) */

DBL_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_ref_mem_info(free_bytes, total_bytes));
}

DBL_API CUresult cuStreamCreate(void **phStream, unsigned int flags) {
  DBL_ENTER();
  int dev, r = check_ctx(&dev);
  if (r != DR_OK) return code(r);
  if (flags > 1) return code(DR_INVALID_VALUE); /* CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING */
  return code(dbl_stream_create(dev, g.current_context, phStream));
}

DBL_API CUresult cuStreamSynchronize(void *hStream) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_stream_sync(hStream));
}

DBL_API CUresult cuStreamDestroy_v2(void *hStream) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_stream_destroy(hStream));
}

DBL_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, void *hStream) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_htod_async((uintptr_t)dst, (uintptr_t)src, bytes, hStream, dev, g.current_context));
}

DBL_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags) {
  DBL_ENTER();
  int dev, r = check_ctx(&dev);
  if (r != DR_OK) return code(r);
  if (flags != 0 || !pdptr) return code(DR_INVALID_VALUE);
  uintptr_t d = 0;
  r = dbl_ref_device_pointer((uintptr_t)p, &d);
  if (r == DR_OK) *pdptr = (CUdeviceptr)d;
  return code(r);
}

DBL_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_dtod((uintptr_t)dst, (uintptr_t)src, bytes));
}

#define CU_POINTER_ATTRIBUTE_DEVICE_POINTER 3

/* DEVICE_POINTER only; any other attribute is INVALID_VALUE here. */
DBL_API CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
  DBL_ENTER();
  int r = check_init();
  if (r != DR_OK) return code(r);
  if (!data || attribute != CU_POINTER_ATTRIBUTE_DEVICE_POINTER) return code(DR_INVALID_VALUE);
  uintptr_t d = 0;
  r = dbl_pointer_device_pointer((uintptr_t)ptr, &d);
  if (r == DR_OK) *(CUdeviceptr *)data = (CUdeviceptr)d;
  return code(r);
}

/* ---------------------------------------------------------------- errors */

/* The row of `error`, NULL (and *pstr NULL) for a code the table lacks; NULL for a NULL pstr. */
static const dbl_error_t *find_error(int error, const char **pstr) {
  if (!pstr) return NULL;
  const dbl_error_t *e = dbl_api_error(API_CUDA, error);
  if (!e) *pstr = NULL;
  return e;
}

DBL_API CUresult cuGetErrorName(CUresult error, const char **pstr) {
  DBL_ENTER();
  const dbl_error_t *e = find_error(error, pstr);
  if (!e) return code(DR_INVALID_VALUE);
  *pstr = e->name;
  return code(DR_OK);
}

DBL_API CUresult cuGetErrorString(CUresult error, const char **pstr) {
  DBL_ENTER();
  const dbl_error_t *e = find_error(error, pstr);
  if (!e) return code(DR_INVALID_VALUE);
  *pstr = e->text;
  return code(DR_OK);
}

/* ---------------------------------------------------------------- the device's clock (events.c) */

DBL_API CUresult cuEventCreate(void **phEvent, unsigned int flags) {
  DBL_ENTER();
  int dev, r = check_ctx(&dev);
  if (r != DR_OK) return code(r);
  if (flags > 0xF) return code(DR_INVALID_VALUE); /* DEFAULT, BLOCKING_SYNC, DISABLE_TIMING, INTERPROCESS */
  return code(dbl_event_create(phEvent));
}

DBL_API CUresult cuEventRecord(void *hEvent, void *hStream) {
  DBL_ENTER();
  int dev;
  DBL_RETURN_AFTER(check_ctx(&dev), dbl_event_record(hEvent, hStream, dev));
}

DBL_API CUresult cuEventSynchronize(void *hEvent) {
  DBL_ENTER();
  DBL_RETURN_AFTER(check_init(), dbl_event_sync(hEvent));
}

DBL_API CUresult cuEventElapsedTime(float *pMilliseconds, void *hStart, void *hEnd) {
  DBL_ENTER();
  DBL_RETURN_AFTER(check_init(), dbl_event_elapsed(pMilliseconds, hStart, hEnd));
}

DBL_API CUresult cuEventDestroy_v2(void *hEvent) {
  DBL_ENTER();
  DBL_RETURN_AFTER(check_init(), dbl_event_destroy(hEvent));
}

/* ---------------------------------------------------------------- test exports */

DBL_API void double_reset(void) {
  pthread_mutex_lock(&g_mu);
  dbl_reset_all();
  memset(ctx_created, 0, sizeof ctx_created);
  memset(created_live, 0, sizeof created_live);
  pthread_mutex_unlock(&g_mu);
}

DBL_API int double_contexts_created(int dev) {
  pthread_mutex_lock(&g_mu);
  int n = dev >= 0 && dev < DBL_MAX_DEVICES ? ctx_created[dev] : -1;
  pthread_mutex_unlock(&g_mu);
  return n;
}
