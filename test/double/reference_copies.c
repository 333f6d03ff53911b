/*
 * Driver double, the part the reference copy checks need (suites/hazards/reference-copies.ts): contexts other than
 * the one a range was registered in (common.c's dbl_htod_in: PORTABLE), streams whose copies run when the stream is
 * synchronized, a device-to-device copy that reads through a registration's device pointer (reference.c gives it),
 * the pointer query, and copies to several devices of one process. Each has a fault that breaks its promise alone
 * (README.md, "Faults").
 */
#include "common.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define DBL_MAX_STREAMS 64
#define DBL_STREAM_QUEUE 16
#define DBL_RELEASED 16

typedef struct {
  uintptr_t dst, src;
  size_t n;
  int together; /* queued while a copy of the same registration to another device was queued too */
} pending_t;

typedef struct {
  int live;
  int device;
  int context;
  size_t npending;
  pending_t pending[DBL_STREAM_QUEUE];
} stream_t;

static stream_t streams[DBL_MAX_STREAMS];
/* A stream handle is the address of its slot in this table. */
static char stream_handles[DBL_MAX_STREAMS];
static struct {
  uintptr_t start;
  size_t len;
} released[DBL_RELEASED];
static size_t nreleased;

int dbl_context(void) { return g.prof.api == API_HIP ? g.current_device : g.current_context; }

void dbl_note_released(uintptr_t start, size_t len) {
  released[nreleased % DBL_RELEASED].start = start;
  released[nreleased % DBL_RELEASED].len = len;
  nreleased++;
}

void dbl_reference_reset(void) {
  memset(streams, 0, sizeof streams);
  memset(released, 0, sizeof released);
  nreleased = 0;
}


/* ---------------------------------------------------------------- streams */

static stream_t *find_stream(void *s) {
  char *c = s;
  if (!c || c < stream_handles || c >= stream_handles + DBL_MAX_STREAMS) return NULL;
  stream_t *st = &streams[c - stream_handles];
  return st->live ? st : NULL;
}

/* After an async copy from src to `device`: the faults async_wrong_bytes (a copy alone, to the registration's own
 * device) and multi_gpu_wrong_bytes (a copy to another device, in flight with one to a second device) flip one byte
 * of what arrived. */
static void async_faults(uintptr_t dst, uintptr_t src, size_t n, int device, int together) {
  const reg_t *r = dbl_ref_reg_holding(src, 1);
  if (!r || n == 0) return;
  if ((g.faults.async_wrong_bytes && !together && r->device == device) || (g.faults.multi_gpu_wrong_bytes && together && r->device != device)) {
    ((unsigned char *)dst)[n / 2] ^= 0xFF;
  }
}

static int run_copy(uintptr_t dst, uintptr_t src, size_t n, int device, int context, int together) {
  int r = dbl_htod_in(dst, src, n, device, context, dbl_now());
  if (r == DR_OK) async_faults(dst, src, n, device, together);
  return r;
}

/* Runs what the stream holds, in order; the first failure is its result. */
static int drain(stream_t *st) {
  int result = DR_OK;
  for (size_t i = 0; i < st->npending; i++) {
    int r = run_copy(st->pending[i].dst, st->pending[i].src, st->pending[i].n, st->device, st->context, st->pending[i].together);
    if (result == DR_OK) result = r;
  }
  st->npending = 0;
  return result;
}

int dbl_stream_create(int device, int context, void **out) {
  if (!out) return DR_INVALID_VALUE;
  for (int k = 0; k < DBL_MAX_STREAMS; k++) {
    if (streams[k].live) continue;
    memset(&streams[k], 0, sizeof streams[k]);
    streams[k].live = 1;
    streams[k].device = device;
    streams[k].context = context;
    *out = &stream_handles[k];
    return DR_OK;
  }
  return DR_OUT_OF_MEMORY;
}

int dbl_stream_pending(void *s, int *device) {
  stream_t *st = find_stream(s);
  if (!st) return -1;
  *device = st->device;
  return (int)st->npending;
}

int dbl_stream_sync(void *s) {
  stream_t *st = find_stream(s);
  return st ? drain(st) : DR_INVALID_VALUE;
}

