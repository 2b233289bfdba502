/*
 * shim_open.c -- the wrappers that make, copy and close descriptors: open
 * and its kin (a create is recorded, O_TRUNC made a recorded truncate),
 * close, closedir, daemon, close_range, closefrom, dup, dup2, dup3, fcntl,
 * and recvmsg (descriptors passed over sockets).  They keep the
 * descriptor table (shim_fd.c) true.
 */

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

/* ---- opens ------------------------------------------------------------------ */

int shim_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	char abs[PATH_MAX];
	faultsim_ticket t = { 0 };
	struct stat st;
	int fd, rc, err, writable, exists;

	load_openat();
	if (!active || in_shim || !watched_path(dirfd, path, abs))
		return real_openat(dirfd, path, flags, mode);
	in_shim = 1;
	writable = (flags & O_ACCMODE) != O_RDONLY;
	if ((flags & O_TMPFILE) == O_TMPFILE)
		refuse("open(%s, O_TMPFILE): unnamed files are not modelled",
		       relative(abs));
	/* without O_CREAT an open that succeeds found the file: only a
	 * create needs to know beforehand */
	exists = !(flags & O_CREAT) || lstat(abs, &st) == 0;
	if (writable || (flags & O_CREAT)) {
		step();
		if ((rc = inject(FAULTSIM_OP_OPEN)) != 0) {
			in_shim = 0;
			errno = -rc;
			return -1;
		}
	}
	if ((flags & O_CREAT) && !exists &&
	    (rc = RECORD(faultsim_cache_create_begin(cache, abs, &t))) < 0) {
		recording_failed(rc, "open", abs);
		in_shim = 0;
		errno = -rc;
		return -1;
	}
	/* O_TRUNC is made a recorded ftruncate below, so its bytes can come
	 * back at a crash */
	/* the cache reads pre-images through the descriptor: a write-only
	 * open is made read-write (falling back when reading is not allowed,
	 * which the first overwrite then reports) */
	fd = -1;
	if ((flags & O_CREAT) && !exists) {
		name_touch(abs);
		remember_begin(SHIM_OP_CREATE, -1, abs, NULL, 0, 0, t.seq);
	}
	if ((flags & O_ACCMODE) == O_WRONLY)
		fd = real_openat(dirfd, path, ((exists ? flags & ~O_TRUNC : flags) &
		                               ~O_ACCMODE) | O_RDWR, mode);
	if (fd < 0)
		fd = real_openat(dirfd, path, exists ? flags & ~O_TRUNC : flags,
		                 mode);
	err = errno;
	faultsim_cache_namespace_end(&t, fd < 0 ? -err : 0);
	if (open_slot && (fd < 0 || fd >= SHIM_FDS))
		remember(SHIM_OP_CREATE, -1, abs, NULL, 0, 0, -err, 0);
	if (fd < 0) {
		in_shim = 0;
		errno = err;
		return -1;
	}
	if ((flags & O_CREAT) && !exists)
		seen_created(fd);
	fd_track(fd, abs, flags);
	if ((fd_file[fd] && (writable || (flags & O_CREAT))) || open_slot)
		remember(exists ? SHIM_OP_OPEN : SHIM_OP_CREATE, fd_file[fd] - 1,
		         abs, NULL, 0, 0, fd, 0);
	if (exists && (flags & O_TRUNC) && writable && !fd_file[fd] &&
	    real_ftruncate(fd, 0) != 0) {
		err = errno;
		real_close(fd);
		in_shim = 0;
		errno = err;
		return -1;
	}
	if (exists && (flags & O_TRUNC) && writable && fd_file[fd] &&
	    (rc = tracked_truncate(fd, 0)) < 0) {
		real_close(fd);
		fd_forget(fd);
		in_shim = 0;
		errno = -rc;
		return -1;
	}
	in_shim = 0;
	return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	WITH_SITE(int, shim_openat(AT_FDCWD, path, flags, mode));
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	WITH_SITE(int, shim_openat(AT_FDCWD, path, flags, mode));
}

int __open(const char *path, int flags, ...) __attribute__((alias("open"), copy(open)));
int __open64(const char *path, int flags, ...) __attribute__((alias("open64"), copy(open64)));

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	WITH_SITE(int, shim_openat(dirfd, path, flags, mode));
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	WITH_SITE(int, shim_openat(dirfd, path, flags, mode));
}

/* glibc's _FORTIFY_SOURCE entry points */
int __open_2(const char *path, int flags)
{
	return shim_openat(AT_FDCWD, path, flags, 0);
}

int __open64_2(const char *path, int flags)
{
	return shim_openat(AT_FDCWD, path, flags, 0);
}

int __openat_2(int dirfd, const char *path, int flags)
{
	return shim_openat(dirfd, path, flags, 0);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
	return shim_openat(dirfd, path, flags, 0);
}

int creat(const char *path, mode_t mode)
{
	return shim_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode)
{
	return creat(path, mode);
}

int close(int fd)
{
	load_close();
	fd_closing(fd);
	return real_close(fd);
}

int __close(int fd) __attribute__((alias("close"), copy(close)));

/* glibc closes these descriptors inside, where no close wrapper sees */
int closedir(DIR *d)
{
	static int (*real)(DIR *);
	if (!real)
		real = (int (*)(DIR *))dlsym(RTLD_NEXT, "closedir");
	/* glibc answers closedir(NULL) with EINVAL; dirfd(NULL) would crash.
	 * The barrier keeps the test: <dirent.h> declares D nonnull, and the
	 * compiler would drop it */
	DIR *p = d;
	__asm__("" : "+r"(p));
	if (p != NULL)
		fd_closing(dirfd(p));
	return real(d);
}

