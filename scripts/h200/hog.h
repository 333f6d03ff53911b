// What hog-host and hog-link share: the clock, stopping on SIGTERM/SIGINT, and reading their integer arguments.
#ifndef HOG_H
#define HOG_H
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

// SIGTERM and SIGINT set `stop`: the hog's loop ends and it reports and releases what it took.
static void stop_on_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

// CLOCK_MONOTONIC, in seconds.
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// The decimal integer S (at least MIN); else "PROG: WHAT 'S' is not NEED" on stderr and exit 2.
static long integer_arg(const char *prog, const char *s, const char *what, long min, const char *need) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || !*s || *end || v < min) {
    fprintf(stderr, "%s: %s '%s' is not %s\n", prog, what, s, need);
    exit(2);
  }
  return v;
}
#endif
