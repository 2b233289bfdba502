/*
 * io_posix.c -- the default I/O backend: plain POSIX calls, each behind a
 * libfiu fault point (names in io.h and docs/faults.md).  With no point
 * enabled a check costs one call into libfiu.
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <fiu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The errno a fault point reports: its failinfo, or EIO when none given. */
static int fault_errno(void)
{
	intptr_t e = (intptr_t)fiu_failinfo();
	return e > 0 ? (int)e : EIO;
}

#define FAULT(name)                                  \
	do {                                         \
		if (fiu_fail("keel/io/" name))       \
			return -fault_errno();       \
	} while (0)

static int px_open(void *ctx, const char *path, int flags, unsigned mode)
{
	(void)ctx;
	FAULT("open");
	int of = (flags & KEEL_IO_RDONLY) ? O_RDONLY : O_RDWR;
	if (flags & KEEL_IO_CREATE)
		of |= O_CREAT;
	if (flags & KEEL_IO_EXCL)
		of |= O_EXCL;
	int fd = open(path, of | O_CLOEXEC, mode);
	return fd < 0 ? -errno : fd;
}

static int px_close(void *ctx, int fd)
{
	(void)ctx;
	FAULT("close");
	return close(fd) < 0 ? -errno : 0;
}

static ssize_t px_pread(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
	(void)ctx;
	FAULT("pread");
	ssize_t n = pread(fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static ssize_t px_pwrite(void *ctx, int fd, const void *buf, size_t len,
                         uint64_t off)
{
	(void)ctx;
	if (fiu_fail("keel/io/pwrite")) {
		if ((intptr_t)fiu_failinfo() == -1) { /* a short write */
			ssize_t n = pwrite(fd, buf, len / 2, (off_t)off);
			return n < 0 ? -errno : n;
		}
		return -fault_errno();
	}
	ssize_t n = pwrite(fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static int px_fdatasync(void *ctx, int fd)
{
	(void)ctx;
	FAULT("fdatasync");
	return fdatasync(fd) < 0 ? -errno : 0;
}

static int px_fsync(void *ctx, int fd)
{
	(void)ctx;
	FAULT("fsync");
	return fsync(fd) < 0 ? -errno : 0;
}

static int px_ftruncate(void *ctx, int fd, uint64_t len)
{
	(void)ctx;
	FAULT("ftruncate");
	return ftruncate(fd, (off_t)len) < 0 ? -errno : 0;
}

static int px_fallocate(void *ctx, int fd, uint64_t off, uint64_t len)
{
	(void)ctx;
	FAULT("fallocate");
	if (fallocate(fd, 0, (off_t)off, (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	/* Fall back to extending the size; the blocks come on first write. */
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size < off + len && ftruncate(fd, (off_t)(off + len)) < 0)
		return -errno;
	return 0;
}

static int px_fstat(void *ctx, int fd, uint64_t *size, int *is_reg)
{
	struct stat st;
	(void)ctx;
	FAULT("fstat");
	if (fstat(fd, &st) < 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	*is_reg = S_ISREG(st.st_mode) ? 1 : 0;
	return 0;
}

static int px_rename(void *ctx, const char *from, const char *to)
{
	(void)ctx;
	FAULT("rename");
	return rename(from, to) < 0 ? -errno : 0;
}

static int px_unlink(void *ctx, const char *path)
{
	(void)ctx;
	FAULT("unlink");
	return unlink(path) < 0 ? -errno : 0;
}

static int px_fsync_dir(void *ctx, const char *path)
{
	(void)ctx;
	FAULT("fsync_dir");
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

#define HUGE_ALIGN ((size_t)2 << 20)

/* The file mapped at a 2 MiB aligned address (or NULL): reserve LEN plus
 * the alignment, map the file over the aligned part, return the rest. */
static void *huge_map(int fd, size_t len)
{
	size_t span = len + HUGE_ALIGN;
	uint8_t *r = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	uint8_t *a = (uint8_t *)(((uintptr_t)r + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1));
	void *q = mmap(a, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
	if (q == MAP_FAILED) {
		munmap(r, span);
		return NULL;
	}
	if (a > r)
		munmap(r, (size_t)(a - r));
	if (r + span > a + len)
		munmap(a + len, (size_t)(r + span - (a + len)));
	return q;
}

static void *px_mmap(void *ctx, int fd, size_t len, int *err)
{
	(void)ctx;
	if (fiu_fail("keel/io/mmap")) {
		*err = -fault_errno();
		return NULL;
	}
	/* Huge pages: the kernel may map a 2 MiB page-cache folio with one
	 * page-table entry when the address is 2 MiB aligned, and with
	 * MADV_HUGEPAGE a fault reads ahead in 2 MiB folios.  A random read
	 * over a large store then costs no TLB walk.  Best effort. */
	void *p = len >= HUGE_ALIGN ? huge_map(fd, len) : NULL;
	if (p) {
		(void)madvise(p, len, MADV_HUGEPAGE);
		return p;
	}
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	return p;
}

static int px_munmap(void *ctx, void *addr, size_t len)
{
	(void)ctx;
	return munmap(addr, len) < 0 ? -errno : 0;
}

/* Open-file-description locks: owned by the open file, not the process, so
 * two handles in one process exclude each other too, and the kernel drops
 * the lock when a killed writer's descriptors close. */
static int px_lock(void *ctx, int fd, int exclusive, int wait_ms)
{
	struct flock fl = {0};
	(void)ctx;
	FAULT("lock");
	fl.l_type = exclusive < 0 ? F_UNLCK : exclusive ? F_WRLCK : F_RDLCK;
	fl.l_whence = SEEK_SET;
	if (wait_ms < 0)
		return fcntl(fd, F_OFD_SETLKW, &fl) < 0 ? -errno : 0;
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
			return 0;
		if (errno != EAGAIN && errno != EACCES)
			return -errno;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - start.tv_sec) * 1000 +
		          (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms >= wait_ms)
			return -EAGAIN;
		usleep(2000);
	}
}

/* O_DIRECT through a second open of the same file (/proc/self/fd: the
 * descriptor's own file, wherever its name went): the kernel writes back
 * dirty pages in the range, then reads the device.  Whole 4 KiB blocks into
 * an aligned buffer; the bytes asked for are copied out. */
static ssize_t px_pread_device(void *ctx, int fd, void *buf, size_t len,
                               uint64_t off)
{
	char self[64];
	(void)ctx;
	FAULT("pread_device");
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	int dfd = open(self, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (dfd < 0)
		return errno == EINVAL ? -EOPNOTSUPP : -errno;
	uint64_t from = off & ~(uint64_t)4095;
	size_t span = (size_t)(((off + len + 4095) & ~(uint64_t)4095) - from);
	void *a = NULL;
	if (posix_memalign(&a, 4096, span)) {
		close(dfd);
		return -ENOMEM;
	}
	ssize_t n = pread(dfd, a, span, (off_t)from);
	int e = n < 0 ? (errno == EINVAL ? EOPNOTSUPP : errno) : 0;
	close(dfd);
	if (e) {
		free(a);
		return -e;
	}
	size_t skip = (size_t)(off - from), got = 0;
	if ((size_t)n > skip) {
		got = (size_t)n - skip < len ? (size_t)n - skip : len;
		memcpy(buf, (uint8_t *)a + skip, got);
	}
	free(a);
	return (ssize_t)got;
}

static const keel_io posix_io = {
	.ctx = NULL,
	.open = px_open,
	.close = px_close,
	.pread = px_pread,
	.pwrite = px_pwrite,
	.fdatasync = px_fdatasync,
	.fsync = px_fsync,
	.ftruncate = px_ftruncate,
	.fallocate = px_fallocate,
	.fstat = px_fstat,
	.rename = px_rename,
	.unlink = px_unlink,
	.fsync_dir = px_fsync_dir,
	.mmap = px_mmap,
	.munmap = px_munmap,
	.lock = px_lock,
	.pread_device = px_pread_device,
};

const keel_io *keel_io_posix(void)
{
	return &posix_io;
}

int keel_io_pwrite_all(const keel_io *io, int fd, const void *buf, size_t len,
                       uint64_t off)
{
	const uint8_t *p = buf;
	while (len > 0) {
		/* Linux transfers at most ~2 GiB a call: stay well below so a
		 * short count always means a failure. */
		size_t chunk = len < ((size_t)1 << 30) ? len : (size_t)1 << 30;
		ssize_t n = io->pwrite(io->ctx, fd, p, chunk, off);
		if (n < 0)
			return (int)n;
		if ((size_t)n < chunk)
			return -EIO; /* a short write is a failed write: fail-stop */
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int keel_io_pread_all(const keel_io *io, int fd, void *buf, size_t len,
                      uint64_t off)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = io->pread(io->ctx, fd, p, len, off);
		if (n < 0) {
			if (n == -EINTR)
				continue;
			return (int)n;
		}
		if (n == 0)
			return -ENODATA; /* the file ends first: not an I/O error */
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}
