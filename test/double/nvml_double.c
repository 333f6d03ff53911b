/*
 * NVML double: libnvidia-ml.so.1's ABI for the calls bindings/gpu-users.ts makes, configured by the environment
 * at each nvmlInit_v2 (README.md beside this file, "The NVML double").
 *
 * Types and codes as NVML 12.2.140's nvml.h declares them (NVIDIA/go-nvml gen/nvml/nvml.h, "NVML VERSION:
 * 12.2.140"): nvmlReturn_t is an enum (int), nvmlDevice_t an opaque pointer, nvmlProcessInfo_t (= _v2) is
 * { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId; unsigned int
 * computeInstanceId; } (24 bytes on x86_64 and arm64), nvmlPcieUtilCounter_t TX_BYTES = 0, RX_BYTES = 1.
 *
 * Self-contained: it shares nothing with common.c (it imitates no driver, only the management library).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

typedef int nvmlReturn_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_v2_t is 24 bytes");

#define VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL
#define MAX_DEVICES 16
#define MAX_PROCS 64
/* Fault many_processes: this many more compute processes on every device, more than any first buffer. */
#define MANY 300
#define MANY_PID_BASE 3000000u

typedef struct {
  unsigned pid;
  char name[64]; /* "": nvmlSystemGetProcessName does not know it (NOT_FOUND) */
  unsigned long long bytes;
  int graphics;
} proc_t;

typedef struct {
  int index; /* physical index: bus id 0000:00:<index>.0 */
  proc_t procs[MAX_PROCS];
  int nprocs;
  unsigned rx_kbps, tx_kbps; /* what nvmlDeviceGetPcieThroughput reports, KB/s (1 KB = 1000 bytes) */
} device_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static device_t devices[MAX_DEVICES];
static int ndevices;
static int refcount;
static int fault_no_throughput, fault_many, fault_no_graphics, fault_list_fails, fault_paired_throughput;
static int calls_init, calls_shutdown;

#define LOCK() pthread_mutex_lock(&mu)
#define RETURN(code)          \
  do {                        \
    nvmlReturn_t r_ = (code); \
    pthread_mutex_unlock(&mu); \
    return r_;                \
  } while (0)

static int bad(const char *var, const char *value, const char *what) {
  fprintf(stderr, "mapped-reg NVML double: %s '%s' is not known: %s (see test/double/README.md)\n", var, value, what);
  return -1;
}

/* A non-negative decimal integer (digits only) into *out; 0 on success. */
static int parse_uint(const char *s, size_t len, unsigned long long *out) {
  if (len == 0 || len > 15) return -1;
  unsigned long long v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)s[i])) return -1;
    v = v * 10 + (unsigned long long)(s[i] - '0');
  }
  *out = v;
  return 0;
}

/* One entry pid:name:MiB[:graphics]. */
static int parse_proc(const char *var, const char *entry, size_t len, proc_t *p) {
  char buf[256];
  if (len >= sizeof buf) return bad(var, entry, "an entry is too long");
  memcpy(buf, entry, len);
  buf[len] = 0;
  char *fields[5];
  int n = 0;
  char *s = buf;
  for (;;) {
    if (n == 5) return bad(var, buf, "pid:name:MiB[:graphics]");
    fields[n++] = s;
    char *colon = strchr(s, ':');
    if (!colon) break;
    *colon = 0;
    s = colon + 1;
  }
  if (n < 3 || n > 4) return bad(var, buf, "pid:name:MiB[:graphics]");
  memset(p, 0, sizeof *p);
  unsigned long long v;
  if (strcmp(fields[0], "self") == 0) p->pid = (unsigned)getpid();
  else if (strcmp(fields[0], "parent") == 0) p->pid = (unsigned)getppid();
  else if (parse_uint(fields[0], strlen(fields[0]), &v) == 0 && v > 0 && v <= 0xFFFFFFFFull) p->pid = (unsigned)v;
  else return bad(var, buf, "the pid is a positive integer, self or parent");
  if (strlen(fields[1]) >= sizeof p->name) return bad(var, buf, "the name is too long");
  strcpy(p->name, fields[1]);
  if (strcmp(fields[2], "-") == 0) p->bytes = VALUE_NOT_AVAILABLE;
  else if (parse_uint(fields[2], strlen(fields[2]), &v) == 0) p->bytes = v << 20;
  else return bad(var, buf, "MiB is a non-negative integer or -");
  if (n == 4) {
    if (strcmp(fields[3], "graphics") != 0) return bad(var, buf, "the fourth field can only be graphics");
    p->graphics = 1;
  }
  return 0;
}

