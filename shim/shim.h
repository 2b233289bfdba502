/*
 * shim.h -- keel's LD_PRELOAD shim: the fault simulator (faultsim/faultsim.h)
 * in front of ANY dynamically linked program.  Floor 2: it uses faultsim and
 * nothing of the engine.  This header is the manual for the two sides:
 * libkeel-shim.so (shim.c), loaded into the program under test, and the
 * harness (torture --target exec, shim_ctl.c) that sets it up, kills the
 * program, cuts the power and reads what the shim saw.
 *
 * WHAT THE SHIM DOES
 *   Files below the watched directory (KEEL_SHIM_DIR) are tracked in the
 *   harness's faultsim cache exactly as keel's own I/O is: every write,
 *   truncate, allocation and namespace change is recorded BEFORE the real
 *   call; fsync/fdatasync make a file's records durable, an fsync of a
 *   directory makes its namespace changes durable, O_SYNC/O_DSYNC writes are
 *   durable one by one, sync()/syncfs() make everything durable.  Stores
 *   through a writable MAP_SHARED mapping of a tracked file are recorded a
 *   page at a time: the mapping is kept read-only, a SIGSEGV handler
 *   records a page at its first store and makes it writable, and before
 *   the file's next flush point (a sync, msync(MS_SYNC), munmap, a
 *   recorded write) the page is made read-only again and its record takes
 *   the file's bytes (faultsim.h, "Writes through a shared mapping").  Every other
 *   file, and every call on one, passes straight through.  The calls wrapped
 *   are listed in docs/targets.md ("What the shim sees").
 *
 * WHAT IT REFUSES (one line naming the call and the file on stderr and in
 *   the control block, then _exit(2): a set-up error, never a verdict)
 *   mremap of a writable MAP_SHARED mapping of a tracked file, munmap of
 *   its middle or mprotect of a part of it, MAP_SYNC the kernel grants (on
 *   DAX: elsewhere its EOPNOTSUPP is passed on), more than 1024 such
 *   mappings; O_DIRECT or O_TMPFILE on one; a rename across the watched directory's edge; RENAME_EXCHANGE;
 *   fallocate modes that move data (collapse, insert); io_uring_setup
 *   through syscall(2); exec of a statically linked program, or of anything
 *   with the shim removed from its environment; the cache filling up.
 *
 * WHAT IT CANNOT SEE, AND HOW THAT IS CAUGHT
 *   A write that does not go through an exported libc function (a raw
 *   syscall, a libc-internal call, io_uring) is not recorded -- unless the
 *   system-call backstop is on (KEEL_SHIM_BACKSTOP=1, shim_backstop.c),
 *   which sends such calls through the wrappers too.  Either way the shim
 *   keeps, per tracked file, the size the record implies and a sample of the
 *   newest write's bytes; before each crash the harness compares them with
 *   the file (shim_check_files) and reports any difference as a set-up error.
 *
 * SET-UP (environment of the program; the harness fills it)
 *   KEEL_SHIM_DIR      the watched directory (absolute, resolved)
 *   KEEL_SHIM_CTL      a path to open for the control block (shim_shared):
 *                      /proc/<harness pid>/fd/<memfd>
 *   KEEL_SHIM_CACHE    the same for the faultsim cache
 *   KEEL_SHIM_FAULTS   the same for the fault state (optional: no faults)
 *   KEEL_SHIM_PROFILE  ext4 | xfs | btrfs: what a failed sync does (what a
 *                      sync and a crash make durable, the file system
 *                      model, is in the cache's header: faultsim_fs)
 *   KEEL_SHIM_ROLE     workload | checker: who made each call (the trace)
 *   KEEL_SHIM_VOLATILE ':'-separated shell patterns of file names that pass
 *                      through untracked: files the program never needs
 *                      after a crash (shared memory such as SQLite's -shm,
 *                      keel's .durable marker).  The user's claim.
 *   KEEL_SHIM_BACKSTOP 1: the system-call backstop (shim_backstop.c) --
 *                      every system call is caught, so the writes no
 *                      wrapper sees are recorded too; a signal per call.
 *   With KEEL_SHIM_DIR unset the shim passes everything through.
 */
#ifndef KEEL_SHIM_H
#define KEEL_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "faultsim.h"

#define SHIM_MAGIC 0x4b45454c5348494dull /* "KEELSHIM" */
#define SHIM_RING 2048    /* tracked calls remembered, newest last       */
#define SHIM_LABEL 120    /* bytes of a call's file name kept            */
#define SHIM_REFUSAL 480  /* bytes of the refusal message                */
#define SHIM_SAMPLE 16    /* bytes of the newest write kept per file     */

