/*
 * Driver double, shared engine: configuration, the registration table, "device" memory, copies, and
 * the /proc/self/maps check that keeps a bad range from crashing the process.
 */
#include "gbps.h"
#include "common.h"
#include "pace.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define TMPFS_MAGIC_ 0x01021994

state_t g = {.current_ctx = -1, .current_context = -1};
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

void dbl_unlock_cb(int *unused) {
  (void)unused;
  pthread_mutex_unlock(&g_mu);
}

/* ---------------------------------------------------------------- call counts */

static const char *const *g_names;
static int g_nnames;
static int g_counts[64];

void dbl_set_names(const char *const *names, int n) {
  g_names = names;
  g_nnames = n < 64 ? n : 64;
}

void dbl_count_call(const char *name) {
  for (int i = 0; i < g_nnames; i++) {
    if (strcmp(g_names[i], name) == 0) {
      g_counts[i]++;
      return;
    }
  }
}

int dbl_calls(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < g_nnames; i++) {
    if (strcmp(g_names[i], name) == 0) return g_counts[i];
  }
  return -1;
}

/* How many copies were paced, by API ordinal and kind of source (0 registered, 1 pinned, 2 pageable): the tests
 * tell a paced kind from an unpaced one by this count, never by how long a copy took. */
static int g_paced[DBL_MAX_DEVICES][3];

void dbl_reset_calls(void) {
  memset(g_counts, 0, sizeof g_counts);
  memset(g_paced, 0, sizeof g_paced);
}

/* ---------------------------------------------------------------- helpers */

static size_t page_size(void) {
  static size_t ps;
  if (!ps) {
    long v = sysconf(_SC_PAGESIZE);
    ps = v > 0 ? (size_t)v : 4096;
  }
  return ps;
}

static uintptr_t page_down(uintptr_t a) { return a & ~(uintptr_t)(page_size() - 1); }

/* Round up; 0 on overflow. */
static uintptr_t page_up(uintptr_t a) {
  uintptr_t r = (a + page_size() - 1) & ~(uintptr_t)(page_size() - 1);
  return r < a ? 0 : r;
}

double dbl_now(void) { return pace_now(); }

static void sleep_s(double s) {
  if (s <= 0) return;
  struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 16;
  void *na = realloc(*arr, nc * elem);
  if (!na) return -1;
  *arr = na;
  *cap = nc;
  return 0;
}

int dbl_copy_string(char *dst, int len, const char *src) {
  if (!dst || len <= 0) return DR_INVALID_VALUE;
  size_t n = strlen(src);
  if (n >= (size_t)len) n = (size_t)len - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
  return DR_OK;
}

int dbl_check_out(int (*check)(int dev), int dev, const void *out) {
  if (!out) return DR_INVALID_VALUE;
  return check(dev);
}

int dbl_device_name(int checked, char *name, int len, const char *text) {
  if (checked != DR_OK) return checked;
  return dbl_copy_string(name, len, text);
}

int dbl_device_bus_id(int checked, int dev, char *busid, int len) {
  if (checked != DR_OK) return checked;
  char buf[32];
  dbl_pci_bus_id(buf, sizeof buf, dev);
  return dbl_copy_string(busid, len, buf);
}

int dbl_alloc_into(int (*alloc)(size_t size, int device, uintptr_t *out), size_t size, int device, void **out) {
  if (!out) return DR_INVALID_VALUE;
  uintptr_t p = 0;
  int r = alloc(size, device, &p);
  if (r == DR_OK) *out = (void *)p;
  return r;
}

int dbl_free_unless_null(int (*release)(uintptr_t p), void *ptr) {
  if (!ptr) return DR_OK;
  return release((uintptr_t)ptr);
}

const dbl_error_t *dbl_find_error(const dbl_error_t *table, size_t n, int code) {
  for (size_t i = 0; i < n; i++) {
    if (table[i].code == code) return &table[i];
  }
  return NULL;
}

/* Each neutral result as the CUDA driver (column 0) and HIP (column 1) answer it: the code, and its name and
 * text as cuGetErrorName / cuGetErrorString and hipGetErrorName / hipGetErrorString give them. CUDA has no code
 * of its own for a copy direction (its copy calls name theirs): that result is an invalid value there, and the
 * name and text of code 1 stay those of DR_INVALID_VALUE, the first row with it. */
