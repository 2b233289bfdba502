/*
 * keel.h -- the public interface of libkeel, an embeddable append-only
 * copy-on-write tree store.  This header is the manual.
 *
 * WHAT IT IS
 *   One data file holds every value, every tree node and a chain of head
 *   records.  Nothing is ever overwritten in place: a commit appends its
 *   new values, a DELTA record of what it changed and a head record that
 *   links it (format 3), then issues exactly ONE fdatasync (fsync when the
 *   commit grew the file).  Once the changes not yet in the tree pass a
 *   bound (keel_options.checkpoint_bytes, 4 MiB), the commit that passes it
 *   is a checkpoint: it appends the copied tree paths and a head naming the
 *   new root instead.  The head carries a CRC32C over the commit's whole
 *   byte region chained with the previous head's, so recovery accepts a
 *   head only when everything it depends on reached the disk; open reads
 *   the changes since the last checkpoint once, a bounded span.  A format 2
 *   store (every commit a checkpoint) opens, and keel_compact converts it.
 *   The file format is in docs/format.md.
 *
 * CALLING SEQUENCE
 *     keel_db *db;
 *     int rc = keel_open("data.keel", NULL, &db);       // creates if missing
 *     rc = keel_put(db, "k", 1, "v", 1, KEEL_REV_ANY, &rev);
 *     keel_view v;
 *     rc = keel_get(db, "k", 1, &v);                      // zero-copy
 *     fwrite(v.data, 1, v.len, stdout);
 *     keel_view_release(&v);
 *     keel_close(db);
 *
 * CRASH GUARANTEE
 *   When keel_put, keel_del or keel_commit returns KEEL_OK the change is on
 *   stable storage (as far as the device honours fdatasync) and survives a
 *   process kill or a power cut.  A commit that did not return KEEL_OK may or
 *   may not survive, but never partially: batches are all-or-nothing.
 *   After a failed write or sync the handle is FAILED: every later write
 *   returns the same error (KEEL_EIO or KEEL_ENOSPC) until the store is
 *   closed and opened again, which runs
 *   recovery from what is on disk (failures stick; nothing is retried).
 *
 * THREADS
 *   A keel_db may be used from any number of threads at once.  Writers are
 *   grouped: concurrent commits share one sync (group commit).  Readers never
 *   block writers: a snapshot or view pins the mapping it reads from.  The
 *   engine starts threads of its own when first needed: two committers for
 *   async commits, the compactor (automatic compaction) and the grower
 *   (which preallocates the file ahead of need); keel_close joins them.
 *
 * PROCESSES
 *   One writer process at a time (a lock on the data file; a second gets
 *   KEEL_EBUSY).  Any number of reader processes open with KEEL_RDONLY and see
 *   new commits without reopening -- only those whose sync has returned: the
 *   writer keeps PATH.durable, a small shared file naming its newest durable
 *   commit, and removes it at a clean close.  A killed (or failed) writer's
 *   marker stays, and readers stay at it until the next writer's open has
 *   synced what that writer left (docs/engine.md, "Concurrency").
 *
 * ERRORS
 *   Every function returns 0 (KEEL_OK) or a negative keel_err.  errno values
 *   never leak through this interface; keel_strerror() names each code.
 *
 * THE OTHER PUBLIC HEADERS (installed beside this one, included here)
 *   keel_err.h       the one error enum (keel_err) and keel_strerror
 *   keel_recovery.h  what recovery did (keel_recovery) and what keel_check
 *                    found (keel_check_result, keel_check_report_fn)
 *   keel/io.h        the I/O seam, for a custom backend (keel_options.io);
 *                    not included here
 */
#ifndef KEEL_H
#define KEEL_H

#include <stddef.h>
#include <stdint.h>

#include "keel_err.h"      /* keel_err (KEEL_OK, ...), keel_strerror */
#include "keel_recovery.h" /* keel_recovery, keel_check_result       */

