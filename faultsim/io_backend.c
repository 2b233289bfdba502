/*
 * io_backend.c -- faultsim as a keel_io backend (base/io.h): plain POSIX
 * calls, each recorded in the volatile cache, each preceded by its libfiu
 * point "keel/faultsim/<op>" and the fault specs, and every failed sync run
 * through the fsync profile.  This file only adapts: the model is in
 * cache.c, sync.c, namespace.c and crash.c, which know nothing of keel_io.
 *
 * Order inside one call: (1) count the step (an enumeration may kill the
 * process here, before the call), (2) check faults: an injected fault
 * returns without touching the file, (3) record, (4) make the real call,
 * (5) end the record with the result.
 */
#include <errno.h>
#include <fcntl.h>
#include <fiu.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "faultsim.h"

#define FAULTSIM_MAX_FDS 4096 /* fds above this are refused (EMFILE)   */

struct faultsim_io {
	keel_io table;            /* handed to the engine; ctx = this        */
	faultsim_cache *cache;
	faultsim_faults *faults;
	faultsim_profile profile;
	int32_t fd_file[FAULTSIM_MAX_FDS]; /* file id + 1; 0 = not tracked  */
	int32_t fd_err[FAULTSIM_MAX_FDS];  /* writeback error not yet reported
	                                      on this fd (errseq), or 0       */
};

static const char *const fiu_names[FAULTSIM_OP_COUNT] = {
	"keel/faultsim/open",      "keel/faultsim/pread",
	"keel/faultsim/pwrite",    "keel/faultsim/fdatasync",
	"keel/faultsim/fsync",     "keel/faultsim/ftruncate",
	"keel/faultsim/fallocate", "keel/faultsim/fstat",
	"keel/faultsim/rename",    "keel/faultsim/unlink",
	"keel/faultsim/fsync_dir", "keel/faultsim/mmap",
	"keel/faultsim/lock",
};

/* The fault for OP, if any: a negative errno, FAULTSIM_SHORT, or 0.  The
 * libfiu point comes first so fiu-ctrl can override the specs. */
/* A spec's "crash" fired in this thread: the call goes ahead, and the
 * process dies as it returns (crash_point). */
static __thread int crash_due;

static int inject(faultsim_io *fio, faultsim_op op)
{
	int e = 0;
	if (fiu_fail(fiu_names[op])) {
		intptr_t info = (intptr_t)fiu_failinfo();
		e = info == -1 ? FAULTSIM_SHORT : info > 0 ? -(int)info : -EIO;
	} else if (fio->faults) {
		e = faultsim_faults_check(fio->faults, op);
	}
	if (e == FAULTSIM_CRASH) {
		crash_due = 1;
		return 0;
	}
	if (e == FAULTSIM_SHORT && op != FAULTSIM_OP_PREAD &&
	    op != FAULTSIM_OP_PWRITE)
		e = -EIO;
	return e;
}

static int file_of(faultsim_io *fio, int fd)
{
	if (fd < 0 || fd >= FAULTSIM_MAX_FDS)
		return -1;
	return __atomic_load_n(&fio->fd_file[fd], __ATOMIC_ACQUIRE) - 1;
}

/* ---- files ----------------------------------------------------------------- */

/* Opens PATH; a file that did not exist yet is recorded as created. */
static int fs_open(void *ctx, const char *path, int flags, unsigned mode)
{
	faultsim_io *fio = ctx;
	char abs[FAULTSIM_PATH_MAX];
	faultsim_ticket t = { 0 };
	struct stat st;
	int oflags = O_CLOEXEC, fd, rc;

	faultsim_faults_step(fio->faults);
	if ((rc = inject(fio, FAULTSIM_OP_OPEN)) != 0)
		return rc;
	oflags |= (flags & KEEL_IO_RDONLY) ? O_RDONLY : O_RDWR;
	if (flags & KEEL_IO_CREATE)
		oflags |= O_CREAT | ((flags & KEEL_IO_EXCL) ? O_EXCL : 0);
	if ((rc = faultsim_cache_abspath(path, abs, sizeof abs)) < 0)
		return rc;
	if ((flags & KEEL_IO_CREATE) && lstat(abs, &st) != 0 &&
	    (rc = faultsim_cache_create_begin(fio->cache, abs, &t)) < 0)
		return rc;
	fd = open(abs, oflags, mode ? mode : 0644);
	rc = fd < 0 ? -errno : 0;
	faultsim_cache_namespace_end(&t, rc);
	if (fd < 0 || (flags & KEEL_IO_RDONLY))
		return fd < 0 ? rc : fd;
	rc = fd >= FAULTSIM_MAX_FDS ? -EMFILE
	                            : faultsim_cache_track(fio->cache, fd, abs);
	if (rc < 0) {
		close(fd); /* an untracked writable fd would escape the model */
		return rc;
	}
	__atomic_store_n(&fio->fd_err[fd], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&fio->fd_file[fd], rc + 1, __ATOMIC_RELEASE);
	return fd;
}

