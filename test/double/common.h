/*
 * Driver double: the part shared by the CUDA double (cuda_double.c) and the HIP double (hip_double.c).
 *
 * Each double is one shared library with the real driver ABI; both compile this engine in (with hidden
 * visibility, so two doubles loaded in one process never bind to each other's copy). The engine speaks
 * in neutral results (DR_*); each double answers them in its own codes (CUresult, hipError_t: one table in
 * common.c, dbl_api_code; the fake double keeps its own).
 *
 * Read README.md beside this file for the profiles, the faults and the codes each call returns.
 */
#ifndef MAPPED_REG_DOUBLE_COMMON_H
#define MAPPED_REG_DOUBLE_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "reference.h"

/* Only the driver ABI and the test exports leave the library. */
#define DBL_API __attribute__((visibility("default")))
#define DBL_HIDDEN __attribute__((visibility("hidden")))

/* Neutral results; each double answers them in its codes. */
enum {
  DR_OK = 0,
  DR_INVALID_VALUE,
  DR_OUT_OF_MEMORY,
  DR_NOT_INITIALIZED,
  DR_NO_DEVICE,
  DR_INVALID_DEVICE,
  DR_INVALID_CONTEXT,
  DR_ALREADY_REGISTERED,
  DR_NOT_REGISTERED,
  DR_NOT_SUPPORTED,
  DR_UNKNOWN,
  DR_INVALID_MEMCPY_DIRECTION,
  DR_SYSTEM_DRIVER_MISMATCH,
};

enum { API_CUDA = 1, API_HIP = 2 };

/* What a library file carries of its own, for the runtimes side by side (test/double/build.ts buildRuntimeDoubles):
 * each built with -D flags, so that a file behaves as its runtime with no variable set. DBL_BUILD_PROFILE: the
 * profile when MAPPED_REG_DOUBLE_PROFILE is unset; DBL_BUILD_HIP_VERSION: the HIP_VERSION reported when
 * MAPPED_REG_DOUBLE_HIP_VERSION is unset; DBL_BUILD_CUDA_VERSION: what cuDriverGetVersion reports;
 * DBL_BUILD_INIT_MISMATCH (1): init fails as a user-space driver of another release than the kernel module's
 * (CUDA 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH; HIP 35 hipErrorInsufficientDriver). */
#ifndef DBL_BUILD_HIP_VERSION
#define DBL_BUILD_HIP_VERSION 70204000L
#endif
#ifndef DBL_BUILD_CUDA_VERSION
#define DBL_BUILD_CUDA_VERSION 13000
#endif
#ifndef DBL_BUILD_INIT_MISMATCH
#define DBL_BUILD_INIT_MISMATCH 0
#endif
/* MAPPED_REG_DOUBLE_PROFILE, else the profile this file was built with (DBL_BUILD_PROFILE), else NULL (the default). */
const char *dbl_profile_name(void);

/* How the driver being imitated behaves: set from the profile at each init. */
typedef struct {
  const char *name;
  int api;
  int nodevice;           /* profile nodevice: no device at all */
  unsigned valid_flags;   /* register flags accepted; any other bit is INVALID_VALUE */
  unsigned readonly_flag; /* the flag that lets a read-only mapping be registered (CUDA: 0x08) */
  int readonly_needs_flag;/* 1: a mapping without write permission needs readonly_flag (CUDA) */
  int accept_prot_none;   /* rocm724: a PROT_NONE range registers "successfully" */
  int accept_overlap;     /* rocm724: the same range twice / overlapping ranges register */
  int tmpfs_serves_zeros; /* rocm724: copies from a registered tmpfs file range bring zeros */
  int stuck_unregister;   /* rocm724: unregister of an overlap/PROT_NONE registration fails (713) */
  int unregister_fault_result; /* fault unregister_fails: what the failing call returns */
  int integrated_fail_result;  /* fault integrated_query_fails: what the query returns */
  /* cuda: a copy of at most this many bytes is read by the CPU (facts: a 4 KiB copy from the cut tail of a
   * truncated registered file died of SIGBUS), so the double reads it too, past the end of the file if need
   * be: the process gets the same SIGBUS. 0: every copy is checked and refused instead. */
  size_t cpu_copy_max;
  /* 1: every registration counts as registered in every context, PORTABLE or not (CUDA: measured on the H200, a
   * created context copied a registration without PORTABLE at the registered speed); 0: only a PORTABLE one does. */
  int registrations_portable;
} profile_t;

