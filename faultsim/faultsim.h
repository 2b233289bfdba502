/*
 * faultsim.h -- keel's fault simulator.  Floor 1: it uses base/io.h and
 * nothing else of the engine.  This header is the manual.
 *
 * WHAT IT IS
 *   Three small parts that a test harness (torture, tests/test_faultsim.c, a
 *   future LD_PRELOAD library for other programs) puts together:
 *
 *   1. faultsim_cache -- a simulated VOLATILE CACHE.  The program under test
 *      does real I/O on real files (so its reads and its read-only
 *      MAP_SHARED mappings see the data, as they would see a page cache), and
 *      the cache records, in memory that outlives a SIGKILL of the writer,
 *      everything a power cut could still undo: every write, truncate and
 *      extension of a file since that file's last sync (with the pre-image of
 *      the bytes it overwrote), and every create, rename and unlink since its
 *      directory's last sync.  After the writer is dead, faultsim_cache_crash
 *      rewrites the files on disk into one post-crash state under a device
 *      model, deterministically under a seed.  The cache knows nothing of
 *      keel_io: it is driven through begin/end calls around each real system
 *      call, so any interposer can drive it.
 *   2. faultsim_faults -- failures on demand ("fdatasync:EIO:nth=3"), parsed
 *      from text, decided deterministically under a seed, counted in shared
 *      memory so the parent can check that a fault really fired.
 *   3. faultsim_io -- a keel_io backend (base/io.h) that performs plain
 *      POSIX calls, records them in a cache, injects the faults (its own
 *      specs and the libfiu points keel/faultsim/<op>), and applies an fsync
 *      failure profile (ext4, xfs, btrfs) when a sync fails.
 *
 * CALLING SEQUENCE (a harness that kills and power-cuts a writer)
 *     faultsim_cache *cache;  faultsim_faults *faults;  faultsim_io *fio;
 *     faultsim_cache_create(0, &cache);          // before fork: MAP_SHARED
 *     faultsim_faults_create(seed, &faults);
 *     faultsim_faults_add(faults, "fdatasync:EIO:nth=3", err, sizeof err);
 *     faultsim_io_options o = { cache, faults, FAULTSIM_PROFILE_EXT4 };
 *     faultsim_io_new(&o, &fio);
 *     pid = fork();
 *     child:  keel_options ko = { .io = faultsim_io_table(fio) };
 *             keel_open(path, &ko, &db); ... writes ...; (gets SIGKILLed)
 *     parent: kill(pid, SIGKILL); waitpid(pid, ...);
 *             faultsim_crash_options co = { FAULTSIM_DEVICE_TORN, 512, seed };
 *             faultsim_cache_crash(cache, &co, &report);   // the power cut
 *             faultsim_faults_reset_counts(faults);        // per-writer nth
 *             ... reopen, verify, next cycle ...
 *
 * WHAT A CRASH LEAVES (the guarantee the simulator itself gives)
 *   - Bytes covered by a successful sync of their file are exactly as
 *     written, in every device model.
 *   - A write, truncate or extension not yet synced persists or not per the
 *     device model (faultsim_device below).  A page written through a shared
 *     mapping counts as one write of that page (clipped at the file's end)
 *     with the bytes it held at the flush point after the stores.  One that was LOST to a failed
 *     sync under the ext4/xfs profile never persists.
 *   - A create, rename or unlink persists only when its directory (both
 *     directories for a rename) was synced after it; otherwise it is undone:
 *     a created file disappears, a renamed file goes back to its old name and
 *     a file it replaced comes back, an unlinked file comes back with its
 *     content.  This holds in every device model.  It is the POSIX file
 *     system model, the default; the other models (faultsim_fs below)
 *     promise more, as ext4, xfs and btrfs do.
 *   - UNLINK IS DEFERRED BY A HARD LINK: before an unlink (or a rename onto an
 *     existing name) the cache hard-links the old file to a stash name
 *     ".faultsim.<seq>.stash" in the same directory, so its content outlives
 *     the unlink.  The stash is removed when the directory is synced (the
 *     unlink is then durable) or renamed back at a crash.  The program sees
 *     these names in a directory listing while they exist.
 *
 * THREADS AND PROCESSES
 *   The cache and fault state live in MAP_SHARED anonymous memory made by
 *   faultsim_cache_create / faultsim_faults_create; create them BEFORE fork.
 *   Recording calls may come from any number of threads of ONE writer
 *   process at a time (a process-shared mutex inside the cache).  The
 *   parent calls faultsim_cache_crash, _forget or _writer_died only while no
 *   writer is alive; they reinitialise that mutex, which a SIGKILLed writer
 *   may have held.
 *
 * LIMITS (what the model does not see)
 *   - Changes made behind its back: a file written, truncated, renamed or
 *     removed other than through the recording calls.  Removing a tracked
 *     file that way and creating another (which may reuse the inode) while
 *     records remain mixes the two; crash or forget first.
 *   - Writes through a writable shared mapping are seen only when the
 *     recorder keeps its pages read-only and calls the map functions (the
 *     shim does; a faultsim_io does not map for writing); they are recorded
 *     a page at a time, with the page's content at the next flush point as
 *     their new bytes.  mkdir/rmdir; hard links made by the program;
 *     O_TRUNC opens (keel_io has none).
 *   - Page granularity after a failed sync (see sync.c: a LOST write stays
 *     lost even if its page is written and synced again).
 *
 * ERRORS
 *   Every int function returns 0 (or a count) on success and a NEGATIVE
 *   ERRNO on failure, like base/io.h.  When the cache's fixed capacity is
 *   full a recording call fails with -ENOBUFS before the real call is made
 *   (so the record stays exact), and faultsim_cache_overflowed() turns
 *   true for good: a harness must report that as a set-up error (raise the
 *   capacity), never as a finding.
 */
