// Native reference for the staged and registered host-to-device copies (issue: performance). Loads the driver
// with dlopen (no CUDA or HIP headers needed to build), maps a file read-only and shared, and times, best of N:
// the registered copy, the staged copy (memcpy into page-locked memory, then the copy), the page-locked copy
// alone, and the pageable copy (plus the memcpy alone and the staged copy from a registered source).
//
// Build: cc -O2 -o staged bench/native/staged.c -ldl
// Run:   ./staged [--json] [--api cuda|hip] [--device N] [--flags F] FILE MIB [RUNS]
//   --api     cuda (default; $MAPPED_REG_CUDA_LIBRARY, else libcuda.so.1) or hip ($MAPPED_REG_HIP_LIBRARY,
//             else libamdhip64.so, .so.7, .so.6, .so.5)
//   --device  device ordinal (default 0)
//   --flags   registration flags (default: CUDA READ_ONLY 0x08 when the device reports
//             READ_ONLY_HOST_REGISTER_SUPPORTED, else 0; HIP 0, as the bindings do)
//   --json    one JSON object on stdout instead of the lines below (times in seconds, GB/s = 1e9 bytes/s):
//             {"api","device","bytes","runs","flags","results":{"<key>":{"label","bestS","medianS","gbps","medianGBps"}}}
// Without --json, one line a copy: "<label padded to 34> <GB/s> GB/s  (best of N, M MiB)".
// Exit status: 0; 1 a driver call or a system call failed (one line on stderr); 2 bad usage.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum api { API_CUDA, API_HIP };
static enum api api = API_CUDA;

// CUDA driver API
static int (*cuInit)(unsigned);
static int (*cuDeviceGet)(int *, int);
static int (*cuDeviceGetAttribute)(int *, int, int);
static int (*cuDevicePrimaryCtxRetain)(void **, int);
static int (*cuDevicePrimaryCtxRelease)(int);
static int (*cuCtxSetCurrent)(void *);
static int (*cuMemAlloc)(unsigned long long *, size_t);
static int (*cuMemFree)(unsigned long long);
static int (*cuMemHostAlloc)(void **, size_t, unsigned);
static int (*cuMemFreeHost)(void *);
static int (*cuMemHostRegister)(void *, size_t, unsigned);
static int (*cuMemHostUnregister)(void *);
static int (*cuMemcpyHtoD)(unsigned long long, const void *, size_t);
// HIP runtime
static int (*hipInit)(unsigned);
static int (*hipSetDevice)(int);
static int (*hipMalloc)(void **, size_t);
static int (*hipFree)(void *);
static int (*hipHostMalloc)(void **, size_t, unsigned);
static int (*hipHostFree)(void *);
static int (*hipHostRegister)(void *, size_t, unsigned);
static int (*hipHostUnregister)(void *);
static int (*hipMemcpy)(void *, const void *, size_t, int);

#define CU_READ_ONLY_HOST_REGISTER_SUPPORTED 113
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08
#define HIP_MEMCPY_HOST_TO_DEVICE 1

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
#define CK(x) do { int r_ = (x); if (r_) { fprintf(stderr, "%s = %d\n", #x, r_); exit(1); } } while (0)
#define SYM(n, s) do { *(void **)&n = dlsym(h, s); if (!n) { fprintf(stderr, "no %s in the driver library\n", s); exit(1); } } while (0)

static void *open_driver(void) {
  const char *env = getenv(api == API_CUDA ? "MAPPED_REG_CUDA_LIBRARY" : "MAPPED_REG_HIP_LIBRARY");
  if (env && *env) {
    void *h = dlopen(env, RTLD_NOW);
    if (!h) fprintf(stderr, "%s\n", dlerror());
    return h;
  }
  if (api == API_CUDA) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) fprintf(stderr, "%s\n", dlerror());
    return h;
  }
  const char *names[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *h = dlopen(names[i], RTLD_NOW);
    if (h) return h;
  }
  fprintf(stderr, "no HIP runtime found (libamdhip64.so, .so.7, .so.6, .so.5)\n");
  return NULL;
}

static unsigned long long dbuf; // CUDA device pointer
static void *dptr;              // HIP device pointer
static int dev_ordinal;
static int cudev;               // CUDA device handle

