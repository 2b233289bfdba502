/*
 * shim_internal.h -- what the files of libkeel-shim.so share.  Not part of
 * the contract with the harness (shim.h): all of them are the shim.
 *
 * THE FILES, one job each
 *   shim.c            the state the harness sets up, the real functions,
 *                     refusing, recording, faults, paths; the constructor
 *   shim_ring.c       the call ring: who called, from where, in flight or not
 *   shim_fd.c         the descriptor table: which descriptors are followed
 *   shim_open.c       opens, closes, dups, fcntl, descriptors over sockets
 *   shim_expect.c     what the record implies about each file, for the
 *                     harness's checks (bypass detection, this life's changes)
 *   shim_write.c      writes, truncates and allocations
 *   shim_sync.c       fsync, fdatasync, sync_file_range, sync, syncfs
 *   shim_map.c        writes through shared mappings (the SIGSEGV handler)
 *   shim_namespace.c  renames, unlinks, links, directories, symlinks, times
 *   shim_stdio.c      stdio streams on tracked files
 *   shim_exec.c       raw syscall(), exec
 *   shim_backstop.c   the system-call backstop (below)
 *   shim_common.c     what the shim and the harness share (shim.h)
 * Only the wrapped libc functions are exported (shim.map); every name
 * declared after the backstop's below is hidden as well.
 *
 * The backstop catches the system calls no wrapper sees (a libc-internal
 * write, a raw syscall instruction) and sends the ones the shim models
 * back through the exported wrappers (write, openat, rename, ...), which
 * decide, record and make the real call as for any other caller.  From
 * the rest of the shim it needs only to know, cheaply and without a
 * system call, whether a descriptor is followed and whether a wrapper is
 * already at work in this thread.
 */
#ifndef KEEL_SHIM_INTERNAL_H
#define KEEL_SHIM_INTERNAL_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "shim.h"

/* 1 when FD is a tracked file or a directory below the watched one. */
int shim_fd_followed(int fd);

/* 1 while a wrapper works in this thread: the calls it makes are its own
 * (the real call, faultsim's reads and pre-images) and pass as they are. */
int shim_in_call(void);

/* The watched directory, resolved (KEEL_SHIM_DIR through realpath). */
const char *shim_watched(size_t *len);

/* The checks execve() makes before an exec (a static binary, the shim
 * removed from ENVP): refuses (exits 2) when one fails. */
void shim_exec_check(const char *path, char *const envp[]);

/* Refuses with MSG (one line; exits 2), as the wrappers do. */
void shim_refuse_msg(const char *msg) __attribute__((noreturn));

/* The real functions of shim.c (glibc's, through dlsym), pointers the
 * backstop replaces once armed by ones that mark their calls as the
 * shim's own: a wrapper's real call then passes as it is, and is never
 * sent through a wrapper a second time. */
extern int (*real_openat)(int, const char *, int, ...);
extern ssize_t (*real_write)(int, const void *, size_t);
extern ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
extern int (*real_close)(int);
extern int (*real_fsync)(int);
extern int (*real_fdatasync)(int);
extern int (*real_ftruncate)(int, off_t);
extern int (*real_fallocate)(int, int, off_t, off_t);
extern int (*real_posix_fallocate)(int, off_t, off_t);
extern int (*real_renameat2)(int, const char *, int, const char *, unsigned);
extern int (*real_unlinkat)(int, const char *, int);
extern int (*real_linkat)(int, const char *, int, const char *, int);
extern int (*real_mkdirat)(int, const char *, mode_t);
extern int (*real_dup)(int);
extern int (*real_dup3)(int, int, int);
extern int (*real_dup2)(int, int);
extern int (*real_fcntl)(int, int, ...);
extern void *(*real_mmap)(void *, size_t, int, int, int, off_t);
extern void (*real_sync)(void);
extern int (*real_syncfs)(int);
extern int (*real_sync_file_range)(int, off_t, off_t, unsigned);

/* Arms the backstop in this process when KEEL_SHIM_BACKSTOP=1 (from the
 * shim's constructor, once it is active). */
void shim_backstop_init(void);

/* ======== what the files of the shim share (all hidden) ================== */

#pragma GCC visibility push(hidden)

/* ---- shim.c: the state, the real functions, refusing, recording --------- */

/* Set while a wrapper works in this thread; every wrapper passes straight
 * through while it is set (re-entry, shim.c).  Initial-exec on the
 * declaration and the definition alike: it is read inside signal handlers
 * (the SIGSEGV handler of shim_map.c, the backstop's through shim_in_call),
 * where a lazily allocated thread variable must not be touched. */
extern __thread int in_shim __attribute__((tls_model("initial-exec")));

extern int active;                /* set up by the harness               */
extern char watched[PATH_MAX];    /* the watched directory               */
extern size_t watched_len;
extern faultsim_cache *cache;
extern faultsim_faults *faults;   /* NULL: no injected faults            */
extern faultsim_profile profile;
extern shim_shared *ctl;
/* KEEL_SHIM_KILLS_ONLY=1: a full cache is settled, not refused (shim.c). */
extern int kills_only;