#ifndef KEEL_FAULTSIM_H
#define KEEL_FAULTSIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * 1. The volatile cache
 * ====================================================================== */

typedef struct faultsim_cache faultsim_cache;

#define FAULTSIM_CACHE_DEFAULT (64u << 20) /* record bytes when 0 is given  */
#define FAULTSIM_MAX_FILES 4096            /* files with records at once    */
#define FAULTSIM_PATH_MAX 1024             /* longest absolute path tracked */

/*
 * faultsim_cache_create - map a shared cache able to hold CAPACITY bytes of
 * records (0 = FAULTSIM_CACHE_DEFAULT; 4 KiB up to 16 GiB).  Twice that is
 * mapped: when one half fills up, the records a crash still needs are
 * copied to the other (pages are only touched when used).  A write record
 * costs 80 bytes plus twice the bytes written (pre-image and new bytes);
 * a record is needed until its file is synced (and every earlier record of
 * that file is durable), a namespace record until its directory is.
 * Returns 0 and *OUT, or -EINVAL, -ENOMEM.
 */
int faultsim_cache_create(size_t capacity, faultsim_cache **out);
/* Unmaps the cache.  NULL is a no-op. */
void faultsim_cache_destroy(faultsim_cache *c);

/*
 * faultsim_cache_create_fd - as faultsim_cache_create, but in a memfd, so
 * that a program the harness EXECS (not only forks) can map the same cache:
 * *FD (close-on-exec) is the memfd; another process opens
 * /proc/<pid>/fd/<fd> and calls faultsim_cache_attach on it (the LD_PRELOAD
 * shim, shim/shim.h).  The creator destroys it with faultsim_cache_destroy
 * and closes *FD.  Returns 0, or -EINVAL, -ENOMEM, or memfd's errno.
 */
int faultsim_cache_create_fd(size_t capacity, int *fd, faultsim_cache **out);
/* faultsim_cache_attach - map the cache in memfd FD made by
 * faultsim_cache_create_fd (the caller may close FD afterwards).  0, or
 * -EINVAL when FD holds no cache, or mmap's errno. */
int faultsim_cache_attach(int fd, faultsim_cache **out);
/* Unmaps an attached cache (the lock and records stay). NULL: no-op. */
void faultsim_cache_detach(faultsim_cache *c);

/* True once a recording call failed for lack of room (sticky until
 * faultsim_cache_crash or faultsim_cache_forget). */
int faultsim_cache_overflowed(const faultsim_cache *c);
/* Forgets an overflow once its caller made room and recorded the call after
 * all (nothing was dropped): the LD_PRELOAD shim in a run without power
 * cuts, which may settle every record as durable. */
void faultsim_cache_clear_overflow(faultsim_cache *c);

/* Bytes of records held now, and the most ever held (for sizing). */
size_t faultsim_cache_used(const faultsim_cache *c);
size_t faultsim_cache_peak(const faultsim_cache *c);
/* File entries in use (ids 0 to this minus one): a pass over every
 * tracked file needs to go no further. */
uint32_t faultsim_cache_nfiles(const faultsim_cache *c);

/*
 * faultsim_cache_abspath - the absolute form of PATH that the cache keys
 * files and directories by: the directory part resolved with realpath(3),
 * then "/" and the last component.  The directory must exist.  Returns 0, or
 * -EISDIR (PATH ends in '/'), -ENAMETOOLONG, or the errno of realpath.
 */
int faultsim_cache_abspath(const char *path, char *out, size_t outlen);

/*
 * faultsim_cache_abspath_memo - faultsim_cache_abspath for an absolute
 * PATH, with the directory part's realpath remembered in this process
 * (realpath reads every component's link: ~5 system calls for a
 * directory 4 deep, on every open, unlink and directory sync).  A memo
 * holds while C's name generation is the one it was made under: whoever
 * renames or removes a name below the watched directory calls
 * faultsim_cache_names_changed first.  Never blocks: a memo busy in
 * another thread (or in a signal handler's interrupted call) is passed
 * by.  faultsim_cache_realdir_memo resolves a whole directory path so.
 */
int faultsim_cache_abspath_memo(faultsim_cache *c, const char *path,
                                char *out, size_t outlen);
int faultsim_cache_realdir_memo(faultsim_cache *c, const char *dir,
                                char *real);
void faultsim_cache_names_changed(faultsim_cache *c);