static void upload(const void *src, size_t n) {
  if (api == API_CUDA) CK(cuMemcpyHtoD(dbuf, src, n));
  else CK(hipMemcpy(dptr, src, n, HIP_MEMCPY_HOST_TO_DEVICE));
}
static void reg(void *p, size_t n, unsigned flags) {
  if (api == API_CUDA) CK(cuMemHostRegister(p, n, flags));
  else CK(hipHostRegister(p, n, flags));
}
static void unreg(void *p) {
  if (api == API_CUDA) CK(cuMemHostUnregister(p));
  else CK(hipHostUnregister(p));
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int json;
static int printed;
static size_t n;
static int runs;

static void result(const char *key, const char *label, double *t) {
  qsort(t, runs, sizeof *t, cmp);
  double best = t[0];
  double median = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
  if (json) {
    printf("%s\"%s\":{\"label\":\"%s\",\"bestS\":%.9f,\"medianS\":%.9f,\"gbps\":%.4f,\"medianGBps\":%.4f}", printed++ ? "," : "", key, label, best,
           median, n / best / 1e9, n / median / 1e9);
  } else {
    printf("%-34s %8.2f GB/s  (best of %d, %zu MiB)\n", label, n / best / 1e9, runs, n >> 20);
  }
}

#define TIME(key, label, body) do { for (int k = 0; k < runs; k++) { double t0 = now(); body; t[k] = now() - t0; } result(key, label, t); } while (0)

static int usage(const char *argv0) {
  fprintf(stderr, "usage: %s [--json] [--api cuda|hip] [--device N] [--flags F] FILE MIB [RUNS]\n", argv0);
  return 2;
}

int main(int argc, char **argv) {
  long flags = -1;
  int a = 1;
  for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
    if (!strcmp(argv[a], "--json")) json = 1;
    else if (!strcmp(argv[a], "--api") && a + 1 < argc) {
      a++;
      if (!strcmp(argv[a], "cuda")) api = API_CUDA;
      else if (!strcmp(argv[a], "hip")) api = API_HIP;
      else return usage(argv[0]);
    } else if (!strcmp(argv[a], "--device") && a + 1 < argc) dev_ordinal = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--flags") && a + 1 < argc) flags = strtol(argv[++a], NULL, 0);
    else return usage(argv[0]);
  }
  if (argc - a < 2) return usage(argv[0]);
  const char *file = argv[a];
  n = (size_t)atol(argv[a + 1]) << 20;
  runs = argc - a > 2 ? atoi(argv[a + 2]) : 7;
  if (n == 0 || runs < 1 || dev_ordinal < 0) return usage(argv[0]);

  void *h = open_driver();
  if (!h) return 1;
  void *pinned;
  if (api == API_CUDA) {
    SYM(cuInit, "cuInit"); SYM(cuDeviceGet, "cuDeviceGet"); SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"); SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent"); SYM(cuMemAlloc, "cuMemAlloc_v2"); SYM(cuMemFree, "cuMemFree_v2");
    SYM(cuMemHostAlloc, "cuMemHostAlloc"); SYM(cuMemFreeHost, "cuMemFreeHost");
    SYM(cuMemHostRegister, "cuMemHostRegister_v2"); SYM(cuMemHostUnregister, "cuMemHostUnregister"); SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    int dev; void *ctx;
    CK(cuInit(0)); CK(cuDeviceGet(&dev, dev_ordinal)); cudev = dev; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    if (flags < 0) {
      int ro = 0;
      flags = cuDeviceGetAttribute(&ro, CU_READ_ONLY_HOST_REGISTER_SUPPORTED, dev) == 0 && ro == 1 ? CU_MEMHOSTREGISTER_READ_ONLY : 0;
    }
    CK(cuMemAlloc(&dbuf, n));
    CK(cuMemHostAlloc(&pinned, n, 0));
  } else {
    SYM(hipInit, "hipInit"); SYM(hipSetDevice, "hipSetDevice"); SYM(hipMalloc, "hipMalloc"); SYM(hipFree, "hipFree");
    SYM(hipHostMalloc, "hipHostMalloc"); SYM(hipHostFree, "hipHostFree"); SYM(hipHostRegister, "hipHostRegister");
    SYM(hipHostUnregister, "hipHostUnregister"); SYM(hipMemcpy, "hipMemcpy");
    CK(hipInit(0)); CK(hipSetDevice(dev_ordinal));
    if (flags < 0) flags = 0;
    CK(hipMalloc(&dptr, n));
    CK(hipHostMalloc(&pinned, n, 0));
  }
  int fd = open(file, O_RDONLY);
  if (fd < 0) { perror(file); return 1; }
  unsigned char *map = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) { perror("mmap"); return 1; }
  double *t = calloc(runs, sizeof *t);
  if (!t) { perror("calloc"); return 1; }
  volatile unsigned sum = 0; for (size_t i = 0; i < n; i += 4096) sum += map[i]; // fault the pages in

  if (json) printf("{\"api\":\"%s\",\"device\":%d,\"bytes\":%zu,\"runs\":%d,\"flags\":%ld,\"results\":{", api == API_CUDA ? "CUDA" : "HIP", dev_ordinal, n, runs, flags);
  TIME("pageable", "pageable (not registered)", upload(map, n));
  TIME("staged", "staged: memcpy into pinned + copy", { memcpy(pinned, map, n); upload(pinned, n); });
  TIME("memcpy", "memcpy mapping -> pinned alone", memcpy(pinned, map, n));
  TIME("pageLocked", "page-locked alone", upload(pinned, n));
  reg(map, n, (unsigned)flags);
  TIME("registered", api == API_CUDA && (flags & CU_MEMHOSTREGISTER_READ_ONLY) ? "registered (READ_ONLY)" : "registered", upload(map, n));
  TIME("stagedSourceRegistered", "staged, source registered", { memcpy(pinned, map, n); upload(pinned, n); });
  unreg(map);
  if (json) printf("}}\n");
  munmap(map, n);
  close(fd);
  if (api == API_CUDA) { cuMemFreeHost(pinned); cuMemFree(dbuf); cuDevicePrimaryCtxRelease(cudev); }
  else { hipHostFree(pinned); hipFree(dptr); }
  free(t);
  return 0;
}
