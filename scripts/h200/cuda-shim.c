// A CUDA driver shim for trying the gate on a real GPU (scripts/h200/gate.sh). It exports the driver API
// functions the bindings declare (bindings/cuda.ts), forwards each one to the real driver (libcuda.so.1, or the
// library MAPPED_REG_SHIM_REAL names: the tests put the driver double there), and breaks only what its
// environment asks for:
//   MAPPED_REG_SHIM_CUINIT=N             cuInit returns N without calling the driver (999: the driver fails to
//                                        start, as after a bad upgrade; 100: no device)
//   MAPPED_REG_SHIM_SLOW_REGISTERED=F    a host-to-device copy whose source lies in a registered range takes F
//                                        times as long (F = 1.25: its GB/s falls by 20%); other copies as they are.
//                                        The shim copies the first (F - 1) n bytes of the source again, to the same
//                                        place: real work on the device, which its clock (the events) and the host's
//                                        both see, as they would a slower DMA path
//   MAPPED_REG_SHIM_SLOW_ALL=F           every host-to-device copy (registered, page-locked, pageable) takes F times
//                                        as long: a platform or DMA path that got slower. With SLOW_REGISTERED too, a
//                                        registered copy takes both factors. F <= 1 or not a number: no change
//   MAPPED_REG_SHIM_PORTABLE_IGNORED=1   cuMemHostRegister_v2 drops CU_MEMHOSTREGISTER_PORTABLE (0x1) before the
//                                        driver sees it: hazard.portable_second_context copies from a created context
//                                        what the driver was never asked to make portable
//   MAPPED_REG_SHIM_POINTER_STILL_REGISTERED=1  cuPointerGetAttribute answers success (DEVICE_POINTER: the address
//                                        itself) for an address in a range the shim saw released (the last 64):
//                                        hazard.device_pointer's query after the release
// The reference checks' calls (cuCtxCreate_v2 ... cuPointerGetAttribute, docs/reference-checks.md) are forwarded too.
// Loaded by path: MAPPED_REG_CUDA_LIBRARY=/path/cuda-shim.so. Build: cc -shared -fPIC -O2 -o cuda-shim.so cuda-shim.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *real(const char *name) {
  static void *lib;
  const char *path = getenv("MAPPED_REG_SHIM_REAL");
  if (!path || !*path) path = "libcuda.so.1";
  if (!lib) lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  void *f = lib ? dlsym(lib, name) : NULL;
  if (!f) {
    fprintf(stderr, "cuda-shim: %s not found in %s (%s)\n", name, path, lib ? "no symbol" : dlerror());
    abort();
  }
  return f;
}

#define FORWARD(ret, name, params, args)                    \
  ret name params {                                         \
    static ret(*f) params;                                  \
    if (!f) f = (ret(*) params)real(#name);                 \
    return f args;                                          \
  }

// ---- the registered ranges (only to tell which copies to slow down) ----
#define MAX_RANGES 4096
static struct { uintptr_t start, end; } ranges[MAX_RANGES];
static int nranges;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
// the last ranges released (MAPPED_REG_SHIM_POINTER_STILL_REGISTERED)
#define MAX_RELEASED 64
static struct { uintptr_t start, end; } released[MAX_RELEASED];
static int nreleased;

static int registered(const void *p, size_t n) {
  uintptr_t a = (uintptr_t)p;
  int hit = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nranges && !hit; i++) hit = a >= ranges[i].start && a + n <= ranges[i].end;
  pthread_mutex_unlock(&lock);
  return hit;
}

// ---- what the shim changes ----
int cuInit(unsigned int flags) {
  const char *code = getenv("MAPPED_REG_SHIM_CUINIT");
  if (code && *code) return atoi(code);
  static int (*f)(unsigned int);
  if (!f) f = (int (*)(unsigned int))real("cuInit");
  return f(flags);
}

int cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags) {
  static int (*f)(void *, size_t, unsigned int);
  if (!f) f = (int (*)(void *, size_t, unsigned int))real("cuMemHostRegister_v2");
  const char *portable = getenv("MAPPED_REG_SHIM_PORTABLE_IGNORED");
  if (portable && atoi(portable) == 1) flags &= ~0x1u;
  int r = f(p, bytes, flags);
  if (r == 0) {
    pthread_mutex_lock(&lock);
    if (nranges < MAX_RANGES) {
      ranges[nranges].start = (uintptr_t)p;
      ranges[nranges].end = (uintptr_t)p + bytes;
      nranges++;
    }
    pthread_mutex_unlock(&lock);
  }
  return r;
}

int cuMemHostUnregister(void *p) {
  static int (*f)(void *);
  if (!f) f = (int (*)(void *))real("cuMemHostUnregister");
  int r = f(p);
  if (r == 0) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nranges; i++) {
      if (ranges[i].start == (uintptr_t)p) {
        released[nreleased % MAX_RELEASED].start = ranges[i].start;
        released[nreleased % MAX_RELEASED].end = ranges[i].end;
        nreleased++;
        ranges[i] = ranges[--nranges];
        break;
      }
    }
    pthread_mutex_unlock(&lock);
  }
  return r;
}

