/*
 * shim_write.c -- the wrappers that change a tracked file's bytes or size:
 * write, pwrite, writev, pwritev and pwritev2 (with their 64 and internal
 * names), ftruncate, truncate, fallocate and posix_fallocate, each
 * recorded before its real call (shim.c: the order inside one tracked
 * call).  The workload's protocol lines (KEEL_TORTURE_FD) are entered in
 * the call ring here too.
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim.h"
#include "shim_internal.h"

#define ZERO_MAX (64u << 20)  /* largest hole punched (recorded as zeros) */

/* ---- writes ---------------------------------------------------------------- */

/* One tracked write of BUF: WHENCE SEEK_SET at OFF, SEEK_CUR (write),
 * SEEK_END (O_APPEND).  Returns as write(2). */
static ssize_t tracked_write(int fd, const void *buf, size_t len, int whence,
                             uint64_t off, int durable)
{
	int file, e, rc, err;
	faultsim_ticket t = { 0 };
	ssize_t n;

	in_shim = 1;
	fd_revalidate(fd);
	file = fd_file[fd] - 1;
	step();
	map_seal(file);
	e = inject(FAULTSIM_OP_PWRITE);
	if (e == FAULTSIM_SHORT) {
		len = shim_short_len(fd, len);
	} else if (e) {
		in_shim = 0;
		errno = -e;
		return -1;
	}
	if (fd_flags[fd] & FD_APPEND)
		whence = SEEK_END; /* Linux: pwrite on O_APPEND appends too */
	durable |= (fd_flags[fd] & FD_SYNC) != 0;
	rc = RECORD(faultsim_cache_write_begin_at(cache, file, fd, buf, len, whence,
	                                   &off, &t));
	if (rc < 0) {
		recording_failed(rc, "write", fd_path[fd]);
		in_shim = 0;
		errno = -rc;
		return -1;
	}
	expect_begin(file, fd, off + len, 0);
	remember_begin(SHIM_OP_WRITE, file, fd_path[fd], NULL, off, len, t.seq);
	n = whence == SEEK_SET ? real_pwrite(fd, buf, len, (off_t)off)
	                       : real_write(fd, buf, len);
	err = errno;
	/* the size the recorder read under its lock, and what this call
	 * added: one fstat a write fewer */
	expect_end(file, fd, n > 0 && off + (uint64_t)n > t.size ?
	           off + (uint64_t)n : t.size, buf, off, n);
	if (durable)
		faultsim_cache_write_end_durable(&t, n < 0 ? -err : n);
	else
		faultsim_cache_write_end(&t, n < 0 ? -err : n);
	if (n > 0)
		__atomic_add_fetch(&ctl->bytes, (uint64_t)n, __ATOMIC_RELAXED);
	remember(SHIM_OP_WRITE, file, fd_path[fd], NULL, off, len,
	         n < 0 ? -err : n, durable);
	in_shim = 0;
	errno = err;
	return n;
}

/* A vector write is recorded and made as one write of its gathered bytes
 * (the same bytes at the same place; POSIX makes writev atomic as one). */
static ssize_t tracked_writev(int fd, const struct iovec *iov, int cnt,
                              int whence, uint64_t off, int durable)
{
	size_t len = 0, at = 0;
	unsigned char *buf;
	ssize_t n;

	if (cnt < 0) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	in_shim = 1;
	/* block-aligned memory for a descriptor opened with O_DIRECT, whose
	 * own segments the kernel checks first (shim_dio_check) */
	int dio = shim_dio_check(fd, -1, iov, cnt);
	if (dio < 0) {
		in_shim = 0;
		errno = -dio;
		return -1;
	}
	if (dio == 0 || posix_memalign((void **)&buf, SHIM_DIO_ALIGN,
	                               len ? len : 1) != 0)
		buf = dio ? NULL : malloc(len ? len : 1);
	in_shim = 0;
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < cnt; i++) {
		memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	n = tracked_write(fd, buf, len, whence, off, durable);
	int err = errno;
	free(buf);
	errno = err;
	return n;
}

/* The workload's protocol descriptor (KEEL_TORTURE_FD), or -1. */
int proto_fd = -1;

/* A protocol line goes into the ring too (SHIM_OP_PROTOCOL); the
 * newlines between lines written at once are shown as ';'. */
