/* The clock and the wait the driver doubles and the host-busy library pace their copies with. */
#ifndef DBL_PACE_H
#define DBL_PACE_H
#include <errno.h>
#include <time.h>

/* The last stretch of a paced copy is spun, not slept: a sleep ends up to the timer slack (50 us) late, and
 * the timing tests need the deadline itself. Only a short stretch: on a loaded machine (load 8 on 2 cores,
 * measured) a thread that spins 2 ms is often preempted before its deadline and ends several ms late (median
 * 0.7 to 4.8 ms over 40-ms waits), where one that sleeps until 0.2 ms before it, then spins, ends on it
 * (median 0). */
#define PACE_SPIN_S 0.0002

/* CLOCK_MONOTONIC, in seconds. */
static inline double pace_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Returns once CLOCK_MONOTONIC reaches `deadline` (at once when it has passed): sleeps, then spins. */
static inline void pace_wait_until(double deadline) {
  double left = deadline - pace_now();
  if (left > PACE_SPIN_S) {
    double wake = deadline - PACE_SPIN_S;
    struct timespec ts = {.tv_sec = (time_t)wake, .tv_nsec = (long)((wake - (double)(time_t)wake) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
  }
  while (pace_now() < deadline) {
  }
}
#endif