/* What a remembered call was. */
enum shim_op {
	SHIM_OP_OPEN = 1,      /* a tracked open (writable, or of a file)     */
	SHIM_OP_CREATE,        /* an open that created the file               */
	SHIM_OP_WRITE,         /* any write call; off/len as recorded         */
	SHIM_OP_TRUNCATE,      /* ftruncate/truncate/O_TRUNC; off = new size  */
	SHIM_OP_ALLOCATE,      /* fallocate/posix_fallocate                   */
	SHIM_OP_FSYNC,
	SHIM_OP_FDATASYNC,
	SHIM_OP_SYNC_RANGE,    /* sync_file_range: NOT a durability point     */
	SHIM_OP_DIR_FSYNC,     /* fsync/fdatasync of a directory              */
	SHIM_OP_SYNC_ALL,      /* sync, syncfs                                */
	SHIM_OP_RENAME,
	SHIM_OP_UNLINK,
	SHIM_OP_LINK,
	SHIM_OP_MKDIR,         /* passed through: a crash never undoes it     */
	SHIM_OP_RMDIR,         /* passed through: a crash never undoes it     */
	SHIM_OP_MAP_WRITE,     /* first store into a page of a shared mapping
	                          since its last seal; off/len: the page     */
	SHIM_OP_MSYNC,         /* msync(MS_SYNC): a data sync of the file    */
	SHIM_OP_PROTOCOL,      /* the workload's protocol lines (intent, ack),
	                          written with write(2) to KEEL_TORTURE_FD:
	                          path holds them, so the trace shows where
	                          each acknowledgement fell among the calls */
	SHIM_OP_SYMLINK,       /* passed through: a crash never undoes it     */
	SHIM_OP_TIMES,         /* utimensat and its kin: times set            */
	SHIM_OP_COUNT
};

/* Which process made a call: the harness names each program it starts
 * (KEEL_SHIM_ROLE=workload|checker); a process below the one it started
 * (a recovery tool the checker runs) is a CHILD of that role. */
enum shim_role {
	SHIM_ROLE_NONE = 0,
	SHIM_ROLE_WORKLOAD = 1,
	SHIM_ROLE_CHECKER = 2,
	SHIM_ROLE_CHILD = 4,   /* or'ed with the role of its ancestor         */
};

#define SHIM_MODULES 64    /* program files call sites are found in        */
#define SHIM_MODULE_PATH 256

/*
 * One remembered call.  A call that changes state is entered BEFORE its
 * real call is made (inflight 1) and completed in place when it returns,
 * so a call a kill interrupted stays marked in flight.  SITE is the first
 * return address outside libc and the shim: module (an index into
 * shim_shared.modules, + 1; 0 unknown) and the offset in that file's
 * addresses (what addr2line takes; the return address, so the call is
 * the instruction before it).
 */
typedef struct shim_call {
	uint64_t seq;          /* 1, 2, ...: stored last (0: slot unused)   */
	uint32_t op;           /* enum shim_op                              */
	int32_t file;          /* faultsim file id, or -1                   */
	int32_t pid;           /* process that made it                      */
	uint32_t durable;      /* a write on an O_SYNC/O_DSYNC descriptor    */
	int64_t result;        /* the call's return (negative errno on failure) */
	uint64_t off, len;     /* write: range; truncate: new size          */
	uint64_t rec;          /* the faultsim record's seq (0: none)        */
	uint64_t site;         /* call site: offset in its module            */
	uint32_t module;       /* call site: modules[module - 1]; 0 unknown  */
	uint8_t role;          /* enum shim_role                             */
	uint8_t inflight;      /* 1 until the real call returned; atomic     */
	uint8_t pad[2];
	char path[SHIM_LABEL]; /* relative to the watched directory; a
	                          rename is "from -> to"                      */
} shim_call;

/* What the record implies about one tracked file (faultsim file id). */
typedef struct shim_file {
	uint64_t dev, ino;     /* identity (0, 0: slot unused)              */
	uint64_t size_lo;      /* the size must lie in [size_lo, size_hi]:  */
	uint64_t size_hi;      /* a range while a call is in flight          */
	uint32_t pending;      /* a call is in flight: skip the sample       */
	uint32_t sample_len;   /* bytes in sample (0: none)                  */
	uint64_t sample_off;   /* where the newest write's first bytes are   */
	unsigned char sample[SHIM_SAMPLE];
} shim_file;