static int parse_procs(const char *var, const char *spec, device_t *d) {
  d->nprocs = 0;
  const char *s = spec;
  while (*s) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len == 0) return bad(var, spec, "an empty entry");
    if (d->nprocs == MAX_PROCS) return bad(var, spec, "more than 64 processes");
    if (parse_proc(var, s, len, &d->procs[d->nprocs]) != 0) return -1;
    d->nprocs++;
    if (!end) break;
    s = end + 1;
    if (!*s) return bad(var, spec, "an empty entry");
  }
  return 0;
}

/* rx=MBps,tx=MBps (either, or both); MB/s is 1e6 bytes per second, an integer. */
static int parse_pcie(const char *var, const char *spec, device_t *d) {
  const char *s = spec;
  while (*s) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    unsigned long long v;
    unsigned *target;
    if (len > 3 && strncmp(s, "rx=", 3) == 0) target = &d->rx_kbps;
    else if (len > 3 && strncmp(s, "tx=", 3) == 0) target = &d->tx_kbps;
    else return bad(var, spec, "comma-separated rx=MBps, tx=MBps");
    if (parse_uint(s + 3, len - 3, &v) != 0 || v * 1000 > 0xFFFFFFFFull) {
      return bad(var, spec, "MB/s is an integer below 4294968");
    }
    *target = (unsigned)(v * 1000);
    if (!end) break;
    s = end + 1;
  }
  return 0;
}

static int parse_faults(const char *spec) {
  const char *s = spec;
  while (*s) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len == 10 && strncmp(s, "init_fails", 10) == 0) { /* handled by the caller */
    } else if (len == 13 && strncmp(s, "no_throughput", 13) == 0) fault_no_throughput = 1;
    else if (len == 14 && strncmp(s, "many_processes", 14) == 0) fault_many = 1;
    else if (len == 11 && strncmp(s, "no_graphics", 11) == 0) fault_no_graphics = 1;
    else if (len == 10 && strncmp(s, "list_fails", 10) == 0) fault_list_fails = 1;
    else if (len == 17 && strncmp(s, "paired_throughput", 17) == 0) fault_paired_throughput = 1;
    else return bad("MAPPED_REG_DOUBLE_NVML_FAULTS", spec, "init_fails, no_throughput, many_processes, no_graphics, list_fails, paired_throughput");
    if (!end) break;
    s = end + 1;
  }
  return 0;
}

