/*
 * cache_internal.h -- the shared-memory layout of a faultsim_cache, used by
 * cache.c (recording, in the writer) and crash.c (the crash, in the parent).
 * Not part of the manual; nothing outside faultsim/ includes it.
 *
 * LAYOUT (one MAP_SHARED anonymous mapping)
 *   struct faultsim_cache   header, lock, file table
 *   arena[2 * capacity]     two halves; records are appended, 8-byte
 *                           aligned, to the half the window names
 *
 * RECORD INVARIANTS (these are what make the record survive a SIGKILL)
 *   (1) A record is filled completely, THEN published by one atomic store of
 *       the window; the real system call is made only after that.  So every
 *       change on disk is covered by a published record.
 *   (2) Records are never moved.  A record changes only by one-byte state
 *       stores and, in the writer's _end call, by shrinking its length.
 *   (3) The window (half, start, tail) is one 64-bit word stored
 *       atomically.  Records before start were all durable when start moved
 *       past them; the state on disk with every record in the window undone
 *       is durable.
 *   (5) When a half is full, the records still needed (per file, from its
 *       oldest record not yet durable; unsynced namespace records) are
 *       copied to the other half, then one window store switches halves.
 *       A writer killed while copying leaves the old half in force.
 *       A sync compacts too, once the tail has passed trim_at and at most
 *       half of the window would be kept (faultsim_rec_trim): a program
 *       that syncs every write but leaves one namespace record unsynced
 *       (a file created, its directory never synced) would otherwise push
 *       the tail through fresh pages, a page fault on every write, until
 *       the half is full.
 *   (4) A file entry is filled, then published by storing nfiles.  Its path
 *       is double-buffered: the new path goes into the other slot, then cur
 *       flips, so the crash can try both slots and check the inode.
 *   (6) The converse of (1) does not hold for the one record in flight: a
 *       writer killed between its publish and its _end call may have made
 *       all of the real call, part of it (a SIGKILL stops a pwrite between
 *       pages) or none of it.  So inflight names that record from just
 *       before its publish until its _end call has settled it, and
 *       whoever takes over from a dead writer first trims the record to
 *       what the file shows (faultsim_inflight_settle).  Otherwise the
 *       record's unmade bytes reach the device view and, once a later sync
 *       marks the record durable, every crash: bytes nobody wrote, which
 *       the next writer built on while the page cache and, after the
 *       record leaves the window, the crash's durable state lack them.
 *   (7) A durable namespace record never depends on an undone one.  Under
 *       the POSIX model a directory sync settles what it covers; under an
 *       ordered model (r2: ext4, xfs) every sync that settles namespace
 *       records settles ALL earlier ones, so the durable ones are a prefix
 *       of them (and the crash keeps a longer prefix); under btrfs (r1
 *       alone) a file sync settles the file's own records together with
 *       every earlier record on a name they touch (sync.c, names_settle).
 *       The crash undoes the rest newest first.
 *   (8) A write through a shared mapping is recorded when the program's
 *       first store to a read-only page faults, before the page is made
 *       writable (so (1) holds: the stores come after the publish).  Its
 *       pre-image is the page then; its new bytes are unknown until it is
 *       SEALED: the recorder makes the page read-only again, then fills
 *       them from the file, then sets REC_F_SEALED (a kill in between
 *       leaves it unsealed).  The recorder seals before every flush
 *       point (sync, munmap, a recorded write or truncate of the file),
 *       so a sync finds only the unsealed records of stores that raced
 *       with it: mark_file leaves those unsynced (a store concurrent with
 *       a sync is not covered by it).  Whoever takes over from a dead
 *       writer seals what is left from the file as it stands
 *       (faultsim_map_settle), before anything reads the records.
 *   (9) A file entry is reused for another file only when no record in the
 *       window names it (nothing a crash could undo or redo on it), and then
 *       its gen is bumped: an id is valid while its gen is the one read when
 *       it was handed out (faultsim_cache_file_gen).  When the table is
 *       full, faultsim_cache_track takes such an entry, a durably unlinked
 *       one first, then the one whose newest record is oldest, so a program
 *       that writes, syncs and closes file after file is never refused.
 *  (10) A file entry's size, while size_known, is the file's size: set from
 *       the fstat that tracks it (made under the lock, so no recorded call
 *       can come between the two), then moved only under the lock, by the
 *       _end of a recorded write, truncate or extension (the call made
 *       under that same lock, so no recorded call can slip between).  A
 *       writer that died inside a call, a crash that rewrote files and a
 *       clear all forget it; a write no wrapper saw is a bypass, which the
 *       harness reports (shim_check_files) -- the pre-image sizes a write
 *       records come from here, one fstat a write fewer.
 */
