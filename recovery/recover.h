/*
 * recover.h -- finding the newest valid head.  Floor 1: uses only the format
 * (base/format.h) and the I/O seam (base/io.h), never the engine: it knows
 * no keel_options, and the engine translates its open flags into the
 * RECOVERY_ flags below (engine/db.c).
 *
 * RECOVERY INVARIANTS
 *  (1) A head is accepted only if its record CRC matches, it continues the
 *      previous accepted head (txid + 1, prev_head, region_start, file_id) and
 *      the CRC chain over its region matches.  (RECOVERY_TRUST_HEAD skips
 *      the region check: a positive control for the torture harness.)
 *  (2) Reads are bounded whatever the file's size: recovery starts from the
 *      newer valid hint (at most HINT_EVERY_COMMITS commits or 4 MiB behind
 *      the end) and reads forward; only damage to both hints makes it start
 *      from the first head.
 *  (3) Bytes after the newest valid head are a torn tail, and are cut (the
 *      file truncated, then synced) -- unless a valid later head is found past
 *      them, which means damage behind a head that had been durable: then the
 *      open refuses with KEEL_ECORRUPT, or, with RECOVERY_SALVAGE, settles
 *      on the newest head before the damage.
 *  (4) Recovery itself never writes unless the caller asks to cut.
 */
#ifndef KEEL_RECOVER_H
#define KEEL_RECOVER_H

#include "format.h"
#include "io.h"
#include "keel_err.h"
#include "keel_recovery.h"

/* One pending head's DELTA record (format version 3), found by
 * recovery_pending. */
typedef struct recovery_delta {
	uint64_t off;   /* the DELTA record                                 */
	uint64_t txid;  /* the head that links it                           */
	uint32_t crc;   /* its crc (the head's delta_crc)                   */
} recovery_delta;

typedef struct recovery_result {
	keel_head head;          /* the newest valid head                       */
	recovery_delta *deltas;  /* version 3: its pending DELTA records, oldest
	                            first (malloc'd; the caller frees it)      */
	size_t ndeltas;
	keel_super super;
	uint64_t file_size;
	keel_recovery_status status;
	uint64_t offset;         /* TRUNCATED: cut here; CORRUPT: damage here   */
	uint64_t bytes_read;
	char reason[128];
} recovery_result;

/* FLAGS of recovery_find and recovery_walk.  RECOVERY_SALVAGE (the engine's
 * KEEL_SALVAGE): damage behind a durable head settles on the newest head
 * before it instead of failing.  RECOVERY_TRUST_HEAD (the engine's
 * KEEL_UNSAFE_TRUST_HEAD): a head is accepted without its region check --
 * a positive control, never for real use. */
#define RECOVERY_SALVAGE 0x1u
#define RECOVERY_TRUST_HEAD 0x2u
/* RECOVERY_READ_DEVICE: the walk reads the device, not the page cache
 * (keel_io.pread_device; the cache where the backend or the file system
 * cannot).  A writer's open
 * asks for it: on ext4 and xfs the pages of a failed write-back stay in the
 * cache, marked clean, and read back as if written, and a writer must not
 * build on them (engine/db.c).  The starting head is read from the cache: a
 * hint names only a head that was durable, and the first head is. */
#define RECOVERY_READ_DEVICE 0x4u

/* Reads the superblock and finds the newest valid head.  FLAGS:
 * RECOVERY_SALVAGE, RECOVERY_TRUST_HEAD, RECOVERY_READ_DEVICE.  MAX_TXID: the
 * walk from the starting head (the newer valid hint, or the first head)
 * accepts no head past this txid; UINT64_MAX for none (a reader process's
 * limit: engine/marker.c).  Returns KEEL_OK
 * (status OK, TRUNCATED, or CORRUPT under RECOVERY_SALVAGE), KEEL_ENOTKEEL,
 * KEEL_EVERSION, KEEL_ECORRUPT or KEEL_EIO. */
/* Version 3: after the newest head is found, step 5 (recovery_pending)
 * fills out->deltas; damage there is damage behind a durable head
 * (KEEL_ECORRUPT, or under RECOVERY_SALVAGE the newest head before it). */
int recovery_find(const keel_io *io, int fd, unsigned flags,
                  uint64_t max_txid, recovery_result *out);

/* Continues from the valid head FROM: accepts every later head that checks
 * out, up to txid MAX_TXID (a head past it ends the walk cleanly).  Used by
 * recovery_find and by read-only handles to see new commits.
 * *NEWEST receives the newest accepted head (FROM if none), *STOP where the
 * walk stopped, *why a reason when that is not a clean end.  Returns KEEL_OK
 * or KEEL_EIO. */
int recovery_walk(const keel_io *io, int fd, uint64_t file_size,
                  const keel_head *from, uint64_t max_txid, unsigned flags,
                  keel_head *newest,
                  uint64_t *stop, const char **why, uint64_t *bytes_read);

/* Step 5 (format version 3): the pending span of HEAD.  Walks forward
 * through [span start, HEAD) -- at most KEEL_PENDING_BYTES_MAX bytes, one
 * read -- checking each pending head (a valid head record of this file,
 * continuing the previous one, the same root, pending_heads and
 * pending_bytes counting up to HEAD's) and its DELTA record (its crc is
 * the head's delta_crc; entries well formed, keys ascending, rev the
 * head's txid, value references below it).  FROM: a head already indexed
 * with the same root (a reader's refresh), or NULL to walk the whole span.
 * *OUT (malloc'd, oldest first) and *N: the DELTA records after FROM.
 * On damage: KEEL_ECORRUPT, *BAD its offset and *WHY the reason, and
 * *GOOD the newest head before it whose own span checked out (what
 * RECOVERY_SALVAGE settles on), with its records in *OUT and *N.
 * KEEL_OK, KEEL_ECORRUPT, KEEL_EIO or KEEL_ENOMEM. */
int recovery_pending(const keel_io *io, int fd, const keel_head *head,
                     const keel_head *from, recovery_delta **out, size_t *n,
                     keel_head *good, uint64_t *bad, const char **why,
                     uint64_t *bytes_read);

/* Cuts the file at AT (truncate, then fsync).  Returns 0 or a keel error. */
int recovery_cut(const keel_io *io, int fd, uint64_t at);

/* Checks that HEAD's region matches its chain CRC, given PREV_CHAIN (the
 * previous head's chain_crc).  Returns KEEL_OK, KEEL_ECORRUPT or KEEL_EIO. */
int recovery_check_region(const keel_io *io, int fd, const keel_head *head,
                          uint32_t prev_chain, uint64_t *bytes_read);

/* Reads and decodes the head record at OFF (record CRC checked). */
int recovery_read_head(const keel_io *io, int fd, uint64_t off,
                       keel_head *out);

#endif /* KEEL_RECOVER_H */
