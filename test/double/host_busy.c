/*
 * Host-busy double (libhost_busy_double.so): "host memory busy", the tool's own host copy slowed. Loaded with
 * LD_PRELOAD, it interposes memmove alone (V8 turns Uint8Array.prototype.set into a memmove call) and paces every
 * memmove of at least 1 MiB to MAPPED_REG_DOUBLE_HOST_COPY_GBPS GB/s, as the driver doubles pace their copies: the
 * real memmove first, then a wait until n / G after the call's entry (sleeping, the last 0.2 ms spun), never
 * shorter than the real copy. memcpy is left alone: the driver doubles copy with memcpy and keep their own rates.
 * Unset or empty: nothing is paced. A malformed value is a mistake in a test: one line on stderr and exit 2 at load.
 */
#define _GNU_SOURCE
#include "gbps.h"
#include "pace.h"
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define PACED_MIN ((size_t)1 << 20)

static void *(*real_memmove)(void *, const void *, size_t);
static double gbps; /* 0: no pacing */

/* Before the real memmove is known (a call from another library's constructor): byte by byte, either direction. */
static void *slow_memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) {
    for (size_t i = 0; i < n; i++) d[i] = s[i];
  } else {
    for (size_t i = n; i-- > 0;) d[i] = s[i];
  }
  return dst;
}


__attribute__((constructor)) static void load(void) {
  const char *s = getenv("MAPPED_REG_DOUBLE_HOST_COPY_GBPS");
  if (s && *s) {
    double v = parse_gbps(s);
    if (!(v > 0)) {
      fprintf(stderr, "mapped-reg host-busy double: MAPPED_REG_DOUBLE_HOST_COPY_GBPS '%s' is not known: a positive decimal in GB/s (see test/double/README.md)\n", s);
      _exit(2);
    }
    gbps = v;
  }
  real_memmove = (void *(*)(void *, const void *, size_t))dlsym(RTLD_NEXT, "memmove");
  if (!real_memmove) {
    fprintf(stderr, "mapped-reg host-busy double: no memmove after this library: %s\n", dlerror());
    _exit(2);
  }
}

EXPORT void *memmove(void *dst, const void *src, size_t n) {
  if (!real_memmove) return slow_memmove(dst, src, n);
  if (gbps <= 0 || n < PACED_MIN) return real_memmove(dst, src, n);
  double entry = pace_now();
  void *r = real_memmove(dst, src, n);
  pace_wait_until(entry + (double)n / (gbps * 1e9));
  return r;
}