#ifdef __cplusplus
extern "C" {
#endif

#define KEEL_VERSION_STRING "0.2.0" /* format 3; libkeel.so.1 */

/* ---- limits ------------------------------------------------------------ */
#define KEEL_KEY_MAX 1024u                  /* keys are 1..1024 bytes, any value */
#define KEEL_VALUE_MAX (((uint64_t)1 << 31) - 4096) /* just under 2 GiB       */

/* ---- revisions ----------------------------------------------------------
 * Every key carries a revision: the transaction id of the commit that last
 * wrote it (always >= 1).  A write names what it expects the current
 * revision to be; a mismatch fails with KEEL_ECONFLICT and changes nothing.
 */
#define KEEL_REV_ABSENT ((uint64_t)0)          /* the key must not exist   */
#define KEEL_REV_ANY    ((uint64_t)UINT64_MAX) /* no expectation           */

/* ---- errors: keel_err and keel_strerror are in keel_err.h -------------- */

/* ---- opening -------------------------------------------------------------- */
typedef struct keel_db keel_db;
struct keel_io; /* keel/io.h: the I/O seam (every read, write, sync, map) */

/* flags for keel_options.flags */
#define KEEL_RDONLY   0x1u /* open for reading; no lock, no recovery writes   */
#define KEEL_NOCREATE 0x2u /* fail with KEEL_ENOENT instead of creating       */
#define KEEL_SALVAGE  0x4u /* open past damage: use newest head that checks   */
#define KEEL_NOCOMPACT 0x8u /* turn the automatic compaction policy off       */
#define KEEL_PREALLOC_FALLOCATE 0x10u /* grow with fallocate, not zeros:
                                          cheaper growth, dearer syncs on
                                          ext4/xfs (docs/engine.md)      */
#define KEEL_BATCH_THREADS 0x20u /* the engine's own threads (the async
                                     committers, the compactor, the
                                     grower) run under
                                     SCHED_BATCH: one that is woken does
                                     not preempt the thread that woke it,
                                     so a server's thread keeps the CPU
                                     through its burst of submissions
                                     (Linux; best effort; docs/engine.md) */
#define KEEL_RDONLY_UNSYNCED 0x40u /* with KEEL_RDONLY: ignore the writer's
                                      durable marker and take every valid
                                      head, as the next writer's recovery
                                      will -- including commits a killed
                                      writer wrote and never synced, which
                                      a power cut can still take back.  For
                                      checkers and tools that judge a store
                                      after a crash (keel check, torture);
                                      never for a reader beside a writer */

/*
 * Deliberately unsafe modes.  They exist ONLY so the torture harness can prove
 * it catches real bugs (positive controls).  Never set them otherwise.
 */
#define KEEL_UNSAFE_NO_SYNC     0x100u /* commits skip their sync              */
#define KEEL_UNSAFE_TRUST_HEAD  0x200u /* recovery skips region verification  */
#define KEEL_UNSAFE_RETRY_FSYNC 0x400u /* a failed sync is retried, then acked */
#define KEEL_UNSAFE_CKPT_DROP   0x800u /* a checkpoint leaves out the key of the
                                          oldest pending entry (format 3)    */

typedef struct keel_options {
	unsigned flags;              /* KEEL_RDONLY | ...                         */
	const struct keel_io *io;    /* I/O backend; NULL = POSIX (keel/io.h)     */
	uint64_t grow_step;          /* preallocation step in bytes; 0 = default  */
	int lock_timeout_ms;         /* writer lock: 0 = fail at once with
	                                KEEL_EBUSY, >0 wait up to this, -1 forever */
	unsigned file_mode;          /* mode for a new file; 0 = 0644             */
	struct keel_recovery *report;/* if set, filled with what recovery did --
	                                also when the open fails (damage found)  */
	uint64_t compact_slack;      /* the automatic compaction policy's floor,
	                                in bytes; 0 = KEEL_COMPACT_SLACK_DEFAULT.
	                                A compaction is due once the dead bytes
	                                (file in use minus live bytes) pass both
	                                the live bytes and two thirds of this; the
	                                file then stays within
	                                max(2.5 x live, live + compact_slack)
	                                (keel_stats.space_bound).  Smaller:
	                                less disk, more compactions (each rewrites
	                                the live tree and syncs four times).
	                                docs/engine.md, "Compaction"            */
	uint64_t checkpoint_bytes;   /* format 3: the pending span (commits whose
	                                changes are only in the delta log) that
	                                makes the next commit a checkpoint; 0 =
	                                KEEL_CHECKPOINT_BYTES_DEFAULT, which is
	                                also the most.  Smaller: more checkpoints
	                                (more bytes written), a shorter open.
	                                docs/engine.md, "the delta log"         */
} keel_options;

/* The default and largest checkpoint_bytes: 4 MiB. */
#define KEEL_CHECKPOINT_BYTES_DEFAULT ((uint64_t)4 << 20)

/* The default compact_slack: a small store grows by tens of MiB between
 * compactions instead of compacting every few hundred commits. */
#define KEEL_COMPACT_SLACK_DEFAULT ((uint64_t)64 << 20)

