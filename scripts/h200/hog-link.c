// hog-link SECONDS [MIB] [ORDINAL]: another process copying to the GPU, as a job sharing the node would. It loads
// the CUDA driver (libcuda.so.1, or the library MAPPED_REG_HOG_CUDA_LIBRARY names: the tests use the driver
// double), makes the device's primary context current, allocates MIB MiB (default 256) page-locked
// (cuMemHostAlloc) and on the device, and copies host to device (cuMemcpyHtoD_v2) in a loop until SECONDS pass or
// SIGTERM/SIGINT comes. Its first line gives its pid once it is set up; its last, the GB/s it copied. It releases
// everything it took. No CUDA header is needed: the few prototypes are declared here. Used by scripts/h200/busy.sh.
// Build: cc -O2 -o hog-link hog-link.c -ldl
#define _GNU_SOURCE
#include "hog.h"
#include <dlfcn.h>
#include <stddef.h>
#include <unistd.h>

typedef int (*init_t)(unsigned int);
typedef int (*device_get_t)(int *, int);
typedef int (*retain_t)(void **, int);
typedef int (*release_t)(int);
typedef int (*set_current_t)(void *);
typedef int (*host_alloc_t)(void **, size_t, unsigned int);
typedef int (*free_host_t)(void *);
typedef int (*alloc_t)(unsigned long long *, size_t);
typedef int (*free_t)(unsigned long long);
typedef int (*htod_t)(unsigned long long, const void *, size_t);

static void *lib;
static void *sym(const char *name) {
  void *f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "hog-link: %s not found in the driver\n", name);
    exit(1);
  }
  return f;
}

// Calls the driver function NAME (of type TYPE) with ARGS; on an error, says which and returns 1 from main.
#define CHECK(type, name, ...)                                      \
  do {                                                              \
    int r_ = ((type)sym(name))(__VA_ARGS__);                        \
    if (r_ != 0) {                                                  \
      fprintf(stderr, "hog-link: %s failed: %d\n", name, r_);       \
      return 1;                                                     \
    }                                                               \
  } while (0)

static long number(const char *s, const char *what, long min) {
  char need[48];
  snprintf(need, sizeof need, "an integer of at least %ld", min);
  return integer_arg("hog-link", s, what, min, need);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: hog-link SECONDS [MIB] [ORDINAL]\n");
    return 2;
  }
  long seconds = number(argv[1], "SECONDS", 1);
  long mib = argc >= 3 ? number(argv[2], "MIB", 1) : 256;
  int ordinal = argc == 4 ? (int)number(argv[3], "ORDINAL", 0) : 0;
  size_t bytes = (size_t)mib << 20;
  const char *path = getenv("MAPPED_REG_HOG_CUDA_LIBRARY");
  if (!path || !*path) path = "libcuda.so.1";
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "hog-link: cannot load %s: %s\n", path, dlerror());
    return 1;
  }
  stop_on_signals();
  int dev = 0;
  void *ctx = NULL, *host = NULL;
  unsigned long long dptr = 0;
  CHECK(init_t, "cuInit", 0);
  CHECK(device_get_t, "cuDeviceGet", &dev, ordinal);
  CHECK(retain_t, "cuDevicePrimaryCtxRetain", &ctx, dev);
  CHECK(set_current_t, "cuCtxSetCurrent", ctx);
  CHECK(host_alloc_t, "cuMemHostAlloc", &host, bytes, 0);
  memset(host, 0x5a, bytes);
  CHECK(alloc_t, "cuMemAlloc_v2", &dptr, bytes);
  htod_t htod = (htod_t)sym("cuMemcpyHtoD_v2");
  printf("hog-link: pid %d running: copying %ld MiB page-locked to device %d (%s), for %ld s\n", (int)getpid(), mib, ordinal, path, seconds);
  fflush(stdout);
  double t0 = now(), deadline = t0 + (double)seconds, copied = 0;
  int failed = 0;
  while (!stop && now() < deadline) {
    int r = htod(dptr, host, bytes);
    if (r != 0) {
      fprintf(stderr, "hog-link: cuMemcpyHtoD_v2 failed: %d\n", r);
      failed = 1;
      break;
    }
    copied += (double)bytes;
  }
  double took = now() - t0;
  printf("hog-link: %.2f GB/s (%.1f GB in %.2f s)\n", copied / took / 1e9, copied / 1e9, took);
  CHECK(free_t, "cuMemFree_v2", dptr);
  CHECK(free_host_t, "cuMemFreeHost", host);
  CHECK(set_current_t, "cuCtxSetCurrent", NULL);
  CHECK(release_t, "cuDevicePrimaryCtxRelease_v2", dev);
  return failed;
}