static int has_fault(const char *spec, const char *name) {
  if (!spec) return 0;
  size_t n = strlen(name);
  for (const char *s = spec; (s = strstr(s, name)) != NULL; s += n) {
    if ((s == spec || s[-1] == ',') && (s[n] == 0 || s[n] == ',')) return 1;
  }
  return 0;
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* The configuration from the environment; 0, or -1 after one line on stderr. */
static int configure(void) {
  fault_no_throughput = fault_many = fault_no_graphics = fault_list_fails = fault_paired_throughput = 0;
  const char *faults = env("MAPPED_REG_DOUBLE_NVML_FAULTS");
  if (faults && parse_faults(faults) != 0) return -1;
  long count = 1;
  const char *devs = env("MAPPED_REG_DOUBLE_DEVICES");
  if (devs) {
    unsigned long long v;
    if (parse_uint(devs, strlen(devs), &v) != 0 || v > MAX_DEVICES) {
      return bad("MAPPED_REG_DOUBLE_DEVICES", devs, "a device count, 0 to 16");
    }
    count = (long)v;
  }
  ndevices = (int)count;
  const char *all = env("MAPPED_REG_DOUBLE_NVML_PROCESSES");
  const char *pcie = env("MAPPED_REG_DOUBLE_NVML_PCIE");
  for (int i = 0; i < ndevices; i++) {
    device_t *d = &devices[i];
    memset(d, 0, sizeof *d);
    d->index = i;
    char var[64];
    snprintf(var, sizeof var, "MAPPED_REG_DOUBLE_NVML_PROCESSES_%d", i);
    const char *one = env(var);
    if (one) {
      if (parse_procs(var, one, d) != 0) return -1;
    } else if (all && parse_procs("MAPPED_REG_DOUBLE_NVML_PROCESSES", all, d) != 0) {
      return -1;
    }
    snprintf(var, sizeof var, "MAPPED_REG_DOUBLE_NVML_PCIE_%d", i);
    one = env(var);
    if (one) {
      if (parse_pcie(var, one, d) != 0) return -1;
    } else if (pcie && parse_pcie("MAPPED_REG_DOUBLE_NVML_PCIE", pcie, d) != 0) {
      return -1;
    }
  }
  return 0;
}

API nvmlReturn_t nvmlInit_v2(void) {
  LOCK();
  calls_init++;
  if (configure() != 0) RETURN(NVML_ERROR_INVALID_ARGUMENT);
  if (has_fault(env("MAPPED_REG_DOUBLE_NVML_FAULTS"), "init_fails")) RETURN(NVML_ERROR_UNKNOWN);
  refcount++;
  RETURN(NVML_SUCCESS);
}

API nvmlReturn_t nvmlShutdown(void) {
  LOCK();
  calls_shutdown++;
  if (refcount == 0) RETURN(NVML_ERROR_UNINITIALIZED);
  refcount--;
  RETURN(NVML_SUCCESS);
}

/* A PCI bus id as domain:bus:device.function in hex (NVML writes the domain with 8 digits, CUDA with 4). */
static int parse_bus_id(const char *s, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *fn) {
  char tail;
  if (sscanf(s, "%x:%x:%x.%x%c", domain, bus, dev, fn, &tail) != 4) return -1;
  return 0;
}

API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, void **device) {
  LOCK();
  if (refcount == 0) RETURN(NVML_ERROR_UNINITIALIZED);
  if (!pciBusId || !device) RETURN(NVML_ERROR_INVALID_ARGUMENT);
  unsigned domain, bus, dev, fn;
  if (parse_bus_id(pciBusId, &domain, &bus, &dev, &fn) != 0) RETURN(NVML_ERROR_INVALID_ARGUMENT);
  for (int i = 0; i < ndevices; i++) {
    if (domain == 0 && bus == 0 && dev == (unsigned)devices[i].index && fn == 0) {
      *device = &devices[i];
      RETURN(NVML_SUCCESS);
    }
  }
  RETURN(NVML_ERROR_NOT_FOUND);
}

static device_t *device_of(void *handle) {
  for (int i = 0; i < ndevices; i++) {
    if (handle == &devices[i]) return &devices[i];
  }
  return NULL;
}

static nvmlReturn_t list(void *handle, unsigned *count, nvmlProcessInfo_t *infos, int graphics) {
  LOCK();
  if (refcount == 0) RETURN(NVML_ERROR_UNINITIALIZED);
  device_t *d = device_of(handle);
  if (!d || !count) RETURN(NVML_ERROR_INVALID_ARGUMENT);
  if (graphics && fault_no_graphics) RETURN(NVML_ERROR_NOT_SUPPORTED);
  if (!graphics && fault_list_fails) RETURN(NVML_ERROR_NO_PERMISSION);
  unsigned n = 0;
  for (int i = 0; i < d->nprocs; i++) n += d->procs[i].graphics == graphics;
  unsigned total = n + (fault_many && !graphics ? MANY : 0);
  if (*count < total) {
    *count = total;
    RETURN(NVML_ERROR_INSUFFICIENT_SIZE);
  }
  if (total > 0 && !infos) RETURN(NVML_ERROR_INVALID_ARGUMENT);
  unsigned k = 0;
  for (int i = 0; i < d->nprocs; i++) {
    if (d->procs[i].graphics != graphics) continue;
    infos[k].pid = d->procs[i].pid;
    infos[k].usedGpuMemory = d->procs[i].bytes;
    infos[k].gpuInstanceId = 0xFFFFFFFFu;
    infos[k].computeInstanceId = 0xFFFFFFFFu;
    k++;
  }
  for (unsigned i = 0; k < total; i++, k++) {
    infos[k].pid = MANY_PID_BASE + i;
    infos[k].usedGpuMemory = 1ULL << 20;
    infos[k].gpuInstanceId = 0xFFFFFFFFu;
    infos[k].computeInstanceId = 0xFFFFFFFFu;
  }
  *count = total;
  RETURN(NVML_SUCCESS);
}

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *device, unsigned *infoCount, nvmlProcessInfo_t *infos) {
  return list(device, infoCount, infos, 0);
}

