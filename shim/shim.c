/*
 * shim.c -- libkeel-shim.so: LD_PRELOAD wrappers that record a program's
 * I/O on files below the watched directory in the harness's faultsim cache
 * (the contract is shim.h; the call list and its limits docs/targets.md).
 * This file holds what every wrapper leans on: the state the harness sets
 * up (the constructor, shim_init), the real functions, refusing, recording
 * in the cache, the injected faults and the paths below the watched
 * directory.  The wrappers are in the files shim_internal.h lists, one
 * family of calls each.
 *
 * Order inside one tracked call, as in faultsim's own keel_io backend:
 * (1) count the step (an --enumerate run may kill the process here), (2)
 * check the injected faults (a fault fails the call without touching the
 * file), (3) record, (4) make the real call, (5) end the record with its
 * result, (6) remember the call in the ring for a violation's report.
 *
 * Re-entry: faultsim itself calls open, pread, link, unlink, ... and those
 * resolve to the wrappers.  IN_SHIM (per thread) is set while a wrapper
 * works; every wrapper passes straight through while it is set.
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

/* Set while a wrapper works in this thread (re-entry, above); initial-exec
 * as its declaration (shim_internal.h): signal handlers read it. */
__thread int in_shim __attribute__((tls_model("initial-exec")));

int active;                /* set up by the harness               */
char watched[PATH_MAX];    /* the watched directory               */
size_t watched_len;
faultsim_cache *cache;
faultsim_faults *faults;   /* NULL: no injected faults            */
faultsim_profile profile;
shim_shared *ctl;

/* ---- the real functions ---------------------------------------------- */

/* Not static: the wrappers in the other files call them, and the syscall
 * backstop marks the calls made through them as the shim's own
 * (shim_internal.h). */
#define REAL(ret, name, args)                                              \
	__attribute__((visibility("hidden"))) ret(*real_##name) args;      \
	void load_##name(void)                                             \
	{                                                                  \
		if (!real_##name)                                          \
			real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name); \
	}

REAL(int, openat, (int, const char *, int, ...))
REAL(ssize_t, write, (int, const void *, size_t))
REAL(ssize_t, pwrite, (int, const void *, size_t, off_t))
REAL(int, close, (int))
REAL(int, fsync, (int))
REAL(int, fdatasync, (int))
REAL(int, ftruncate, (int, off_t))
REAL(int, fallocate, (int, int, off_t, off_t))
REAL(int, posix_fallocate, (int, off_t, off_t))
REAL(int, renameat2, (int, const char *, int, const char *, unsigned))
REAL(int, unlinkat, (int, const char *, int))
REAL(int, linkat, (int, const char *, int, const char *, int))
REAL(int, mkdirat, (int, const char *, mode_t))
REAL(int, dup, (int))
REAL(int, dup3, (int, int, int))
REAL(int, dup2, (int, int))
REAL(int, fcntl, (int, int, ...))
REAL(void *, mmap, (void *, size_t, int, int, int, off_t))
REAL(int, munmap, (void *, size_t))
REAL(int, mprotect, (void *, size_t, int))
REAL(void *, mremap, (void *, size_t, size_t, int, ...))
REAL(int, msync, (void *, size_t, int))
REAL(ssize_t, read, (int, void *, size_t))
REAL(ssize_t, pread, (int, void *, size_t, off_t))
REAL(int, sigaction, (int, const struct sigaction *, struct sigaction *))
REAL(sighandler_t, signal, (int, sighandler_t))
REAL(void, sync, (void))
REAL(int, syncfs, (int))
REAL(int, sync_file_range, (int, off_t, off_t, unsigned))
REAL(int, execve, (const char *, char *const[], char *const[]))
REAL(long, syscall, (long, ...))
REAL(int, fileno, (FILE *))

static void load_all(void)
{
	load_openat(); load_write(); load_pwrite(); load_close();
	load_fsync(); load_fdatasync(); load_ftruncate(); load_fallocate();
	load_posix_fallocate(); load_renameat2(); load_unlinkat();
	load_linkat(); load_mkdirat(); load_dup(); load_dup3(); load_dup2();
	load_fcntl(); load_mmap(); load_sync(); load_syncfs();
	load_sync_file_range(); load_execve(); load_syscall(); load_fileno();
	load_munmap(); load_mprotect(); load_mremap(); load_msync();
	load_read(); load_pread(); load_sigaction(); load_signal();
}

/* ---- refusing ------------------------------------------------------- */

void refuse(const char *fmt, ...)
{
	char msg[SHIM_REFUSAL], line[SHIM_REFUSAL + 40];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ctl && __atomic_exchange_n(&ctl->refused, 1, __ATOMIC_ACQ_REL) == 0)
		snprintf(ctl->refusal, sizeof ctl->refusal, "%s", msg);
	n = snprintf(line, sizeof line, "keel-shim: %s (set-up error)\n", msg);
	if (real_write && n > 0)
		(void)!real_write(2, line, (size_t)n);
	_exit(2);
}