/* glibc's daemon() puts /dev/null on 0, 1 and 2 with dup2s of its own,
 * where no wrapper sees (in the process it returns in: the caller's
 * grandchild).  What the table says of the three is stale after it; a
 * daemon writing to its standard output would otherwise have its writes
 * to /dev/null taken for the file that was there. */
int daemon(int nochdir, int noclose)
{
	static int (*real)(int, int);
	if (!real)
		real = (int (*)(int, int))dlsym(RTLD_NEXT, "daemon");
	int rc = real(nochdir, noclose);
	if (rc == 0 && !noclose) /* on -1 the descriptors are untouched */
		fd_closing_range(0, 2);
	return rc;
}

int close_range(unsigned first, unsigned last, int flags)
{
	static int (*real)(unsigned, unsigned, int);
	if (!real)
		real = (int (*)(unsigned, unsigned, int))dlsym(RTLD_NEXT,
		                                               "close_range");
	/* forgotten first, as close does: one left open by a failed call
	 * is looked up again at its next write or sync (fd_adopt) */
	if (!(flags & ~(CLOSE_RANGE_CLOEXEC | CLOSE_RANGE_UNSHARE)) &&
	    !(flags & CLOSE_RANGE_CLOEXEC)) /* unknown flags: EINVAL */
		fd_closing_range(first, last);
	return real(first, last, flags);
}

void closefrom(int lowfd)
{
	static void (*real)(int);
	if (!real)
		real = (void (*)(int))dlsym(RTLD_NEXT, "closefrom");
	fd_closing_range(lowfd < 0 ? 0 : (unsigned long)lowfd, SHIM_FDS - 1);
	real(lowfd);
}

int dup(int fd)
{
	load_dup();
	int n = real_dup(fd);
	if (n >= 0 && n < SHIM_FDS && !fd_tracked(fd))
		fd_seen[n] = 0;
	if (active && !in_shim && n >= 0 && fd_tracked(fd) &&
	    !in_vfork_child()) {
		if (n >= SHIM_FDS)
			refuse("dup of %s gave descriptor %d, above the %d the "
			       "shim follows", relative(fd_path[fd]), n, SHIM_FDS);
		in_shim = 1;
		fd_copy(fd, n);
		in_shim = 0;
	}
	return n;
}

static int after_dup2(int fd, int n)
{
	if (!active || in_shim || n < 0 || n == fd || in_vfork_child())
		return n;
	in_shim = 1;
	if (fd_tracked(fd) && n >= SHIM_FDS)
		refuse("dup2 of %s to descriptor %d, above the %d the shim "
		       "follows", relative(fd_path[fd]), n, SHIM_FDS);
	fd_copy(fd, n);
	/* a number a followed file was put on is most often a stream's
	 * (0, 1, 2), which glibc closes or replaces inside (fclose,
	 * freopen, daemon): its syncs look again at what it names */
	if (n < SHIM_FDS && fd_tracked(n))
		fd_flags[n] |= FD_ADOPTED;
	in_shim = 0;
	return n;
}

int dup2(int fd, int to)
{
	load_dup2();
	return after_dup2(fd, real_dup2(fd, to));
}

int __dup2(int fd, int to) __attribute__((alias("dup2"), copy(dup2)));

int dup3(int fd, int to, int flags)
{
	load_dup3();
	return after_dup2(fd, real_dup3(fd, to, flags));
}

static int shim_fcntl(int fd, int cmd, void *arg)
{
	load_fcntl();
	if (!active || in_shim || !fd_tracked(fd))
		return real_fcntl(fd, cmd, arg);
	int n = real_fcntl(fd, cmd, arg);
	if (n < 0)
		return n;
	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && !in_vfork_child()) {
		if (n >= SHIM_FDS)
			refuse("fcntl(F_DUPFD) of %s gave descriptor %d, above "
			       "the %d the shim follows", relative(fd_path[fd]),
			       n, SHIM_FDS);
		in_shim = 1;
		fd_copy(fd, n);
		in_shim = 0;
	} else if (cmd == F_SETFL) {
		/* the flags belong to the open file description: every
		 * descriptor on it sees the change */
		fd_flags[fd] = (uint8_t)((fd_flags[fd] & ~FD_APPEND) |
		                         (((long)arg & O_APPEND) ? FD_APPEND : 0));
	}
	return n;
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return shim_fcntl(fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return shim_fcntl(fd, cmd, arg);
}

int __fcntl(int fd, int cmd, ...) __attribute__((alias("fcntl"), copy(fcntl)));

/* ---- descriptors passed over sockets -------------------------------------- */

/* SCM_RIGHTS: a descriptor another process opened arrives without any open
 * here; each one below the watched directory is followed from now on. */
static void adopt_received(const struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c;
	     c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		const unsigned char *p = CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, p + i * sizeof fd, sizeof fd);
			if (fd < 0)
				continue;
			if (fd >= SHIM_FDS) {
				char abs[PATH_MAX];
				if (fd_names(fd, abs) == 0 && is_watched(abs))
					refuse("%s received as descriptor %d, "
					       "above the %d the shim follows",
					       relative(abs), fd, SHIM_FDS);
				continue;
			}
			fd_forget(fd);
			fd_adopt(fd);
		}
	}
}

ssize_t recvmsg(int sock, struct msghdr *msg, int flags)
{
	static ssize_t (*real)(int, struct msghdr *, int);
	if (!real)
		real = (ssize_t(*)(int, struct msghdr *, int))
			dlsym(RTLD_NEXT, "recvmsg");
	ssize_t n = real(sock, msg, flags);
	if (n >= 0 && active && !in_shim && msg && msg->msg_controllen) {
		int err = errno;
		in_shim = 1;
		adopt_received(msg);
		in_shim = 0;
		errno = err;
	}
	return n;
}