/*
 * faultsim_cache_track - the writer opened ABSPATH as FD (writable): find or
 * add its file (keyed by device and inode).  Returns the file id (>= 0) to
 * pass to the data calls below, or -ENOBUFS (FAULTSIM_MAX_FILES files all
 * have records in the window: changes a crash could still undo), or
 * -ENAMETOOLONG, or the errno of fstat.
 *
 * The table holds FAULTSIM_MAX_FILES files AT ONCE, not over a run: when it
 * is full, an entry no record in the window names (its file was synced, or
 * never changed, or durably unlinked) is reused for the new file.  An id
 * kept across calls is valid while faultsim_cache_file_gen(c, id) returns
 * the value it returned when the id was handed out; otherwise track the
 * file again (the shim does this for every descriptor it follows).
 */
int faultsim_cache_track(faultsim_cache *c, int fd, const char *abspath);
/* The same, and *ST gets what the fstat it made read (its st_mode stays as
 * the caller set it when the fstat failed): the caller learns the file's
 * kind and identity without a second fstat.  A descriptor on anything but
 * a regular file is not tracked: -EINVAL. */
struct stat;
int faultsim_cache_track_stat(faultsim_cache *c, int fd, const char *abspath,
                              struct stat *st);
/* The generation of file entry FILE (see faultsim_cache_track); 0 when FILE
 * is out of range. */
uint32_t faultsim_cache_file_gen(const faultsim_cache *c, int file);

/*
 * Data calls.  Each _begin records the change BEFORE the real call is made
 * (capturing the pre-image with pread on FD) and holds the cache's lock; the
 * caller then makes the real call and passes its result (a byte count or a
 * negative errno) to _end, which trims or voids the record and unlocks.  A
 * writer killed between the two may have made all, part or none of the
 * call (a SIGKILL stops a pwrite between pages): faultsim_cache_crash and
 * faultsim_cache_writer_died first trim the record to what the file shows,
 * so neither a power cut nor the next writer's device view holds bytes the
 * call never wrote.  On a _begin failure (negative return) the lock is not
 * held, nothing was recorded, and the real call must not be made.
 */
typedef struct faultsim_ticket {
	faultsim_cache *cache; /* NULL when nothing is held                 */
	uint64_t rec;          /* byte position of the record in the cache  */
	uint64_t seq;          /* the record's seq (kept after the _end call;
	                          0: none), what a crash's dropped list names */
	uint64_t size;         /* a write's file size when it began, read
	                          under the lock: with the call's result it
	                          gives the size after, without an fstat   */
} faultsim_ticket;

int faultsim_cache_write_begin(faultsim_cache *c, int file, int fd,
                               const void *buf, size_t len, uint64_t off,
                               faultsim_ticket *t);
void faultsim_cache_write_end(faultsim_ticket *t, ssize_t result);
/*
 * faultsim_cache_write_begin_at - as _write_begin for write(2) and
 * O_APPEND writes, whose offset is only known under the cache's lock:
 * WHENCE SEEK_SET uses *OFF, SEEK_CUR the descriptor's position
 * (lseek), SEEK_END the file's size.  *OFF gets the offset recorded.
 */
int faultsim_cache_write_begin_at(faultsim_cache *c, int file, int fd,
                                  const void *buf, size_t len, int whence,
                                  uint64_t *off, faultsim_ticket *t);
/* Ends a write made on an O_SYNC/O_DSYNC descriptor: when it succeeded,
 * this record (and no other) is durable at once. */
void faultsim_cache_write_end_durable(faultsim_ticket *t, ssize_t result);
/* ftruncate(FD, LEN) */
int faultsim_cache_truncate_begin(faultsim_cache *c, int file, int fd,
                                  uint64_t len, faultsim_ticket *t);
/* fallocate(FD, 0, OFF, LEN): the size grows to cover [OFF, OFF+LEN) */
int faultsim_cache_extend_begin(faultsim_cache *c, int file, int fd,
                                uint64_t off, uint64_t len,
                                faultsim_ticket *t);
/* ends a truncate or extend: RESULT is 0 or a negative errno */
void faultsim_cache_change_end(faultsim_ticket *t, int result);

/*
 * Writes through a shared mapping (MAP_SHARED, PROT_WRITE).  Stores make no
 * system call, so the recorder keeps each page of such a mapping read-only
 * until the program stores into it, and records the page at that fault,
 * before it lets the store through:
 *
 *     faultsim_cache_map_lock(c, &t);            // the cache's lock
 *     if (page not yet writable) {
 *         faultsim_cache_map_record(&t, file, fd, page_off, page_len,
 *                                   owner, tag);
 *         make the page writable;                // the store is retried
 *     }
 *     faultsim_cache_map_unlock(&t);
 *
 * The record's pre-image is the page's bytes at the fault; its new bytes
 * are not known yet (the record is UNSEALED).  Before every flush point of
 * the file -- fsync/fdatasync/msync, munmap, a recorded write or truncate
 * -- the recorder SEALS its records of the file, in one locked section:
 *
 *     faultsim_cache_map_lock(c, &t);
 *     faultsim_cache_map_seal(&t, file, fd, owner, stop, arg);
 *     faultsim_cache_map_unlock(&t);
 *
 * which, for each unsealed record of FILE made by OWNER (0: by anyone),
 * calls STOP(ARG, off, len, tag) -- the recorder makes that page read-only
 * again, so the next store faults and makes a new record -- then fills the
 * new bytes from FD (any readable descriptor on the file).  A sync then
 * makes exactly the sealed bytes durable.  A record still unsealed at a
 * sync (a store that raced with it) stays unsynced.  The parent seals what
 * a dead writer left unsealed from the file as it stands, first thing in
 * faultsim_cache_crash and faultsim_cache_writer_died (so also in
 * _write_back and _evict_lost).  The record covers the page clipped at the
 * file's end (a store past the end never reaches the file), so it persists,
 * is lost or is torn at a crash as one pwrite of that page would be.
 *
 * OWNER is the recording process's id (a forked child seals only its own
 * records); TAG is the recorder's own, handed back to STOP (the shim: its
 * mapping table slot).  _map_record returns 1 (recorded), 0 (the page lies
 * wholly past the end: nothing to record), -ENOBUFS (the cache is full;
 * sticky, as for every recording call), -EBADF or another negative errno.
 * _map_seal returns how many records it sealed, or a negative errno.
 * _map_lock returns 0.  Every call but _map_lock needs the lock held.
 */