const char *relative(const char *abs)
{
	if (strncmp(abs, watched, watched_len) == 0 && abs[watched_len] == '/')
		return abs + watched_len + 1;
	return abs;
}

/* ---- recording: a full cache ---------------------------------------- */

/* KEEL_SHIM_KILLS_ONLY=1: the harness cuts no power and injects no fault in
 * this run, so a kill leaves every write in the page cache and nothing
 * recorded can ever be undone.  A full cache is then settled as a sync(2)
 * would settle it, and the call recorded after all, instead of refused: a
 * program that writes and renames without ever syncing runs as long as the
 * harness likes.  With power cuts a full cache stays a refusal. */
int kills_only;

int make_room(void)
{
	if (!kills_only)
		return 0;
	map_seal_all(); /* an unsealed page stays unsynced (invariant 7) */
	all_mark = faultsim_cache_sync_begin(cache);
	sync_everything(0, 0);
	faultsim_cache_clear_overflow(cache);
	return 1;
}

/* A recording call failed: the cache is full, or the file table is. */
void recording_failed(int rc, const char *what, const char *path)
{
	if (rc == -ENOBUFS)
		refuse("%s %s: the fault simulator's cache is full: %s; cut "
		       "power more often (a shorter --kill-every)%s", what,
		       path ? relative(path) : "?",
		       faultsim_cache_nfiles(cache) >= FAULTSIM_MAX_FILES ?
		       "all of its file entries (FAULTSIM_MAX_FILES, "
		       "faultsim/faultsim.h) name files with changes a power "
		       "cut could still undo" :
		       "more unsynced bytes than its records hold",
		       faultsim_cache_nfiles(cache) >= FAULTSIM_MAX_FILES ? "" :
		       ", or give it more room (torture --cache-mib)");
}

/* ---- paths ------------------------------------------------------------------ */

/* What descriptor FD names now (/proc/self/fd), in OUT (PATH_MAX bytes):
 * 0, or -1 when it cannot be read. */
int fd_names(int fd, char *out)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, out, PATH_MAX - 1);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	return 0;
}

/* The absolute, resolved form of PATH (relative to DIRFD): the directory
 * part through realpath, then the last component.  0, or -1. */
static int resolve(int dirfd, const char *path, char *out)
{
	char tmp[PATH_MAX + 8], base[PATH_MAX];
	size_t len;

	if (!path || !*path)
		return -1;
	if (path[0] == '/') {
		len = strlen(path);
		if (len >= PATH_MAX)
			return -1;
		memcpy(tmp, path, len + 1); /* every open: no printf */
	} else if (dirfd == AT_FDCWD) {
		if (!getcwd(base, sizeof base) ||
		    snprintf(tmp, sizeof tmp, "%.*s/%s", PATH_MAX / 2, base,
		             path) >= PATH_MAX)
			return -1;
	} else {
		if (fd_names(dirfd, base) < 0)
			return -1;
		if (snprintf(tmp, sizeof tmp, "%.*s/%s", PATH_MAX / 2, base,
		             path) >= PATH_MAX)
			return -1;
	}
	len = strlen(tmp);
	while (len > 1 && tmp[len - 1] == '/')
		tmp[--len] = '\0';
	const char *slash = strrchr(tmp, '/');
	const char *last = slash + 1;
	if (strcmp(last, ".") == 0 || strcmp(last, "..") == 0)
		return realpath(tmp, out) ? 0 : -1;
	return faultsim_cache_abspath_memo(cache, tmp, out, FAULTSIM_PATH_MAX) == 0 ?
	       0 : -1;
}

/* KEEL_SHIM_VOLATILE: ':'-separated shell patterns of file names whose
 * content the program never needs after a crash (shared-memory files such
 * as SQLite's -shm or keel's .durable marker): they pass through. */
static char volatile_pats[1024];

static int is_volatile(const char *abs)
{
	return shim_volatile_match(volatile_pats, abs);
}

int is_watched(const char *abs)
{
	return strncmp(abs, watched, watched_len) == 0 &&
	       (abs[watched_len] == '/' || abs[watched_len] == '\0') &&
	       !is_volatile(abs);
}

/* Resolves and says whether the result is below the watched directory. */
int watched_path(int dirfd, const char *path, char *abs)
{
	return resolve(dirfd, path, abs) == 0 && is_watched(abs);
}

