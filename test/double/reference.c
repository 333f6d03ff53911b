/*
 * Driver double: the reference checks' promises (reference.h). The engine (common.c) calls these hooks; the
 * CUDA and HIP doubles answer the attributes, cuMemGetInfo / hipMemGetInfo and cuMemHostGetDevicePointer /
 * hipHostGetDevicePointer from here (the one device pointer of the double: reference_copies.c reads through it and
 * answers the pointer query with it).
 */
#include "common.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define REF_LEAK_BYTES ((size_t)64 << 10)
/* Where a device address that is not the host's lies: far above any user-space address. */
#define REF_DEVICE_ALIAS ((uintptr_t)1 << 47)

static int has(unsigned bit) { return (g.faults.ref_faults & bit) != 0; }

unsigned dbl_ref_fault_bit(const char *name) {
  static const struct {
    const char *name;
    unsigned bit;
  } FAULTS[] = {
      {"attr_register_lies", REF_ATTR_REGISTER_LIES},     {"attr_readonly_lies", REF_ATTR_READONLY_LIES},
      {"attr_host_pointer_lies", REF_ATTR_HOST_POINTER_LIES}, {"attr_page_tables_lies", REF_ATTR_PAGE_TABLES_LIES},
      {"leak_device_per_cycle", REF_LEAK_DEVICE_PER_CYCLE}, {"leak_locked_per_cycle", REF_LEAK_LOCKED_PER_CYCLE},
      {"accepts_unknown_flags", REF_ACCEPTS_UNKNOWN_FLAGS}, {"accepts_null", REF_ACCEPTS_NULL},
      {"accepts_zero_size", REF_ACCEPTS_ZERO_SIZE},       {"unregister_null_crashes", REF_UNREGISTER_NULL_CRASHES},
      {"accepts_unregister_null", REF_ACCEPTS_UNREGISTER_NULL}, {"other_process_allocates", REF_OTHER_PROCESS_ALLOCATES},
      {"other_process_keeps_allocating", REF_OTHER_PROCESS_KEEPS_ALLOCATING},
  };
  for (size_t i = 0; i < sizeof FAULTS / sizeof FAULTS[0]; i++) {
    if (strcmp(FAULTS[i].name, name) == 0) return FAULTS[i].bit;
  }
  return 0;
}

int dbl_ref_read_attributes(ref_attrs_t *out) {
  *out = (ref_attrs_t){.host_register = 1, .readonly_register = 1, .host_pointer = 1, .pageable_access = 0, .page_tables = 0};
  const char *spec = getenv("MAPPED_REG_DOUBLE_ATTRIBUTES");
  if (!spec || !*spec) return 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    int *field = NULL;
    if (eq) {
      *eq = '\0';
      if (strcmp(tok, "host_register") == 0) field = &out->host_register;
      else if (strcmp(tok, "readonly_register") == 0) field = &out->readonly_register;
      else if (strcmp(tok, "host_pointer") == 0) field = &out->host_pointer;
      else if (strcmp(tok, "pageable_access") == 0) field = &out->pageable_access;
      else if (strcmp(tok, "page_tables") == 0) field = &out->page_tables;
    }
    if (!field || (strcmp(eq + 1, "0") != 0 && strcmp(eq + 1, "1") != 0)) {
      fprintf(stderr, "mapped-reg driver double: MAPPED_REG_DOUBLE_ATTRIBUTES item '%s' is not known (see test/double/README.md)\n", tok);
      return -1;
    }
    *field = eq[1] - '0';
  }
  return 0;
}

int dbl_ref_register_gate(uintptr_t p, size_t size, unsigned flags, unsigned valid_flags, unsigned readonly_flag, int readonly_needs_flag) {
  if (!p) return has(REF_ACCEPTS_NULL) ? DR_OK : DR_INVALID_VALUE;
  if (!size) return has(REF_ACCEPTS_ZERO_SIZE) ? DR_OK : DR_INVALID_VALUE;
  if ((flags & ~valid_flags) && !has(REF_ACCEPTS_UNKNOWN_FLAGS)) return DR_INVALID_VALUE;
  if (!g.ref_attrs.host_register) return DR_NOT_SUPPORTED;
  /* a driver without read-only registration (CUDA) knows no such flag */
  if (readonly_needs_flag && !g.ref_attrs.readonly_register && (flags & readonly_flag)) return DR_NOT_SUPPORTED; /* as the CUDA documentation says */
  return -1;
}