static ssize_t protocol_write(int fd, const void *buf, size_t len)
{
	char text[SHIM_LABEL];
	size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
	ssize_t rc = real_write(fd, buf, len);
	int err = errno;

	memcpy(text, buf, n);
	while (n > 0 && text[n - 1] == '\n')
		n--;
	text[n] = '\0';
	for (char *p = text; (p = strchr(p, '\n'));)
		*p = ';';
	in_shim = 1;
	remember(SHIM_OP_PROTOCOL, -1, text, NULL, 0, len, rc < 0 ? -err : rc,
	         0);
	in_shim = 0;
	errno = err;
	return rc;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	load_write();
	if (PASS(fd)) /* the protocol pipe is never a tracked file */
		return fd == proto_fd && active && !in_shim ?
		       protocol_write(fd, buf, len) : real_write(fd, buf, len);
	site_ra = __builtin_return_address(0);
	ssize_t n = tracked_write(fd, buf, len, SEEK_CUR, 0, 0);
	site_ra = NULL;
	return n;
}

/* glibc exports internal names of some calls beside the public ones
 * (__write, __read, __open, __open64, __close, __dup2, __fcntl): a
 * program or library that calls those must meet the same wrappers, or a
 * close would leave a stale entry and a write would bypass the record.
 * Each is the public wrapper under a second name (the same code, so the
 * caller's address a report names is the caller's). */
ssize_t __write(int fd, const void *buf, size_t len) __attribute__((alias("write"), copy(write)));

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	load_pwrite();
	if (PASS(fd))
		return real_pwrite(fd, buf, len, off);
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	site_ra = __builtin_return_address(0);
	ssize_t n = tracked_write(fd, buf, len, SEEK_SET, (uint64_t)off, 0);
	site_ra = NULL;
	return n;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite(fd, buf, len, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	static ssize_t (*real)(int, const struct iovec *, int);
	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int))
			dlsym(RTLD_NEXT, "writev");
	if (PASS(fd))
		return real(fd, iov, cnt);
	return tracked_writev(fd, iov, cnt, SEEK_CUR, 0, 0);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	static ssize_t (*real)(int, const struct iovec *, int, off_t);
	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int, off_t))
			dlsym(RTLD_NEXT, "pwritev");
	if (PASS(fd))
		return real(fd, iov, cnt, off);
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	return tracked_writev(fd, iov, cnt, SEEK_SET, (uint64_t)off, 0);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return pwritev(fd, iov, cnt, off);
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
                 int flags)
{
	static ssize_t (*real)(int, const struct iovec *, int, off_t, int);
	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int, off_t, int))
			dlsym(RTLD_NEXT, "pwritev2");
	if (PASS(fd))
		return real(fd, iov, cnt, off, flags);
	int durable = (flags & (RWF_DSYNC | RWF_SYNC)) != 0;
	if (flags & RWF_APPEND)
		return tracked_writev(fd, iov, cnt, SEEK_END, 0, durable);
	if (off == -1)
		return tracked_writev(fd, iov, cnt, SEEK_CUR, 0, durable);
	return tracked_writev(fd, iov, cnt, SEEK_SET, (uint64_t)off, durable);
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off,
                    int flags)
{
	return pwritev2(fd, iov, cnt, off, flags);
}

/* ---- size changes ------------------------------------------------------------ */

int tracked_truncate(int fd, uint64_t len)
{
	int file, rc;
	faultsim_ticket t = { 0 };

	fd_revalidate(fd);
	file = fd_file[fd] - 1;
	step();
	map_seal(file);
	if ((rc = inject(FAULTSIM_OP_FTRUNCATE)) != 0)
		return rc;
	rc = RECORD(faultsim_cache_truncate_begin(cache, file, fd, len, &t));
	if (rc < 0) {
		recording_failed(rc, "ftruncate", fd_path[fd]);
		return rc;
	}
	expect_begin(file, fd, len, 1);
	remember_begin(SHIM_OP_TRUNCATE, file, fd_path[fd], NULL, len, 0, t.seq);
	rc = real_ftruncate(fd, (off_t)len) == 0 ? 0 : -errno;
	expect_end(file, fd, UINT64_MAX, NULL, 0, 0);
	faultsim_cache_change_end(&t, rc);
	remember(SHIM_OP_TRUNCATE, file, fd_path[fd], NULL, len, 0, rc, 0);
	return rc;
}