static int fs_close(void *ctx, int fd)
{
	faultsim_io *fio = ctx;
	if (fd >= 0 && fd < FAULTSIM_MAX_FDS) {
		__atomic_store_n(&fio->fd_file[fd], 0, __ATOMIC_RELEASE);
		__atomic_store_n(&fio->fd_err[fd], 0, __ATOMIC_RELEASE);
	}
	return close(fd) == 0 ? 0 : -errno;
}

static ssize_t fs_pread(void *ctx, int fd, void *buf, size_t len,
                        uint64_t off)
{
	int e = inject(ctx, FAULTSIM_OP_PREAD);
	if (e == FAULTSIM_SHORT)
		len /= 2;
	else if (e)
		return e;
	ssize_t n = pread(fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

/* What the device holds: the page cache's bytes, except those whose newest
 * write a failed sync LOST (ext4/xfs: marked clean, still readable, never
 * written), which read as their pre-image. */
static ssize_t fs_pread_device(void *ctx, int fd, void *buf, size_t len,
                               uint64_t off)
{
	faultsim_io *fio = ctx;
	int e = inject(ctx, FAULTSIM_OP_PREAD), file = file_of(fio, fd);
	if (e == FAULTSIM_SHORT)
		len /= 2;
	else if (e)
		return e;
	ssize_t n = pread(fd, buf, len, (off_t)off);
	if (n < 0)
		return -errno;
	if (file >= 0 && n > 0 &&
	    (e = faultsim_cache_device_view(fio->cache, file, buf, (size_t)n,
	                                    off)) < 0)
		return e;
	return n;
}

static ssize_t fs_pwrite(void *ctx, int fd, const void *buf, size_t len,
                         uint64_t off)
{
	faultsim_io *fio = ctx;
	faultsim_ticket t = { 0 };
	int file = file_of(fio, fd), e, rc;

	faultsim_faults_step(fio->faults);
	e = inject(fio, FAULTSIM_OP_PWRITE);
	if (e == FAULTSIM_SHORT)
		len /= 2;
	else if (e)
		return e;
	if (file >= 0 &&
	    (rc = faultsim_cache_write_begin(fio->cache, file, fd, buf, len,
	                                     off, &t)) < 0)
		return rc;
	ssize_t n = pwrite(fd, buf, len, (off_t)off);
	if (n < 0)
		n = -errno;
	faultsim_cache_write_end(&t, n);
	return n;
}

/* A sync of FILE failed with RC on FD: like Linux since 4.13 (errseq), the
 * error is also reported once to every other descriptor open on the file
 * at their next sync -- the pages are gone whichever descriptor's sync
 * found out.  A descriptor opened later never hears of it. */
static void errseq_spread(faultsim_io *fio, int file, int fd, int rc)
{
	for (int i = 0; i < FAULTSIM_MAX_FDS; i++) {
		int32_t zero = 0;
		if (i != fd && file_of(fio, i) == file)
			__atomic_compare_exchange_n(&fio->fd_err[i], &zero, rc, 0,
			                            __ATOMIC_ACQ_REL,
			                            __ATOMIC_ACQUIRE);
	}
}

/* fdatasync and fsync: the profile decides what a failure leaves behind. */
static int sync_common(faultsim_io *fio, int fd, faultsim_op op)
{
	int file = file_of(fio, fd), rc;

	faultsim_faults_step(fio->faults);
	uint64_t mark = faultsim_cache_sync_begin(fio->cache);
	rc = inject(fio, op);
	if (rc == 0) {
		int r = op == FAULTSIM_OP_FSYNC ? fsync(fd) : fdatasync(fd);
		rc = r == 0 ? 0 : -errno;
	}
	if (file >= 0)
		faultsim_cache_sync_end(fio->cache, file, mark, rc, fio->profile);
	if (file >= 0 && rc < 0)
		errseq_spread(fio, file, fd, rc);
	/* An error another descriptor's sync met: this sync wrote back what
	 * was dirty now, and still reports it, once. */
	int pending = file >= 0 ? __atomic_exchange_n(&fio->fd_err[fd], 0,
	                                               __ATOMIC_ACQ_REL)
	                        : 0;
	rc = rc < 0 ? rc : pending;
	if (rc < 0 && faultsim_faults_crashes_on_failed_sync(fio->faults))
		kill(getpid(), SIGKILL); /* the program's crash, not the cut */
	return rc;
}

static int fs_fdatasync(void *ctx, int fd)
{
	return sync_common(ctx, fd, FAULTSIM_OP_FDATASYNC);
}

static int fs_fsync(void *ctx, int fd)
{
	return sync_common(ctx, fd, FAULTSIM_OP_FSYNC);
}

static int fs_ftruncate(void *ctx, int fd, uint64_t len)
{
	faultsim_io *fio = ctx;
	faultsim_ticket t = { 0 };
	int file = file_of(fio, fd), rc;

	faultsim_faults_step(fio->faults);
	if ((rc = inject(fio, FAULTSIM_OP_FTRUNCATE)) != 0)
		return rc;
	if (file >= 0 && (rc = faultsim_cache_truncate_begin(
	                          fio->cache, file, fd, len, &t)) < 0)
		return rc;
	rc = ftruncate(fd, (off_t)len) == 0 ? 0 : -errno;
	faultsim_cache_change_end(&t, rc);
	return rc;
}

static int fs_fallocate(void *ctx, int fd, uint64_t off, uint64_t len)
{
	faultsim_io *fio = ctx;
	faultsim_ticket t = { 0 };
	int file = file_of(fio, fd), rc;

	faultsim_faults_step(fio->faults);
	if ((rc = inject(fio, FAULTSIM_OP_FALLOCATE)) != 0)
		return rc;
	if (file >= 0 && (rc = faultsim_cache_extend_begin(
	                          fio->cache, file, fd, off, len, &t)) < 0)
		return rc;
	rc = -posix_fallocate(fd, (off_t)off, (off_t)len);
	faultsim_cache_change_end(&t, rc);
	return rc;
}

static int fs_fstat(void *ctx, int fd, uint64_t *size, int *is_reg)
{
	struct stat st;
	int rc = inject(ctx, FAULTSIM_OP_FSTAT);
	if (rc)
		return rc;
	if (fstat(fd, &st) != 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	*is_reg = S_ISREG(st.st_mode);
	return 0;
}

/* ---- names ----------------------------------------------------------------- */

static int fs_rename(void *ctx, const char *from, const char *to)
{
	faultsim_io *fio = ctx;
	char afrom[FAULTSIM_PATH_MAX], ato[FAULTSIM_PATH_MAX];
	faultsim_ticket t = { 0 };
	int rc;

	faultsim_faults_step(fio->faults);
	if ((rc = inject(fio, FAULTSIM_OP_RENAME)) != 0 ||
	    (rc = faultsim_cache_abspath(from, afrom, sizeof afrom)) < 0 ||
	    (rc = faultsim_cache_abspath(to, ato, sizeof ato)) < 0 ||
	    (rc = faultsim_cache_rename_begin(fio->cache, afrom, ato, &t)) < 0)
		return rc;
	rc = rename(afrom, ato) == 0 ? 0 : -errno;
	faultsim_cache_namespace_end(&t, rc);
	return rc;
}

static int fs_unlink(void *ctx, const char *path)
{
	faultsim_io *fio = ctx;
	char abs[FAULTSIM_PATH_MAX];
	faultsim_ticket t = { 0 };
	int rc;

	faultsim_faults_step(fio->faults);
	if ((rc = inject(fio, FAULTSIM_OP_UNLINK)) != 0 ||
	    (rc = faultsim_cache_abspath(path, abs, sizeof abs)) < 0 ||
	    (rc = faultsim_cache_unlink_begin(fio->cache, abs, &t)) < 0)
		return rc;
	rc = unlink(abs) == 0 ? 0 : -errno;
	faultsim_cache_namespace_end(&t, rc);
	return rc;
}

static int fs_fsync_dir(void *ctx, const char *path)
{
	faultsim_io *fio = ctx;
	int rc, fd;

	faultsim_faults_step(fio->faults);
	uint64_t mark = faultsim_cache_dir_sync_begin(fio->cache);
	if ((rc = inject(fio, FAULTSIM_OP_FSYNC_DIR)) != 0)
		return rc;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	faultsim_cache_dir_sync_end(fio->cache, path, mark, rc);
	return rc;
}

/* ---- mappings and locks: passed through, with their fault points ----------- */

static void *fs_mmap(void *ctx, int fd, size_t len, int *err)
{
	int rc = inject(ctx, FAULTSIM_OP_MMAP);
	if (rc) {
		*err = rc;
		return NULL;
	}
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	*err = 0;
	return p;
}

static int fs_munmap(void *ctx, void *addr, size_t len)
{
	(void)ctx;
	return munmap(addr, len) == 0 ? 0 : -errno;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Open-file-description locks, as the POSIX backend: WAIT_MS 0 tries once,
 * > 0 polls until the deadline, -1 waits forever. */
static int fs_lock(void *ctx, int fd, int exclusive, int wait_ms)
{
	struct flock fl = { 0 };
	struct timespec nap = { 0, 1000000 };
	int rc = inject(ctx, FAULTSIM_OP_LOCK);

	if (rc)
		return rc;
	fl.l_type = exclusive < 0 ? F_UNLCK : exclusive ? F_WRLCK : F_RDLCK;
	fl.l_whence = SEEK_SET;
	if (wait_ms < 0 && exclusive >= 0) {
		while (fcntl(fd, F_OFD_SETLKW, &fl) != 0)
			if (errno != EINTR)
				return -errno;
		return 0;
	}
	uint64_t deadline = now_ms() + (uint64_t)(wait_ms > 0 ? wait_ms : 0);
	for (;;) {
		if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
			return 0;
		if (errno != EAGAIN && errno != EACCES && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline)
			return -EAGAIN;
		nanosleep(&nap, NULL);
	}
}

/* ---- crash points: a spec's "crash" kills the process as the call returns --- */

static void crash_point(void)
{
	if (crash_due)
		kill(getpid(), SIGKILL);
}

static int cr_open(void *ctx, const char *path, int flags, unsigned mode)
{
	int rc = fs_open(ctx, path, flags, mode);
	crash_point();
	return rc;
}

static ssize_t cr_pwrite(void *ctx, int fd, const void *buf, size_t len,
                         uint64_t off)
{
	ssize_t rc = fs_pwrite(ctx, fd, buf, len, off);
	crash_point();
	return rc;
}

static int cr_fdatasync(void *ctx, int fd)
{
	int rc = fs_fdatasync(ctx, fd);
	crash_point();
	return rc;
}

static int cr_fsync(void *ctx, int fd)
{
	int rc = fs_fsync(ctx, fd);
	crash_point();
	return rc;
}

static int cr_ftruncate(void *ctx, int fd, uint64_t len)
{
	int rc = fs_ftruncate(ctx, fd, len);
	crash_point();
	return rc;
}

static int cr_fallocate(void *ctx, int fd, uint64_t off, uint64_t len)
{
	int rc = fs_fallocate(ctx, fd, off, len);
	crash_point();
	return rc;
}

static int cr_rename(void *ctx, const char *from, const char *to)
{
	int rc = fs_rename(ctx, from, to);
	crash_point();
	return rc;
}

static int cr_unlink(void *ctx, const char *path)
{
	int rc = fs_unlink(ctx, path);
	crash_point();
	return rc;
}

static int cr_fsync_dir(void *ctx, const char *path)
{
	int rc = fs_fsync_dir(ctx, path);
	crash_point();
	return rc;
}

/* ---- the table ------------------------------------------------------------- */

int faultsim_io_new(const faultsim_io_options *opt, faultsim_io **out)
{
	if (!opt || !opt->cache || !out ||
	    (unsigned)opt->profile > FAULTSIM_PROFILE_KEEP)
		return -EINVAL;
	faultsim_io *fio = calloc(1, sizeof *fio);
	*out = NULL;
	if (!fio)
		return -ENOMEM;
	fio->cache = opt->cache;
	fio->faults = opt->faults;
	fio->profile = opt->profile;
	fio->table = (keel_io){
		.ctx = fio,
		.open = cr_open,
		.close = fs_close,
		.pread = fs_pread,
		.pwrite = cr_pwrite,
		.fdatasync = cr_fdatasync,
		.fsync = cr_fsync,
		.ftruncate = cr_ftruncate,
		.fallocate = cr_fallocate,
		.fstat = fs_fstat,
		.rename = cr_rename,
		.unlink = cr_unlink,
		.fsync_dir = cr_fsync_dir,
		.mmap = fs_mmap,
		.munmap = fs_munmap,
		.lock = fs_lock,
		.pread_device = fs_pread_device,
	};
	*out = fio;
	return 0;
}

void faultsim_io_free(faultsim_io *fio)
{
	free(fio);
}

const keel_io *faultsim_io_table(faultsim_io *fio)
{
	return fio ? &fio->table : NULL;
}
