/*
 * bench_rocksdb.c -- RocksDB as a benchmark peer, through its C API.
 *
 * Default options plus create_if_missing; WriteOptions sync=true, so every
 * put is appended to the write-ahead log and the log is synced before the
 * put returns.  Threads share the handle; RocksDB groups concurrent writers
 * behind a leader that syncs once for the group.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "bench.h"

#define ROCKSDB_NAME "rocksdb"
/* The load is written in batches of this many bytes: big enough to be fast,
 * small enough not to hold a million values in one batch. */
#define ROCKSDB_LOAD_BATCH_BYTES (4u << 20)

typedef struct rocks_bench {
	rocksdb_t *db;                /* the store                           */
	rocksdb_options_t *opt;       /* open options                        */
	rocksdb_writeoptions_t *wsync;/* sync=true (or false when unsynced)  */
	rocksdb_readoptions_t *ropt;  /* defaults                            */
} rocks_bench;

static int rocks_err(const char *what, char *err)
{
	bench_fail(ROCKSDB_NAME, "%s: %s", what, err ? err : "failed");
	rocksdb_free(err);
	return -1;
}

/* The C API has no version call, and rocksdb/version.h is C++ only; the
 * runner records the package version instead. */
static const char *rocks_version(void)
{
	return "see package";
}

static int rocks_open(const char *dir, const bench_open_opts *o,
                              void **out)
{
	rocks_bench *b = calloc(1, sizeof(*b));
	char *err = NULL;

	if (!b)
		return bench_fail(ROCKSDB_NAME, "out of memory");
	b->opt = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(b->opt, 1);
	b->db = rocksdb_open(b->opt, dir, &err);
	if (err) {
		rocksdb_options_destroy(b->opt);
		free(b);
		return rocks_err("open", err);
	}
	b->wsync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(b->wsync, o->unsynced ? 0 : 1);
	b->ropt = rocksdb_readoptions_create();
	*out = b;
	return 0;
}

static void rocks_close(void *db)
{
	rocks_bench *b = db;

	rocksdb_close(b->db);
	rocksdb_writeoptions_destroy(b->wsync);
	rocksdb_readoptions_destroy(b->ropt);
	rocksdb_options_destroy(b->opt);
	free(b);
}

static int rocks_load(void *db, uint64_t n, size_t vsize)
{
	rocks_bench *b = db;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	char key[BENCH_KEY_LEN + 1];
	char *val = malloc(vsize ? vsize : 1);
	char *err = NULL;
	size_t pending = 0;

	if (!val) {
		rocksdb_writebatch_destroy(wb);
		return bench_fail(ROCKSDB_NAME, "out of memory");
	}
	for (uint64_t i = 0; i < n && !err; i++) {
		bench_key(key, i);
		bench_value(val, vsize, i);
		rocksdb_writebatch_put(wb, key, BENCH_KEY_LEN, val, vsize);
		pending += BENCH_KEY_LEN + vsize;
		if (pending >= ROCKSDB_LOAD_BATCH_BYTES || i + 1 == n) {
			/* the batch is synced: the load is durable once done */
			rocksdb_write(b->db, b->wsync, wb, &err);
			rocksdb_writebatch_clear(wb);
			pending = 0;
		}
	}
	rocksdb_writebatch_destroy(wb);
	free(val);
	return err ? rocks_err("load", err) : 0;
}

/* RocksDB handles are thread-safe: the context is the store itself. */
static int rocks_thread_open(void *db, bench_role role, void **out)
{
	(void)role;
	*out = db;
	return 0;
}

static void rocks_thread_close(void *ctx)
{
	(void)ctx;
}

static int rocks_put(void *ctx, const void *key, size_t klen,
                             const void *val, size_t vlen)
{
	rocks_bench *b = ctx;
	char *err = NULL;

	rocksdb_put(b->db, b->wsync, key, klen, val, vlen, &err);
	return err ? rocks_err("put", err) : 0;
}

static int rocks_get(void *ctx, const void *key, size_t klen,
                             size_t *vlen, uint64_t *touch)
{
	rocks_bench *b = ctx;
	char *err = NULL;
	char *v = rocksdb_get(b->db, b->ropt, key, klen, vlen, &err);

	if (err)
		return rocks_err("get", err);
	if (!v)
		return bench_fail(ROCKSDB_NAME, "get: key missing");
	*touch += bench_touch(v, *vlen);
	rocksdb_free(v);
	return 0;
}

const bench_engine bench_engine_rocksdb = {
	.name = ROCKSDB_NAME,
	.settings = "default options; WriteOptions sync=true; threads share the handle",
	.version = rocks_version,
	.open = rocks_open,
	.close = rocks_close,
	.load = rocks_load,
	.thread_open = rocks_thread_open,
	.thread_close = rocks_thread_close,
	.put = rocks_put,
	.get = rocks_get,
	.scan = NULL,
	.space = NULL,
};
