/*
 * failsync.c -- an LD_PRELOAD fault injector for one file, with Linux's
 * semantics for a failed fsync on ext4 and xfs: the sync reports EIO and the
 * writes it should have made durable are LOST (the kernel marks their pages
 * clean: reads still see them, the device never gets them).  At exit it
 * writes the file as the device holds it -- every lost write undone, newest
 * first -- which is what a power cut right after the program ends leaves.
 *
 *   FAILSYNC_FILE=NAME   the file (a path ending in NAME) to watch
 *   FAILSYNC_NTH=N       fail its Nth fsync/fdatasync (0: fail none, count)
 *
 * Each sync of the file is reported on stderr ("failsync: sync N ok/EIO").
 * Only pwrite/write are followed: run the program with mmap off.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

struct w { off_t off; size_t len; unsigned char *pre; int lost; struct w *next; };

static int target_fd = -1, syncs, nth;
static struct w *writes; /* since the last good sync, newest first */
static char target_path[4096];

static int watched(const char *path)
{
	const char *name = getenv("FAILSYNC_FILE");
	size_t n = name ? strlen(name) : 0, p = strlen(path);
	return n && p >= n && strcmp(path + p - n, name) == 0;
}

#define REAL(ret, f, args) static ret(*real_##f) args; \
	if (!real_##f) real_##f = (ret(*) args)dlsym(RTLD_NEXT, #f)

int open64(const char *path, int flags, ...)
{
	REAL(int, open64, (const char *, int, ...));
	va_list ap;
	va_start(ap, flags);
	int mode = va_arg(ap, int);
	va_end(ap);
	int fd = real_open64(path, flags, mode);
	if (fd >= 0 && watched(path)) {
		target_fd = fd;
		snprintf(target_path, sizeof target_path, "%s", path);
		nth = getenv("FAILSYNC_NTH") ? atoi(getenv("FAILSYNC_NTH")) : 0;
	}
	return fd;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int mode = va_arg(ap, int);
	va_end(ap);
	return open64(path, flags, mode);
}

/* Keeps the bytes a write is about to replace (the file's end cuts them). */
static void remember(off_t off, size_t len)
{
	struct w *w = calloc(1, sizeof *w);
	w->off = off;
	w->pre = calloc(1, len ? len : 1);
	ssize_t n = pread(target_fd, w->pre, len, off);
	w->len = n > 0 ? (size_t)n : 0;
	w->next = writes;
	writes = w;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	REAL(ssize_t, pwrite64, (int, const void *, size_t, off_t));
	if (fd == target_fd)
		remember(off, len);
	return real_pwrite64(fd, buf, len, off);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite64(fd, buf, len, off);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	REAL(ssize_t, write, (int, const void *, size_t));
	if (fd == target_fd)
		remember(lseek(fd, 0, SEEK_CUR), len);
	return real_write(fd, buf, len);
}

static int one_sync(int fd, int (*real)(int))
{
	if (fd != target_fd)
		return real(fd);
	int rc = real(fd);
	syncs++;
	if (syncs == nth) {
		for (struct w *w = writes; w; w = w->next)
			w->lost = 1; /* pages marked clean, never written */
		writes = NULL;   /* a later sync does not bring them back */
		fprintf(stderr, "failsync: sync %d EIO (writes since the "
		        "last good sync lost)\n", syncs);
		errno = EIO;
		return -1;
	}
	fprintf(stderr, "failsync: sync %d ok\n", syncs);
	if (rc == 0) {
		/* durable now: forget them (a lost list is kept below) */
		struct w *w = writes;
		while (w) {
			struct w *next = w->next;
			if (!w->lost) {
				free(w->pre);
				free(w);
			}
			w = next;
		}
		writes = NULL;
	}
	return rc;
}

static struct w *lost_list; /* every write a failed sync lost, oldest first */

/* One sync of the file through REAL; a failure moves what it lost to
 * lost_list. */
static int sync_through(int fd, int (*real)(int))
{
	struct w *before = writes;
	int rc = one_sync(fd, real);
	if (fd == target_fd && rc < 0)
		for (struct w *w = before, *next; w; w = next) {
			next = w->next;
			w->next = lost_list;
			lost_list = w;
		}
	return rc;
}

int fdatasync(int fd)
{
	REAL(int, fdatasync, (int));
	return sync_through(fd, real_fdatasync);
}

int fsync(int fd)
{
	REAL(int, fsync, (int));
	return sync_through(fd, real_fsync);
}

/* The power cut after the program: the lost writes never reached the
 * device.  lost_list is oldest first after the reversal above, so undo it
 * from its end: build it reversed again. */
__attribute__((destructor)) static void power_cut(void)
{
	struct w *newest_first = NULL;
	if (!lost_list || !target_path[0])
		return;
	for (struct w *w = lost_list, *next; w; w = next) {
		next = w->next;
		w->next = newest_first;
		newest_first = w;
	}
	int fd = open(target_path, O_RDWR);
	for (struct w *w = newest_first; w && fd >= 0; w = w->next)
		if (pwrite(fd, w->pre, w->len, w->off) != (ssize_t)w->len)
			perror("failsync: undo");
	if (fd >= 0)
		close(fd);
	fprintf(stderr, "failsync: power cut: the lost writes undone\n");
}
