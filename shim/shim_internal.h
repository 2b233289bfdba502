/*
 * shim_internal.h -- what shim.c lends the system-call backstop
 * (shim_backstop.c) inside libkeel-shim.so.  Not part of the contract with
 * the harness (shim.h): both files are the shim.
 *
 * The backstop catches the system calls no wrapper sees (a libc-internal
 * write, a raw syscall instruction) and sends the ones the shim models
 * back through the exported wrappers of shim.c (write, openat, rename,
 * ...), which decide, record and make the real call as for any other
 * caller.  From shim.c it needs only to know, cheaply and without a
 * system call, whether a descriptor is followed and whether a wrapper is
 * already at work in this thread.
 */
#ifndef KEEL_SHIM_INTERNAL_H
#define KEEL_SHIM_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

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

#endif /* KEEL_SHIM_INTERNAL_H */
