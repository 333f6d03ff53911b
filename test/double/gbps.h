/* The rate syntax the driver doubles and the host-busy library share: GB/s as a positive decimal. */
#ifndef DBL_GBPS_H
#define DBL_GBPS_H
#include <stdlib.h>

/* A positive decimal: digits with at most one '.', at least one digit ("0.05", "12", ".5"); 0 when not. */
static inline double parse_gbps(const char *s) {
  int digits = 0, dots = 0;
  for (const char *c = s; *c; c++) {
    if (*c >= '0' && *c <= '9') digits++;
    else if (*c == '.' && dots++ == 0) continue;
    else return 0;
  }
  if (!digits) return 0;
  double v = strtod(s, NULL);
  return v > 0 && v < 1e9 ? v : 0;
}
#endif