/* The rest of the real functions (with those above, every one the shim
 * calls).  load_NAME looks real_NAME up (dlsym, RTLD_NEXT) while it is
 * still NULL: a wrapper loads what it calls first, since it may be called
 * before the shim's constructor has run. */
extern int (*real_munmap)(void *, size_t);
extern int (*real_mprotect)(void *, size_t, int);
extern void *(*real_mremap)(void *, size_t, size_t, int, ...);
extern int (*real_msync)(void *, size_t, int);
extern ssize_t (*real_read)(int, void *, size_t);
extern ssize_t (*real_pread)(int, void *, size_t, off_t);
extern int (*real_sigaction)(int, const struct sigaction *,
                             struct sigaction *);
extern sighandler_t (*real_signal)(int, sighandler_t);
extern int (*real_execve)(const char *, char *const[], char *const[]);
extern long (*real_syscall)(long, ...);
extern int (*real_fileno)(FILE *);
void load_openat(void), load_write(void), load_pwrite(void),
	load_close(void), load_fsync(void), load_fdatasync(void),
	load_ftruncate(void), load_fallocate(void),
	load_posix_fallocate(void), load_renameat2(void),
	load_unlinkat(void), load_linkat(void), load_mkdirat(void),
	load_dup(void), load_dup3(void), load_dup2(void), load_fcntl(void),
	load_mmap(void), load_munmap(void), load_mprotect(void),
	load_mremap(void), load_msync(void), load_read(void),
	load_pread(void), load_sigaction(void), load_signal(void),
	load_sync(void), load_syncfs(void), load_sync_file_range(void),
	load_execve(void), load_syscall(void), load_fileno(void);

/* Refuses the run: FMT's message in the control block and on stderr,
 * then _exit(2) -- a set-up error, never a verdict. */
void refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                 noreturn));
/* ABS relative to the watched directory (ABS itself when not below it). */
const char *relative(const char *abs);

/* Settles a full cache as sync(2) would, under KEEL_SHIM_KILLS_ONLY=1: 1,
 * or 0 when a full cache stays full (power cuts may undo its records). */
int make_room(void);
/* Records with CALL, a faultsim_cache_*_begin or _track call returning a
 * negative errno; a full cache gets one make_room and a second try. */
#define RECORD(call) ({ int rec_rc_ = (call);                              \
	if (rec_rc_ == -ENOBUFS && make_room())                             \
		rec_rc_ = (call);                                             \
	rec_rc_; })
/* A recording call failed: refuses when the cache or its file table is
 * full (RC -ENOBUFS), else returns (the caller fails the call). */
void recording_failed(int rc, const char *what, const char *path);

/* The injected fault of OP: 0, a negative errno, or FAULTSIM_SHORT (a
 * short write, for a write only). */
int inject(faultsim_op op);
/* Counts a step (an --enumerate run may kill the process here). */
void step(void);

/* What descriptor FD names now (/proc/self/fd), in OUT (PATH_MAX bytes):
 * 0, or -1. */
int fd_names(int fd, char *out);
/* Whether ABS lies below the watched directory and is not volatile. */
int is_watched(const char *abs);
/* PATH (relative to DIRFD) resolved into ABS (PATH_MAX bytes): whether it
 * is below the watched directory. */
int watched_path(int dirfd, const char *path, char *abs);

/* ---- shim_ring.c: the call ring ----------------------------------------- */

/* The return address of the wrapper the program called, while it works
 * (NULL otherwise): a call site without unwinding. */
extern __thread void *site_ra __attribute__((tls_model("initial-exec")));
/* The ring slot of this thread's call in flight (index + 1; 0: none). */
extern __thread uint64_t open_slot __attribute__((tls_model("initial-exec")));
/* Returns EXPR (of TYPE) made with the wrapper's own return address as
 * the call site: a program's direct call needs no unwinding (call_site).
 * A wrapper the shim itself enters inside another (the cache's link of a
 * stash) keeps the outer one's. */
#define WITH_SITE(type, expr)                                               \
	do {                                                                \
		void *site_outer_ = site_ra;                                \
		if (!site_outer_)                                           \
			site_ra = __builtin_return_address(0);              \
		type site_r_ = (expr);                                      \
		site_ra = site_outer_;                                      \
		return site_r_;                                             \
	} while (0)

/* Set up once per process, from the constructor (IN_SHIM held): the
 * code to skip when looking for a call site, this process's role. */
void calls_init(void);
/* ENVP with this process's role variables for an exec (malloc'ed, or
 * ENVP itself). */
char *const *role_envp(char *const envp[]);
/* Reads this process's id again (the constructor, a forked child). */
void pid_refresh(void);
/* Whether this is a vfork child: its calls must not change the tables. */
int in_vfork_child(void);
/* Enters a call about to be made (record REC, 0: none) in the ring,
 * marked in flight; remember() completes it when it returns. */
