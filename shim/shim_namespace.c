/*
 * shim_namespace.c -- the wrappers that change names below the watched
 * directory: rename, unlink, remove and link, recorded (a crash can undo
 * them until the directory is synced); mkdir, rmdir and symlink, passed
 * through and remembered (a crash never undoes them); utimensat, futimens
 * and utimes, entered in this life's changes (times set).
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "shim.h"
#include "shim_internal.h"

/* ---- namespace ------------------------------------------------------------- */

static int shim_rename(int odir, const char *from, int ndir, const char *to,
                       unsigned flags)
{
	char afrom[PATH_MAX], ato[PATH_MAX];
	faultsim_ticket t = { 0 };
	int wf, wt, rc;

	load_renameat2();
	if (!active || in_shim)
		return real_renameat2(odir, from, ndir, to, flags);
	faultsim_cache_names_changed(cache); /* before: resolve's memo */
	wf = watched_path(odir, from, afrom);
	wt = watched_path(ndir, to, ato);
	if (!wf && !wt)
		return real_renameat2(odir, from, ndir, to, flags);
	in_shim = 1;
	if (wf != wt)
		refuse("rename %s -> %s crosses the watched directory's edge",
		       wf ? relative(afrom) : from, wt ? relative(ato) : to);
	if (flags & RENAME_EXCHANGE)
		refuse("renameat2(RENAME_EXCHANGE) %s, %s is not modelled",
		       relative(afrom), relative(ato));
	struct stat st;
	if (lstat(afrom, &st) == 0 && S_ISDIR(st.st_mode))
		refuse("rename of directory %s is not modelled",
		       relative(afrom));
	step();
	name_touch(afrom);
	name_touch(ato);
	expect_forget_path(ato);
	if ((rc = inject(FAULTSIM_OP_RENAME)) == 0 &&
	    (rc = RECORD(faultsim_cache_rename_begin(cache, afrom, ato, &t))) < 0)
		recording_failed(rc, "rename", afrom);
	if (rc == 0) {
		remember_begin(SHIM_OP_RENAME, -1, afrom, ato, 0, 0, t.seq);
		rc = real_renameat2(odir, from, ndir, to, flags) == 0 ? 0 : -errno;
		faultsim_cache_namespace_end(&t, rc);
	}
	remember(SHIM_OP_RENAME, -1, afrom, ato, 0, 0, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int rename(const char *from, const char *to)
{
	WITH_SITE(int, shim_rename(AT_FDCWD, from, AT_FDCWD, to, 0));
}

int renameat(int odir, const char *from, int ndir, const char *to)
{
	WITH_SITE(int, shim_rename(odir, from, ndir, to, 0));
}

int renameat2(int odir, const char *from, int ndir, const char *to,
              unsigned flags)
{
	WITH_SITE(int, shim_rename(odir, from, ndir, to, flags));
}

static int shim_unlink(int dirfd, const char *path, int flags)
{
	char abs[PATH_MAX];
	faultsim_ticket t = { 0 };
	struct stat st;
	int rc;

	load_unlinkat();
	if (!active || in_shim)
		return real_unlinkat(dirfd, path, flags);
	if (!watched_path(dirfd, path, abs)) {
		faultsim_cache_names_changed(cache); /* resolve's memo */
		return real_unlinkat(dirfd, path, flags);
	}
	in_shim = 1;
	/* only a directory or a link can be a part of a directory's path:
	 * removing anything else leaves resolve's memo true */
	int seen = !(flags & AT_REMOVEDIR) && lstat(abs, &st) == 0;
	if (!seen || !S_ISREG(st.st_mode))
		faultsim_cache_names_changed(cache);
	name_touch(abs);
	if ((flags & AT_REMOVEDIR) || (seen && S_ISDIR(st.st_mode))) {
		rc = real_unlinkat(dirfd, path, flags) == 0 ? 0 : -errno;
		remember(SHIM_OP_RMDIR, -1, abs, NULL, 0, 0, rc, 0);
	} else {
		step();
		if (seen)
			expect_forget(&st); /* what lstat found above */
		if ((rc = inject(FAULTSIM_OP_UNLINK)) == 0 &&
		    (rc = RECORD(seen ? faultsim_cache_unlink_begin_ino(cache,
		                     abs, (uint64_t)st.st_ino, &t)
		                      : faultsim_cache_unlink_begin(cache, abs,
		                                                    &t))) < 0)
			recording_failed(rc, "unlink", abs);
		if (rc == 0) {
			remember_begin(SHIM_OP_UNLINK, -1, abs, NULL, 0, 0, t.seq);
			rc = real_unlinkat(dirfd, path, flags) == 0 ? 0 : -errno;
			faultsim_cache_namespace_end(&t, rc);
		}
		remember(SHIM_OP_UNLINK, -1, abs, NULL, 0, 0, rc, 0);
	}
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int unlink(const char *path)
{
	WITH_SITE(int, shim_unlink(AT_FDCWD, path, 0));
}

int unlinkat(int dirfd, const char *path, int flags)
{
	WITH_SITE(int, shim_unlink(dirfd, path, flags));
}

int rmdir(const char *path)
{
	return shim_unlink(AT_FDCWD, path, AT_REMOVEDIR);
}

/* glibc's remove() calls its own unlink and rmdir, which no wrapper sees:
 * it is made here as glibc makes it (unlink; a directory: rmdir), through
 * the wrappers, so that a program that deletes with remove() is modelled
 * like one that calls unlink. */
static int shim_remove(const char *path)
{
	if (shim_unlink(AT_FDCWD, path, 0) == 0)
		return 0;
	if (errno != EISDIR)
		return -1;
	return shim_unlink(AT_FDCWD, path, AT_REMOVEDIR);
}

int remove(const char *path)
{
	WITH_SITE(int, shim_remove(path));
}

/* A new name for an existing file: recorded as a create of the new name,
 * which a crash removes unless its directory was synced. */
static int shim_link(int odir, const char *from, int ndir, const char *to,
                     int flags)
{
	char ato[PATH_MAX];
	faultsim_ticket t = { 0 };
	int rc;

	load_linkat();
	if (!active || in_shim || !watched_path(ndir, to, ato))
		return real_linkat(odir, from, ndir, to, flags);
	in_shim = 1;
	step();
	name_touch(ato);
	if ((rc = RECORD(faultsim_cache_create_begin(cache, ato, &t))) < 0)
		recording_failed(rc, "link", ato);
	if (rc == 0) {
		rc = real_linkat(odir, from, ndir, to, flags) == 0 ? 0 : -errno;
		faultsim_cache_namespace_end(&t, rc);
	}
	remember(SHIM_OP_LINK, -1, ato, NULL, 0, 0, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int link(const char *from, const char *to)
{
	WITH_SITE(int, shim_link(AT_FDCWD, from, AT_FDCWD, to, 0));
}

int linkat(int odir, const char *from, int ndir, const char *to, int flags)
{
	WITH_SITE(int, shim_link(odir, from, ndir, to, flags));
}

static int shim_mkdir(int dirfd, const char *path, mode_t mode)
{
	char abs[PATH_MAX];

	load_mkdirat();
	if (!active || in_shim || !watched_path(dirfd, path, abs))
		return real_mkdirat(dirfd, path, mode);
	in_shim = 1;
	name_touch(abs);
	int rc = real_mkdirat(dirfd, path, mode) == 0 ? 0 : -errno;
	remember(SHIM_OP_MKDIR, -1, abs, NULL, 0, 0, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int mkdir(const char *path, mode_t mode)
{
	return shim_mkdir(AT_FDCWD, path, mode);
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
	return shim_mkdir(dirfd, path, mode);
}

/* A symbolic link below the directory: passed through and listed, as a
 * directory is (a crash never undoes it); its name is entered first. */
static int shim_symlink(const char *target, int dirfd, const char *path)
{
	static int (*real)(const char *, int, const char *);
	char abs[PATH_MAX];

	if (!real)
		real = (int (*)(const char *, int, const char *))dlsym(RTLD_NEXT,
		                                                      "symlinkat");
	if (!active || in_shim || !watched_path(dirfd, path, abs))
		return real(target, dirfd, path);
	in_shim = 1;
	name_touch(abs);
	int rc = real(target, dirfd, path) == 0 ? 0 : -errno;
	remember(SHIM_OP_SYMLINK, -1, abs, NULL, 0, 0, rc, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int symlink(const char *target, const char *path)
{
	return shim_symlink(target, AT_FDCWD, path);
}

int symlinkat(const char *target, int dirfd, const char *path)
{
	return shim_symlink(target, dirfd, path);
}

/* Times set on a file below the directory (touch, tar, rsync): a change
 * of its mtime that no write explains, entered as one when it returned
 * (at the later of now and the time set). */
static void times_set(int fd, const char *abs)
{
	struct stat st;

	if ((fd >= 0 ? fstat(fd, &st) : lstat(abs, &st)) != 0 ||
	    !S_ISREG(st.st_mode))
		return;
	shim_seen *e = shim_seen_slot(ctl, shim_seen_key((uint64_t)st.st_dev,
	                                                 (uint64_t)st.st_ino));
	__atomic_add_fetch(&ctl->changes, 1, __ATOMIC_RELAXED);
	if (!e)
		return;
	uint64_t ns = shim_now_ns();
	shim_seen_stamp(e, shim_mtime_ns(&st) > ns ? shim_mtime_ns(&st) : ns);
	/* a time set before the life's first recorded change: the start
	 * cannot be compared with the harness's note any more */
	uint64_t zero = 0;
	__atomic_compare_exchange_n(&e->first_mtime, &zero, UINT64_MAX, 0,
	                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	remember(SHIM_OP_TIMES, -1, abs, NULL, 0, 0, 0, 0);
}

int utimensat(int dirfd, const char *path, const struct timespec t[2],
              int flags)
{
	static int (*real)(int, const char *, const struct timespec *, int);
	char abs[PATH_MAX];

	if (!real)
		real = (int (*)(int, const char *, const struct timespec *,
		                int))dlsym(RTLD_NEXT, "utimensat");
	/* the kernel takes a NULL path (DIRFD itself) though glibc's
	 * declaration says nonnull: the barrier keeps the test */
	const char *p = path;
	__asm__("" : "+r"(p));
	if (!active || in_shim || !p || !watched_path(dirfd, path, abs))
		return real(dirfd, path, t, flags);
	int rc = real(dirfd, path, t, flags);
	int err = errno;
	in_shim = 1;
	if (rc == 0)
		times_set(-1, abs);
	in_shim = 0;
	errno = err;
	return rc;
}

int futimens(int fd, const struct timespec t[2])
{
	static int (*real)(int, const struct timespec *);

	if (!real)
		real = (int (*)(int, const struct timespec *))dlsym(RTLD_NEXT,
		                                                    "futimens");
	if (PASS(fd))
		return real(fd, t);
	int rc = real(fd, t);
	int err = errno;
	in_shim = 1;
	if (rc == 0)
		times_set(fd, fd_path[fd]);
	in_shim = 0;
	errno = err;
	return rc;
}

int utimes(const char *path, const struct timeval tv[2])
{
	static int (*real)(const char *, const struct timeval *);
	char abs[PATH_MAX];

	if (!real)
		real = (int (*)(const char *, const struct timeval *))dlsym(
		        RTLD_NEXT, "utimes");
	if (!active || in_shim || !watched_path(AT_FDCWD, path, abs))
		return real(path, tv);
	int rc = real(path, tv);
	int err = errno;
	in_shim = 1;
	if (rc == 0)
		times_set(-1, abs);
	in_shim = 0;
	errno = err;
	return rc;
}
