/*
 * bench_plain.c -- the device's limit: write the same bytes a put carries
 * (key and value) to a file and fdatasync it, nothing else.  Three variants:
 *
 *   plain       the file is opened O_APPEND and grows with every write, as a
 *               naive log would, so each fdatasync also commits the new file
 *               size through the file system's journal;
 *   plain-ring  the writes go round a small region that was written and
 *               synced at open, so fdatasync has only data to flush (what a
 *               log with preallocated, already-written space pays: SQLite's
 *               reused WAL, keel's preallocation at best);
 *   plain-falloc  the writes go one after another into a region reserved
 *               with fallocate(2) (mode 0) at open: the size is set, but on
 *               ext4 and xfs the extents are "unwritten", and the first write
 *               into each block makes fdatasync convert it in the journal.
 *               This is what preallocating by fallocate costs a log.
 *
 * No engine structure, no reads.  Threads share the descriptor and each
 * syncs after its own write: concurrent syncs may be merged by the file
 * system's journal or the device, never by the program.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench.h"

#define PLAIN_NAME "plain"
#define PLAIN_RING_NAME "plain-ring"
#define PLAIN_FALLOC_NAME "plain-falloc"
/* Reserved at open by the fallocate variant: more than a run appends (it is
 * only reserved, so it costs nothing; writes past it wrap to the start). */
#define PLAIN_FALLOC_BYTES ((uint64_t)2 << 30)
/* Region the ring variant writes around: small enough to write at open,
 * large enough that writers in flight never share a block. */
#define PLAIN_RING_BYTES (8u << 20)

typedef enum plain_kind { PLAIN_APPEND, PLAIN_RING, PLAIN_FALLOC } plain_kind;

typedef struct plain_bench {
	int fd;                /* the log                                  */
	plain_kind kind;       /* which variant                            */
	uint64_t region;       /* ring/falloc: bytes written round         */
	atomic_ullong next;    /* ring/falloc: next byte to hand out       */
} plain_bench;

static const char *plain_name(plain_kind k)
{
	return k == PLAIN_RING ? PLAIN_RING_NAME :
	       k == PLAIN_FALLOC ? PLAIN_FALLOC_NAME : PLAIN_NAME;
}

static const char *plain_version(void)
{
	return "write+fdatasync";
}

static int plain_open_as(const char *dir, plain_kind kind, void **out)
{
	const char *name = plain_name(kind);
	plain_bench *b = calloc(1, sizeof(*b));
	char path[4096];
	char *zero = NULL;
	int err;

	if (!b)
		return bench_fail(name, "out of memory");
	snprintf(path, sizeof(path), "%s/plain.log", dir);
	b->kind = kind;
	b->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC |
	             (kind == PLAIN_APPEND ? O_APPEND : 0), 0644);
	if (b->fd < 0)
		goto out_err;
	if (kind == PLAIN_FALLOC) {
		b->region = PLAIN_FALLOC_BYTES;
		if (fallocate(b->fd, 0, 0, (off_t)b->region) || fsync(b->fd))
			goto out_close;
	}
	if (kind == PLAIN_RING) {
		b->region = PLAIN_RING_BYTES;
		/* real zeros, not fallocate: unwritten extents would make every
		 * first write into them a metadata change again */
		zero = calloc(1, PLAIN_RING_BYTES);
		if (!zero || pwrite(b->fd, zero, PLAIN_RING_BYTES, 0) !=
		                     (ssize_t)PLAIN_RING_BYTES || fsync(b->fd))
			goto out_close;
		free(zero);
	}
	*out = b;
	return 0;

out_close:
	err = errno;
	free(zero);
	close(b->fd);
	errno = err;
out_err:
	err = errno;
	free(b);
	return bench_fail(name, "open %s: %s", path, strerror(err));
}

static int plain_open(const char *dir, const bench_open_opts *o, void **out)
{
	(void)o;
	return plain_open_as(dir, PLAIN_APPEND, out);
}

static int plain_ring_open(const char *dir, const bench_open_opts *o,
                           void **out)
{
	(void)o;
	return plain_open_as(dir, PLAIN_RING, out);
}

static int plain_falloc_open(const char *dir, const bench_open_opts *o,
                             void **out)
{
	(void)o;
	return plain_open_as(dir, PLAIN_FALLOC, out);
}

static void plain_close(void *db)
{
	plain_bench *b = db;

	close(b->fd);
	free(b);
}

static int plain_thread_open(void *db, bench_role role, void **out)
{
	if (role != BENCH_WRITER)
		return bench_fail(PLAIN_NAME, "only writes are measured");
	*out = db;
	return 0;
}

static void plain_thread_close(void *ctx)
{
	(void)ctx;
}

static int plain_put(void *ctx, const void *key, size_t klen, const void *val,
                     size_t vlen)
{
	plain_bench *b = ctx;
	struct iovec iov[2] = {
		{ (void *)key, klen },
		{ (void *)val, vlen },
	};
	const char *name = plain_name(b->kind);
	ssize_t n;

	if (b->kind != PLAIN_APPEND) {
		uint64_t off = atomic_fetch_add(&b->next, klen + vlen) % b->region;

		if (off + klen + vlen > b->region)
			off = 0;
		n = pwritev(b->fd, iov, 2, (off_t)off);
	} else {
		n = writev(b->fd, iov, 2);
	}
	if (n != (ssize_t)(klen + vlen))
		return bench_fail(name, "write: %s",
		                  n < 0 ? strerror(errno) : "short write");
	if (fdatasync(b->fd))
		return bench_fail(name, "fdatasync: %s", strerror(errno));
	return 0;
}

const bench_engine bench_engine_plain = {
	.name = PLAIN_NAME,
	.settings = "O_APPEND writev of key+value then fdatasync; file grows",
	.version = plain_version,
	.open = plain_open,
	.close = plain_close,
	.load = NULL,
	.thread_open = plain_thread_open,
	.thread_close = plain_thread_close,
	.put = plain_put,
	.get = NULL,
	.scan = NULL,
	.space = NULL,
};

const bench_engine bench_engine_plain_ring = {
	.name = PLAIN_RING_NAME,
	.settings = "pwritev of key+value round an 8 MiB region written at open "
	            "then fdatasync; file never grows",
	.version = plain_version,
	.open = plain_ring_open,
	.close = plain_close,
	.load = NULL,
	.thread_open = plain_thread_open,
	.thread_close = plain_thread_close,
	.put = plain_put,
	.get = NULL,
	.scan = NULL,
	.space = NULL,
};

const bench_engine bench_engine_plain_falloc = {
	.name = PLAIN_FALLOC_NAME,
	.settings = "pwritev of key+value one after another into 2 GiB reserved "
	            "by fallocate at open then fdatasync",
	.version = plain_version,
	.open = plain_falloc_open,
	.close = plain_close,
	.load = NULL,
	.thread_open = plain_thread_open,
	.thread_close = plain_thread_close,
	.put = plain_put,
	.get = NULL,
	.scan = NULL,
	.space = NULL,
};
