/*
 * Fake driver double: libfake_double.so, the driver of the test-only "fake" backend (test/support/fake-backend.ts),
 * a third driver that registers host memory. It has an ABI of its own (fake* functions) and codes of its own,
 * chosen apart from CUDA's and HIP's (not registered is 4040, invalid value 22, not 713 and 1), so that a test
 * through it fails wherever the product still decides by a CUDA or HIP code. The engine is common.c's, as for
 * the CUDA and HIP doubles: the same registrations, copies, faults (MAPPED_REG_DOUBLE_FAULTS) and device count.
 *
 * Profiles (MAPPED_REG_DOUBLE_PROFILE): fake (default: a discrete device whose registrations behave), nodevice.
 * A read-only mapping registers with flags 0 (as on HIP): there is no read-only flag.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int fakeResult;

enum {
  fakeSuccess = 0,
  fakeErrorInvalidValue = 22,
  fakeErrorOutOfMemory = 12,
  fakeErrorNotInitialized = 30,
  fakeErrorNoDevice = 40,
  fakeErrorInvalidDevice = 41,
  fakeErrorInvalidContext = 42,
  fakeErrorAlreadyRegistered = 4041,
  fakeErrorNotRegistered = 4040,
  fakeErrorNotSupported = 50,
  fakeErrorInvalidDirection = 23,
  fakeErrorUnknown = 99,
};

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

static fakeResult code(int r) {
  switch (r) {
    case DR_OK: return fakeSuccess;
    case DR_INVALID_VALUE: return fakeErrorInvalidValue;
    case DR_OUT_OF_MEMORY: return fakeErrorOutOfMemory;
    case DR_NOT_INITIALIZED: return fakeErrorNotInitialized;
    case DR_NO_DEVICE: return fakeErrorNoDevice;
    case DR_INVALID_DEVICE: return fakeErrorInvalidDevice;
    case DR_INVALID_CONTEXT: return fakeErrorInvalidContext;
    case DR_ALREADY_REGISTERED: return fakeErrorAlreadyRegistered;
    case DR_NOT_REGISTERED: return fakeErrorNotRegistered;
    case DR_NOT_SUPPORTED: return fakeErrorNotSupported;
    case DR_INVALID_MEMCPY_DIRECTION: return fakeErrorInvalidDirection;
    default: return fakeErrorUnknown;
  }
}

static int parse_profile(const char *name, profile_t *p) {
  memset(p, 0, sizeof *p);
  p->api = API_FAKE;
  p->valid_flags = FAKE_REGISTER_PORTABLE | FAKE_REGISTER_MAPPED;
  p->unregister_fault_result = DR_NOT_REGISTERED;
  p->integrated_fail_result = DR_NOT_SUPPORTED;
  if (!name || strcmp(name, "fake") == 0) {
    p->name = "fake";
    return 1;
  }
  if (strcmp(name, "nodevice") == 0) {
    p->name = "nodevice";
    p->nodevice = 1;
    return 1;
  }
  return 0;
}

static int ensure_init(void) {
  if (g.initialized) return DR_OK;
  return DR_NOT_INITIALIZED;
}

static int check_device(int dev) {
  int r = ensure_init();
  if (r != DR_OK) return r;
  return dev < 0 || dev >= g.ndevices ? DR_INVALID_DEVICE : DR_OK;
}

/* ---------------------------------------------------------------- versions, init, devices */

DBL_API fakeResult fakeDriverVersion(int *version) {
  DBL_ENTER();
  if (!version) return fakeErrorInvalidValue;
  *version = 301;
  return fakeSuccess;
}

DBL_API fakeResult fakeInit(unsigned int flags) {
  DBL_ENTER();
  if (flags != 0) return fakeErrorInvalidValue;
  if (g.initialized) return fakeSuccess;
  return code(dbl_init(API_FAKE, parse_profile));
}

DBL_API fakeResult fakeDeviceCount(int *count) {
  DBL_ENTER();
  if (!count) return fakeErrorInvalidValue;
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  *count = g.ndevices;
  return fakeSuccess;
}

DBL_API fakeResult fakeDeviceName(char *name, int len, int dev) {
  DBL_ENTER();
  int r = check_device(dev);
  if (r != DR_OK) return code(r);
  return code(dbl_copy_string(name, len, "Double Fake Device"));
}

DBL_API fakeResult fakeDevicePciBusId(char *busid, int len, int dev) {
  DBL_ENTER();
  int r = check_device(dev);
  if (r != DR_OK) return code(r);
  char buf[32];
  dbl_pci_bus_id(buf, sizeof buf, dev);
  return code(dbl_copy_string(busid, len, buf));
}

DBL_API fakeResult fakeDeviceTotalMem(size_t *bytes, int dev) {
  DBL_ENTER();
  if (!bytes) return fakeErrorInvalidValue;
  int r = check_device(dev);
  if (r != DR_OK) return code(r);
  *bytes = DBL_TOTAL_MEM;
  return fakeSuccess;
}