#ifndef KEEL_FAULTSIM_CACHE_INTERNAL_H
#define KEEL_FAULTSIM_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "faultsim.h"

#define FAULTSIM_CACHE_MAGIC 0x4b45454c46534333ull /* "KEELFSC3" */

/* record kinds */
enum {
	REC_WRITE = 1,    /* pwrite: pre-image, then the new bytes             */
	REC_TRUNCATE = 2, /* ftruncate: pre-image of the cut bytes when shrinking */
	REC_EXTEND = 3,   /* fallocate growing the size (zeros)                 */
	REC_CREATE = 4,   /* a new file: path_a                                 */
	REC_RENAME = 5,   /* path_a -> path_b; stash holds the old path_b       */
	REC_UNLINK = 6,   /* path_a; stash holds its content                    */
};

/* record states */
enum {
	ST_UNSYNCED = 1, /* a crash may keep or lose it                        */
	ST_SYNCED = 2,   /* durable                                            */
	ST_LOST = 3,     /* its sync failed under ext4/xfs: always lost        */
	ST_VOID = 4,     /* the real call failed, or btrfs reverted it         */
};

/* dirsync bits of a namespace record */
#define SCAN_NONE UINT64_MAX

/* pad bits of a write through a shared mapping (mapped.c) */
#define REC_F_MAPPED 1 /* recorded at a write fault: new bytes filled later */
#define REC_F_SEALED 2 /* its new bytes are filled                        */

#define DIRSYNC_A 1 /* the directory of path_a was synced after it       */
#define DIRSYNC_B 2 /* the directory of path_b (rename) was synced       */

typedef struct fs_rec {
	uint32_t size;     /* bytes of this record, header included, 8-aligned */
	uint8_t kind;      /* REC_*                                            */
	uint8_t state;     /* ST_*; stored atomically                          */
	uint8_t dirsync;   /* DIRSYNC_* bits (namespace records)               */
	uint8_t pad;       /* REC_F_* bits (writes through a mapping); stored
	                      atomically                                     */
	uint64_t seq;      /* global order, for sync marks                     */
	int32_t file;      /* file id (data records), -1 otherwise             */
	uint32_t plen[3];  /* namespace: path_a, path_b, stash lengths + NUL;
	                      a mapped write: [0] owner, [1] the owner's tag */
	uint64_t off;      /* write/extend: first byte                         */
	uint64_t len;      /* write: bytes written (new bytes stored)          */
	uint64_t old_size; /* file size before the call                        */
	uint64_t new_size; /* truncate/extend: size after                      */
	uint64_t pre_len;  /* pre-image bytes stored                           */
	uint64_t ino;      /* namespace: inode of the file moved or unlinked   */
	/* payload: data records: pre-image[pre_len], new bytes[len]
	 *          namespace records: path_a, path_b, stash (NUL-terminated) */
} fs_rec;
_Static_assert(sizeof(fs_rec) == 80, "fs_rec header layout");

typedef struct fs_file {
	uint64_t dev, ino; /* identity                                         */
	uint32_t cur;      /* which path slot is current                       */
	uint32_t gone;     /* its last name was durably unlinked               */
	uint64_t scan_from;/* window position of its oldest unsynced record,
	                      or SCAN_NONE: where a sync starts looking (a
	                      writer whose syncs overlap keeps the window long) */
	uint64_t last_seq; /* seq of its newest record (0: none yet): the
	                      entry reused first is the one idle longest (9) */
	uint32_t gen;      /* bumped each time the entry is reused for another
	                      file: a holder of the id checks it (9)          */
	uint32_t scan_gen; /* scan_from holds only while this equals the
	                      cache's scan_gen: one store forgets every
	                      file's (file_scan)                           */
	uint32_t size_known; /* size below holds (10)                      */
	uint64_t size;     /* the file's size in bytes, while size_known   */
	char path[2][FAULTSIM_PATH_MAX];
} fs_file;

