// Native reference for the staged and registered host-to-device copies (issue: performance). Loads
// libcuda.so.1 with dlopen (no CUDA headers needed to build), maps a file read-only and shared, and times, best
// of N: the registered copy (READ_ONLY registration), the staged copy (memcpy into cuMemHostAlloc memory, then
// the copy), the page-locked copy alone, and the pageable copy.
// Build: cc -O2 -o staged bench/native/staged.c -ldl     Run: ./staged FILE MIB [RUNS]
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int (*fn_i)(unsigned);
static int (*cuInit)(unsigned);
static int (*cuDeviceGet)(int *, int);
static int (*cuDevicePrimaryCtxRetain)(void **, int);
static int (*cuCtxSetCurrent)(void *);
static int (*cuMemAlloc)(unsigned long long *, size_t);
static int (*cuMemHostAlloc)(void **, size_t, unsigned);
static int (*cuMemHostRegister)(void *, size_t, unsigned);
static int (*cuMemHostUnregister)(void *);
static int (*cuMemcpyHtoD)(unsigned long long, const void *, size_t);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
#define CK(x) do { int r_ = (x); if (r_) { fprintf(stderr, "%s = %d\n", #x, r_); exit(1); } } while (0)
#define SYM(n, s) do { *(void **)&n = dlsym(h, s); if (!n) { fprintf(stderr, "no %s\n", s); exit(1); } } while (0)

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: %s FILE MIB [RUNS]\n", argv[0]); return 2; }
  size_t n = (size_t)atol(argv[2]) << 20;
  int runs = argc > 3 ? atoi(argv[3]) : 7;
  void *h = dlopen(getenv("MAPPED_REG_CUDA_LIBRARY") ? getenv("MAPPED_REG_CUDA_LIBRARY") : "libcuda.so.1", RTLD_NOW);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  SYM(cuInit, "cuInit"); SYM(cuDeviceGet, "cuDeviceGet"); SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cuCtxSetCurrent, "cuCtxSetCurrent"); SYM(cuMemAlloc, "cuMemAlloc_v2"); SYM(cuMemHostAlloc, "cuMemHostAlloc");
  SYM(cuMemHostRegister, "cuMemHostRegister_v2"); SYM(cuMemHostUnregister, "cuMemHostUnregister"); SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  int dev; void *ctx; unsigned long long d;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuMemAlloc(&d, n));
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) { perror(argv[1]); return 1; }
  unsigned char *map = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) { perror("mmap"); return 1; }
  void *pinned; CK(cuMemHostAlloc(&pinned, n, 0));
  volatile unsigned sum = 0; for (size_t i = 0; i < n; i += 4096) sum += map[i]; // fault the pages in
  double best, t;
#define BEST(label, body) do { best = 1e9; for (int k = 0; k < runs; k++) { double t0 = now(); body; t = now() - t0; if (t < best) best = t; } \
    printf("%-34s %8.2f GB/s  (best of %d, %zu MiB)\n", label, n / best / 1e9, runs, n >> 20); } while (0)
  BEST("pageable (not registered)", CK(cuMemcpyHtoD(d, map, n)));
  BEST("staged: memcpy into pinned + copy", { memcpy(pinned, map, n); CK(cuMemcpyHtoD(d, pinned, n)); });
  BEST("memcpy mapping -> pinned alone", memcpy(pinned, map, n));
  BEST("page-locked alone", CK(cuMemcpyHtoD(d, pinned, n)));
  CK(cuMemHostRegister(map, n, 0x08));
  BEST("registered (READ_ONLY)", CK(cuMemcpyHtoD(d, map, n)));
  BEST("staged, source registered", { memcpy(pinned, map, n); CK(cuMemcpyHtoD(d, pinned, n)); });
  CK(cuMemHostUnregister(map));
  return 0;
}