/*
 * keel_open - open the store at PATH, creating it if missing (unless
 * KEEL_NOCREATE).  OPT may be NULL for defaults.  Runs recovery: finds the
 * newest head whose region checks out, and cuts a torn tail after it.  Reads
 * on open are bounded whatever the file's size.  A writer then syncs what
 * it found (one fdatasync) and makes PATH.durable; a KEEL_RDONLY handle in
 * another process stops at the commit that file names (unless
 * KEEL_RDONLY_UNSYNCED).
 * PATH is resolved once, here (symbolic links followed, as realpath; a
 * dangling link is created where it points): compaction replaces the file
 * it named then, and PATH.durable and temporary files lie beside that file.
 * Returns KEEL_OK and *out, or: KEEL_EINVAL (NULL path/out), KEEL_EISDIR,
 * KEEL_ENOENT, KEEL_EACCES, KEEL_ENOTKEEL (zero-length or foreign file),
 * KEEL_EVERSION, KEEL_ECORRUPT (damage behind the newest valid head; use
 * KEEL_SALVAGE to open anyway), KEEL_EBUSY (another writer process), KEEL_EIO,
 * KEEL_ENOMEM.  On failure *out is NULL and the file is unchanged.
 */
int keel_open(const char *path, const keel_options *opt, keel_db **out);

/* keel_close - wait for in-flight commits, release everything.  Views and
 * snapshots still held keep their mapping alive until released.  Returns the
 * handle's sticky error (KEEL_OK if it never failed).  NULL is a no-op. */
int keel_close(keel_db *db);

/* ---- what recovery did: keel_recovery is in keel_recovery.h ------------ */
/* Copies what the last open's recovery did into *out. */
int keel_recovery_info(keel_db *db, keel_recovery *out);

/* ---- reading -------------------------------------------------------------- */
/*
 * A view is a zero-copy window onto a value inside the mapped file.  It stays
 * valid and unchanged -- even across later commits, file growth and
 * compaction -- until keel_view_release().  The value's CRC32C is checked
 * before a view is handed out, so a view never shows damaged bytes.
 */
typedef struct keel_view {
	const void *data; /* value bytes (not NUL-terminated); valid if len == 0 */
	size_t len;       /* value length                                        */
	uint64_t rev;     /* revision of the key                                 */
	void *pin_;       /* private: the mapping reference                      */
} keel_view;

/* keel_get - look KEY up in the newest committed state.
 * Returns KEEL_OK and *out, KEEL_ENOTFOUND, KEEL_EKEY, KEEL_EINVAL,
 * KEEL_ECORRUPT (a checksum failed on the way; nothing is returned). */
int keel_get(keel_db *db, const void *key, size_t klen, keel_view *out);

/* Releases a view; a zeroed or already released view is a no-op. */
void keel_view_release(keel_view *v);

/* keel_view_file - where a view's bytes lie in a file: *FD and *OFF such
 * that pread(2), sendfile(2) or splice(2) of v->len bytes at *OFF give
 * exactly v->data -- to send a value without copying it through the
 * process.  *FD belongs to the view's mapping: open until the view is
 * released, never to be closed, written, or have its file offset used
 * (read at *OFF only).  The bytes there never change while the view is
 * held (the file is append-only; compaction writes a new one), and after
 * the release they stay what they were (a socket may still hold the pages
 * sendfile gave it).  KEEL_OK; KEEL_EINVAL for NULL arguments, a released
 * view, a view from an iterator, or where no descriptor can be given (a
 * custom keel_io backend, or none to spare when the mapping was made):
 * then read v->data. */
int keel_view_file(const keel_view *v, int *fd, uint64_t *off);

/* A snapshot is a consistent read-only state: a head plus a pinned mapping. */
typedef struct keel_snapshot keel_snapshot;

/* keel_snapshot_open - pin the newest committed state of DB. */
int keel_snapshot_open(keel_db *db, keel_snapshot **out);
/* keel_snapshot_close - let go; the state lives on while views of it are
 * held (views stay valid after the close). */
void keel_snapshot_close(keel_snapshot *s);
/* keel_snapshot_refresh - move *SP to the newest committed state: the cheap
 * way to read fresh data in a loop (like renewing an LMDB read transaction).
 * Costs one atomic load when nothing changed.  Views taken from the old state
 * stay valid; *SP may be replaced by a new snapshot when such views exist.
 * Must not be called after keel_close of its db, nor while another thread
 * uses the same snapshot (snapshots are per reader).  KEEL_OK or
 * KEEL_ENOMEM. */