typedef void (*faultsim_map_stop)(void *arg, uint64_t off, uint64_t len,
                                  uint32_t tag);
int faultsim_cache_map_lock(faultsim_cache *c, faultsim_ticket *t);
void faultsim_cache_map_unlock(faultsim_ticket *t);
int faultsim_cache_map_record(faultsim_ticket *t, int file, int fd,
                              uint64_t off, uint64_t len, uint32_t owner,
                              uint32_t tag);
int faultsim_cache_map_seal(faultsim_ticket *t, int file, int fd,
                            uint32_t owner, faultsim_map_stop stop, void *arg);

/* What the cache does with a file's unsynced records when its sync fails. */
typedef enum faultsim_profile {
	FAULTSIM_PROFILE_EXT4 = 0, /* pages marked clean: records become LOST
	                              (reads still see them, no crash keeps
	                              them); the error is reported once to
	                              each descriptor open on the file, as
	                              errseq does (io_backend.c)               */
	FAULTSIM_PROFILE_XFS = 1,  /* as ext4                                   */
	FAULTSIM_PROFILE_BTRFS = 2,/* reverted: the file's unsynced bytes go
	                              back to their pre-image at once           */
	FAULTSIM_PROFILE_KEEP = 3, /* idealised: records stay dirty, a later
	                              successful sync makes them durable        */
} faultsim_profile;

/*
 * Syncs.  faultsim_cache_sync_begin returns a mark; call the real fsync or
 * fdatasync WITHOUT holding anything, then faultsim_cache_sync_end with its
 * result.  On success every record of FILE made before the mark is durable,
 * and under the cache's file system model namespace records with them
 * (faultsim_fs: r1 the file's name, r2 every earlier one); on failure
 * PROFILE decides what happens to them.  Records made while the sync ran
 * are left unsynced (the real sync may or may not cover them).
 * faultsim_cache_sync_end returns 1 when it wrote FILE itself (the btrfs
 * profile puts a failed sync's bytes back at once): a change of the file
 * the caller's record of its changes must count as explained, else 0.
 */
uint64_t faultsim_cache_sync_begin(faultsim_cache *c);
int faultsim_cache_sync_end(faultsim_cache *c, int file, uint64_t mark,
                            int result, faultsim_profile profile);

/* 1 when NAME (a path or a bare name) is a stash the cache made
 * (".faultsim.<seq>.stash", above): the simulator's own, never the
 * program's. */
int faultsim_is_stash(const char *name);

/*
 * Namespace calls, on absolute paths (faultsim_cache_abspath).  As the data
 * calls: _begin records (and for unlink, or a rename onto an existing name,
 * makes the stash link), the caller makes the real call, _end gets its
 * result (0 or a negative errno).
 */
int faultsim_cache_create_begin(faultsim_cache *c, const char *abspath,
                                faultsim_ticket *t);
int faultsim_cache_rename_begin(faultsim_cache *c, const char *absfrom,
                                const char *absto, faultsim_ticket *t);
int faultsim_cache_unlink_begin(faultsim_cache *c, const char *abspath,
                                faultsim_ticket *t);
/* The same for a name whose inode number the caller has just read with
 * lstat: one lstat an unlink fewer. */
int faultsim_cache_unlink_begin_ino(faultsim_cache *c, const char *abspath,
                                    uint64_t ino, faultsim_ticket *t);
void faultsim_cache_namespace_end(faultsim_ticket *t, int result);

/* fsync of directory ABSDIR: as the file syncs.  On success every create,
 * rename and unlink in ABSDIR made before the mark is durable (a rename
 * needs both of its directories; under an r2 model every earlier one, in
 * any directory) and its stash file is removed. */
uint64_t faultsim_cache_dir_sync_begin(faultsim_cache *c);
void faultsim_cache_dir_sync_end(faultsim_cache *c, const char *absdir,
                                 uint64_t mark, int result);

/* ---- the file system model ----------------------------------------------- */