int dbl_ref_unregister_null(void) {
  if (has(REF_UNREGISTER_NULL_CRASHES)) raise(SIGSEGV);
  return has(REF_ACCEPTS_UNREGISTER_NULL) ? DR_OK : DR_INVALID_VALUE;
}

void dbl_ref_released(void) {
  if (has(REF_LEAK_DEVICE_PER_CYCLE)) g.ref_leaked += REF_LEAK_BYTES;
  if (has(REF_LEAK_LOCKED_PER_CYCLE)) {
    /* a page of this process locked and never unlocked, as a driver that leaks a pin would leave it */
    long page = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED && mlock(m, (size_t)page) != 0) {
      fprintf(stderr, "mapped-reg driver double: leak_locked_per_cycle: mlock failed: %s\n", strerror(errno));
    }
  }
}

int dbl_ref_attribute(int which, int *value) {
  const ref_attrs_t *a = &g.ref_attrs;
  switch (which) {
    case REF_HOST_REGISTER: *value = a->host_register ^ has(REF_ATTR_REGISTER_LIES); return DR_OK;
    case REF_READONLY_REGISTER: *value = a->readonly_register ^ has(REF_ATTR_READONLY_LIES); return DR_OK;
    case REF_HOST_POINTER: *value = a->host_pointer || has(REF_ATTR_HOST_POINTER_LIES); return DR_OK;
    case REF_PAGEABLE_ACCESS: *value = a->pageable_access && !has(REF_ATTR_PAGE_TABLES_LIES); return DR_OK;
    case REF_PAGE_TABLES: *value = a->page_tables || has(REF_ATTR_PAGE_TABLES_LIES); return DR_OK;
    default: return DR_INVALID_VALUE;
  }
}

int dbl_ref_mem_info(size_t *free_bytes, size_t *total_bytes) {
  if (!free_bytes || !total_bytes) return DR_INVALID_VALUE;
  /* another process allocating 8 MiB on "this GPU" between the first query and the second, and keeping it */
  if (has(REF_OTHER_PROCESS_ALLOCATES) && ++g.ref_mem_queries == 2) g.ref_leaked += (size_t)8 << 20;
  /* another process allocating 8 MiB at every second query, all the while: in one half of any run of the cycles */
  if (has(REF_OTHER_PROCESS_KEEPS_ALLOCATING) && ++g.ref_mem_queries % 2 == 0) g.ref_leaked += (size_t)8 << 20;
  size_t used = g.dalloc_total + g.ref_leaked;
  *total_bytes = DBL_TOTAL_MEM;
  *free_bytes = used < DBL_TOTAL_MEM ? DBL_TOTAL_MEM - used : 0;
  return DR_OK;
}

uintptr_t dbl_ref_device_offset(void) {
  int same = g.ref_attrs.host_pointer && !has(REF_ATTR_HOST_POINTER_LIES);
  return same ? 0 : REF_DEVICE_ALIAS;
}

reg_t *dbl_ref_reg_holding(uintptr_t p, size_t n) {
  for (size_t i = 0; i < g.nregs; i++) {
    reg_t *r = &g.regs[i];
    if (p >= r->start && p - r->start < r->len && n <= r->len - (p - r->start)) return r;
  }
  return NULL;
}

int dbl_ref_device_pointer(uintptr_t p, uintptr_t *out) {
  if (!out || !p) return DR_INVALID_VALUE;
  if (!dbl_ref_reg_holding(p, 1) && !dbl_in_halloc(p, 1)) return DR_INVALID_VALUE;
  *out = p + dbl_ref_device_offset();
  return DR_OK;
}