void remember_begin(uint32_t op, int file, const char *path,
                    const char *path2, uint64_t off, uint64_t len,
                    uint64_t rec);
/* Completes the call remember_begin entered, or enters a finished one. */
void remember(uint32_t op, int file, const char *path, const char *path2,
              uint64_t off, uint64_t len, int64_t result, int durable);

/* ---- shim_fd.c: the descriptor table ------------------------------------ */

#define SHIM_FDS 65536        /* descriptors the shim can follow        */
#define FD_APPEND 1u          /* O_APPEND                               */
#define FD_SYNC 2u            /* O_SYNC / O_DSYNC                       */
#define FD_DIR 4u             /* a directory below the watched one      */
#define FD_ADOPTED 8u         /* opened where no wrapper saw (fd_adopt)  */

/* Per descriptor, in this process (shim_fd.c says what each holds). */
extern int32_t fd_file[SHIM_FDS];   /* faultsim file id + 1; 0 untracked */
extern uint8_t fd_flags[SHIM_FDS];  /* FD_*                              */
extern int32_t fd_err[SHIM_FDS];    /* sync error not yet reported (errseq) */
extern char *fd_path[SHIM_FDS];     /* absolute path (tracked files, dirs) */
extern uint8_t fd_seen[SHIM_FDS];   /* looked at: names nothing watched  */

/* 1 when FD is a tracked file or a directory below the watched one. */
int fd_tracked(int fd);
/* Stops following FD. */
void fd_forget(int fd);
/* TO follows what FROM follows (a dup). */
void fd_copy(int from, int to);
/* Starts following FD, opened on ABS (below the watched directory). */
int fd_track(int fd, const char *abs, int flags);
/* Tracks FD's file again when its file entry went to another file. */
void fd_revalidate(int fd);
/* Follows FD when it names something below the watched directory, though
 * no wrapper saw it opened: 1 when it is followed now. */
int fd_adopt(int fd);
/* 1 when a call on FD passes straight through (the fast test). */
int fd_passes(int fd);
#define PASS(fd) fd_passes(fd)
/* The program is closing FD, or FIRST..LAST (before the real call). */
void fd_closing(int fd);
void fd_closing_range(unsigned long first, unsigned long last);
/* After exec: inherited descriptors on watched files are followed again. */
void adopt_inherited(void);

/* ---- shim_expect.c: what the record implies, for the harness's checks --- */

struct stat;
/* What the record implies about FILE: set on first sight from the file. */
void expect_init(int file, const struct stat *stp);
/* The file ST describes (or the file at ABS) is about to lose its name. */
void expect_forget(const struct stat *st);
void expect_forget_path(const char *abs);
/* A recorded change of FILE begins on FD: its end moves to NEW_END (a
 * TRUNCATE may move it down); it ended with the size SIZE (UINT64_MAX:
 * looked up on FD), its last bytes written BUF[N] at OFF. */
void expect_begin(int file, int fd, uint64_t new_end, int truncate);
void expect_end(int file, int fd, uint64_t size, const void *buf,
                uint64_t off, ssize_t n);
/* The simulator has just written FILE (on FD, or at PATH when FD is -1)
 * back to what the device holds (faultsim_cache_sync_end said so: a
 * failed sync under the btrfs profile), a change of its bytes the record
 * explains. */
void expect_reverted(int file, int fd, const char *path);
/* A recorded namespace call is about to change the name ABS. */
void name_touch(const char *abs);
/* FILE's slot in this life's changes (NULL: the table is full). */
shim_seen *seen_of(int file);
/* A recorded open made the file on FD. */
void seen_created(int fd);
/* A recorded change of FILE's bytes or size begins (on FD) and ends. */
void seen_begin(int file, int fd);
void seen_end(int file);

/* ---- shim_write.c, shim_sync.c, shim_open.c ----------------------------- */

/* The workload's protocol descriptor (KEEL_TORTURE_FD), or -1. */
extern int proto_fd;
/* A tracked truncate of FD to LEN: 0 or a negative errno.  IN_SHIM set. */
int tracked_truncate(int fd, uint64_t len);
/* The cache's mark at the start of a sync(2) or syncfs(2), or of
 * make_room's settling. */
extern uint64_t all_mark;
/* sync(2), syncfs(2): every file and directory below the watched one;
 * SAID: the program called it (it goes into the call ring). */
int sync_everything(int rc, int said);
/* The open wrappers' work: open(2) of PATH relative to DIRFD. */
int shim_openat(int dirfd, const char *path, int flags, mode_t mode);

/* ---- shim_map.c: writes through shared mappings ------------------------- */

/* Reads the page size (the constructor). */
void map_init(void);
/* Seals this process's dirty pages of FILE, or of every file, before a
 * flush point.  IN_SHIM set (map_seal). */
void map_seal(int file);
void map_seal_all(void);

#pragma GCC visibility pop

#endif /* KEEL_SHIM_INTERNAL_H */
