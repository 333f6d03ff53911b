/*
 * Driver double, the device's clock: a virtual time per device (API ordinal) that each host-to-device copy
 * advances by its modelled duration (common.c's dbl_htod_in: n / the kind's rate, with the seeded noise of
 * MAPPED_REG_DOUBLE_NOISE), and the events that read it (cuEvent* / hipEvent*). A copy timed by events reads the
 * same figure whatever the host's load: the host's scheduling is not the device's time, as on a real GPU, where
 * the copy engine stamps the events. The wall-time pacing stays as it was (README.md, "The device's clock").
 */
#include "common.h"

#include <string.h>

#define DBL_MAX_EVENTS 256

typedef struct {
  int live;
  int recorded;
  int device;
  double at; /* the device's virtual time when recorded (s) */
} event_t;

static double device_clock[DBL_MAX_DEVICES];
static event_t events[DBL_MAX_EVENTS];
/* An event handle is the address of its slot in this table. */
static char event_handles[DBL_MAX_EVENTS];

void dbl_clock_advance(int device, double seconds) {
  if (device >= 0 && device < DBL_MAX_DEVICES && seconds > 0) device_clock[device] += seconds;
}

void dbl_events_reset(void) {
  memset(device_clock, 0, sizeof device_clock);
  memset(events, 0, sizeof events);
}

static event_t *find_event(void *e) {
  char *c = e;
  if (!c || c < event_handles || c >= event_handles + DBL_MAX_EVENTS) return NULL;
  event_t *ev = &events[c - event_handles];
  return ev->live ? ev : NULL;
}

int dbl_event_create(void **out) {
  if (!out) return DR_INVALID_VALUE;
  if (g.faults.events_fail) return DR_NOT_SUPPORTED;
  for (int k = 0; k < DBL_MAX_EVENTS; k++) {
    if (events[k].live) continue;
    memset(&events[k], 0, sizeof events[k]);
    events[k].live = 1;
    *out = &event_handles[k];
    return DR_OK;
  }
  return DR_OUT_OF_MEMORY;
}

int dbl_event_record(void *e, void *stream, int device) {
  event_t *ev = find_event(e);
  if (!ev) return DR_INVALID_VALUE;
  if (stream) {
    /* a created stream: its device's clock, once nothing waits in it (a queued copy has not advanced it yet) */
    int pending = dbl_stream_pending(stream, &device);
    if (pending < 0) return DR_INVALID_VALUE;
    if (pending > 0) return DR_NOT_SUPPORTED;
  }
  if (device < 0 || device >= DBL_MAX_DEVICES) return DR_INVALID_DEVICE;
  ev->recorded = 1;
  ev->device = device;
  ev->at = device_clock[device];
  return DR_OK;
}

/* The double's copies are done when their call returns: a recorded event is complete at once. */
int dbl_event_sync(void *e) {
  event_t *ev = find_event(e);
  if (!ev) return DR_INVALID_VALUE;
  return ev->recorded ? DR_OK : DR_INVALID_VALUE;
}

int dbl_event_elapsed(float *ms, void *start, void *end) {
  event_t *a = find_event(start), *b = find_event(end);
  if (!ms || !a || !b || !a->recorded || !b->recorded || a->device != b->device) return DR_INVALID_VALUE;
  *ms = (float)((b->at - a->at) * 1e3);
  return DR_OK;
}

int dbl_event_destroy(void *e) {
  event_t *ev = find_event(e);
  if (!ev) return DR_INVALID_VALUE;
  ev->live = 0;
  return DR_OK;
}