struct faultsim_cache {
	uint64_t magic;
	uint64_t capacity;       /* bytes in each half of the arena            */
	uint64_t map_len;        /* bytes mapped, header included              */
	uint64_t window;         /* half << 63 | start << 32 | tail; start and
	                            tail in 8-byte units (3)                  */
	uint64_t next_seq;       /* next record's seq                          */
	uint64_t peak;           /* the most arena bytes ever in use           */
	uint32_t overflowed;     /* sticky: a recording call ran out of room   */
	uint32_t nfiles;         /* published file entries (4)                 */
	uint64_t inflight;       /* window position of the record whose real
	                            call is being made, or SCAN_NONE (6)      */
	uint32_t fs;             /* the file system model, a faultsim_fs: set
	                            by the harness before any writer, read by
	                            the syncs (r1, r2) and the crash; kept by
	                            faultsim_cache_clear                     */
	uint32_t scan_gen;       /* see fs_file.scan_gen                      */
	uint64_t trim_at;        /* the tail at which a sync next compacts (5) */
	uint32_t gone_hint;      /* 1 + an entry settle() marked gone, 0: none;
	                            the next new file takes it (9)          */
	uint32_t names_gen;      /* bumped before a rename, unlink or rmdir
	                            and by a clear: a directory resolved
	                            under an older one is looked up again
	                            (faultsim_cache_abspath_memo)          */
	pthread_mutex_t lock;    /* process-shared; serialises the writer      */
	fs_file files[FAULTSIM_MAX_FILES];
	unsigned char arena[] __attribute__((aligned(8)));
};

static inline uint64_t win_half(uint64_t w) { return w >> 63; }
static inline uint64_t win_start(uint64_t w)
{
	return ((w >> 32) & 0x7fffffffu) * 8;
}
static inline uint64_t win_tail(uint64_t w) { return (w & 0xffffffffu) * 8; }
static inline uint64_t win_make(uint64_t half, uint64_t start, uint64_t tail)
{
	return half << 63 | (start / 8) << 32 | (tail / 8);
}

/* FILE's scan_from, SCAN_NONE when the cache forgot them all since it was
 * set (file_scan_forget_all: positions changed). */
static inline uint64_t file_scan(const faultsim_cache *c, const fs_file *f)
{
	return f->scan_gen == c->scan_gen ? f->scan_from : SCAN_NONE;
}
static inline void file_scan_set(const faultsim_cache *c, fs_file *f,
                                 uint64_t pos)
{
	f->scan_from = pos;
	f->scan_gen = c->scan_gen;
}
/* Every file's scan_from becomes SCAN_NONE, in one store (a full pass only
 * when the generation wraps, so an old one never comes back). */
static inline void file_scan_forget_all(faultsim_cache *c)
{
	if (++c->scan_gen == 0)
		for (uint32_t i = 0; i < c->nfiles; i++)
			c->files[i].scan_from = SCAN_NONE;
}

/* The record at byte POS of the half the window names now. */
static inline fs_rec *rec_at(faultsim_cache *c, uint64_t pos)
{
	uint64_t w = __atomic_load_n(&c->window, __ATOMIC_ACQUIRE);
	return (fs_rec *)(void *)(c->arena + win_half(w) * c->capacity + pos);
}
static inline unsigned char *rec_pre(fs_rec *r)
{
	return (unsigned char *)(r + 1);
}
static inline unsigned char *rec_new(fs_rec *r)
{
	return (unsigned char *)(r + 1) + r->pre_len;
}
/* namespace paths: 0 = path_a, 1 = path_b, 2 = stash ("" when none) */
static inline char *rec_path(fs_rec *r, int i)
{
	char *p = (char *)(r + 1);
	for (int k = 0; k < i; k++)
		p += r->plen[k];
	return p;
}
static inline int rec_is_data(const fs_rec *r)
{
	return r->kind <= REC_EXTEND;
}
/* A write through a mapping whose new bytes are not known yet (8). */
static inline int rec_unsealed(const fs_rec *r)
{
	return r->kind == REC_WRITE &&
	       __atomic_load_n(&r->pad, __ATOMIC_ACQUIRE) == REC_F_MAPPED;
}
static inline uint8_t rec_state(const fs_rec *r)
{
	return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
}
static inline void rec_set_state(fs_rec *r, uint8_t st)
{
	__atomic_store_n(&r->state, st, __ATOMIC_RELEASE);
}

