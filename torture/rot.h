/*
 * rot.h -- --bit-rot: after each verified cycle, flip one bit of a copy of
 * the store, somewhere in synced bytes before the newest commit's region
 * (what rots on a disk while nobody writes it), open the copy read-only
 * and read everything.  Every read must either fail (open, iteration or
 * check reports an error) or return exactly the state just verified:
 * never wrong bytes, never a key silently missing.  Every other check,
 * when a hint names a commit that a later one follows, flips a bit in that
 * commit's region instead: recovery starts there and checks it, so the
 * open must refuse the copy.
 */
#ifndef TORTURE_ROT_H
#define TORTURE_ROT_H

#include <stdint.h>

#include "oracle.h"
#include "report.h"

/*
 * rot_check - PATH is the store just verified (MODEL holds its state); the
 * copy is PATH.rot, removed afterwards unless a violation was found.  SEED
 * picks the bit.  Returns the violations found (each printed through
 * report_violation and counted as a phantom in R), or -1 on a set-up error
 * (message printed).
 */
int rot_check(const char *path, uint64_t seed, const oracle *model,
              report *r);

#endif /* TORTURE_ROT_H */