/*
 * What the file system promises beyond the device: which namespace
 * operations a crash may keep, and how unsynced data behaves next to them.
 * The rules (docs/faults.md has each one's source):
 *   r1  an fsync/fdatasync of a file also makes its name durable: its
 *       create, the renames that brought it to its name, and every earlier
 *       namespace operation on a name those depend on.
 *   r2  metadata is committed in issue order (one journal or log): a file
 *       sync that has metadata of its file to commit (its name, or a size
 *       change) and a directory sync commit EVERY earlier create, rename
 *       and unlink; at a crash the unsynced ones that persist are a prefix,
 *       in issue order, drawn from the seed.
 *   r3  replace-via-rename (ext4 auto_da_alloc in data=ordered): a rename
 *       over an existing file that persists brings the renamed file's
 *       data written before it along, whole.
 *   r4  no stale bytes past the end (ext4 data=ordered, xfs's on-disk
 *       size, btrfs's ordered extents): an unsynced append that is lost or
 *       torn never leaves the size grown over bytes it did not write; the
 *       appended bytes that persist are a prefix of what was appended.
 *   POSIX           none of them (the default; today's strict model)
 *   EXT4            r1 r2 r3 r4; failed sync: FAULTSIM_PROFILE_EXT4
 *   EXT4_WRITEBACK  r1 r2; a lost or torn append may leave the size grown
 *                   over zeros (1 in 2); failed sync: EXT4
 *   XFS             r1 r2 r4; failed sync: FAULTSIM_PROFILE_XFS
 *   BTRFS           r1 r4 (no global order); failed sync: BTRFS
 * The model lives in the cache, so an LD_PRELOAD shim attached to it
 * follows it too.  Set it before the first writer, with no writer alive.
 */
typedef enum faultsim_fs {
	FAULTSIM_FS_POSIX = 0,
	FAULTSIM_FS_EXT4 = 1,
	FAULTSIM_FS_EXT4_WRITEBACK = 2,
	FAULTSIM_FS_XFS = 3,
	FAULTSIM_FS_BTRFS = 4,
} faultsim_fs;

/* Sets / reads the cache's model (a new cache is POSIX); an unknown FS
 * is refused with -EINVAL. */
int faultsim_cache_set_fs(faultsim_cache *c, faultsim_fs fs);
faultsim_fs faultsim_cache_fs(const faultsim_cache *c);
/* "posix", "ext4", "ext4-writeback", "xfs", "btrfs": 0, or -EINVAL for
 * another name (FAULTSIM_FS_NAMES lists the valid ones for a message). */
int faultsim_fs_parse(const char *name, faultsim_fs *out);
const char *faultsim_fs_name(faultsim_fs fs);
#define FAULTSIM_FS_NAMES "posix, ext4, ext4-writeback, xfs, btrfs"
/* What a failed sync does on FS: ext4 -> EXT4, xfs -> XFS, btrfs -> BTRFS
 * (posix: EXT4, the harshest that Linux does). */
faultsim_profile faultsim_fs_profile(faultsim_fs fs);

/* ---- the crash ---------------------------------------------------------- */

/*
 * Device models: what becomes of each write that was not synced.
 *   ORDERED  the device writes back in issue order: a random prefix of the
 *            unsynced writes (over all files) persists, the suffix is lost.
 *   REORDER  any subset persists: each write independently, 1 in 2.
 *   TORN     each write independently is lost, persists whole, or is torn:
 *            each of its SECTOR-aligned pieces persists or not, 1 in 2.
 *   GARBAGE  as TORN; in addition, 1 in 2 unsynced writes gets one sector
 *            of its range filled with random bytes (only the bytes the write
 *            covered: data synced before is never damaged).
 *   PAYLOAD  damage that keeps headers: a write of three sectors or more
 *            persists except ONE interior sector (never its first or last,
 *            where a region's first record header and a commit's head
 *            sit), which is lost (keeps its old bytes) or, 1 in 2, filled
 *            with random bytes; a shorter write persists whole or not at
 *            all (1 in 2).  What a device does with a multi-sector write
 *            whose sectors land out of order: headers there, payload not.
 * Truncates and extensions persist or not (1 in 2; in ORDERED by the prefix)
 * and are never torn.  Namespace operations follow the directory rule above
 * in every model.
 */
typedef enum faultsim_device {
	FAULTSIM_DEVICE_ORDERED = 0,
	FAULTSIM_DEVICE_REORDER = 1,
	FAULTSIM_DEVICE_TORN = 2,
	FAULTSIM_DEVICE_GARBAGE = 3,
	FAULTSIM_DEVICE_PAYLOAD = 4,
} faultsim_device;

/* One record a crash dropped (faultsim_cache_crash_explain). */
typedef enum faultsim_fate {
	FAULTSIM_FATE_LOST = 1,    /* an unsynced data record that did not persist */
	FAULTSIM_FATE_TORN = 2,    /* persisted in part (torn, or a payload hole)  */
	FAULTSIM_FATE_GARBAGE = 3, /* persisted, one sector filled with garbage    */
	FAULTSIM_FATE_UNDONE = 4,  /* a create, rename or unlink undone            */
} faultsim_fate;

typedef enum faultsim_kind {
	FAULTSIM_KIND_WRITE = 1, FAULTSIM_KIND_TRUNCATE, FAULTSIM_KIND_EXTEND,
	FAULTSIM_KIND_CREATE, FAULTSIM_KIND_RENAME, FAULTSIM_KIND_UNLINK,
} faultsim_kind;