int keel_snapshot_refresh(keel_snapshot **sp);
uint64_t keel_snapshot_txid(const keel_snapshot *s);
/* Like keel_get, from the snapshot; the view pins the snapshot's mapping. */
int keel_snapshot_get(keel_snapshot *s, const void *key, size_t klen,
                      keel_view *out);

/*
 * Ordered iteration over a snapshot.  Keys compare as unsigned bytes
 * (memcmp, shorter first on a tie).  PREFIX limits the range to keys that
 * start with it (NULL/0 = all); START, when given, skips keys below it.
 * keel_iter_next returns KEEL_OK with the next entry, KEEL_ENOTFOUND at the
 * end, or KEEL_ECORRUPT.  The key pointer and view stay valid until the
 * iterator is closed (the view needs no release).
 */
typedef struct keel_iter keel_iter;
int keel_iter_open(keel_snapshot *s, const void *prefix, size_t plen,
                   const void *start, size_t slen, keel_iter **out);
int keel_iter_next(keel_iter *it, const void **key, size_t *klen,
                   keel_view *value);
void keel_iter_close(keel_iter *it);

/* ---- writing -------------------------------------------------------------- */
/*
 * keel_put / keel_del - one change, committed and durable on return.
 * EXPECT is KEEL_REV_ANY, KEEL_REV_ABSENT (puts only) or an exact revision.
 * *REV / *TXID (may be NULL) receives the commit's transaction id, which is
 * the key's new revision after a put.
 * Errors: KEEL_EKEY, KEEL_ETOOBIG, KEEL_EINVAL, KEEL_ECONFLICT,
 * KEEL_ENOTFOUND (keel_del of a missing key with KEEL_REV_ANY), KEEL_EIO /
 * KEEL_ENOSPC (this commit or an earlier one failed: the handle is FAILED
 * and answers every later write the same until reopened), KEEL_EREADONLY.
 * Commits that share a sync (group commit) share one head and so one txid:
 * revisions are per commit group, not per call.
 */
int keel_put(keel_db *db, const void *key, size_t klen, const void *val,
             size_t vlen, uint64_t expect, uint64_t *rev);
int keel_del(keel_db *db, const void *key, size_t klen, uint64_t expect,
             uint64_t *txid);

/*
 * A batch is a list of puts and deletes committed atomically: either every
 * change is applied or none is.  The batch copies keys and values.  Changes
 * apply in order; an expectation is checked against the state left by the
 * earlier changes of the same batch.
 */
typedef struct keel_batch keel_batch;
int keel_batch_new(keel_batch **out);
int keel_batch_put(keel_batch *b, const void *key, size_t klen,
                   const void *val, size_t vlen, uint64_t expect);
int keel_batch_del(keel_batch *b, const void *key, size_t klen,
                   uint64_t expect);
void keel_batch_clear(keel_batch *b);
void keel_batch_free(keel_batch *b);
size_t keel_batch_count(const keel_batch *b);
/* keel_batch_set_expect - change what change I (0-based, in the order
 * added) expects, e.g. to retry a batch that failed with KEEL_ECONFLICT
 * against the revision found now.  KEEL_OK, or KEEL_EINVAL when I is out of
 * range or a delete would expect KEEL_REV_ABSENT. */
int keel_batch_set_expect(keel_batch *b, size_t i, uint64_t expect);

/* keel_commit - commit B (which stays owned by the caller) durably.  Errors as
 * keel_put; on KEEL_ECONFLICT *failed_index (may be NULL) names the change
 * whose expectation failed.  An empty batch commits nothing and returns OK.
 * It may wait for a compaction (keel_compacting): for its switch to the new
 * file always, and for all of it while the file's used part is over
 * max(2.25 x live, live + 5/6 x compact_slack) -- that keeps the file within
 * keel_stats.space_bound against writers faster than compaction. */
int keel_commit(keel_db *db, keel_batch *b, uint64_t *txid,
                size_t *failed_index);

/*
 * keel_commit_async - enqueue B and return at once; CB(ARG, rc, txid,
 * failed_index) is called exactly once when the commit is durable (rc ==
 * KEEL_OK) or has failed.  B must stay untouched until then.  Commits queued
 * together share one sync.  CB runs on an engine thread or on another
 * committer's thread: it must be short and must not call keel_commit,
 * keel_put, keel_del or keel_close.  Returns KEEL_OK when queued, or an error
 * (KEEL_EINVAL, KEEL_EIO/KEEL_ENOSPC on a FAILED handle, KEEL_EREADONLY)
 * and CB is not called.  Never blocks: while compaction is behind, the
 * commit waits in the queue instead, and CB comes after the compaction.
 */
