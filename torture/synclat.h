/*
 * synclat.h -- what the disk under the store was doing: fdatasync latency
 * of small appends in the store's directory, measured before and after a
 * run, so a report can tell a slow engine from a slow device.
 */
#ifndef TORTURE_SYNCLAT_H
#define TORTURE_SYNCLAT_H

#include "samples.h"

#define SYNCLAT_SAMPLES 200u

/* Appends 4 KiB and fdatasyncs it COUNT times in a scratch file inside DIR
 * (removed afterwards), adding each sync's nanoseconds to OUT.  0, or -1
 * with errno. */
int synclat_measure(const char *dir, unsigned count, samples *out);

#endif /* TORTURE_SYNCLAT_H */