/*
 * What one life changed, for the soundness floor (shim_tree_check): the
 * harness clears both tables before it starts a program (shim_shared_new_life)
 * and, after the program died, every change it finds below the watched
 * directory must be explained by them.
 *
 * A file the shim recorded a change to (a write, truncate, allocation, a
 * store through a shared mapping) has a slot, keyed by its device and
 * inode.  INFLIGHT counts recorded changes whose real call has not
 * returned; LAST_NS is CLOCK_REALTIME when the newest one returned.  The
 * kernel stamps a change's mtime from the same clock while the call runs,
 * so a file whose mtime is later than LAST_NS (and nothing in flight) was
 * changed after the last change the shim saw: by a call it did not see.
 * The same look is taken as each recorded change begins (an fstat, when
 * no other is in flight): FIRST_MTIME for the life's first, which must be
 * the mtime the harness noted before the life, and UNSEEN when a later one
 * finds the file changed since the one before it returned.  Times set by
 * utimensat and its kin are entered as changes too.
 */
#define SHIM_SEEN 8192    /* files changed in one life, at most         */
#define SHIM_NAMES 16384  /* names changed in one life, at most         */

typedef struct shim_seen {
	uint64_t key;          /* shim_seen_key(dev, ino); 0: slot unused     */
	uint64_t last_ns;      /* newest recorded change returned (0: none)   */
	uint64_t first_mtime;  /* the file's mtime when this life's first
	                          recorded change began (0: not looked)    */
	uint32_t inflight;     /* recorded changes under way                  */
	uint32_t mapped;       /* a writable shared mapping is followed: the
	                          kernel stamps mtime at its own times, so
	                          only the size and the sample are checked  */
	uint32_t unseen;       /* a recorded change began on a file whose
	                          mtime was later than LAST_NS, with none in
	                          flight: something changed it in between  */
	uint32_t pad;
} shim_seen;

/* The control block: one memfd the harness creates (shim_shared_create),
 * mapped by every process the shim is loaded into. */
typedef struct shim_shared {
	uint64_t magic;
	uint32_t loaded;       /* processes that attached (counts up)       */
	uint32_t refused;      /* set once by the first refusal             */
	char refusal[SHIM_REFUSAL]; /* its words ("" when none)             */
	uint64_t ncalls;       /* tracked calls made (ring index)           */
	uint64_t bytes;        /* bytes written through tracked calls       */
	shim_file files[FAULTSIM_MAX_FILES];
	shim_call ring[SHIM_RING];
	uint32_t nmodules;     /* module slots taken (a slot is published by
	                          its path's first byte, stored last)       */
	char modules[SHIM_MODULES][SHIM_MODULE_PATH]; /* absolute paths     */
	/* the soundness floor (above): this life's changes */
	uint32_t seen_full;    /* a change found no free slot in SEEN        */
	uint32_t names_full;   /* a name found no free slot in NAMES         */
	uint64_t changes;      /* recorded changes, over the whole run       */
	shim_seen seen[SHIM_SEEN];
	uint64_t names[SHIM_NAMES]; /* shim_name_hash of each name a recorded
	                          namespace call touched (created, removed,
	                          renamed from or to, linked), relative to
	                          the watched directory; 0: slot unused      */
} shim_shared;

/* ---- both sides (shim_common.c) ---------------------------------------- */

/* The slot key of a file (never 0). */
uint64_t shim_seen_key(uint64_t dev, uint64_t ino);
/* The key of a name relative to the watched directory, N bytes (never 0). */
uint64_t shim_name_hash(const char *rel, size_t n);
/* 1 when the file name of ABS (its last part) matches one of PATS, a
 * ':'-separated list of shell patterns (KEEL_SHIM_VOLATILE). */
int shim_volatile_match(const char *pats, const char *abs);
/* Finds the slot of KEY, entering it when absent: NULL when SEEN is full
 * (SEEN_FULL is set then). */
