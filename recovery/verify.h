/*
 * verify.h -- the integrity check behind keel_check and `keel check`.
 * Floor 1: reads the format (base/format.h) from a memory image of the
 * data file; knows nothing of the tree or commit code.
 *
 * Checked, for everything reachable from HEAD: each record's header and
 * CRC; each reference's CRC (the Merkle links); node structure (count,
 * slots and entries inside the payload); keys strictly ascending across the
 * whole tree; a branch key equal to the first key of its child's subtree
 * and the subtree's keys below the next branch key; levels falling by one
 * towards the leaves; references pointing backwards and before the head;
 * each record referenced once; value lengths; the head's key count and live
 * bytes.  The work is bounded by LEN whatever the image holds: each record
 * is read at most once and a node found wrong is not entered.  REPORT sees
 * the first KEEL_CHECK_REPORT_MAX problems, then one line counting the rest.
 */
#ifndef KEEL_VERIFY_H
#define KEEL_VERIFY_H

#include <stddef.h>

#include "format.h"
#include "keel_err.h"
#include "keel_recovery.h"

/* Verifies the tree of HEAD in the image BASE[0, LEN).  Calls REPORT (may be
 * NULL) per problem, as above.  Returns KEEL_OK when clean, KEEL_ECORRUPT
 * otherwise, or KEEL_ENOMEM; *OUT is always filled. */
int verify_tree(const uint8_t *base, size_t len, const keel_head *head,
                keel_check_report_fn report, void *arg,
                keel_check_result *out);

#endif /* KEEL_VERIFY_H */