API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(void *device, unsigned *infoCount, nvmlProcessInfo_t *infos) {
  return list(device, infoCount, infos, 1);
}

API nvmlReturn_t nvmlSystemGetProcessName(unsigned pid, char *name, unsigned length) {
  LOCK();
  if (refcount == 0) RETURN(NVML_ERROR_UNINITIALIZED);
  if (!name || length == 0) RETURN(NVML_ERROR_INVALID_ARGUMENT);
  char many[32];
  const char *found = NULL;
  for (int i = 0; i < ndevices && !found; i++) {
    for (int j = 0; j < devices[i].nprocs; j++) {
      if (devices[i].procs[j].pid == pid && devices[i].procs[j].name[0]) {
        found = devices[i].procs[j].name;
        break;
      }
    }
  }
  if (!found && fault_many && pid >= MANY_PID_BASE && pid < MANY_PID_BASE + MANY) {
    snprintf(many, sizeof many, "many%u", pid - MANY_PID_BASE);
    found = many;
  }
  if (!found) RETURN(NVML_ERROR_NOT_FOUND);
  snprintf(name, length, "%s", found); /* cropped to length, as NVML does */
  RETURN(NVML_SUCCESS);
}

/*
 * paired_throughput: each nvmlDeviceGetPcieThroughput waits (up to 2 s, outside the library's lock) for another to
 * be in flight at the same time, as the real one samples for 20 ms; a call that met another is counted
 * (double_calls("paired_throughput")): two calls made one after the other meet none.
 */
static pthread_mutex_t pair_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pair_cv = PTHREAD_COND_INITIALIZER;
static int pair_in_flight, pair_generation, calls_paired;

static void wait_for_pair(void) {
  pthread_mutex_lock(&pair_mu);
  int seen = pair_generation;
  if (++pair_in_flight >= 2) {
    pair_generation++;
    pthread_cond_broadcast(&pair_cv);
  }
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 2;
  while (pair_generation == seen) {
    if (pthread_cond_timedwait(&pair_cv, &pair_mu, &until) != 0) break;
  }
  if (pair_generation != seen) calls_paired++;
  pair_in_flight--;
  pthread_mutex_unlock(&pair_mu);
}

API nvmlReturn_t nvmlDeviceGetPcieThroughput(void *device, int counter, unsigned *value) {
  if (fault_paired_throughput) wait_for_pair();
  LOCK();
  if (refcount == 0) RETURN(NVML_ERROR_UNINITIALIZED);
  device_t *d = device_of(device);
  if (!d || !value || (counter != 0 && counter != 1)) RETURN(NVML_ERROR_INVALID_ARGUMENT);
  if (fault_no_throughput) RETURN(NVML_ERROR_NOT_SUPPORTED);
  *value = counter == 0 ? d->tx_kbps : d->rx_kbps;
  RETURN(NVML_SUCCESS);
}

API const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
  }
}

/* Test export: how many times nvmlInit_v2 / nvmlShutdown were called in this process, how many throughput calls met
   another in flight (paired_throughput); -1 for another name. */
API int double_calls(const char *name) {
  LOCK();
  int n = !name ? -1 : strcmp(name, "nvmlInit_v2") == 0 ? calls_init : strcmp(name, "nvmlShutdown") == 0 ? calls_shutdown : -1;
  pthread_mutex_unlock(&mu);
  if (name && strcmp(name, "paired_throughput") == 0) {
    pthread_mutex_lock(&pair_mu);
    n = calls_paired;
    pthread_mutex_unlock(&pair_mu);
  }
  return n;
}
