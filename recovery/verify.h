/*
 * verify.h -- the integrity check behind keel_check and `keel check`.
 * Floor 1: reads the format (engine/format.h) from a memory image of the
 * data file; knows nothing of the tree or commit code.
 *
 * Checked, for everything reachable from HEAD: each record's header and
 * CRC; each reference's CRC (the Merkle links); node structure (count,
 * slots and entries inside the payload); keys strictly ascending across the
 * whole tree; a branch key equal to the first key of its child's subtree;
 * levels falling by one towards the leaves; references pointing backwards
 * and before the head; value lengths; the head's key count and live bytes.
 */
#ifndef KEEL_VERIFY_H
#define KEEL_VERIFY_H

#include <stddef.h>

#include "format.h"
#include "keel.h"

/* Verifies the tree of HEAD in the image BASE[0, LEN).  Calls REPORT (may be
 * NULL) per problem.  Returns KEEL_OK when clean, KEEL_ECORRUPT otherwise;
 * *OUT is always filled. */
int verify_tree(const uint8_t *base, size_t len, const keel_head *head,
                keel_check_report_fn report, void *arg,
                keel_check_result *out);

#endif /* KEEL_VERIFY_H */