/* Single faults, from MAPPED_REG_DOUBLE_FAULTS. */
typedef struct {
  int wrong_bytes;
  int integrated;
  int integrated_query_fails;
  int unregister_fails; /* N: each registration's unregister fails its first N calls */
  double slow_factor;   /* F > 1: a copy from a registered range takes F times a plain memcpy */
  int nodevice;
  int init_fails;
  long slow_init_ms; /* MS: init (cuInit, the HIP runtime's first call) takes MS ms more, as a real driver's start does */
  /* Faults that each break one promise a hazard check holds, and nothing else (README.md: one per check). */
  int stuck_registration;         /* K: the K-th registration since init is never released */
  int accept_prot_none;           /* a PROT_NONE range registers (and releases) */
  int readonly_flags0;            /* CUDA: a read-only mapping registers without READ_ONLY; its first release fails */
  int tmpfs_zeros;                /* copies from a registered tmpfs file bring zeros */
  int memfd_wrong_bytes;          /* copies from a registered memfd flip one byte */
  int private_wrong_bytes;        /* copies from a registered MAP_PRIVATE file flip one byte */
  int accept_same_range;          /* the same range (pointer and size) registers twice; each releases */
  int accept_overlap;             /* a range overlapping a registration (not the same range) registers; releases */
  int duplicate_spoils_release;   /* a refused registration of the same range makes its next release fail once */
  int idle_release_fails;         /* the first release of a registration nothing used fails once */
  int unknown_unregister_invalid; /* unregister of a pointer never registered: INVALID_VALUE instead of 713 */
  int interior_unregister_succeeds; /* unregister of a pointer inside a registration says 0; it stays */
  int stale_after_write;          /* copies from a registration serve the bytes it had when registered */
  size_t register_max;            /* > 0: a registration of more bytes is refused (OUT_OF_MEMORY) */
  int unmapped_unregister_fails;  /* unregister of a registration whose range is no longer mapped fails */
  int reset_keeps_registrations;  /* an explicit context / device reset keeps the registrations */
  /* Faults of the reference copy checks (reference_copies.c; README.md: one per check). */
  int portable_ignored;           /* PORTABLE is ignored: a copy from another context runs as pageable (right bytes, slow) */
  int async_wrong_bytes;          /* an async copy to the registration's own device flips one byte */
  int devptr_wrong;               /* a device-to-device copy read through a registration's device pointer flips one byte */
  int pointer_still_registered;   /* the pointer query still answers for a released registration */
  int multi_gpu_wrong_bytes;      /* an async copy to a device other than the registration's flips one byte */
  int events_fail;                /* the device's clock (events.c): every event creation fails (NOT_SUPPORTED) */
  unsigned ref_faults;            /* the other reference checks' faults (reference.h: REF_*) */
} faults_t;

#define DBL_MAX_DEVICES 16

/* Paced copies (MAPPED_REG_DOUBLE_RATES, MAPPED_REG_DOUBLE_RATES_<N>): GB/s (1e9 bytes per second) of a
 * host-to-device copy by the kind of its source; 0: that kind is not paced. */
typedef struct {
  double registered; /* the source overlaps a registration */
  double pinned;     /* the source lies in page-locked memory of cuMemHostAlloc / hipHostMalloc */
  double pageable;   /* any other host memory */
} rates_t;

/* MAPPED_REG_DOUBLE_NOISE: seeded noise on the paced copies (test/double/README.md, "Noise"). */
typedef struct {
  int on;
  double sd;       /* the spread (log sd) of one round's registered / page-locked: each copy sd / sqrt(2) */
  double drift;    /* the spread (log sd) between runs of the registered copies against the others: drawn once at init */
  double load;     /* a host load (log sd) that moves every copy alike, slowly (an AR(1) of 0.95 a copy) */
  unsigned long long seed;
  /* state */
  unsigned long long rng;
  double run_offset;  /* the run's drift of the registered copies, log */
  double load_state;  /* the load's AR(1) state, N(0, 1) */
} noise_t;

/* The shared link (MAPPED_REG_DOUBLE_LINK_FILE, MAPPED_REG_DOUBLE_LINK_GBPS): a file mapped MAP_SHARED by every
 * process naming it, holding one 64-bit word per process that copies: its pid (high 32 bits) and how many of its
 * host-to-device copies are in flight (low 32 bits), changed only with atomics. */