static const dbl_error_t API_RESULTS[][2] = {
    [DR_OK] = {{0, "CUDA_SUCCESS", "no error"},
               {0, "hipSuccess", "no error"}},
    [DR_INVALID_VALUE] = {{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
                          {1, "hipErrorInvalidValue", "invalid argument"}},
    [DR_OUT_OF_MEMORY] = {{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
                          {2, "hipErrorOutOfMemory", "out of memory"}},
    [DR_NOT_INITIALIZED] = {{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
                            {3, "hipErrorNotInitialized", "initialization error"}},
    [DR_NO_DEVICE] = {{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
                      {100, "hipErrorNoDevice", "no ROCm-capable device is detected"}},
    [DR_INVALID_DEVICE] = {{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
                           {101, "hipErrorInvalidDevice", "invalid device ordinal"}},
    [DR_INVALID_CONTEXT] = {{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
                            {201, "hipErrorInvalidContext", "invalid device context"}},
    [DR_ALREADY_REGISTERED] = {{712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
                               {712, "hipErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"}},
    [DR_NOT_REGISTERED] = {{713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
                           {713, "hipErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"}},
    [DR_NOT_SUPPORTED] = {{801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
                          {801, "hipErrorNotSupported", "operation not supported"}},
    [DR_UNKNOWN] = {{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
                    {999, "hipErrorUnknown", "unknown error"}},
    [DR_INVALID_MEMCPY_DIRECTION] = {{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
                                     {21, "hipErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"}},
    [DR_SYSTEM_DRIVER_MISMATCH] = {{803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
                                   {35, "hipErrorInsufficientDriver", "driver version is insufficient for runtime version"}},
};

#define API_RESULT_ROWS (sizeof API_RESULTS / sizeof API_RESULTS[0])

static int api_column(int api) { return api == API_HIP ? 1 : 0; }

int dbl_api_code(int api, int r) {
  if (r < 0 || (size_t)r >= API_RESULT_ROWS) r = DR_UNKNOWN;
  return API_RESULTS[r][api_column(api)].code;
}

const dbl_error_t *dbl_api_error(int api, int code) {
  for (size_t r = 0; r < API_RESULT_ROWS; r++) {
    if (API_RESULTS[r][api_column(api)].code == code) return &API_RESULTS[r][api_column(api)];
  }
  return NULL;
}

int dbl_integrated(int *value) {
  if (g.faults.integrated_query_fails) return g.prof.integrated_fail_result;
  *value = g.faults.integrated ? 1 : 0;
  return DR_OK;
}

static int selects(const dbl_profile_choice_t *c, const char *name) {
  if (strcmp(c->name, name) == 0) return 1;
  for (size_t i = 0; i < sizeof c->aliases / sizeof c->aliases[0] && c->aliases[i]; i++) {
    if (strcmp(c->aliases[i], name) == 0) return 1;
  }
  return 0;
}

int dbl_pick_profile(const profile_t *base, const dbl_profile_choice_t *choices, size_t n, const char *name, profile_t *out) {
  for (size_t i = 0; i < n; i++) {
    if (!(name ? selects(&choices[i], name) : i == 0)) continue;
    *out = *base;
    out->name = choices[i].name;
    out->nodevice = choices[i].nodevice;
    if (choices[i].rocm724_bugs) {
      out->accept_prot_none = 1;
      out->accept_overlap = 1;
      out->tmpfs_serves_zeros = 1;
      out->stuck_unregister = 1;
    }
    return 1;
  }
  return 0;
}

const char *dbl_profile_name(void) {
  const char *pname = getenv("MAPPED_REG_DOUBLE_PROFILE");
  if (pname && *pname) return pname;
#ifdef DBL_BUILD_PROFILE
  return DBL_BUILD_PROFILE;
#else
  return NULL;
#endif
}

int dbl_env_long(const char *name, long dflt, long *out) {
  const char *s = getenv(name);
  if (!s || !*s) {
    *out = dflt;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || !end || *end != '\0' || v < 0) return -1;
  *out = v;
  return 0;
}

/* ---------------------------------------------------------------- /proc/self/maps */

typedef struct {
  int mapped;       /* every page of the range lies in a mapping, no gap */
  int readable;     /* every page is readable (no PROT_NONE part) */
  int writable;     /* every page is writable */
  int beyond_eof;   /* some file-backed page lies wholly past the end of its file (would SIGBUS) */
  int shared_writable_regular_file; /* part is a MAP_SHARED writable mapping of a regular file */
  int tmpfs_file;   /* part is a file on tmpfs (/dev/shm), not a memfd */
  int memfd;        /* part is a memfd */
  int private_file; /* part is a MAP_PRIVATE mapping of a regular file */
  int segments;     /* mappings the range spans */
  char file[256];   /* the regular file of the first mapping, when it still has a name (else "") */
  unsigned long long file_off; /* file offset of a in that file */
} range_info;

static char *read_maps(void) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  if (!buf) {
    close(fd);
    return NULL;
  }
  for (;;) {
    if (len + 4096 + 1 > cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        close(fd);
        return NULL;
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len - 1);
    if (r < 0) {
      if (errno == EINTR) continue;
      free(buf);
      close(fd);
      return NULL;
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  close(fd);
  buf[len] = '\0';
  return buf;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/*
 * What the maps say about [a, b) (page-rounded by the caller). Returns -1 when the maps cannot be
 * read (then nothing is known and the caller refuses the range).
 */
static int probe_range(uintptr_t a, uintptr_t b, range_info *out) {
  memset(out, 0, sizeof *out);
  char *maps = read_maps();
  if (!maps) return -1;
  out->readable = 1;
  out->writable = 1;
  uintptr_t cursor = a;
  char *save = NULL;
  for (char *line = strtok_r(maps, "\n", &save); line && cursor < b; line = strtok_r(NULL, "\n", &save)) {
    unsigned long start, end, inode;
    unsigned long long offset;
    unsigned dmaj, dmin;
    char perms[8];
    int pathpos = 0;
    if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu %n", &start, &end, perms, &offset, &dmaj, &dmin, &inode,
               &pathpos) < 7) {
      continue;
    }
    if (end <= cursor) continue;
    if (start > cursor) break; /* a gap: part of the range is not mapped */
    /* this segment covers cursor */
    uintptr_t seg_hi = end < b ? end : b;
    out->segments++;
    int r = perms[0] == 'r', w = perms[1] == 'w', shared = perms[3] == 's';
    if (!r) out->readable = 0;
    if (!w) out->writable = 0;
    char path[4096];
    path[0] = '\0';
    if (pathpos > 0) {
      snprintf(path, sizeof path, "%s", line + pathpos);
    }
    if (inode != 0 && path[0] == '/') {
      int deleted = ends_with(path, " (deleted)");
      if (deleted) path[strlen(path) - strlen(" (deleted)")] = '\0';
      int shmem_object = starts_with(path, "/memfd:") || starts_with(path, "/dev/zero") || starts_with(path, "/SYSV");
      if (starts_with(path, "/memfd:")) out->memfd = 1;
      if (!shmem_object) {
        int tmpfs = 0;
        struct statfs sfs;
        if (!deleted && statfs(path, &sfs) == 0) {
          tmpfs = sfs.f_type == TMPFS_MAGIC_;
        } else {
          tmpfs = starts_with(path, "/dev/shm/");
        }
        if (tmpfs) out->tmpfs_file = 1;
        struct stat st;
        int regular = 0;
        if (!deleted && stat(path, &st) == 0 && (unsigned long)st.st_ino == inode) {
          regular = S_ISREG(st.st_mode);
          if (regular && out->segments == 1 && strlen(path) < sizeof out->file) {
            snprintf(out->file, sizeof out->file, "%s", path);
            out->file_off = offset + (unsigned long long)(a - start);
          }
          if (regular) {
            /* Pages wholly past the end of the file would raise SIGBUS when read. */
            unsigned long long off_end = offset + (unsigned long long)(seg_hi - start);
            unsigned long long file_end = page_up((uintptr_t)st.st_size);
            if (st.st_size > 0 && file_end == 0) file_end = ~0ULL;
            if (off_end > file_end) out->beyond_eof = 1;
          }
        } else if (deleted) {
          regular = 1; /* cannot tell its size any more; a deleted regular file most likely */
        }
        if (regular && !tmpfs && shared && w) out->shared_writable_regular_file = 1;
        if (regular && !shared) out->private_file = 1;
      }
    }
    cursor = seg_hi;
  }
  free(maps);
  out->mapped = cursor >= b;
  if (!out->mapped) {
    out->readable = 0;
    out->writable = 0;
  }
  return 0;
}

/* ---------------------------------------------------------------- configuration */

static void parse_error(const char *what, const char *value) {
  fprintf(stderr, "mapped-reg driver double: %s '%s' is not known (see test/double/README.md)\n", what, value);
}

/* The faults that are a bare name setting one flag; 0 when `name` is none of them. */
static int set_flag_fault(const char *name, faults_t *f) {
  static const struct {
    const char *name;
    size_t offset;
  } FLAGS[] = {
      {"accept_prot_none", offsetof(faults_t, accept_prot_none)},
      {"readonly_flags0", offsetof(faults_t, readonly_flags0)},
      {"tmpfs_zeros", offsetof(faults_t, tmpfs_zeros)},
      {"memfd_wrong_bytes", offsetof(faults_t, memfd_wrong_bytes)},
      {"private_wrong_bytes", offsetof(faults_t, private_wrong_bytes)},
      {"accept_same_range", offsetof(faults_t, accept_same_range)},
      {"accept_overlap", offsetof(faults_t, accept_overlap)},
      {"duplicate_spoils_release", offsetof(faults_t, duplicate_spoils_release)},
      {"idle_release_fails", offsetof(faults_t, idle_release_fails)},
      {"unknown_unregister_invalid", offsetof(faults_t, unknown_unregister_invalid)},
      {"interior_unregister_succeeds", offsetof(faults_t, interior_unregister_succeeds)},
      {"stale_after_write", offsetof(faults_t, stale_after_write)},
      {"unmapped_unregister_fails", offsetof(faults_t, unmapped_unregister_fails)},
      {"reset_keeps_registrations", offsetof(faults_t, reset_keeps_registrations)},
      {"portable_ignored", offsetof(faults_t, portable_ignored)},
      {"async_wrong_bytes", offsetof(faults_t, async_wrong_bytes)},
      {"devptr_wrong", offsetof(faults_t, devptr_wrong)},
      {"pointer_still_registered", offsetof(faults_t, pointer_still_registered)},
      {"multi_gpu_wrong_bytes", offsetof(faults_t, multi_gpu_wrong_bytes)},
      {"events_fail", offsetof(faults_t, events_fail)},
  };
  for (size_t i = 0; i < sizeof FLAGS / sizeof FLAGS[0]; i++) {
    if (strcmp(FLAGS[i].name, name) == 0) {
      *(int *)((char *)f + FLAGS[i].offset) = 1;
      return 1;
    }
  }
  return 0;
}

/* A token of a comma-separated list without its spaces and tabs at either end (cut in place). */
static char *trimmed(char *tok) {
  while (*tok == ' ' || *tok == '\t') tok++;
  size_t n = strlen(tok);
  while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t')) tok[--n] = '\0';
  return tok;
}

/* The next non-empty item of the comma-separated list at *rest (cut in place), trimmed, and cut at its first '=':
 * *val is what follows it, NULL when there is none. NULL at the end of the list. */
static char *next_item(char **rest, char **val) {
  while (*rest) {
    char *tok = *rest;
    char *comma = strchr(tok, ',');
    *rest = comma ? comma + 1 : NULL;
    if (comma) *comma = '\0';
    tok = trimmed(tok);
    if (*tok == '\0') continue;
    char *eq = strchr(tok, '=');
    *val = eq ? eq + 1 : NULL;
    if (eq) *eq = '\0';
    return tok;
  }
  return NULL;
}

static int parse_faults(const char *spec, faults_t *f) {
  memset(f, 0, sizeof *f);
  if (!spec) return 0;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec);
  char *rest = buf, *val = NULL;
  for (char *tok; (tok = next_item(&rest, &val));) {
    if (val) {
      char *end = NULL;
      if (strcmp(tok, "unregister_fails") == 0) {
        errno = 0;
        long v = strtol(val, &end, 10);
        if (errno || !*val || *end || v < 0 || v > 1000000) {
          parse_error("value of fault unregister_fails", val);
          return -1;
        }
        f->unregister_fails = (int)v;
      } else if (strcmp(tok, "stuck_registration") == 0 || strcmp(tok, "register_max") == 0) {
        errno = 0;
        long long v = strtoll(val, &end, 10);
        if (errno || !*val || *end || v < 1 || (tok[0] == 's' && v > 1000000)) {
          parse_error(tok[0] == 's' ? "value of fault stuck_registration" : "value of fault register_max", val);
          return -1;
        }
        if (tok[0] == 's') f->stuck_registration = (int)v;
        else f->register_max = (size_t)v;
      } else if (strcmp(tok, "slow_init") == 0) {
        errno = 0;
        long v = strtol(val, &end, 10);
        if (errno || !*val || *end || v < 0 || v > 600000) {
          parse_error("value of fault slow_init", val);
          return -1;
        }
        f->slow_init_ms = v;
      } else if (strcmp(tok, "slow_registered") == 0) {
        errno = 0;
        double v = strtod(val, &end);
        if (errno || !*val || *end || !(v > 0) || v > 1e6) {
          parse_error("value of fault slow_registered", val);
          return -1;
        }
        f->slow_factor = v;
      } else {
        parse_error("fault", tok);
        return -1;
      }
    } else if (strcmp(tok, "wrong_bytes") == 0) {
      f->wrong_bytes = 1;
    } else if (strcmp(tok, "integrated") == 0) {
      f->integrated = 1;
    } else if (strcmp(tok, "integrated_query_fails") == 0) {
      f->integrated_query_fails = 1;
    } else if (strcmp(tok, "nodevice") == 0) {
      f->nodevice = 1;
    } else if (strcmp(tok, "init_fails") == 0) {
      f->init_fails = 1;
    } else if (dbl_ref_fault_bit(tok)) {
      f->ref_faults |= dbl_ref_fault_bit(tok);
    } else if (!set_flag_fault(tok, f)) {
      parse_error("fault", tok);
      return -1;
    }
  }
  return 0;
}


/*
 * MAPPED_REG_DOUBLE_RATES syntax: comma-separated registered=G, pinned=G, pageable=G (G in GB/s). Each kind
 * named is written into *r; the others are left as they are (so a per-device variable overrides kind by kind).
 * Returns -1 on bad syntax, with one line on stderr naming the variable.
 */
static int parse_rates(const char *var, const char *spec, rates_t *r) {
  char buf[256];
  if (strlen(spec) >= sizeof buf) {
    fprintf(stderr, "mapped-reg driver double: %s is too long (see test/double/README.md)\n", var);
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", spec);
  char *rest = buf, *val = NULL;
  for (char *tok; (tok = next_item(&rest, &val));) {
    double v = val ? parse_gbps(val) : 0;
    double *slot = !val ? NULL
                   : strcmp(tok, "registered") == 0 ? &r->registered
                   : strcmp(tok, "pinned") == 0     ? &r->pinned
                   : strcmp(tok, "pageable") == 0   ? &r->pageable
                                                    : NULL;
    if (!slot || !(v > 0)) {
      fprintf(stderr, "mapped-reg driver double: %s '%s' is not known: comma-separated registered=G, pinned=G, pageable=G with G a positive decimal in GB/s (see test/double/README.md)\n", var, spec);
      return -1;
    }
    *slot = v;
  }
  return 0;
}

/* ---------------------------------------------------------------- noise (MAPPED_REG_DOUBLE_NOISE) */

/* splitmix64: a seeded generator that needs no state beyond one word (the same seed, the same copies). */
static unsigned long long noise_next(unsigned long long *x) {
  unsigned long long z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* A standard normal draw (Box-Muller). */
static double noise_gauss(unsigned long long *x) {
  double u1 = ((double)(noise_next(x) >> 11) + 1.0) / 9007199254740993.0; /* (0, 1] */
  double u2 = (double)(noise_next(x) >> 11) / 9007199254740992.0;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* A spread: a decimal, a fraction (0.026) or a percentage (2.6%), from 0 to 1. -1 when it is not one. */
static double parse_spread(const char *val) {
  char *end = NULL;
  errno = 0;
  double v = strtod(val, &end);
  if (errno || end == val) return -1;
  if (*end == '%') {
    v /= 100;
    end++;
  }
  return *end || !(v >= 0) || v > 1 ? -1 : v;
}

/*
 * MAPPED_REG_DOUBLE_NOISE syntax: comma-separated sd=S, drift=S, load=S (S a fraction or a percentage) and seed=N.
 * Each paced copy's duration is multiplied by exp(sd / sqrt(2) * g), g a fresh normal draw, so one round's
 * registered / page-locked spreads by sd; the registered copies of the whole run by exp(drift * g0), g0 drawn once
 * at init (the noise between runs that one run's rounds cannot show); and every copy alike by exp(load * s), s an
 * AR(1) of 0.95 a copy (a host whose load comes and goes, which a pair timed back to back shares). The same seed
 * gives the same copies. Returns -1 on bad syntax, with one line on stderr.
 */
static int read_noise(noise_t *n) {
  memset(n, 0, sizeof *n);
  const char *spec = getenv("MAPPED_REG_DOUBLE_NOISE");
  if (!spec || !*spec) return 0;
  char buf[256];
  if (strlen(spec) >= sizeof buf) {
    fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_NOISE is too long (see test/double/README.md)\n");
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", spec);
  char *rest = buf, *val = NULL;
  for (char *tok; (tok = next_item(&rest, &val));) {
    int ok = val != NULL;
    if (ok && strcmp(tok, "seed") == 0) {
      char *end = NULL;
      errno = 0;
      unsigned long long v = strtoull(val, &end, 10);
      ok = !errno && *val && !*end && *val != '-';
      n->seed = v;
    } else if (ok) {
      double v = parse_spread(val);
      double *slot = strcmp(tok, "sd") == 0 ? &n->sd : strcmp(tok, "drift") == 0 ? &n->drift : strcmp(tok, "load") == 0 ? &n->load : NULL;
      ok = slot && v >= 0;
      if (ok) *slot = v;
    }
    if (!ok) {
      fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_NOISE '%s' is not known: comma-separated sd=S, drift=S, load=S (S a fraction such as 0.026 or a percentage such as 2.6%%, at most 1) and seed=N (see test/double/README.md)\n", spec);
      return -1;
    }
  }
  n->on = 1;
  n->rng = n->seed;
  n->run_offset = n->drift * noise_gauss(&n->rng);
  n->load_state = noise_gauss(&n->rng);
  return 0;
}

/* The factor of one paced copy's duration (1 with no noise); kind 0 registered, 1 pinned, 2 pageable. */
static double noise_factor(int kind) {
  noise_t *n = &g.noise;
  if (!n->on) return 1.0;
  n->load_state = 0.95 * n->load_state + 0.3122498999 * noise_gauss(&n->rng); /* sqrt(1 - 0.95^2) */
  double x = n->sd / 1.4142135623730951 * noise_gauss(&n->rng) + n->load * n->load_state;
  if (kind == 0) x += n->run_offset;
  return exp(x);
}

/* The rates of every physical device: MAPPED_REG_DOUBLE_RATES, then MAPPED_REG_DOUBLE_RATES_<N> over it. */
static int read_rates(rates_t out[DBL_MAX_DEVICES]) {
  rates_t base = {0, 0, 0};
  const char *all = getenv("MAPPED_REG_DOUBLE_RATES");
  if (all && parse_rates("MAPPED_REG_DOUBLE_RATES", all, &base) != 0) return -1;
  for (int i = 0; i < DBL_MAX_DEVICES; i++) {
    out[i] = base;
    char var[64];
    snprintf(var, sizeof var, "MAPPED_REG_DOUBLE_RATES_%d", i);
    const char *one = getenv(var);
    if (one && parse_rates(var, one, &out[i]) != 0) return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- the shared link */

/*
 * MAPPED_REG_DOUBLE_LINK_FILE / MAPPED_REG_DOUBLE_LINK_GBPS: every host-to-device copy of every process naming the
 * same file shares G GB/s. Each process keeps one slot in the file (its pid and its copies in flight, one 64-bit
 * word changed only by compare-and-swap or atomic add, so no lock is held across processes); a copy advances at
 * G / k while k copies are in flight, k counted over the slots of live processes. A slot of a dead process (killed
 * in a copy) is not counted, and is freed by the next process that counts it.
 */
#define LINK_MAGIC "MRLINK1"
#define LINK_SLICE_S 0.001 /* how often a copy in flight counts the others again */

static uint64_t slot_word(uint32_t pid, uint32_t active) { return ((uint64_t)pid << 32) | active; }
static uint32_t slot_pid(uint64_t w) { return (uint32_t)(w >> 32); }
static uint32_t slot_active(uint64_t w) { return (uint32_t)w; }

/* A process is alive when it exists and is not a zombie (killed, not reaped yet: it copies nothing any more). */
static int pid_alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno != EPERM) return 0;
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  ssize_t r = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (r <= 0) return 1;
  buf[r] = '\0';
  const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parentheses: the state follows the last ')' */
  return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

/* Maps the link file (created when missing, grown to its size, never shrunk). 0, or -1 reported on stderr. */
static int link_map(const char *path, link_file_t **out) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || ((size_t)st.st_size < sizeof(link_file_t) && ftruncate(fd, sizeof(link_file_t)) != 0)) {
    fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_LINK_FILE '%s' cannot be opened read-write: %s (see test/double/README.md)\n", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  void *m = mmap(NULL, sizeof(link_file_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_LINK_FILE '%s' cannot be mapped: %s (see test/double/README.md)\n", path, strerror(errno));
    return -1;
  }
  link_file_t *l = m;
  char want[8] = LINK_MAGIC;
  if (memcmp(l->magic, want, sizeof want) != 0) memcpy(l->magic, want, sizeof want); /* a new file; every writer writes the same bytes */
  *out = l;
  return 0;
}

static void link_unmap(void) {
  if (g.link) munmap(g.link, sizeof(link_file_t));
  g.link = NULL;
}

/* This process's slot (claimed when it has none: a free slot, else one of a dead process); NULL when all 64 are
 * held by live processes (its copies then go unpaced by the link, as if alone: reported once). */
static uint64_t *link_slot(void) {
  uint32_t me = (uint32_t)getpid();
  for (int i = 0; i < DBL_LINK_SLOTS; i++) {
    if (slot_pid(__atomic_load_n(&g.link->slots[i], __ATOMIC_SEQ_CST)) == me) return &g.link->slots[i];
  }
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < DBL_LINK_SLOTS; i++) {
      uint64_t w = __atomic_load_n(&g.link->slots[i], __ATOMIC_SEQ_CST);
      if (w != 0 && (pass == 0 || pid_alive((pid_t)slot_pid(w)))) continue;
      if (__atomic_compare_exchange_n(&g.link->slots[i], &w, slot_word(me, 0), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return &g.link->slots[i];
    }
  }
  static int said;
  if (!said++) fprintf(stderr, "mapped-reg driver double: every slot of MAPPED_REG_DOUBLE_LINK_FILE is held by a live process\n");
  return NULL;
}

/* Copies in flight on the link now, over live processes; frees the slots of dead ones. */
static uint32_t link_in_flight(void) {
  uint32_t k = 0, me = (uint32_t)getpid();
  for (int i = 0; i < DBL_LINK_SLOTS; i++) {
    uint64_t w = __atomic_load_n(&g.link->slots[i], __ATOMIC_SEQ_CST);
    if (w == 0) continue;
    if (slot_pid(w) != me && !pid_alive((pid_t)slot_pid(w))) {
      __atomic_compare_exchange_n(&g.link->slots[i], &w, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      continue;
    }
    k += slot_active(w);
  }
  return k;
}

/*
 * The host-to-device copy itself: memcpy, and with a shared link, the copy in flight until its n bytes have gone
 * through at G / k. Integrated in slices of LINK_SLICE_S: each slice advances G / k times its length, k the larger
 * of the counts at its start and end (so two copies in flight together never pass more than G between them, and a
 * copy alone never more than G), the last stretch waited for as `pace` does. Returns how long the memcpy took.
 */
static double link_copy(uintptr_t dst, uintptr_t src, size_t n) {
  uint64_t *slot = g.link ? link_slot() : NULL;
  if (slot) __atomic_add_fetch(slot, 1, __ATOMIC_SEQ_CST);
  double t0 = dbl_now();
  memcpy((void *)dst, (const void *)src, n);
  double t1 = dbl_now();
  if (!slot) return t1 - t0;
  double left = (double)n, t = t0;
  uint32_t k0 = link_in_flight();
  for (;;) {
    double rate = g.link_gbps * 1e9 / (double)(k0 ? k0 : 1);
    double need = left / rate;
    double now = dbl_now();
    if (now < t + need) {
      if (need - (now - t) <= LINK_SLICE_S) pace_wait_until(t + need);
      else sleep_s(LINK_SLICE_S);
    }
    now = dbl_now();
    uint32_t k1 = link_in_flight();
    uint32_t k = k1 > k0 ? k1 : k0;
    left -= g.link_gbps * 1e9 / (double)(k ? k : 1) * (now - t);
    t = now;
    k0 = k1;
    if (left <= 0) break;
  }
  __atomic_sub_fetch(slot, 1, __ATOMIC_SEQ_CST);
  return t1 - t0;
}

/* Reads MAPPED_REG_DOUBLE_LINK_FILE and MAPPED_REG_DOUBLE_LINK_GBPS (both or neither). 0, or -1 reported on stderr. */
static int read_link(double *gbps, link_file_t **link) {
  const char *file = getenv("MAPPED_REG_DOUBLE_LINK_FILE");
  const char *rate = getenv("MAPPED_REG_DOUBLE_LINK_GBPS");
  int has_file = file && *file, has_rate = rate && *rate;
  *gbps = 0;
  *link = NULL;
  if (!has_file && !has_rate) return 0;
  if (!has_file || !has_rate) {
    fprintf(stderr, "mapped-reg driver double: %s is set without %s: a shared link needs both (see test/double/README.md)\n",
            has_file ? "MAPPED_REG_DOUBLE_LINK_FILE" : "MAPPED_REG_DOUBLE_LINK_GBPS", has_file ? "MAPPED_REG_DOUBLE_LINK_GBPS" : "MAPPED_REG_DOUBLE_LINK_FILE");
    return -1;
  }
  *gbps = parse_gbps(rate);
  if (!(*gbps > 0)) {
    fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_LINK_GBPS '%s' is not known: a positive decimal in GB/s (see test/double/README.md)\n", rate);
    return -1;
  }
  return link_map(file, link);
}

/*
 * MAPPED_REG_DOUBLE_ORDER: comma-separated distinct physical indices below ndev; API ordinal i is order[i].
 * Unset or empty: the identity over ndev. Returns the number of API ordinals, or -1 (reported on stderr).
 */
static int read_order(long ndev, int order[DBL_MAX_DEVICES]) {
  const char *spec = getenv("MAPPED_REG_DOUBLE_ORDER");
  if (!spec || !*spec) {
    for (int i = 0; i < DBL_MAX_DEVICES; i++) order[i] = i;
    return (int)ndev;
  }
  char buf[256];
  if (strlen(spec) >= sizeof buf) {
    fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_ORDER is too long (see test/double/README.md)\n");
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", spec);
  int n = 0, seen[DBL_MAX_DEVICES] = {0};
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ' || *tok == '\t') tok++;
    char *end = NULL;
    errno = 0;
    long v = strtol(tok, &end, 10);
    while (end && (*end == ' ' || *end == '\t')) end++;
    if (errno || end == tok || !end || *end || v < 0 || v >= ndev || seen[v] || n >= DBL_MAX_DEVICES) {
      fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_ORDER '%s' is not known: distinct physical indices below MAPPED_REG_DOUBLE_DEVICES (%ld), comma-separated (see test/double/README.md)\n", spec, ndev);
      return -1;
    }
    seen[v] = 1;
    order[n++] = (int)v;
  }
  if (n == 0) {
    fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_ORDER '%s' names no device (see test/double/README.md)\n", spec);
    return -1;
  }
  return n;
}

int dbl_physical(int device) { return device >= 0 && device < DBL_MAX_DEVICES ? g.order[device] : device; }

void dbl_pci_bus_id(char *buf, size_t len, int device) { snprintf(buf, len, "0000:00:%02x.0", dbl_physical(device)); }

int dbl_init(int api, int (*parse_profile)(const char *name, profile_t *out)) {
  g.initialized = 0;
  const char *pname = dbl_profile_name();
  profile_t prof;
  if (!parse_profile(pname, &prof)) {
    parse_error("profile", pname);
    return g.last_init_result = DR_INVALID_VALUE;
  }
  faults_t faults;
  if (parse_faults(getenv("MAPPED_REG_DOUBLE_FAULTS"), &faults) != 0) {
    return g.last_init_result = DR_INVALID_VALUE;
  }
  ref_attrs_t ref_attrs;
  if (dbl_ref_read_attributes(&ref_attrs) != 0) return g.last_init_result = DR_INVALID_VALUE;
  long ndev = 1;
  if (dbl_env_long("MAPPED_REG_DOUBLE_DEVICES", 1, &ndev) != 0 || ndev > DBL_MAX_DEVICES) {
    parse_error("device count MAPPED_REG_DOUBLE_DEVICES", getenv("MAPPED_REG_DOUBLE_DEVICES"));
    return g.last_init_result = DR_INVALID_VALUE;
  }
  int order[DBL_MAX_DEVICES];
  int napi = read_order(ndev, order);
  if (napi < 0) return g.last_init_result = DR_INVALID_VALUE;
  rates_t rates[DBL_MAX_DEVICES];
  if (read_rates(rates) != 0) return g.last_init_result = DR_INVALID_VALUE;
  noise_t noise;
  if (read_noise(&noise) != 0) return g.last_init_result = DR_INVALID_VALUE;
  double link_gbps;
  link_file_t *link;
  if (read_link(&link_gbps, &link) != 0) return g.last_init_result = DR_INVALID_VALUE;
  long hipv = 0;
  if (api == API_HIP) {
    if (dbl_env_long("MAPPED_REG_DOUBLE_HIP_VERSION", prof.nodevice ? 50731921L : DBL_BUILD_HIP_VERSION, &hipv) != 0) {
      parse_error("version MAPPED_REG_DOUBLE_HIP_VERSION", getenv("MAPPED_REG_DOUBLE_HIP_VERSION"));
      if (link) munmap(link, sizeof *link);
      return g.last_init_result = DR_INVALID_VALUE;
    }
  }
  g.prof = prof;
  g.faults = faults;
  g.ref_attrs = ref_attrs;
  g.ndevices = napi;
  g.registered_since_init = 0;
  memset(g.reset_seen, 0, sizeof g.reset_seen);
  memcpy(g.order, order, sizeof order);
  memcpy(g.rates, rates, sizeof rates);
  g.noise = noise;
  g.hip_version = hipv;
  link_unmap();
  g.link = link;
  g.link_gbps = link_gbps;
  if (DBL_BUILD_INIT_MISMATCH) return g.last_init_result = DR_SYSTEM_DRIVER_MISMATCH;
  if (faults.init_fails) return g.last_init_result = DR_UNKNOWN;
  if (prof.nodevice || faults.nodevice || ndev == 0) {
    g.ndevices = 0;
    return g.last_init_result = DR_NO_DEVICE;
  }
  if (g.current_device < 0 || g.current_device >= g.ndevices) g.current_device = 0;
  /* a real driver's start takes a while (cuInit: 215 ms on the H200), once a process: slow_init=MS models it (a
   * later cuInit of the process, which the real driver answers at once, is not slowed) */
  static int started;
  if (faults.slow_init_ms > 0 && !started) sleep_s(faults.slow_init_ms / 1000.0);
  started = 1;
  g.initialized = 1;
  return g.last_init_result = DR_OK;
}

/* ---------------------------------------------------------------- tables */

static void remove_reg(size_t i) {
  free(g.regs[i].snapshot);
  g.regs[i] = g.regs[g.nregs - 1];
  g.nregs--;
}

static void drop_allocations(int device);

static void drop_registrations(int device) {
  for (size_t i = g.nregs; i-- > 0;) {
    if (g.regs[i].device != device) continue;
    /* remembered for the fault unknown_unregister_invalid: the driver knew this pointer */
    if (grow((void **)&g.dropped, &g.capdropped, g.ndropped, sizeof *g.dropped) == 0) g.dropped[g.ndropped++] = g.regs[i].start;
    remove_reg(i);
  }
}

void dbl_reset_device(int device) {
  if (device >= 0 && device < DBL_MAX_DEVICES) g.reset_seen[device] = 1;
  if (!g.faults.reset_keeps_registrations) drop_registrations(device);
  drop_allocations(device);
}

void dbl_drop_device(int device) {
  drop_registrations(device);
  drop_allocations(device);
}

static void drop_allocations(int device) {
  for (size_t i = g.ndallocs; i-- > 0;) {
    if (g.dallocs[i].device == device) {
      free((void *)g.dallocs[i].p);
      g.dalloc_total -= g.dallocs[i].len;
      g.dallocs[i] = g.dallocs[--g.ndallocs];
    }
  }
  for (size_t i = g.nhallocs; i-- > 0;) {
    if (g.hallocs[i].device == device) {
      munmap((void *)g.hallocs[i].p, page_up(g.hallocs[i].len));
      g.hallocs[i] = g.hallocs[--g.nhallocs];
    }
  }
}

void dbl_reset_all(void) {
  link_unmap();
  for (size_t i = 0; i < g.nregs; i++) free(g.regs[i].snapshot);
  free(g.dropped);
  for (size_t i = 0; i < g.ndallocs; i++) free((void *)g.dallocs[i].p);
  for (size_t i = 0; i < g.nhallocs; i++) munmap((void *)g.hallocs[i].p, page_up(g.hallocs[i].len));
  free(g.regs);
  free(g.dallocs);
  free(g.hallocs);
  memset(&g, 0, sizeof g);
  g.current_ctx = -1;
  g.current_context = -1;
  dbl_reference_reset();
  dbl_events_reset();
  dbl_reset_calls();
}

int dbl_live_registrations(void) { return (int)g.nregs; }

static int ranges_overlap(uintptr_t a, uintptr_t alen_end, uintptr_t b, uintptr_t blen_end) {
  return a < blen_end && b < alen_end;
}

static alloc_t *find_alloc(alloc_t *arr, size_t n, uintptr_t p, size_t len) {
  for (size_t i = 0; i < n; i++) {
    if (p >= arr[i].p && p - arr[i].p <= arr[i].len && len <= arr[i].len - (p - arr[i].p)) return &arr[i];
  }
  return NULL;
}

/* ---------------------------------------------------------------- registration */

/* Whether the pages `info` describes may be registered with `flags`, as far as their protection goes: DR_OK, or
 * INVALID_VALUE. *fail_once: accepted under the fault readonly_flags0, and its first release fails. */
static int check_protection(const range_info *info, unsigned flags, int *fail_once) {
  if (!info->readable) return g.prof.accept_prot_none || g.faults.accept_prot_none ? DR_OK : DR_INVALID_VALUE;
  if (info->beyond_eof) return DR_INVALID_VALUE;
  int readonly = g.prof.readonly_flag && (flags & g.prof.readonly_flag);
  if (g.prof.readonly_needs_flag && !readonly) {
    /* Without READ_ONLY the pages are pinned for writing: the mapping must allow it, and the kernel
     * refuses a long-term writable pin of the pages of a regular file mapped MAP_SHARED. */
    if (info->shared_writable_regular_file) return DR_INVALID_VALUE;
    if (!info->writable) {
      if (!g.faults.readonly_flags0) return DR_INVALID_VALUE;
      *fail_once = 1; /* accepted, and its first release fails */
    }
  }
  if (!g.prof.readonly_needs_flag && info->writable && info->shared_writable_regular_file) {
    /* HIP ignores the read-only flag and pins writable mappings for writing. */
    return DR_INVALID_VALUE;
  }
  return DR_OK;
}

int dbl_register(uintptr_t p, size_t size, unsigned flags, int device) {
  int gate = dbl_ref_register_gate(p, size, flags, g.prof.valid_flags, g.prof.readonly_flag, g.prof.readonly_needs_flag);
  if (gate >= 0) return gate;
  if (p + size < p) return DR_INVALID_VALUE;
  if (g.faults.register_max && size > g.faults.register_max) return DR_OUT_OF_MEMORY;
  uintptr_t ps = page_down(p), pe = page_up(p + size);
  if (!pe) return DR_INVALID_VALUE;
  range_info info;
  if (probe_range(ps, pe, &info) != 0) return DR_UNKNOWN;
  if (!info.mapped) return DR_INVALID_VALUE; /* unmapped, or past the end of the mapping */
  /* Page-locked memory of the driver's own is registered already. */
  for (size_t i = 0; i < g.nhallocs; i++) {
    if (ranges_overlap(ps, pe, g.hallocs[i].p, g.hallocs[i].p + page_up(g.hallocs[i].len))) {
      return DR_ALREADY_REGISTERED;
    }
  }
  int overlap = 0, same = 0, partial = 0;
  for (size_t i = 0; i < g.nregs; i++) {
    if (!ranges_overlap(ps, pe, g.regs[i].pstart, g.regs[i].pend)) continue;
    overlap = 1;
    g.regs[i].used = 1; /* touched by another register call (fault idle_release_fails) */
    if (g.regs[i].start == p && g.regs[i].len == size) same = 1;
    else partial = 1;
  }
  int accepted = !overlap || g.prof.accept_overlap || (!partial && g.faults.accept_same_range) || (!same && g.faults.accept_overlap);
  if (!accepted) {
    if (same && g.faults.duplicate_spoils_release) {
      for (size_t i = 0; i < g.nregs; i++) {
        if (g.regs[i].start == p && g.regs[i].len == size) g.regs[i].fail_once = 1;
      }
    }
    return DR_ALREADY_REGISTERED;
  }
  int prot_none = !info.readable;
  int fail_once = 0;
  int protection = check_protection(&info, flags, &fail_once);
  if (protection != DR_OK) return protection;
  if (grow((void **)&g.regs, &g.capregs, g.nregs, sizeof *g.regs) != 0) return DR_OUT_OF_MEMORY;
  reg_t *r = &g.regs[g.nregs++];
  memset(r, 0, sizeof *r);
  r->start = p;
  r->len = size;
  r->pstart = ps;
  r->pend = pe;
  r->flags = flags;
  r->device = device;
  r->tmpfs = info.tmpfs_file;
  r->prot_none = prot_none;
  r->one_mapping = info.segments == 1;
  snprintf(r->file, sizeof r->file, "%s", info.file);
  r->file_off = info.file_off;
  r->memfd = info.memfd;
  r->private_file = info.private_file;
  r->fail_once = fail_once;
  r->after_reset = device >= 0 && device < DBL_MAX_DEVICES && g.reset_seen[device];
  r->context = dbl_context();
  if (++g.registered_since_init == g.faults.stuck_registration) r->never_release = 1;
  if (g.faults.stale_after_write && !prot_none && (r->snapshot = malloc(size)) != NULL) memcpy(r->snapshot, (const void *)p, size);
  if (g.prof.stuck_unregister && (prot_none || overlap)) {
    r->stuck = 1;
    for (size_t i = 0; i + 1 < g.nregs; i++) {
      if (ranges_overlap(ps, pe, g.regs[i].pstart, g.regs[i].pend)) g.regs[i].stuck = 1;
    }
  }
  return DR_OK;
}

/* The fault idle_release_fails: nothing used the registration since it was made, it is still mapped, and no
 * explicit reset of its device came before it. */
static int idle(const reg_t *r) {
  return !r->used && !r->idle_failed && !r->after_reset && msync((void *)r->pstart, r->pend - r->pstart, MS_ASYNC) == 0;
}

int dbl_unregister(uintptr_t p) {
  if (!p) return dbl_ref_unregister_null();
  for (size_t i = 0; i < g.nregs; i++) {
    reg_t *r = &g.regs[i];
    if (r->start != p) continue;
    if (r->stuck) return DR_NOT_REGISTERED;
    if (r->never_release) return g.prof.unregister_fault_result;
    if (r->unregister_failures < g.faults.unregister_fails) {
      r->unregister_failures++;
      return g.prof.unregister_fault_result;
    }
    if (r->fail_once) {
      r->fail_once = 0;
      return g.prof.unregister_fault_result;
    }
    if (g.faults.idle_release_fails && idle(r)) {
      r->idle_failed = 1;
      return g.prof.unregister_fault_result;
    }
    if (g.faults.unmapped_unregister_fails && msync((void *)r->pstart, r->pend - r->pstart, MS_ASYNC) != 0) {
      return g.prof.unregister_fault_result;
    }
    dbl_note_released(r->start, r->len);
    remove_reg(i);
    dbl_ref_released();
    return DR_OK;
  }
  for (size_t i = 0; i < g.nregs; i++) {
    if (p > g.regs[i].start && p - g.regs[i].start < g.regs[i].len) {
      g.regs[i].used = 1; /* touched by another unregister call (fault idle_release_fails) */
      if (g.faults.interior_unregister_succeeds) return DR_OK; /* a false success: the registration stays */
      return DR_INVALID_VALUE;
    }
  }
  if (g.faults.unknown_unregister_invalid) {
    int dropped = 0;
    for (size_t i = 0; i < g.ndropped; i++) {
      if (g.dropped[i] == p) dropped = 1;
    }
    if (!dropped) return DR_INVALID_VALUE;
  }
  return DR_NOT_REGISTERED;
}

/* ---------------------------------------------------------------- memory */

int dbl_dalloc(size_t size, int device, uintptr_t *out) {
  if (!out || !size) return DR_INVALID_VALUE;
  if (size > DBL_TOTAL_MEM || g.dalloc_total + size > DBL_TOTAL_MEM) return DR_OUT_OF_MEMORY;
  if (grow((void **)&g.dallocs, &g.capdallocs, g.ndallocs, sizeof *g.dallocs) != 0) return DR_OUT_OF_MEMORY;
  void *m = NULL;
  if (posix_memalign(&m, 256, size) != 0 || !m) return DR_OUT_OF_MEMORY;
  g.dallocs[g.ndallocs++] = (alloc_t){.p = (uintptr_t)m, .len = size, .device = device};
  g.dalloc_total += size;
  *out = (uintptr_t)m;
  return DR_OK;
}

int dbl_dfree(uintptr_t p) {
  for (size_t i = 0; i < g.ndallocs; i++) {
    if (g.dallocs[i].p == p) {
      free((void *)p);
      g.dalloc_total -= g.dallocs[i].len;
      g.dallocs[i] = g.dallocs[--g.ndallocs];
      return DR_OK;
    }
  }
  return DR_INVALID_VALUE;
}

int dbl_halloc(size_t size, int device, uintptr_t *out) {
  if (!out || !size) return DR_INVALID_VALUE;
  size_t len = page_up(size);
  if (!len) return DR_OUT_OF_MEMORY;
  if (grow((void **)&g.hallocs, &g.caphallocs, g.nhallocs, sizeof *g.hallocs) != 0) return DR_OUT_OF_MEMORY;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return DR_OUT_OF_MEMORY;
  g.hallocs[g.nhallocs++] = (alloc_t){.p = (uintptr_t)m, .len = size, .device = device};
  *out = (uintptr_t)m;
  return DR_OK;
}

int dbl_hfree(uintptr_t p) {
  for (size_t i = 0; i < g.nhallocs; i++) {
    if (g.hallocs[i].p == p) {
      munmap((void *)p, page_up(g.hallocs[i].len));
      g.hallocs[i] = g.hallocs[--g.nhallocs];
      return DR_OK;
    }
  }
  return DR_INVALID_VALUE;
}

/* ---------------------------------------------------------------- copies */

/*
 * True when [ps, pe) lies in one registered range of a single readable mapping that is still mapped and, if
 * file-backed, not past the end of its file: what probe_range would say, at the cost of two system calls.
 */
static int fast_check(uintptr_t ps, uintptr_t pe) {
  for (size_t i = 0; i < g.nregs; i++) {
    reg_t *r = &g.regs[i];
    if (r->prot_none || !r->one_mapping || ps < r->pstart || pe > r->pend) continue;
    if (msync((void *)ps, pe - ps, MS_ASYNC) != 0) return 0; /* unmapped since: let the slow path say */
    if (r->file[0]) {
      struct stat st;
      if (stat(r->file, &st) != 0) return 0;
      if (r->file_off + (pe - r->pstart) > page_up((uintptr_t)st.st_size)) return 0;
    }
    return 1;
  }
  return 0;
}

/*
 * A copy of n bytes at `gbps` GB/s ends `n / gbps` after `entry` (times the noise), never before the real copy did.
 * The device's clock (events.c) advances by that modelled duration, whatever the host made of the wait or of the
 * double's own memcpy (a busy host's scheduling is not the device's time), or by `floor_s` when the double made the
 * copy longer on purpose (slow_registered, a shared link); a kind with no rate advances it by `real_s`, what the
 * copy took on the host.
 */
static void pace(int device, int kind, double entry, size_t n, double gbps, double real_s, double floor_s) {
  double device_s = real_s;
  if (gbps > 0) {
    if (device >= 0 && device < DBL_MAX_DEVICES) g_paced[device][kind]++;
    double modelled = (double)n / (gbps * 1e9) * noise_factor(kind);
    pace_wait_until(entry + modelled);
    device_s = modelled > floor_s ? modelled : floor_s;
  }
  dbl_clock_advance(device, device_s);
}

static int kind_index(const char *kind) {
  if (!kind) return -1;
  return strcmp(kind, "registered") == 0 ? 0 : strcmp(kind, "pinned") == 0 ? 1 : strcmp(kind, "pageable") == 0 ? 2 : -1;
}

int dbl_paced(int device, const char *kind) {
  int k = kind_index(kind);
  return k < 0 || device < 0 || device >= DBL_MAX_DEVICES ? -1 : g_paced[device][k];
}

double dbl_rate(int device, const char *kind) {
  int k = kind_index(kind);
  if (k < 0 || device < 0 || device >= DBL_MAX_DEVICES) return -1;
  const rates_t *r = &g.rates[dbl_physical(device)];
  return k == 0 ? r->registered : k == 1 ? r->pinned : r->pageable;
}

int dbl_in_dalloc(uintptr_t p, size_t n) { return find_alloc(g.dallocs, g.ndallocs, p, n) != NULL; }
int dbl_in_halloc(uintptr_t p, size_t n) { return find_alloc(g.hallocs, g.nhallocs, p, n) != NULL; }

int dbl_htod(uintptr_t dst, uintptr_t src, size_t n, int device, double entry) {
  return dbl_htod_in(dst, src, n, device, dbl_context(), entry);
}

/* A registration of another context counts as registered there when it is PORTABLE, or when the profile makes every
 * registration portable; never under the fault portable_ignored. */
static int registered_in(const reg_t *r, int context) {
  return r->context == context || ((g.prof.registrations_portable || (r->flags & DBL_PORTABLE_FLAG)) && !g.faults.portable_ignored);
}

int dbl_htod_in(uintptr_t dst, uintptr_t src, size_t n, int device, int context, double entry) {
  if (n == 0) return DR_OK;
  if (!dst || !src || src + n < src) return DR_INVALID_VALUE;
  if (!find_alloc(g.dallocs, g.ndallocs, dst, n)) return DR_INVALID_VALUE;
  const rates_t *rates = &g.rates[dbl_physical(device)];
  if (find_alloc(g.hallocs, g.nhallocs, src, n)) {
    double t0 = dbl_now();
    double copy_s = link_copy(dst, src, n); /* page-locked memory: always right */
    double linked_s = dbl_now() - t0;
    pace(device, 1, entry, n, rates->pinned, g.link ? linked_s : copy_s, g.link ? linked_s : 0);
    return DR_OK;
  }
  uintptr_t ps = page_down(src), pe = page_up(src + n);
  if (!pe) return DR_INVALID_VALUE;
  if (!fast_check(ps, pe)) {
    range_info info;
    if (probe_range(ps, pe, &info) != 0) return DR_UNKNOWN;
    int cpu_read = info.beyond_eof && n <= g.prof.cpu_copy_max && info.mapped && info.readable;
    if (!info.mapped || !info.readable || (info.beyond_eof && !cpu_read)) return DR_INVALID_VALUE;
  }
  int registered = 0;
  for (size_t i = 0; i < g.nregs; i++) {
    if (ranges_overlap(src, src + n, g.regs[i].start, g.regs[i].start + g.regs[i].len) && registered_in(&g.regs[i], context)) {
      registered = 1;
      g.regs[i].used = 1;
    }
  }
  double t0 = dbl_now();
  double copy_s = link_copy(dst, src, n);
  double real_s = g.link ? dbl_now() - t0 : copy_s; /* with a shared link, its wait too */
  if (!registered) {
    pace(device, 2, entry, n, rates->pageable, real_s, g.link ? real_s : 0);
    return DR_OK;
  }
  for (size_t i = 0; i < g.nregs; i++) {
    reg_t *r = &g.regs[i];
    uintptr_t lo = src > r->start ? src : r->start;
    uintptr_t hi = src + n < r->start + r->len ? src + n : r->start + r->len;
    if (lo >= hi) continue;
    unsigned char *d = (unsigned char *)(dst + (lo - src));
    if (r->snapshot) memcpy(d, r->snapshot + (lo - r->start), hi - lo); /* stale_after_write */
    if (r->tmpfs && (g.prof.tmpfs_serves_zeros || g.faults.tmpfs_zeros)) memset(d, 0, hi - lo);
    if ((r->memfd && g.faults.memfd_wrong_bytes) || (r->private_file && g.faults.private_wrong_bytes)) d[(hi - lo) / 2] ^= 0xFF;
  }
  if (g.faults.wrong_bytes) {
    ((unsigned char *)dst)[n / 2] ^= 0xFF;
  }
  double floor_s = g.link ? real_s : 0;
  if (g.faults.slow_factor > 1.0) {
    sleep_s((g.faults.slow_factor - 1.0) * copy_s);
    real_s += (g.faults.slow_factor - 1.0) * copy_s;
    floor_s = real_s;
  }
  pace(device, 0, entry, n, rates->registered, real_s, floor_s);
  return DR_OK;
}

int dbl_dtoh(uintptr_t dst, uintptr_t src, size_t n) {
  if (n == 0) return DR_OK;
  if (!dst || !src || dst + n < dst) return DR_INVALID_VALUE;
  if (!find_alloc(g.dallocs, g.ndallocs, src, n)) return DR_INVALID_VALUE;
  if (!find_alloc(g.hallocs, g.nhallocs, dst, n)) {
    uintptr_t ps = page_down(dst), pe = page_up(dst + n);
    if (!pe) return DR_INVALID_VALUE;
    range_info info;
    if (probe_range(ps, pe, &info) != 0) return DR_UNKNOWN;
    if (!info.mapped || !info.writable || info.beyond_eof) return DR_INVALID_VALUE;
  }
  memcpy((void *)dst, (const void *)src, n);
  return DR_OK;
}

/* ---------------------------------------------------------------- test exports both doubles make alike */

DBL_API int double_registration_count(void) {
  pthread_mutex_lock(&g_mu);
  int n = dbl_live_registrations();
  pthread_mutex_unlock(&g_mu);
  return n;
}

DBL_API int double_calls(const char *name) {
  pthread_mutex_lock(&g_mu);
  int n = dbl_calls(name);
  pthread_mutex_unlock(&g_mu);
  return n;
}

DBL_API int double_paced(int device, const char *kind) {
  pthread_mutex_lock(&g_mu);
  int n = dbl_paced(device, kind);
  pthread_mutex_unlock(&g_mu);
  return n;
}

DBL_API double double_rate(int device, const char *kind) {
  pthread_mutex_lock(&g_mu);
  double r = dbl_rate(device, kind);
  pthread_mutex_unlock(&g_mu);
  return r;
}

/*
 * MAPPED_REG_DOUBLE_AT_EXIT=<file>: the library's destructor (run by the C library's exit, as a real driver's
 * teardown is) appends "<pid>\n" to <file>. A process that ends by _exit, or is killed, writes nothing: the tests
 * tell a process that ended without its drivers' teardown from one that ran it.
 */
__attribute__((destructor)) static void note_exit(void) {
  const char *file = getenv("MAPPED_REG_DOUBLE_AT_EXIT");
  if (!file || !*file) return;
  int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  char line[32];
  int n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
  if (n > 0 && write(fd, line, (size_t)n) < 0) {
    /* nothing to do: the test sees no line */
  }
  close(fd);
}