int ftruncate(int fd, off_t len)
{
	load_ftruncate();
	if (PASS(fd))
		return real_ftruncate(fd, len);
	if (len < 0) {
		errno = EINVAL;
		return -1;
	}
	in_shim = 1;
	int rc = tracked_truncate(fd, (uint64_t)len);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int ftruncate64(int fd, off_t len)
{
	return ftruncate(fd, len);
}

int truncate(const char *path, off_t len)
{
	static int (*real)(const char *, off_t);
	char abs[PATH_MAX];
	int fd, rc;

	if (!real)
		real = (int (*)(const char *, off_t))dlsym(RTLD_NEXT, "truncate");
	if (!active || in_shim || !watched_path(AT_FDCWD, path, abs))
		return real(path, len);
	fd = open(abs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = ftruncate(fd, len);
	int err = errno;
	close(fd);
	errno = err;
	return rc;
}

int truncate64(const char *path, off_t len)
{
	return truncate(path, len);
}

/* Zeroing modes are recorded as a write of zeros over the range. */
static int tracked_zero(int fd, int mode, uint64_t off, uint64_t len)
{
	int file = fd_file[fd] - 1, rc;
	faultsim_ticket t = { 0 };
	struct stat st;
	unsigned char *zeros;

	if (fstat(fd, &st) != 0)
		return -errno;
	if ((mode & FALLOC_FL_KEEP_SIZE) && off + len > (uint64_t)st.st_size)
		len = off < (uint64_t)st.st_size ? (uint64_t)st.st_size - off : 0;
	if (len > ZERO_MAX)
		refuse("fallocate(%#x) of %llu bytes on %s: the shim records "
		       "a zeroed range as a write of zeros, at most %u bytes",
		       (unsigned)mode, (unsigned long long)len,
		       relative(fd_path[fd]), ZERO_MAX);
	zeros = calloc(1, len ? len : 1);
	if (!zeros)
		return -ENOMEM;
	rc = RECORD(faultsim_cache_write_begin(cache, file, fd, zeros, len, off, &t));
	if (rc < 0) {
		recording_failed(rc, "fallocate", fd_path[fd]);
		free(zeros);
		return rc;
	}
	expect_begin(file, fd, off + len, 0);
	remember_begin(SHIM_OP_ALLOCATE, file, fd_path[fd], NULL, off, len,
	               t.seq);
	rc = real_fallocate(fd, mode, (off_t)off, (off_t)len) == 0 ? 0 : -errno;
	expect_end(file, fd, UINT64_MAX, len ? zeros : NULL, off,
	           rc == 0 ? (ssize_t)len : 0);
	faultsim_cache_write_end(&t, rc == 0 ? (ssize_t)len : rc);
	free(zeros);
	return rc;
}

static int tracked_allocate(int fd, int mode, uint64_t off, uint64_t len,
                            int posix)
{
	int file, rc;
	faultsim_ticket t = { 0 };

	fd_revalidate(fd);
	file = fd_file[fd] - 1;
	step();
	map_seal(file);
	if ((rc = inject(FAULTSIM_OP_FALLOCATE)) != 0)
		return rc;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
	             FALLOC_FL_ZERO_RANGE))
		refuse("fallocate(%#x) on %s: collapsing or inserting ranges "
		       "is not modelled", (unsigned)mode, relative(fd_path[fd]));
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		rc = tracked_zero(fd, mode, off, len);
	} else if (mode & FALLOC_FL_KEEP_SIZE) {
		/* blocks only: nothing a reader or a crash can tell apart;
		 * the file system may stamp its mtime all the same */
		seen_begin(file, fd);
		rc = real_fallocate(fd, mode, (off_t)off, (off_t)len) == 0 ? 0
		                                                        : -errno;
		seen_end(file);
	} else {
		rc = RECORD(faultsim_cache_extend_begin(cache, file, fd, off, len, &t));
		if (rc < 0) {
			recording_failed(rc, "fallocate", fd_path[fd]);
			return rc;
		}
		expect_begin(file, fd, off + len, 0);
		remember_begin(SHIM_OP_ALLOCATE, file, fd_path[fd], NULL, off,
		               len, t.seq);
		if (posix)
			rc = -real_posix_fallocate(fd, (off_t)off, (off_t)len);
		else
			rc = real_fallocate(fd, mode, (off_t)off, (off_t)len) == 0
			             ? 0 : -errno;
		expect_end(file, fd, UINT64_MAX, NULL, 0, 0);
		faultsim_cache_change_end(&t, rc);
	}
	remember(SHIM_OP_ALLOCATE, file, fd_path[fd], NULL, off, len, rc, 0);
	return rc;
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	load_fallocate();
	if (PASS(fd))
		return real_fallocate(fd, mode, off, len);
	if (off < 0 || len <= 0) {
		errno = EINVAL;
		return -1;
	}
	in_shim = 1;
	int rc = tracked_allocate(fd, mode, (uint64_t)off, (uint64_t)len, 0);
	in_shim = 0;
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

int fallocate64(int fd, int mode, off_t off, off_t len)
{
	return fallocate(fd, mode, off, len);
}

int posix_fallocate(int fd, off_t off, off_t len)
{
	load_posix_fallocate();
	if (PASS(fd))
		return real_posix_fallocate(fd, off, len);
	if (off < 0 || len <= 0)
		return EINVAL;
	in_shim = 1;
	int rc = tracked_allocate(fd, 0, (uint64_t)off, (uint64_t)len, 1);
	in_shim = 0;
	return -rc;
}

int posix_fallocate64(int fd, off_t off, off_t len)
{
	return posix_fallocate(fd, off, len);
}