#define DBL_LINK_SLOTS 64
typedef struct {
  char magic[8];                    /* "MRLINK1" */
  uint64_t slots[DBL_LINK_SLOTS];   /* 0: free */
} link_file_t;

typedef struct {
  uintptr_t start;    /* the pointer given to register (what unregister must be given) */
  size_t len;         /* the size given */
  uintptr_t pstart;   /* start rounded down to a page */
  uintptr_t pend;     /* end rounded up to a page */
  unsigned flags;
  int device;
  int tmpfs;          /* backed (at least partly) by a file on tmpfs, not a memfd */
  int prot_none;      /* registered while (part of) it had no read permission */
  int stuck;          /* rocm724: its unregister fails with 713, it stays */
  int unregister_failures; /* failed unregister calls so far (fault unregister_fails) */
  /* Fast path of copies from this range: the regular file behind it when the whole page range lies in one
   * mapping of it (else ""), and the file offset of pstart. Copies then check mapping and file size with two
   * cheap calls instead of reading /proc/self/maps, so the double's registered copy is not slowed by its own
   * bookkeeping (the timing tests compare it with the staged copy). */
  char file[256];
  unsigned long long file_off;
  int one_mapping;    /* the page range lies in a single mapping */
  int memfd;          /* backed (at least partly) by a memfd */
  int private_file;   /* backed (at least partly) by a MAP_PRIVATE mapping of a regular file */
  /* Fault bookkeeping (faults_t): */
  int never_release;  /* stuck_registration: every unregister fails */
  int fail_once;      /* readonly_flags0, duplicate_spoils_release: the next unregister fails, once */
  int used;           /* idle_release_fails: copied from, or touched by another register/unregister call */
  int idle_failed;    /* idle_release_fails: its one failure happened */
  int after_reset;    /* idle_release_fails: made after an explicit reset of its device */
  unsigned char *snapshot; /* stale_after_write: its bytes when registered (malloc'd) */
  int context;        /* the context it was registered in (dbl_context()): another one copies it as pageable unless PORTABLE */
} reg_t;

typedef struct {
  uintptr_t p;
  size_t len;
  int device;
} alloc_t;

typedef struct {
  /* configuration, read at each init */
  profile_t prof;
  faults_t faults;
  int ndevices;                      /* API ordinals: MAPPED_REG_DOUBLE_DEVICES, or the length of the order */
  int order[DBL_MAX_DEVICES];        /* MAPPED_REG_DOUBLE_ORDER: the physical device of each API ordinal */
  rates_t rates[DBL_MAX_DEVICES];    /* by physical device, MAPPED_REG_DOUBLE_RATES_<N> over MAPPED_REG_DOUBLE_RATES */
  noise_t noise;                     /* MAPPED_REG_DOUBLE_NOISE */
  long hip_version;
  double link_gbps;                  /* MAPPED_REG_DOUBLE_LINK_GBPS: 0 when no shared link */
  link_file_t *link;                 /* MAPPED_REG_DOUBLE_LINK_FILE mapped (NULL when no shared link) */
  /* state */
  int initialized;
  int last_init_result;
  int ctx_refcount[DBL_MAX_DEVICES]; /* CUDA primary contexts */
  int current_ctx;                   /* CUDA: device of the current context, -1 none */
  int current_device;                /* HIP: hipSetDevice */
  int current_context;               /* CUDA: the current context's id (a primary context: its device; a created one:
                                        DBL_MAX_DEVICES + its slot), -1 none; HIP's context is its current device */
  reg_t *regs;
  size_t nregs, capregs;
  alloc_t *dallocs;                  /* "device" memory: malloc'd host memory */
  size_t ndallocs, capdallocs;
  alloc_t *hallocs;                  /* page-locked host memory: anonymous mmap */
  size_t nhallocs, caphallocs;
  size_t dalloc_total;
  int registered_since_init;         /* successful registrations since the last init (stuck_registration) */
  int reset_seen[DBL_MAX_DEVICES];   /* an explicit reset of the device happened since the last init */
  uintptr_t *dropped;                /* start pointers of registrations a context or device reset dropped */
  size_t ndropped, capdropped;
  ref_attrs_t ref_attrs;             /* MAPPED_REG_DOUBLE_ATTRIBUTES (reference.h) */
  size_t ref_leaked;                 /* device memory lost to leak_device_per_cycle (and other_process_allocates) */
  int ref_mem_queries;               /* free-memory queries so far (other_process_allocates, _keeps_allocating) */
} state_t;