int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) {
  static int (*f)(unsigned long long, const void *, size_t);
  if (!f) f = (int (*)(unsigned long long, const void *, size_t))real("cuMemcpyHtoD_v2");
  const char *slow = getenv("MAPPED_REG_SHIM_SLOW_REGISTERED");
  const char *all = getenv("MAPPED_REG_SHIM_SLOW_ALL");
  double slow_registered = slow ? atof(slow) : 1.0, slow_all = all ? atof(all) : 1.0;
  double factor = slow_all > 1.0 ? slow_all : 1.0;
  if (slow_registered > 1.0 && registered(src, n)) factor *= slow_registered;
  int r = f(dst, src, n);
  // the slowdown as work on the device: the source's first (factor - 1) n bytes copied again, whole passes first
  for (double more = factor - 1.0; r == 0 && more > 0; more -= 1.0) {
    size_t part = more >= 1.0 ? n : (size_t)(more * (double)n);
    if (part > 0) r = f(dst, src, part);
  }
  return r;
}

int cuPointerGetAttribute(void *data, int attribute, unsigned long long ptr) {
  static int (*f)(void *, int, unsigned long long);
  if (!f) f = (int (*)(void *, int, unsigned long long))real("cuPointerGetAttribute");
  const char *still = getenv("MAPPED_REG_SHIM_POINTER_STILL_REGISTERED");
  if (still && atoi(still) == 1 && attribute == 3 && data) {
    int hit = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_RELEASED && i < nreleased && !hit; i++) hit = ptr >= released[i].start && ptr < released[i].end;
    pthread_mutex_unlock(&lock);
    if (hit) {
      *(unsigned long long *)data = ptr;
      return 0;
    }
  }
  return f(data, attribute, ptr);
}

// ---- everything else, as the driver does it ----
FORWARD(int, cuDriverGetVersion, (int *v), (v))
FORWARD(int, cuDeviceGetCount, (int *n), (n))
FORWARD(int, cuDeviceGet, (int *d, int ordinal), (d, ordinal))
FORWARD(int, cuDeviceGetName, (char *name, int len, int dev), (name, len, dev))
FORWARD(int, cuDeviceGetPCIBusId, (char *id, int len, int dev), (id, len, dev))
FORWARD(int, cuDeviceTotalMem_v2, (size_t *bytes, int dev), (bytes, dev))
FORWARD(int, cuDeviceGetAttribute, (int *pi, int attrib, int dev), (pi, attrib, dev))
FORWARD(int, cuDevicePrimaryCtxRetain, (void **ctx, int dev), (ctx, dev))
FORWARD(int, cuDevicePrimaryCtxRelease_v2, (int dev), (dev))
FORWARD(int, cuDevicePrimaryCtxReset_v2, (int dev), (dev))
FORWARD(int, cuCtxSetCurrent, (void *ctx), (ctx))
FORWARD(int, cuCtxSynchronize, (void), ())
FORWARD(int, cuMemAlloc_v2, (unsigned long long *p, size_t n), (p, n))
FORWARD(int, cuMemFree_v2, (unsigned long long p), (p))
FORWARD(int, cuMemHostAlloc, (void **pp, size_t n, unsigned int flags), (pp, n, flags))
FORWARD(int, cuMemFreeHost, (void *p), (p))
FORWARD(int, cuMemcpyDtoH_v2, (void *dst, unsigned long long src, size_t n), (dst, src, n))
FORWARD(int, cuGetErrorName, (int e, const char **s), (e, s))
FORWARD(int, cuGetErrorString, (int e, const char **s), (e, s))
// the reference checks' calls (bindings/cuda.ts: the device's free memory, a registration's device address; the
// copies' contexts, streams and device-to-device copy)
FORWARD(int, cuMemGetInfo_v2, (size_t *free_bytes, size_t *total_bytes), (free_bytes, total_bytes))
FORWARD(int, cuMemHostGetDevicePointer_v2, (unsigned long long *pdptr, void *p, unsigned int flags), (pdptr, p, flags))
FORWARD(int, cuCtxCreate_v2, (void **ctx, unsigned int flags, int dev), (ctx, flags, dev))
FORWARD(int, cuCtxDestroy_v2, (void *ctx), (ctx))
FORWARD(int, cuStreamCreate, (void **s, unsigned int flags), (s, flags))
FORWARD(int, cuStreamSynchronize, (void *s), (s))
FORWARD(int, cuStreamDestroy_v2, (void *s), (s))
FORWARD(int, cuMemcpyHtoDAsync_v2, (unsigned long long dst, const void *src, size_t n, void *s), (dst, src, n, s))
FORWARD(int, cuMemcpyDtoD_v2, (unsigned long long dst, unsigned long long src, size_t n), (dst, src, n))
// the events that time a copy on the device's clock (bindings/device-clock.ts)
FORWARD(int, cuEventCreate, (void **e, unsigned int flags), (e, flags))
FORWARD(int, cuEventRecord, (void *e, void *s), (e, s))
FORWARD(int, cuEventSynchronize, (void *e), (e))
FORWARD(int, cuEventElapsedTime, (float *ms, void *start, void *end), (ms, start, end))
FORWARD(int, cuEventDestroy_v2, (void *e), (e))