DBL_API fakeResult fakeDeviceIntegrated(int *value, int dev) {
  DBL_ENTER();
  if (!value) return fakeErrorInvalidValue;
  int r = check_device(dev);
  if (r != DR_OK) return code(r);
  if (g.faults.integrated_query_fails) return code(g.prof.integrated_fail_result);
  *value = g.faults.integrated ? 1 : 0;
  return fakeSuccess;
}

DBL_API fakeResult fakeSetDevice(int dev) {
  DBL_ENTER();
  int r = check_device(dev);
  if (r != DR_OK) return code(r);
  g.current_device = dev;
  return fakeSuccess;
}

DBL_API fakeResult fakeSynchronize(void) {
  DBL_ENTER();
  return code(ensure_init());
}

DBL_API fakeResult fakeDeviceReset(int dev) {
  DBL_ENTER();
  int r = check_device(dev);
  if (r != DR_OK) return code(r);
  dbl_reset_device(dev);
  return fakeSuccess;
}

/* ---------------------------------------------------------------- memory */

DBL_API fakeResult fakeMalloc(void **ptr, size_t size) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  if (!ptr) return fakeErrorInvalidValue;
  uintptr_t p = 0;
  r = dbl_dalloc(size, g.current_device, &p);
  if (r == DR_OK) *ptr = (void *)p;
  return code(r);
}

DBL_API fakeResult fakeFree(void *ptr) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  return ptr ? code(dbl_dfree((uintptr_t)ptr)) : fakeSuccess;
}

DBL_API fakeResult fakeHostAlloc(void **ptr, size_t size, unsigned int flags) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  if (!ptr || flags != 0) return fakeErrorInvalidValue;
  uintptr_t p = 0;
  r = dbl_halloc(size, g.current_device, &p);
  if (r == DR_OK) *ptr = (void *)p;
  return code(r);
}

DBL_API fakeResult fakeHostFree(void *ptr) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  return ptr ? code(dbl_hfree((uintptr_t)ptr)) : fakeSuccess;
}

DBL_API fakeResult fakeHostRegister(void *ptr, size_t size, unsigned int flags) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  return code(dbl_register((uintptr_t)ptr, size, flags, g.current_device));
}

DBL_API fakeResult fakeHostUnregister(void *ptr) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  return code(dbl_unregister((uintptr_t)ptr));
}

DBL_API fakeResult fakeMemcpyHtoD(void *dst, const void *src, size_t size) {
  double entry = dbl_now(); /* paced copies are timed from here */
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  return code(dbl_htod((uintptr_t)dst, (uintptr_t)src, size, g.current_device, entry));
}

DBL_API fakeResult fakeMemcpyDtoH(void *dst, const void *src, size_t size) {
  DBL_ENTER();
  int r = ensure_init();
  if (r != DR_OK) return code(r);
  return code(dbl_dtoh((uintptr_t)dst, (uintptr_t)src, size));
}

/* ---------------------------------------------------------------- errors */

static const struct {
  int code;
  const char *name;
} ERRORS[] = {
    {fakeSuccess, "FAKE_SUCCESS"},
    {fakeErrorInvalidValue, "FAKE_ERROR_INVALID_VALUE"},
    {fakeErrorOutOfMemory, "FAKE_ERROR_OUT_OF_MEMORY"},
    {fakeErrorNotInitialized, "FAKE_ERROR_NOT_INITIALIZED"},
    {fakeErrorNoDevice, "FAKE_ERROR_NO_DEVICE"},
    {fakeErrorInvalidDevice, "FAKE_ERROR_INVALID_DEVICE"},
    {fakeErrorInvalidContext, "FAKE_ERROR_INVALID_CONTEXT"},
    {fakeErrorAlreadyRegistered, "FAKE_ERROR_ALREADY_REGISTERED"},
    {fakeErrorNotRegistered, "FAKE_ERROR_NOT_REGISTERED"},
    {fakeErrorNotSupported, "FAKE_ERROR_NOT_SUPPORTED"},
    {fakeErrorInvalidDirection, "FAKE_ERROR_INVALID_DIRECTION"},
    {fakeErrorUnknown, "FAKE_ERROR_UNKNOWN"},
};

/* The name of a code; NULL for one the driver does not know. */
DBL_API const char *fakeErrorName(fakeResult error) {
  DBL_ENTER();
  for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++) {
    if (ERRORS[i].code == error) return ERRORS[i].name;
  }
  return NULL;
}

/* ---------------------------------------------------------------- test exports */

DBL_API int double_registration_count(void) {
  pthread_mutex_lock(&g_mu);
  int n = dbl_live_registrations();
  pthread_mutex_unlock(&g_mu);
  return n;
}