DBL_HIDDEN extern state_t g;
DBL_HIDDEN extern pthread_mutex_t g_mu;

/* Enter an API function: take the lock (released when the function returns) and count the call. */
DBL_HIDDEN void dbl_unlock_cb(int *unused);
DBL_HIDDEN void dbl_count_call(const char *name);
#define DBL_ENTER()                                                                                    \
  pthread_mutex_lock(&g_mu);                                                                           \
  __attribute__((cleanup(dbl_unlock_cb), unused)) int dbl_guard_ = 0;                                 \
  dbl_count_call(__func__)

/* The exported function names of one double (set by a constructor in each double). */
DBL_HIDDEN void dbl_set_names(const char *const *names, int n);
DBL_HIDDEN int dbl_calls(const char *name);
DBL_HIDDEN void dbl_reset_calls(void);
/* Copies paced so far on API ordinal `device` from a source of `kind` (registered, pinned, pageable); -1: no such. */
DBL_HIDDEN int dbl_paced(int device, const char *kind);
/* The GB/s that `kind` is paced at on API ordinal `device` (0: not paced); -1: no such. */
DBL_HIDDEN double dbl_rate(int device, const char *kind);

/*
 * Read the configuration from the environment into g (profile, faults, device count, HIP version).
 * parse_profile: the double's own profile parser, returning 0 on an unknown name.
 * Returns DR_OK, DR_INVALID_VALUE (bad configuration, reported on stderr), DR_NO_DEVICE or DR_UNKNOWN
 * (fault init_fails); sets g.initialized.
 */
DBL_HIDDEN int dbl_init(int api, int (*parse_profile)(const char *name, profile_t *out));
/* Forget everything (test export double_reset). */
DBL_HIDDEN void dbl_reset_all(void);
/* Drop the registrations and allocations of one device (the last release of its context). */
DBL_HIDDEN void dbl_drop_device(int device);
/* An explicit reset of one device (cuDevicePrimaryCtxReset_v2, hipDeviceReset): dbl_drop_device, save for the
 * registrations under the fault reset_keeps_registrations. */
DBL_HIDDEN void dbl_reset_device(int device);
DBL_HIDDEN int dbl_live_registrations(void);
DBL_HIDDEN int dbl_env_long(const char *name, long dflt, long *out);

/* Memory, registration and copies. */
DBL_HIDDEN int dbl_register(uintptr_t p, size_t size, unsigned flags, int device);
DBL_HIDDEN int dbl_unregister(uintptr_t p);
DBL_HIDDEN int dbl_dalloc(size_t size, int device, uintptr_t *out);
DBL_HIDDEN int dbl_dfree(uintptr_t p);
DBL_HIDDEN int dbl_halloc(size_t size, int device, uintptr_t *out);
DBL_HIDDEN int dbl_hfree(uintptr_t p);
/* Host-to-device copy for API ordinal `device`, paced to its rates from `entry` (dbl_now() at the call's entry). */
DBL_HIDDEN int dbl_htod(uintptr_t dst, uintptr_t src, size_t n, int device, double entry);
DBL_HIDDEN int dbl_dtoh(uintptr_t dst, uintptr_t src, size_t n);
/* dbl_htod as seen from context `context` (a registration of another context that is not PORTABLE: pageable). */
DBL_HIDDEN int dbl_htod_in(uintptr_t dst, uintptr_t src, size_t n, int device, int context, double entry);
/* Whether [p, p + n) lies in one device allocation / one page-locked allocation. */
DBL_HIDDEN int dbl_in_dalloc(uintptr_t p, size_t n);
DBL_HIDDEN int dbl_in_halloc(uintptr_t p, size_t n);
/* The registration whose range holds [p, p + n), or NULL (reference.c). */
DBL_HIDDEN reg_t *dbl_ref_reg_holding(uintptr_t p, size_t n);

