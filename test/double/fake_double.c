/*
 * Fake driver double: libfake_double.so, the driver of the test-only "fake" backend (test/support/fake-backend.ts),
 * a third driver that registers host memory. It has an ABI of its own (fake* functions) and codes of its own,
 * chosen apart from CUDA's and HIP's (not registered is 4040, invalid value 22, not 713 and 1), so that a test
 * through it fails wherever the product still decides by a CUDA or HIP code. The engine is common.c's, as for
 * the CUDA and HIP doubles: the same registrations, copies, faults (MAPPED_REG_DOUBLE_FAULTS) and device count.
 *
 * Profile (MAPPED_REG_DOUBLE_PROFILE): fake, the default, a discrete device whose registrations behave.
 * A read-only mapping registers with flags 0 (as on HIP): there is no read-only flag.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int fakeResult;

/* Each of the fake's codes once: its value, the engine's neutral result it stands for (common.h: DR_*), its name and
 * the text of its row in fakeErrorName's table (NULL: none). */
#define FAKE_CODES(X)                                                                                           \
  X(fakeSuccess, 0, DR_OK, "FAKE_SUCCESS", "no error")                                                          \
  X(fakeErrorInvalidValue, 22, DR_INVALID_VALUE, "FAKE_ERROR_INVALID_VALUE", NULL)                              \
  X(fakeErrorOutOfMemory, 12, DR_OUT_OF_MEMORY, "FAKE_ERROR_OUT_OF_MEMORY", NULL)                               \
  X(fakeErrorNotInitialized, 30, DR_NOT_INITIALIZED, "FAKE_ERROR_NOT_INITIALIZED", NULL)                        \
  X(fakeErrorNoDevice, 40, DR_NO_DEVICE, "FAKE_ERROR_NO_DEVICE", NULL)                                          \
  X(fakeErrorInvalidDevice, 41, DR_INVALID_DEVICE, "FAKE_ERROR_INVALID_DEVICE", NULL)                           \
  X(fakeErrorInvalidContext, 42, DR_INVALID_CONTEXT, "FAKE_ERROR_INVALID_CONTEXT", NULL)                        \
  X(fakeErrorAlreadyRegistered, 4041, DR_ALREADY_REGISTERED, "FAKE_ERROR_ALREADY_REGISTERED", NULL)             \
  X(fakeErrorNotRegistered, 4040, DR_NOT_REGISTERED, "FAKE_ERROR_NOT_REGISTERED", NULL)                         \
  X(fakeErrorNotSupported, 50, DR_NOT_SUPPORTED, "FAKE_ERROR_NOT_SUPPORTED", NULL)                              \
  X(fakeErrorInvalidDirection, 23, DR_INVALID_MEMCPY_DIRECTION, "FAKE_ERROR_INVALID_DIRECTION", NULL)           \
  X(fakeErrorUnknown, 99, DR_UNKNOWN, "FAKE_ERROR_UNKNOWN", NULL)

#define FAKE_ENUM(code, value, result, name, text) code = value,
enum { FAKE_CODES(FAKE_ENUM) };
#undef FAKE_ENUM

/* The flag bits fakeHostRegister accepts: portable and mapped, as the others name them. */
#define FAKE_REGISTER_PORTABLE 0x1u
#define FAKE_REGISTER_MAPPED 0x2u
/* Neither CUDA nor HIP: the engine's api tag for this double (common.h names theirs). */
#define API_FAKE 3

static const char *const NAMES[] = {
    "fakeDriverVersion", "fakeInit", "fakeDeviceCount", "fakeDeviceName", "fakeDevicePciBusId",
    "fakeDeviceTotalMem", "fakeDeviceIntegrated", "fakeSetDevice", "fakeSynchronize", "fakeDeviceReset",
    "fakeMalloc", "fakeFree", "fakeHostAlloc", "fakeHostFree", "fakeHostRegister", "fakeHostUnregister",
    "fakeMemcpyHtoD", "fakeMemcpyDtoH", "fakeErrorName",
};

__attribute__((constructor)) static void fake_double_setup(void) {
  dbl_set_names(NAMES, (int)(sizeof NAMES / sizeof NAMES[0]));
  g.current_ctx = -1;
}

/* The engine's neutral results (common.h: DR_*) as the fake's codes. */
#define FAKE_CODE_OF(code, value, result, name, text) [result] = code,
static const fakeResult CODES[] = {FAKE_CODES(FAKE_CODE_OF)};
#undef FAKE_CODE_OF

static fakeResult code(int r) { return r >= 0 && r < (int)(sizeof CODES / sizeof CODES[0]) ? CODES[r] : fakeErrorUnknown; }

/* One profile, "fake" (the default): a discrete device whose registrations behave. Faults come on top of it. */
static int parse_profile(const char *name, profile_t *p) {
  memset(p, 0, sizeof *p);
  p->api = API_FAKE;
  p->name = "fake";
  p->valid_flags = FAKE_REGISTER_PORTABLE | FAKE_REGISTER_MAPPED;
  p->unregister_fault_result = DR_NOT_REGISTERED;
  p->integrated_fail_result = DR_NOT_SUPPORTED;
  return !name || strcmp(name, "fake") == 0;
}

/* The fake does nothing before fakeInit succeeded. */
static int ensure_init(void) { return g.initialized ? DR_OK : DR_NOT_INITIALIZED; }

static int check_device(int dev) { return !g.initialized ? DR_NOT_INITIALIZED : dev < 0 || dev >= g.ndevices ? DR_INVALID_DEVICE : DR_OK; }

/* The body of most calls: the engine's result of `expr`, once the driver is initialized (and `dev` is a device). */
#define AFTER_INIT(expr) \
  do {                    \
    int r_ = ensure_init(); \
    return code(r_ != DR_OK ? r_ : (expr)); \
  } while (0)
