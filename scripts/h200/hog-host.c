// hog-host THREADS SECONDS [MIB]: keeps the host's memory busy, as a CI job sharing the node would. THREADS threads
// each copy (memcpy) between two buffers of MIB MiB (default 256) of their own, in a loop, until SECONDS pass or
// SIGTERM/SIGINT comes. Its first line says it is running (its pid, the buffers touched, the threads started); its
// last gives the GB/s of all threads together (bytes copied / seconds). Used by scripts/h200/busy.sh.
// Build: cc -O2 -pthread -o hog-host hog-host.c
#define _GNU_SOURCE
#include "hog.h"
#include <pthread.h>
#include <unistd.h>

static double deadline;
static size_t bytes;

typedef struct {
  char *a, *b;
  double copied;
} worker_t;

static void *work(void *arg) {
  worker_t *w = arg;
  while (!stop && now() < deadline) {
    memcpy(w->b, w->a, bytes);
    memcpy(w->a, w->b, bytes);
    w->copied += 2.0 * (double)bytes;
  }
  return NULL;
}

static long positive(const char *s, const char *what) { return integer_arg("hog-host", s, what, 1, "a positive integer"); }

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: hog-host THREADS SECONDS [MIB]\n");
    return 2;
  }
  long threads = positive(argv[1], "THREADS"), seconds = positive(argv[2], "SECONDS");
  long mib = argc == 4 ? positive(argv[3], "MIB") : 256;
  if (threads > 1024) {
    fprintf(stderr, "hog-host: THREADS '%s' is more than 1024\n", argv[1]);
    return 2;
  }
  bytes = (size_t)mib << 20;
  stop_on_signals();
  worker_t *ws = calloc((size_t)threads, sizeof *ws);
  pthread_t *ts = calloc((size_t)threads, sizeof *ts);
  if (!ws || !ts) return 1;
  for (long i = 0; i < threads; i++) {
    ws[i].a = malloc(bytes);
    ws[i].b = malloc(bytes);
    if (!ws[i].a || !ws[i].b) {
      fprintf(stderr, "hog-host: cannot allocate 2 x %ld MiB for thread %ld\n", mib, i);
      return 1;
    }
    memset(ws[i].a, (int)i, bytes); /* every page touched before the clock starts */
    memset(ws[i].b, 0, bytes);
  }
  double t0 = now();
  deadline = t0 + (double)seconds;
  for (long i = 0; i < threads; i++) {
    if (pthread_create(&ts[i], NULL, work, &ws[i]) != 0) {
      fprintf(stderr, "hog-host: cannot start thread %ld\n", i);
      return 1;
    }
  }
  printf("hog-host: pid %d running: %ld threads copying 2 x %ld MiB each, for %ld s\n", (int)getpid(), threads, mib, seconds);
  fflush(stdout);
  double copied = 0;
  for (long i = 0; i < threads; i++) {
    pthread_join(ts[i], NULL);
    copied += ws[i].copied;
    free(ws[i].a);
    free(ws[i].b);
  }
  double took = now() - t0;
  printf("hog-host: %.2f GB/s (%.1f GB in %.2f s, %ld threads)\n", copied / took / 1e9, copied / 1e9, took, threads);
  free(ws);
  free(ts);
  return 0;
}