typedef struct faultsim_dropped {
	uint64_t seq;      /* the record's seq (faultsim_ticket.seq)            */
	faultsim_kind kind;
	faultsim_fate fate;
	uint64_t off, len; /* write: range; truncate/extend: off = new size     */
	char path[FAULTSIM_PATH_MAX];   /* the file (data: its current name), or
	                                   the namespace record's path_a      */
	char path_b[FAULTSIM_PATH_MAX]; /* rename: the target ("" otherwise)   */
} faultsim_dropped;

typedef struct faultsim_crash_options {
	faultsim_device device;
	unsigned sector;  /* 512 or 4096; 0 = 512                               */
	uint64_t seed;    /* the same seed and records give the same files      */
} faultsim_crash_options;

typedef struct faultsim_crash_report {
	uint64_t durable;      /* synced records replayed as written             */
	uint64_t kept;         /* unsynced records that persisted whole          */
	uint64_t lost;         /* unsynced records that did not persist at all   */
	uint64_t torn;         /* unsynced writes that persisted in part         */
	uint64_t garbage;      /* sectors filled with random bytes               */
	uint64_t garbled;      /* unsynced writes otherwise whole or lost that
	                        * got one of them (not in kept, lost or torn)   */
	uint64_t lost_failed;  /* records LOST to a failed sync, dropped         */
	uint64_t ns_undone;    /* creates/renames/unlinks undone                 */
	uint64_t ns_durable;   /* those kept because a sync made them durable    */
	uint64_t ns_kept;      /* unsynced ones kept anyway (the model's prefix) */
	uint64_t files;        /* files rewritten                                */
	uint64_t errors;       /* steps that could not be carried out            */
	int overflowed;        /* the cache filled up during the run (see above) */
	char first_error[160]; /* the first such step, in words ("" if none)     */
} faultsim_crash_report;

/*
 * faultsim_cache_crash - the power cut.  Call in the parent after the
 * writer is dead.  Rewrites every tracked file (at its current name, found
 * by inode) into its post-crash content, then undoes the namespace
 * operations that were not durable, newest first.  Afterwards the cache is
 * empty and ready for the next writer.  OPT may be NULL (ORDERED, 512, 0);
 * REPORT may be NULL.  Returns 0 when every step was carried out, -EINVAL
 * (bad options; nothing touched), or -EIO when some step failed (details in
 * the report; the remaining steps were still carried out).
 */
int faultsim_cache_crash(faultsim_cache *c, const faultsim_crash_options *opt,
                         faultsim_crash_report *report);

/*
 * faultsim_cache_crash_explain - faultsim_cache_crash, told which records
 * to keep and asked what it dropped (torture's explanation of a
 * violation).  X->PERSIST names records by seq that persist WHOLE whatever
 * the seed decides: an unsynced data record is kept (no tear, no garbage),
 * a namespace record is not undone.  Every other decision is the one the
 * seed alone makes (the random draws are the same), so seed plus PERSIST
 * reproduce a state.  X->DROPPED (DROPPED_CAP entries) gets what the crash
 * dropped: data records in record order, then namespace records newest
 * first; X->NDROPPED how many there were (more than DROPPED_CAP: the list
 * is cut).  A record a failed sync LOST is not listed: no crash keeps it.
 * X may be NULL.  Returns as faultsim_cache_crash.
 */
typedef struct faultsim_explain {
	const uint64_t *persist;  /* seqs kept whole                           */
	size_t npersist;
	faultsim_dropped *dropped;/* out: what was dropped (may be NULL)       */
	size_t dropped_cap;
	uint64_t ndropped;        /* out: records dropped                      */
} faultsim_explain;
int faultsim_cache_crash_explain(faultsim_cache *c,
                                 const faultsim_crash_options *opt,
                                 faultsim_explain *x,
                                 faultsim_crash_report *report);

/*
 * Snapshots, to replay one crash many times (torture's explanation of a
 * violation).  faultsim_cache_snapshot copies what a crash reads -- the
 * header, the file table, the records in the window -- and
 * faultsim_cache_restore puts it back, so that a second
 * faultsim_cache_crash (on files restored to the same bytes by the
 * caller) sees the same records.  Call both only while no writer is
 * alive.  The stash files a namespace record names are the caller's to
 * keep (a copy of the directory holds them).  0, or -ENOMEM; restore gives
 * -EINVAL when the snapshot is of another cache.
 */
typedef struct faultsim_snapshot faultsim_snapshot;
int faultsim_cache_snapshot(faultsim_cache *c, faultsim_snapshot **out);
int faultsim_cache_restore(faultsim_cache *c, const faultsim_snapshot *s);
void faultsim_snapshot_free(faultsim_snapshot *s);
/* Bytes the snapshot holds (what it costs). */
size_t faultsim_snapshot_size(const faultsim_snapshot *s);
/* faultsim_cache_remap - the caller put the files back as new inodes (a
 * restored copy of the directory): every file entry and namespace record
 * naming inode OLD_INO[i] names NEW_INO[i] instead (N pairs). */
void faultsim_cache_remap(faultsim_cache *c, const uint64_t *old_ino,
                          const uint64_t *new_ino, size_t n);

/* faultsim_cache_forget - treat everything recorded as durable (as after a
 * clean shutdown and sync(1)) and empty the cache; removes stash files. */