#define ON_DEVICE(dev, expr) \
  do {                        \
    int r_ = check_device(dev); \
    return code(r_ != DR_OK ? r_ : (expr)); \
  } while (0)

/* Writes `value` to `*out` and says DR_OK (for the calls that answer a number). */
static int put_int(int *out, int value) { return out ? (*out = value, DR_OK) : DR_INVALID_VALUE; }

static int put_pointer(void **out, int (*alloc)(size_t, int, uintptr_t *), size_t size) {
  if (!out) return DR_INVALID_VALUE;
  uintptr_t p = 0;
  int r = alloc(size, g.current_device, &p);
  if (r == DR_OK) *out = (void *)p;
  return r;
}

static int pci_bus_id(char *busid, int len, int dev) {
  char buf[32];
  dbl_pci_bus_id(buf, sizeof buf, dev);
  return dbl_copy_string(busid, len, buf);
}

static int integrated(int *value) {
  return g.faults.integrated_query_fails ? g.prof.integrated_fail_result : put_int(value, g.faults.integrated ? 1 : 0);
}

static int total_mem(size_t *bytes) { return bytes ? (*bytes = DBL_TOTAL_MEM, DR_OK) : DR_INVALID_VALUE; }

static int set_device(int dev) { return g.current_device = dev, DR_OK; }

static int reset_device(int dev) { return dbl_reset_device(dev), DR_OK; }

/* ---------------------------------------------------------------- versions, init, devices */

DBL_API fakeResult fakeDriverVersion(int *version) {
  DBL_ENTER();
  return code(put_int(version, 301));
}

DBL_API fakeResult fakeInit(unsigned int flags) {
  DBL_ENTER();
  if (flags != 0) return fakeErrorInvalidValue;
  return code(g.initialized ? DR_OK : dbl_init(API_FAKE, parse_profile));
}

DBL_API fakeResult fakeDeviceCount(int *count) { DBL_ENTER(); AFTER_INIT(put_int(count, g.ndevices)); }
DBL_API fakeResult fakeDeviceName(char *name, int len, int dev) { DBL_ENTER(); ON_DEVICE(dev, dbl_copy_string(name, len, "Double Fake Device")); }
DBL_API fakeResult fakeDevicePciBusId(char *busid, int len, int dev) { DBL_ENTER(); ON_DEVICE(dev, pci_bus_id(busid, len, dev)); }
DBL_API fakeResult fakeDeviceTotalMem(size_t *bytes, int dev) { DBL_ENTER(); ON_DEVICE(dev, total_mem(bytes)); }
DBL_API fakeResult fakeDeviceIntegrated(int *value, int dev) { DBL_ENTER(); ON_DEVICE(dev, integrated(value)); }
DBL_API fakeResult fakeSetDevice(int dev) { DBL_ENTER(); ON_DEVICE(dev, set_device(dev)); }
DBL_API fakeResult fakeSynchronize(void) { DBL_ENTER(); AFTER_INIT(DR_OK); }
/* The device's registrations and allocations go (common.c: dbl_reset_device). */
DBL_API fakeResult fakeDeviceReset(int dev) { DBL_ENTER(); ON_DEVICE(dev, reset_device(dev)); }

/* ---------------------------------------------------------------- memory */

DBL_API fakeResult fakeMalloc(void **ptr, size_t size) { DBL_ENTER(); AFTER_INIT(put_pointer(ptr, dbl_dalloc, size)); }
DBL_API fakeResult fakeFree(void *ptr) { DBL_ENTER(); AFTER_INIT(ptr ? dbl_dfree((uintptr_t)ptr) : DR_OK); }
/* No allocation flag is known: any is refused. */
DBL_API fakeResult fakeHostAlloc(void **ptr, size_t size, unsigned int flags) { DBL_ENTER(); AFTER_INIT(flags ? DR_INVALID_VALUE : put_pointer(ptr, dbl_halloc, size)); }
DBL_API fakeResult fakeHostFree(void *ptr) { DBL_ENTER(); AFTER_INIT(ptr ? dbl_hfree((uintptr_t)ptr) : DR_OK); }
DBL_API fakeResult fakeHostRegister(void *ptr, size_t size, unsigned int flags) { DBL_ENTER(); AFTER_INIT(dbl_register((uintptr_t)ptr, size, flags, g.current_device)); }
DBL_API fakeResult fakeHostUnregister(void *ptr) { DBL_ENTER(); AFTER_INIT(dbl_unregister((uintptr_t)ptr)); }

DBL_API fakeResult fakeMemcpyHtoD(void *dst, const void *src, size_t size) {
  double entry = dbl_now(); /* paced copies are timed from here */
  DBL_ENTER();
  AFTER_INIT(dbl_htod((uintptr_t)dst, (uintptr_t)src, size, g.current_device, entry));
}

DBL_API fakeResult fakeMemcpyDtoH(void *dst, const void *src, size_t size) { DBL_ENTER(); AFTER_INIT(dbl_dtoh((uintptr_t)dst, (uintptr_t)src, size)); }

/* ---------------------------------------------------------------- errors */

#define FAKE_ERROR_ROW(code, value, result, name, text) {code, name, text},
static const dbl_error_t ERRORS[] = {FAKE_CODES(FAKE_ERROR_ROW)};
#undef FAKE_ERROR_ROW

/* The name of a code; NULL for one the driver does not know. */
DBL_API const char *fakeErrorName(fakeResult error) {
  DBL_ENTER();
  const dbl_error_t *e = dbl_find_error(ERRORS, sizeof ERRORS / sizeof ERRORS[0], error);
  return e ? e->name : NULL;
}