typedef void (*keel_commit_cb)(void *arg, int rc, uint64_t txid,
                               size_t failed_index);
int keel_commit_async(keel_db *db, keel_batch *b, keel_commit_cb cb,
                      void *arg);

/* ---- integrity check ------------------------------------------------------ */
/*
 * keel_check - verify everything reachable from the newest head: every
 * record's CRC, the Merkle links, key order, separator keys (each child's
 * keys lie between its separator and the next), levels, each record
 * referenced once, the head's key count and live bytes.  A node found wrong
 * is reported and its subtree not entered, so a check does work bounded by
 * the file's size whatever the file holds.  REPORT (may be NULL) is called
 * for each of the first KEEL_CHECK_REPORT_MAX problems with its file offset
 * and a description; when there were more, once more at the end with the
 * head's offset and "and N more problems not listed".  out->problems counts
 * them all.  Returns KEEL_OK when clean, KEEL_ECORRUPT when damage was found
 * (details in *out), or another error (KEEL_ENOMEM).  OUT may be NULL.
 */
/* (KEEL_CHECK_REPORT_MAX, keel_check_result and keel_check_report_fn are in
 * keel_recovery.h.) */
int keel_check(keel_db *db, keel_check_report_fn report, void *arg,
               keel_check_result *out);

/* ---- compaction --------------------------------------------------------- */
/* keel_compact - rewrite the live tree into a new file and switch to it.
 * Views and snapshots of the old file keep reading the old bytes.
 * The new file keeps the store's identity: the old file's mode, exactly
 * (the umask does not narrow it), and its owner and group where this
 * process may set them -- root may; another process may keep only its own
 * user and a group it is in, and otherwise (EPERM, ignored) the new file is
 * this process's user's and group's, and still has the old mode.  It
 * replaces the file PATH named at keel_open: through a symbolic link, the
 * link's target, and the link stays.  The same holds for the automatic
 * policy's compactions.  Returns KEEL_OK, KEEL_EREADONLY, KEEL_ECORRUPT
 * (damage in the tree: nothing changes), or the errors of a write. */
int keel_compact(keel_db *db);

/* keel_compacting - 1 while a compaction is due or running, 0 otherwise (and
 * for NULL).  A synchronous write started then may wait for it (keel_commit);
 * keel_commit_async never blocks, its commit waits in the queue instead.  A
 * thread that must not block (a server's event loop) should commit
 * asynchronously while this says 1. */
int keel_compacting(keel_db *db);

/* ---- statistics ----------------------------------------------------------- */
typedef struct keel_stats {
	uint64_t file_size;   /* bytes in the data file (preallocation included) */
	uint64_t end_offset;  /* bytes in use: the end of the newest head        */
	uint64_t live_bytes;  /* bytes reachable from the newest head            */
	uint64_t keys;        /* number of keys                                  */
	uint64_t txid;        /* newest transaction id                           */
	uint64_t commits;     /* commits by this handle                          */
	uint64_t syncs;       /* commit syncs issued by this handle (one per
	                         group; growth and compaction syncs not counted) */
	uint64_t compactions; /* compactions by this handle                      */
	uint64_t growths;     /* times this handle grew the data file            */
	uint64_t growths_inline; /* of those, grown by a commit itself: the file
	                         is normally grown ahead of need by a background
	                         thread, and a commit grows it only when that
	                         thread is behind or failed (docs/engine.md) */
	uint64_t space_bound; /* the file size the automatic policy keeps this
	                         store within: max(2.5 x L, L + compact_slack)
	                         where L = live_bytes - pending_bytes (the
	                         checkpointed tree's live bytes: a format 3
	                         store's slack carries its pending span, and
	                         is at least twice checkpoint_bytes); 0 when
	                         the policy is off (KEEL_NOCOMPACT,
	                         KEEL_RDONLY)                                */
	uint64_t checkpoints; /* format 3: checkpoints written by this handle    */
	uint64_t pending_heads; /* format 3: commits of the newest head whose
	                         changes are only in the delta log (0 on a
	                         format 2 store)                             */
	uint64_t pending_bytes; /* format 3: the bytes those commits span        */
	uint32_t format_version; /* the data file's format version (2 or 3)    */
} keel_stats;

int keel_stat(keel_db *db, keel_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* KEEL_H */