void faultsim_cache_forget(faultsim_cache *c);

/* faultsim_cache_writer_died - the writer was killed but the machine did not
 * lose power: keep every record (the page cache survives, so a later crash
 * can still undo them), trim a call it was killed inside to what that call
 * did, and make the cache usable by the next writer. */
void faultsim_cache_writer_died(faultsim_cache *c);

/* faultsim_cache_device_view - BUF holds tracked file FILE's bytes
 * [off, off+len) as the page cache has them; overlays them with what the
 * device holds: a byte whose newest write a failed sync LOST reads as that
 * write's pre-image (an older LOST write's, if its pre-image was lost too).
 * The backend's pread_device.  0 or -ENOMEM. */
int faultsim_cache_device_view(faultsim_cache *c, int file, unsigned char *buf,
                               size_t len, uint64_t off);

/*
 * faultsim_cache_evict_lost - the writer was killed, the machine kept
 * running, and the kernel evicted the pages a failed sync had marked clean
 * (ext4/xfs): every LOST record is undone on disk now, so the next reader
 * sees what the disk holds; every other record stays as the page cache has
 * it and stays undoable.  Includes faultsim_cache_writer_died.  Without
 * this, a process-kill-only run never notices data lost to a failed sync.
 */
void faultsim_cache_evict_lost(faultsim_cache *c);

/*
 * faultsim_cache_write_back - the writer is dead and the machine lives on:
 * the kernel writes its dirty pages back.  Every unsynced data record
 * becomes durable (no crash can undo it any more); a record LOST to a
 * failed sync stays LOST (still readable, never on the device); namespace
 * records are left as they are.  What a reader that goes through the
 * device (O_DIRECT writes the dirty pages back first) leaves behind.  Call
 * only while no writer is alive; includes faultsim_cache_writer_died.
 */
void faultsim_cache_write_back(faultsim_cache *c);

/* The id of the tracked file FD refers to (same device and inode), or
 * -ENOENT when the cache does not track it; adds nothing. */
int faultsim_cache_file_of(faultsim_cache *c, int fd);

/* How many data records of FILE (-1: of any file) a failed sync LOST and
 * the cache still holds: when 0, the page cache and the device agree on
 * everything but unsynced writes. */
uint64_t faultsim_cache_lost_records(faultsim_cache *c, int file);

/*
 * faultsim_cache_device_copy - writes into DST (an empty, writable file)
 * the bytes of tracked file FILE, open as SRC, as the device holds them
 * (faultsim_cache_device_view over the whole file).  Call only while no
 * writer is alive.  0, or a negative errno.
 */
int faultsim_cache_device_copy(faultsim_cache *c, int file, int src, int dst);

int faultsim_device_parse(const char *name, faultsim_device *out);
int faultsim_profile_parse(const char *name, faultsim_profile *out);
const char *faultsim_device_name(faultsim_device d);
const char *faultsim_profile_name(faultsim_profile p);

/* ======================================================================
 * 2. Faults on demand
 * ====================================================================== */

/* The operations a fault can target (also the libfiu point suffixes). */
typedef enum faultsim_op {
	FAULTSIM_OP_OPEN = 0,
	FAULTSIM_OP_PREAD,
	FAULTSIM_OP_PWRITE,
	FAULTSIM_OP_FDATASYNC,
	FAULTSIM_OP_FSYNC,
	FAULTSIM_OP_FTRUNCATE,
	FAULTSIM_OP_FALLOCATE,
	FAULTSIM_OP_FSTAT,
	FAULTSIM_OP_RENAME,
	FAULTSIM_OP_UNLINK,
	FAULTSIM_OP_FSYNC_DIR,
	FAULTSIM_OP_MMAP,
	FAULTSIM_OP_LOCK,
	FAULTSIM_OP_COUNT
} faultsim_op;

#define FAULTSIM_MAX_SPECS 16
#define FAULTSIM_SHORT 1000000 /* "errno" meaning: a short transfer (half) */
#define FAULTSIM_CRASH 1000001 /* "errno" meaning: the call is made, then the
                                  process SIGKILLs itself                */

typedef struct faultsim_faults faultsim_faults;

/* faultsim_faults_create - shared fault state with no specs; SEED makes
 * every probabilistic decision reproducible.  Returns 0, -ENOMEM. */
int faultsim_faults_create(uint64_t seed, faultsim_faults **out);
void faultsim_faults_destroy(faultsim_faults *f);
/* As faultsim_faults_create, in a memfd (*FD, close-on-exec) that an
 * exec'd program maps with faultsim_faults_attach (see
 * faultsim_cache_create_fd).  0, -EINVAL, -ENOMEM. */
int faultsim_faults_create_fd(uint64_t seed, int *fd, faultsim_faults **out);
int faultsim_faults_attach(int fd, faultsim_faults **out);
/* A new seed for the p= decisions (the next writer's). */
void faultsim_faults_reseed(faultsim_faults *f, uint64_t seed);