/* reference_copies.c: what the reference copy checks need (contexts, streams, device pointers, several devices). */
#define DBL_PORTABLE_FLAG 0x1u /* CU_MEMHOSTREGISTER_PORTABLE, hipHostRegisterPortable */
/* The current context's id (state_t.current_context; HIP: the current device). */
DBL_HIDDEN int dbl_context(void);
/* A registration was released (pointer_still_registered remembers the last few). */
DBL_HIDDEN void dbl_note_released(uintptr_t start, size_t len);
DBL_HIDDEN void dbl_reference_reset(void);
/* Streams: created on `device` in `context`; an async copy is queued and runs at the stream's synchronize (or
 * destroy); a NULL stream runs it at once. */
DBL_HIDDEN int dbl_stream_create(int device, int context, void **out);
DBL_HIDDEN int dbl_stream_sync(void *stream);
DBL_HIDDEN int dbl_stream_destroy(void *stream);
DBL_HIDDEN int dbl_htod_async(uintptr_t dst, uintptr_t src, size_t n, void *stream, int device, int context);
/* What waits in a created stream (its device into *device); -1 for an unknown stream. */
DBL_HIDDEN int dbl_stream_pending(void *stream, int *device);
/* events.c: the device's virtual clock, which each host-to-device copy advances by its modelled duration, and the
 * events that read it. */
DBL_HIDDEN void dbl_clock_advance(int device, double seconds);
DBL_HIDDEN void dbl_events_reset(void);
DBL_HIDDEN int dbl_event_create(void **out);
/* On `stream` (NULL: the legacy stream of `device`). */
DBL_HIDDEN int dbl_event_record(void *event, void *stream, int device);
DBL_HIDDEN int dbl_event_sync(void *event);
DBL_HIDDEN int dbl_event_elapsed(float *ms, void *start, void *end);
DBL_HIDDEN int dbl_event_destroy(void *event);
/* Device-to-device copy; the source may be a registration's device pointer (the device reads the host memory). */
DBL_HIDDEN int dbl_dtod(uintptr_t dst, uintptr_t src, size_t n);
/* The device pointer the driver knows for address p (cuPointerGetAttribute DEVICE_POINTER); INVALID_VALUE for one
 * it does not know. */
DBL_HIDDEN int dbl_pointer_device_pointer(uintptr_t p, uintptr_t *out);

/* CLOCK_MONOTONIC, in seconds. */
DBL_HIDDEN double dbl_now(void);
/* The physical device (MAPPED_REG_DOUBLE_ORDER) of API ordinal `device` (checked by the caller). */
DBL_HIDDEN int dbl_physical(int device);
/* The PCI bus id of API ordinal `device`: 0000:00:NN.0, NN the physical index in hex. */
DBL_HIDDEN void dbl_pci_bus_id(char *buf, size_t len, int device);

/* Copy a string into a caller's buffer of len bytes (NUL-terminated, truncated). */
DBL_HIDDEN int dbl_copy_string(char *dst, int len, const char *src);

/* What both doubles' calls do alike, in neutral results; `check` is the double's own device check (CUDA: after
 * cuInit; HIP: initializing itself first), `checked` the result of a check the caller made. */
/* INVALID_VALUE for a NULL out parameter, else the device check. */
DBL_HIDDEN int dbl_check_out(int (*check)(int dev), int dev, const void *out);
/* The device's name into a caller's buffer, once `checked` is DR_OK. */
DBL_HIDDEN int dbl_device_name(int checked, char *name, int len, const char *text);
/* The PCI bus id of API ordinal `dev` into a caller's buffer, once `checked` is DR_OK. */
DBL_HIDDEN int dbl_device_bus_id(int checked, int dev, char *busid, int len);
/* An allocation of `alloc` (dbl_dalloc, dbl_halloc) into *out: INVALID_VALUE for a NULL out. */
DBL_HIDDEN int dbl_alloc_into(int (*alloc)(size_t size, int device, uintptr_t *out), size_t size, int device, void **out);
/* A free of `release` (dbl_dfree, dbl_hfree): a NULL pointer frees nothing and succeeds. */
DBL_HIDDEN int dbl_free_unless_null(int (*release)(uintptr_t p), void *ptr);

/* The init call (cuInit, hipInit) of a double of API `api` (after DBL_DRIVER): flags must be 0; it reads the
 * configuration again. */