int dbl_stream_destroy(void *s) {
  stream_t *st = find_stream(s);
  if (!st) return DR_INVALID_VALUE;
  drain(st); /* work queued before the destroy still completes */
  st->live = 0;
  return DR_OK;
}

int dbl_htod_async(uintptr_t dst, uintptr_t src, size_t n, void *s, int device, int context) {
  if (!s) return run_copy(dst, src, n, device, context, 0); /* the NULL stream: at once */
  stream_t *st = find_stream(s);
  if (!st) return DR_INVALID_VALUE;
  if (n == 0) return DR_OK;
  if (!dst || !src || src + n < src || !dbl_in_dalloc(dst, n)) return DR_INVALID_VALUE;
  if (st->npending == DBL_STREAM_QUEUE) {
    int r = drain(st); /* a full queue: the oldest work runs first */
    if (r != DR_OK) return r;
  }
  /* copies of one registration queued on streams of different devices are in flight together */
  const reg_t *from = dbl_ref_reg_holding(src, 1);
  int together = 0;
  for (int k = 0; from && k < DBL_MAX_STREAMS; k++) {
    if (!streams[k].live || &streams[k] == st || streams[k].device == st->device) continue;
    for (size_t i = 0; i < streams[k].npending; i++) {
      if (dbl_ref_reg_holding(streams[k].pending[i].src, 1) == from) together = streams[k].pending[i].together = 1;
    }
  }
  st->pending[st->npending++] = (pending_t){.dst = dst, .src = src, .n = n, .together = together};
  return DR_OK;
}

/* ---------------------------------------------------------------- device pointers */

static int still_mapped(uintptr_t p, size_t n) {
  long ps = sysconf(_SC_PAGESIZE);
  uintptr_t mask = (uintptr_t)(ps > 0 ? ps : 4096) - 1;
  uintptr_t a = p & ~mask;
  return msync((void *)a, (p + n) - a, MS_ASYNC) == 0;
}

int dbl_dtod(uintptr_t dst, uintptr_t src, size_t n) {
  if (n == 0) return DR_OK;
  if (!dst || !src || !dbl_in_dalloc(dst, n)) return DR_INVALID_VALUE;
  uintptr_t host = src - dbl_ref_device_offset();
  if (dbl_ref_reg_holding(host, n)) {
    if (!still_mapped(host, n)) return DR_INVALID_VALUE; /* the device would fault: refused instead */
    memcpy((void *)dst, (const void *)host, n);
    if (g.faults.devptr_wrong) ((unsigned char *)dst)[n / 2] ^= 0xFF;
    return DR_OK;
  }
  if (dbl_in_dalloc(src, n)) {
    /* never memmove: the host-busy library (LD_PRELOAD) paces every memmove, and a driver's copies keep their own
     * rates under it; overlapping device ranges (undefined on a real driver) are copied byte by byte */
    if (dst + n <= src || src + n <= dst) memcpy((void *)dst, (const void *)src, n);
    else if (dst < src) for (size_t i = 0; i < n; i++) ((unsigned char *)dst)[i] = ((const unsigned char *)src)[i];
    else for (size_t i = n; i-- > 0;) ((unsigned char *)dst)[i] = ((const unsigned char *)src)[i];
    return DR_OK;
  }
  return DR_INVALID_VALUE;
}

int dbl_pointer_device_pointer(uintptr_t p, uintptr_t *out) {
  if (!out) return DR_INVALID_VALUE;
  if (dbl_ref_reg_holding(p, 1)) {
    *out = p + dbl_ref_device_offset();
    return DR_OK;
  }
  if (dbl_in_dalloc(p, 1)) {
    *out = p;
    return DR_OK;
  }
  if (dbl_in_halloc(p, 1)) return dbl_ref_device_pointer(p, out);
  if (g.faults.pointer_still_registered) {
    for (size_t i = 0; i < DBL_RELEASED && i < nreleased; i++) {
      if (released[i].len && p >= released[i].start && p - released[i].start < released[i].len) {
        *out = p + dbl_ref_device_offset();
        return DR_OK;
      }
    }
  }
  return DR_INVALID_VALUE;
}