/*
 * faultsim_faults_add - parse and add one spec:
 *     OP:ERROR[:TRIGGER]
 *   OP       open pread pwrite fdatasync fsync ftruncate fallocate fstat
 *            rename unlink fsync_dir mmap lock   ("sync" = fdatasync+fsync)
 *   ERROR    EIO ENOSPC EDQUOT EROFS EFBIG ENOMEM EACCES EAGAIN, or "short"
 *            (pread/pwrite only: half the bytes are transferred), or
 *            "crash" (state-changing calls only -- open pwrite fdatasync
 *            fsync ftruncate fallocate rename unlink fsync_dir: the call is
 *            made, then the process SIGKILLs itself, a crash exactly
 *            between two steps, e.g. rename:crash:p=0.5 lands between a
 *            rename and the directory sync that would make it durable;
 *            through a faultsim_io only, not the shim)
 *   TRIGGER  p=PROB    each call fails with probability PROB (0 < PROB <= 1)
 *            nth=N     exactly the Nth call fails (N >= 1), once
 *            from=N    the Nth call and every later one fail
 *            (default: p=0.1)
 * Each spec counts the calls of its OP (nth=N is its Nth call) from
 * faultsim_faults_create or the last faultsim_faults_reset_counts.  On a malformed spec returns -EINVAL and
 * writes a one-line reason ("unknown operation 'fdatsync'") to ERR (ERRLEN
 * bytes; ERR may be NULL); -ENOSPC when FAULTSIM_MAX_SPECS are set.
 * Must be called before the writer is forked.
 */
int faultsim_faults_add(faultsim_faults *f, const char *spec, char *err,
                        size_t errlen);

/*
 * faultsim_faults_check - count one call of OP and decide.  Returns 0 (no
 * fault) or the fault: a negative errno, or FAULTSIM_SHORT.
 */
int faultsim_faults_check(faultsim_faults *f, faultsim_op op);

/* Calls of OP counted, and times spec number INDEX (in order of _add) fired. */
uint64_t faultsim_faults_calls(const faultsim_faults *f, faultsim_op op);
uint64_t faultsim_faults_fired(const faultsim_faults *f, int index);
/* Zero the call counts (per-writer nth) and fired counts; specs stay. */
void faultsim_faults_reset_counts(faultsim_faults *f);

/*
 * Crash points for enumeration.  Every state-changing call through a
 * faultsim_io (open, pwrite, fdatasync, fsync, ftruncate, fallocate,
 * rename, unlink, fsync_dir) is counted by faultsim_faults_step; with
 * faultsim_faults_kill_after(f, N), N >= 1, the writer SIGKILLs itself
 * just before its (N+1)th such call, i.e. right after the Nth.  N = 0 turns
 * it off.  faultsim_faults_steps says how many were counted (run once
 * without a kill to learn a workload's length).  reset_counts zeroes it.
 */
void faultsim_faults_kill_after(faultsim_faults *f, uint64_t n);
uint64_t faultsim_faults_steps(const faultsim_faults *f);
/*
 * A program that crashes at a failed sync, as PostgreSQL does since 2018
 * ("fsyncgate"): with faultsim_faults_crash_on_failed_sync(f, 1) the
 * process SIGKILLs itself right after a file sync (fdatasync, fsync)
 * through a faultsim_io fails, once the simulator has recorded what the
 * failure did to the cache under the profile -- before the program can do
 * anything about it.  Its restart then meets the page cache as Linux
 * leaves it: under ext4 and xfs the pages the failure lost are clean and
 * still read back, though they never reached the device.
 */
void faultsim_faults_crash_on_failed_sync(faultsim_faults *f, int on);
int faultsim_faults_crashes_on_failed_sync(const faultsim_faults *f);
void faultsim_faults_step(faultsim_faults *f);
/* The same count, for a recorder outside the writer (the supervisor):
 * returns 1 where faultsim_faults_step would SIGKILL its caller, and
 * leaves the kill of the writer to the recorder. */
int faultsim_faults_step_due(faultsim_faults *f);

const char *faultsim_op_name(faultsim_op op);

/* ======================================================================
 * 3. The keel_io backend
 * ====================================================================== */

typedef struct faultsim_io faultsim_io;

typedef struct faultsim_io_options {
	faultsim_cache *cache;     /* required                                 */
	faultsim_faults *faults;   /* may be NULL: no spec faults, no kill     */
	faultsim_profile profile;  /* what a failed sync does (0 = ext4)       */
} faultsim_io_options;

/*
 * faultsim_io_new - a backend over OPT's cache and faults.  Create it
 * before fork with the cache.  Its calls are plain POSIX calls (flags as
 * base/io.h), recorded in the cache; before each one the libfiu point
 * keel/faultsim/<op> and then the specs are checked, and a fault makes the
 * call fail without touching the file (a libfiu failinfo is the errno to
 * report, 0 = EIO; -1 on pread/pwrite = a short transfer of half).  A
 * failed fdatasync/fsync, injected or real, goes through the profile.
 * Returns 0 and *OUT, -EINVAL, -ENOMEM.
 */
int faultsim_io_new(const faultsim_io_options *opt, faultsim_io **out);
void faultsim_io_free(faultsim_io *fio);
/* The table to put in keel_options.io; valid until faultsim_io_free. */
const keel_io *faultsim_io_table(faultsim_io *fio);

#ifdef __cplusplus
}
#endif
#endif /* KEEL_FAULTSIM_H */