/* The model's rules (faultsim.h, "the file system model"). */
static inline int fs_names_on_fsync(uint32_t fs) /* r1 */
{
	return fs != FAULTSIM_FS_POSIX;
}
static inline int fs_ordered_names(uint32_t fs) /* r2 */
{
	return fs == FAULTSIM_FS_EXT4 || fs == FAULTSIM_FS_EXT4_WRITEBACK ||
	       fs == FAULTSIM_FS_XFS;
}
static inline int fs_rename_flushes(uint32_t fs) /* r3 */
{
	return fs == FAULTSIM_FS_EXT4;
}
static inline int fs_ordered_appends(uint32_t fs) /* r4 */
{
	return fs == FAULTSIM_FS_EXT4 || fs == FAULTSIM_FS_XFS ||
	       fs == FAULTSIM_FS_BTRFS;
}

/* ---- shared by cache.c, sync.c, namespace.c and crash.c ---- */
void faultsim_cache_init_lock(faultsim_cache *c);
/* empty the window and the file table; reinitialise the lock */
void faultsim_cache_clear(faultsim_cache *c);
/* the file entry of id FILE, or NULL */
fs_file *faultsim_file_at(faultsim_cache *c, int file);
const char *faultsim_file_path(const fs_file *f);
/* move every live file whose current path is FROM to TO; returns how many */
int faultsim_files_move(faultsim_cache *c, const char *from, const char *to);
/* open FILE read-write where it is now (checked by inode), or -ENOENT */
int faultsim_file_open(faultsim_cache *c, int file);
/* lock held: reserve a record with PAYLOAD bytes at the tail (NULL and the
 * sticky overflow flag when full), fill it, then publish it */
fs_rec *faultsim_rec_reserve(faultsim_cache *c, uint8_t kind,
                             uint64_t payload, uint64_t *pos);
void faultsim_rec_publish(faultsim_cache *c, fs_rec *r, uint64_t pos);
/* lock held: FILE's first record position to scan from for unsynced ones
 * (window start when unknown) */
uint64_t faultsim_file_scan_from(faultsim_cache *c, int file);
/* lock held: drop the durable or void prefix of the window */
void faultsim_rec_reclaim(faultsim_cache *c);

/* After a sync (lock held, no record in flight): reclaims, then compacts
 * when the tail has passed trim_at and at most half of the window is still
 * needed, so the records go on landing on pages already touched.  Moves
 * records: the caller holds no position across it. */
void faultsim_rec_trim(faultsim_cache *c);
/* lock held: hand the record at POS to the caller's _end call */
int faultsim_ticket_hold(faultsim_cache *c, uint64_t pos, faultsim_ticket *t);
/* no writer alive: trims the record a dead writer left in flight to what
 * its file shows the real call did (invariant 6) */
void faultsim_inflight_settle(faultsim_cache *c);
/* no writer alive: seals every unsealed mapped write from its file (8) */
void faultsim_map_settle(faultsim_cache *c);
/* undo one data record on FD (newest first); 0 or a negative errno */
int faultsim_undo_data(int fd, fs_rec *r);
/* whole-buffer pwrite; 0 or a negative errno */
int faultsim_write_exact(int fd, const void *buf, uint64_t len, uint64_t off);

/* explain.c: X's persist list names SEQ (the crash keeps that record);
 * X may be NULL */
int faultsim_persists(const faultsim_explain *x, uint64_t seq);
/* explain.c: add R to X's dropped list (FATE: FAULTSIM_FATE_*) */
void faultsim_note_dropped(faultsim_cache *c, faultsim_explain *x, fs_rec *r,
                           int fate);
_Static_assert((int)REC_WRITE == (int)FAULTSIM_KIND_WRITE &&
               (int)REC_UNLINK == (int)FAULTSIM_KIND_UNLINK, "kinds agree");

#endif /* KEEL_FAULTSIM_CACHE_INTERNAL_H */
