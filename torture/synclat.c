/*
 * synclat.c -- fdatasync latency samples (see synclat.h).
 */
#include "synclat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int synclat_measure(const char *dir, unsigned count, samples *out)
{
	char path[PATH_MAX], block[4096];
	int fd, rc = 0, e = 0;

	if (snprintf(path, sizeof(path), "%s/.synclat.%d", dir, (int)getpid()) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	memset(block, 0x5a, sizeof(block));
	/* Appends, as a commit does: each sync also has to persist the
	 * block just written, which is what the engine pays per commit. */
	for (unsigned i = 0; i < count; i++) {
		uint64_t t0 = now_ns();
		if (pwrite(fd, block, sizeof(block), (off_t)i * 4096) !=
		    (ssize_t)sizeof(block) || fdatasync(fd) < 0) {
			e = errno ? errno : EIO;
			rc = -1;
			break;
		}
		samples_add(out, now_ns() - t0);
	}
	close(fd);
	unlink(path);
	errno = e;
	return rc;
}
