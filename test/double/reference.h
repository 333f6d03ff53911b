/*
 * Driver double: what the reference checks (suites/hazards/reference-*.ts) hold a driver to, and the faults that
 * break each promise alone: the attributes that describe registration (configurable, and each able to lie), the
 * device's free memory, a registration's device address, leaks per registration cycle, and the answers to unknown
 * flags, a NULL pointer, a size of 0 and an unregister of NULL. Kept apart from common.c, which calls the hooks.
 * README.md beside this file, "Reference checks", describes them.
 */
#ifndef MAPPED_REG_DOUBLE_REFERENCE_H
#define MAPPED_REG_DOUBLE_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

/* The attributes' true values (MAPPED_REG_DOUBLE_ATTRIBUTES); the double behaves as they say unless a lie is set. */
typedef struct {
  int host_register;     /* HOST_REGISTER_SUPPORTED: 0 refuses every registration (NOT_SUPPORTED) */
  int readonly_register; /* READ_ONLY_HOST_REGISTER_SUPPORTED: 0 refuses the read-only flag (CUDA: NOT_SUPPORTED) */
  int host_pointer;      /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: 1 gives the host address as the device address */
  int pageable_access;   /* PAGEABLE_MEMORY_ACCESS */
  int page_tables;       /* PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES */
} ref_attrs_t;

/* The reference faults (bits of faults_t.ref_faults), named in MAPPED_REG_DOUBLE_FAULTS. */
enum {
  REF_ATTR_REGISTER_LIES = 1u << 0,    /* HOST_REGISTER_SUPPORTED answers the opposite of what registration does */
  REF_ATTR_READONLY_LIES = 1u << 1,    /* READ_ONLY_HOST_REGISTER_SUPPORTED answers the opposite */
  REF_ATTR_HOST_POINTER_LIES = 1u << 2,/* CAN_USE_HOST_POINTER answers 1, and the device address is another */
  REF_ATTR_PAGE_TABLES_LIES = 1u << 3, /* USES_HOST_PAGE_TABLES answers 1 while PAGEABLE_MEMORY_ACCESS answers 0 */
  REF_LEAK_DEVICE_PER_CYCLE = 1u << 4, /* each release loses 64 KiB of the device's free memory */
  REF_LEAK_LOCKED_PER_CYCLE = 1u << 5, /* each release mlocks a page of the process, never unlocked (VmLck grows) */
  REF_ACCEPTS_UNKNOWN_FLAGS = 1u << 6, /* register flags outside the known ones are accepted */
  REF_ACCEPTS_NULL = 1u << 7,          /* register of NULL returns 0 (nothing is registered) */
  REF_ACCEPTS_ZERO_SIZE = 1u << 8,     /* register of size 0 returns 0 (nothing is registered) */
  REF_UNREGISTER_NULL_CRASHES = 1u << 9, /* unregister of NULL kills the process with SIGSEGV */
  REF_ACCEPTS_UNREGISTER_NULL = 1u << 10,/* unregister of NULL returns 0 */
  REF_OTHER_PROCESS_ALLOCATES = 1u << 11,/* not the driver: from the 2nd free-memory query on, 8 MiB less is free, once */
  REF_OTHER_PROCESS_KEEPS_ALLOCATING = 1u << 12,/* not the driver: at every 2nd free-memory query, 8 MiB more taken */
};

/* The bit of reference fault `name` (0: not one) . */
unsigned dbl_ref_fault_bit(const char *name);
/* MAPPED_REG_DOUBLE_ATTRIBUTES into *out (defaults: the H200's 1, 1, 1, 0, 0); -1 (one line on stderr) when malformed. */
int dbl_ref_read_attributes(ref_attrs_t *out);

/* Hooks of the engine (common.c). */
/* What register says before anything else is looked at: -1 to go on, else the result. */
int dbl_ref_register_gate(uintptr_t p, size_t size, unsigned flags, unsigned valid_flags, unsigned readonly_flag, int readonly_needs_flag);
/* What unregister of NULL says (it may not return). */
int dbl_ref_unregister_null(void);
/* After a registration was released. */
void dbl_ref_released(void);
/* The value of reference attribute `which` (one of the names below) into *value. */
enum { REF_HOST_REGISTER, REF_READONLY_REGISTER, REF_HOST_POINTER, REF_PAGEABLE_ACCESS, REF_PAGE_TABLES };
int dbl_ref_attribute(int which, int *value);
/* The device's free and total memory. */
int dbl_ref_mem_info(size_t *free_bytes, size_t *total_bytes);
/* The device address of a registered (or page-locked) host address p: p + dbl_ref_device_offset(). */
int dbl_ref_device_pointer(uintptr_t p, uintptr_t *out);
/* What a device address adds to its host address: 0 where CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM is 1 (and true). */
uintptr_t dbl_ref_device_offset(void);

#endif