/* ---- faults ---------------------------------------------------------------- */

int inject(faultsim_op op)
{
	int e = faults ? faultsim_faults_check(faults, op) : 0;
	if (e == FAULTSIM_SHORT && op != FAULTSIM_OP_PWRITE)
		e = -EIO;
	return e;
}

void step(void)
{
	/* an enumeration's crash point stops the whole workload, as a power
	 * cut stops the machine: this process group (exec_spawn gives the
	 * workload one of its own), not this process alone -- a shell above
	 * it would go on and acknowledge after a sync its child never made */
	if (faultsim_faults_step_due(faults))
		kill(0, SIGKILL);
}

/* ---- set-up ------------------------------------------------------------------ */

static int attach_path(const char *var, int (*attach)(int, void **),
                       void **out)
{
	const char *p = getenv(var);
	int fd, rc;

	if (!p)
		return -ENOENT;
	fd = real_openat(AT_FDCWD, p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = attach(fd, out);
	real_close(fd);
	return rc;
}

static int attach_cache(int fd, void **out)
{
	return faultsim_cache_attach(fd, (faultsim_cache **)out);
}

static int attach_faults(int fd, void **out)
{
	return faultsim_faults_attach(fd, (faultsim_faults **)out);
}

static int attach_ctl(int fd, void **out)
{
	void *p = real_mmap(NULL, sizeof(shim_shared), PROT_READ | PROT_WRITE,
	                    MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (((shim_shared *)p)->magic != SHIM_MAGIC) {
		munmap(p, sizeof(shim_shared));
		return -EINVAL;
	}
	*out = p;
	return 0;
}

static void __attribute__((constructor)) shim_init(void)
{
	const char *dir = getenv("KEEL_SHIM_DIR"), *prof;
	void *p;
	int rc;

	load_all();
	if (!dir)
		return;
	in_shim = 1;
	if (!realpath(dir, watched))
		refuse("KEEL_SHIM_DIR %s: %s", dir, strerror(errno));
	watched_len = strlen(watched);
	if ((rc = attach_path("KEEL_SHIM_CTL", attach_ctl, &p)) < 0)
		refuse("cannot map the harness's control block "
		       "(KEEL_SHIM_CTL): %s", strerror(-rc));
	ctl = p;
	if ((rc = attach_path("KEEL_SHIM_CACHE", attach_cache, &p)) < 0)
		refuse("cannot map the fault simulator's cache "
		       "(KEEL_SHIM_CACHE): %s", strerror(-rc));
	cache = p;
	rc = attach_path("KEEL_SHIM_FAULTS", attach_faults, &p);
	if (rc < 0 && rc != -ENOENT)
		refuse("cannot map the fault state (KEEL_SHIM_FAULTS): %s",
		       strerror(-rc));
	faults = rc < 0 ? NULL : p;
	if (getenv("KEEL_SHIM_VOLATILE"))
		snprintf(volatile_pats, sizeof volatile_pats, "%s",
		         getenv("KEEL_SHIM_VOLATILE"));
	kills_only = getenv("KEEL_SHIM_KILLS_ONLY") &&
	             !strcmp(getenv("KEEL_SHIM_KILLS_ONLY"), "1");
	prof = getenv("KEEL_SHIM_PROFILE");
	profile = FAULTSIM_PROFILE_EXT4;
	if (prof && faultsim_profile_parse(prof, &profile) < 0)
		refuse("KEEL_SHIM_PROFILE %s: not ext4, xfs or btrfs", prof);
	calls_init();
	if (getenv("KEEL_TORTURE_FD"))
		proto_fd = atoi(getenv("KEEL_TORTURE_FD"));
	__atomic_add_fetch(&ctl->loaded, 1, __ATOMIC_ACQ_REL);
	map_init();
	/* a forked child starts with no dirty page: each process then makes
	 * and seals its own records */
	pthread_atfork(map_seal_all, NULL, pid_refresh);
	pid_refresh();
	active = 1;
	adopt_inherited();
	in_shim = 0;
	shim_backstop_init();
}

/* ---- lent to the system-call backstop (shim_internal.h) ----------------- */

int shim_fd_followed(int fd)
{
	return active && fd_tracked(fd);
}

int shim_in_call(void)
{
	return in_shim;
}

const char *shim_watched(size_t *len)
{
	*len = watched_len;
	return watched;
}

void shim_refuse_msg(const char *msg)
{
	refuse("%s", msg);
}

/* exit(): the pages still dirty are sealed, so a later process's sync of
 * the file finds sealed records (_exit and a kill leave them to the
 * harness, which seals them from the file) */
static void __attribute__((destructor)) shim_fini(void)
{
	map_seal_all();
}