shim_seen *shim_seen_slot(shim_shared *s, uint64_t key);
/* Enters the name REL[N] in NAMES (NAMES_FULL is set when it is full). */
void shim_name_enter(shim_shared *s, const char *rel, size_t n);
/* CLOCK_REALTIME in ns: the clock the kernel stamps mtime from. */
uint64_t shim_now_ns(void);
/* ST's mtime in ns. */
struct stat;
uint64_t shim_mtime_ns(const struct stat *st);
/* Moves E's LAST_NS up to NS (never down; any number of processes). */
void shim_seen_stamp(shim_seen *e, uint64_t ns);
/* A recorded create made the file ST describes: its slot starts again --
 * its inode number may be one an earlier file of this life had -- as a
 * change that returned now, with no start to compare with the harness's
 * note (FIRST_MTIME UINT64_MAX). */
void shim_seen_created(shim_shared *s, const struct stat *st);

/* Direct I/O (O_DIRECT) is modelled as any write: the bytes sit in the
 * device's volatile cache until a flush (docs/faults.md).  A gathered copy
 * of a direct write lives in memory aligned to SHIM_DIO_ALIGN. */
#define SHIM_DIO_ALIGN 4096
struct iovec;
/* 0 when FD was not opened with O_DIRECT; 1 when it was and the CNT
 * segments of IOV are as aligned as its file asks (statx's
 * STATX_DIOALIGN, else 512 bytes); -EINVAL, the kernel's answer, when not.
 * FL: FD's status flags when the caller has them, else -1 (looked up). */
int shim_dio_check(int fd, int fl, const struct iovec *iov, int cnt);
/* How much of a write of LEN an injected short write makes: half, or for
 * O_DIRECT half rounded down to the file's offset alignment (all of it
 * when that leaves nothing). */
size_t shim_short_len(int fd, size_t len);

/* ---- the harness side (shim_ctl.c) ------------------------------------- */

/* Creates the control block in a memfd; *FD is close-on-exec.  0 or a
 * negative errno. */
int shim_shared_create(int *fd, shim_shared **out);
void shim_shared_destroy(shim_shared *s, int fd);

/* Forgets the per-file expectations (after the harness rewrote the files:
 * a power cut, or a cache that forgot its file table) and the call ring. */
void shim_shared_reset_files(shim_shared *s);

/*
 * shim_check_files - every regular file below DIR that the shim tracks
 * (found by device and inode) must have a size inside the range the record
 * implies, and hold the newest write's sample bytes.  Call while no program
 * under the shim runs.  0, or -1 with a one-line reason in WHY (the file,
 * what the record implies, what is there): a write that bypassed the shim.
 */
int shim_check_files(const shim_shared *s, const char *dir, char *why,
                     size_t whylen);

/* Clears this life's tables (SEEN, NAMES and their flags). */
void shim_shared_new_life(shim_shared *s);

/* Refuses the run from the harness's side (the seccomp guard's thread):
 * the first refusal's words stay, as the shim's own. */
void shim_shared_refuse(shim_shared *s, const char *what);

/*
 * The soundness floor (shim_tree.c).  shim_tree_scan notes every entry
 * below DIR (name, kind, inode, size, mtime), skipping names that match
 * VOLATILE (may be NULL); NULL with the reason in WHY when it cannot.
 * shim_tree_check scans DIR again and explains every difference from
 * BEFORE by what S recorded since shim_shared_new_life:
 *   - a name that appeared, vanished or names another inode must be in
 *     NAMES, itself or a directory above it (a directory renamed);
 *   - a regular file that is new or whose size or mtime changed must have
 *     a slot in SEEN whose newest change is no older than its mtime (or a
 *     change still in flight, or a followed shared mapping), unless it is
 *     new and empty (an O_CREAT open, recorded before it was made);
 *   - sockets and FIFOs hold no data and are not judged.
 * 0, or -1 with one line in WHY naming the file and what was not
 * recorded.  Call while no program under the shim runs.
 */
typedef struct shim_tree shim_tree;
shim_tree *shim_tree_scan(const char *dir, const char *volatile_pats,
                          char *why, size_t whylen);
int shim_tree_check(const shim_shared *s, const shim_tree *before,
                    const char *dir, const char *volatile_pats, char *why,
                    size_t whylen);
void shim_tree_free(shim_tree *t);

/* 0 when this kernel and machine can run the system-call backstop
 * (KEEL_SHIM_BACKSTOP=1: Syscall User Dispatch, Linux 5.11+, x86-64); -1
 * with the reason in WHY when not. */
int shim_backstop_probe(char *why, size_t whylen);

/* Words for an op ("write", "fdatasync", ...). */
const char *shim_op_name(uint32_t op);
/* Words for a role ("workload", "checker", "checker's child"). */
const char *shim_role_name(uint32_t role);

#endif /* KEEL_SHIM_H */