#define DBL_INIT_CALL(T, INIT_FN, api)                                                               \
  DBL_API T INIT_FN(unsigned int flags) {                                                           \
    DBL_ENTER();                                                                                    \
    return code(flags != 0 ? DR_INVALID_VALUE : dbl_init(api, parse_profile));                      \
  }

/* The device queries both doubles answer alike, defined in each double under its own names and result type T,
 * with its own device check (check_device) and codes (code). */
#define DBL_DEVICE_QUERIES(T, NAME_FN, BUS_ID_FN, TOTAL_MEM_FN, DEVICE_NAME)                         \
  DBL_API T NAME_FN(char *name, int len, int dev) {                                                 \
    DBL_ENTER();                                                                                    \
    return code(dbl_device_name(check_device(dev), name, len, DEVICE_NAME));                        \
  }                                                                                                 \
  DBL_API T BUS_ID_FN(char *busid, int len, int dev) {                                              \
    DBL_ENTER();                                                                                    \
    return code(dbl_device_bus_id(check_device(dev), dev, busid, len));                             \
  }                                                                                                 \
  DBL_API T TOTAL_MEM_FN(size_t *bytes, int dev) {                                                  \
    DBL_ENTER();                                                                                    \
    int r = dbl_check_out(check_device, dev, bytes);                                                \
    if (r == DR_OK) *bytes = DBL_TOTAL_MEM;                                                         \
    return code(r);                                                                                 \
  }

/* What the CUDA and HIP doubles define alike, from their data: a constructor that gives the engine NAMES (the
 * exported call names), code (a neutral result as a T of API `api`: dbl_api_code) and parse_profile (for dbl_init:
 * the profile a name selects among PROFILES over BASE: dbl_pick_profile). */
#define DBL_DRIVER(T, api, NAMES, BASE, PROFILES)                                                  \
  __attribute__((constructor)) static void dbl_driver_setup(void) {                                \
    dbl_set_names(NAMES, (int)(sizeof NAMES / sizeof NAMES[0]));                                   \
    g.current_ctx = -1;                                                                            \
    g.current_context = -1;                                                                        \
  }                                                                                                \
  static T code(int r) { return dbl_api_code(api, r); }                                            \
  static int parse_profile(const char *name, profile_t *p) {                                       \
    return dbl_pick_profile(&BASE, PROFILES, sizeof PROFILES / sizeof PROFILES[0], name, p);       \
  }

/* The body of a call that runs `expr` (a neutral result) only once `check` (one too) is DR_OK, answered in the
 * double's own codes (its function code). */
#define DBL_RETURN_AFTER(check, expr)       \
  do {                                      \
    int r_ = (check);                       \
    return code(r_ != DR_OK ? r_ : (expr)); \
  } while (0)

/* One row of a double's error table: its code, name and text. */
typedef struct {
  int code;
  const char *name;
  const char *text;
} dbl_error_t;
/* The row of `code` in a table of n rows; NULL when the table has none. */
DBL_HIDDEN const dbl_error_t *dbl_find_error(const dbl_error_t *table, size_t n, int code);

/* A neutral result as the code of `api` (API_CUDA, API_HIP); one the table lacks is that API's unknown error. */
DBL_HIDDEN int dbl_api_code(int api, int r);
/* The code, name and text of `code` in `api` (API_CUDA, API_HIP); NULL for a code that API does not have. */
DBL_HIDDEN const dbl_error_t *dbl_api_error(int api, int code);

/* The integrated-device attribute: faults integrated and integrated_query_fails, else 0 (a discrete device). */
DBL_HIDDEN int dbl_integrated(int *value);

/* One profile a double answers to: what sets it apart from the double's base profile. */
typedef struct {
  const char *name;       /* profile_t.name, and a name that selects it */
  const char *aliases[2]; /* other names that select it: the other double's profiles (NULL: none more) */
  int nodevice;           /* profile_t.nodevice */
  int rocm724_bugs;       /* accept_prot_none, accept_overlap, tmpfs_serves_zeros and stuck_unregister */
} dbl_profile_choice_t;
/* The profile `name` selects among a double's n choices (NULL: the first, its default) over its base, into *out;
 * 0 for a name no choice answers to. */
DBL_HIDDEN int dbl_pick_profile(const profile_t *base, const dbl_profile_choice_t *choices, size_t n, const char *name,
                                profile_t *out);

#define DBL_TOTAL_MEM ((size_t)80 << 30) /* 80 GiB reported */

#endif
