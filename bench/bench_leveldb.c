/*
 * bench_leveldb.c -- LevelDB as a benchmark peer, through its C API.
 *
 * Default options plus create_if_missing; WriteOptions sync=true, so every
 * put is appended to the log and the log is synced before the put returns.
 * Threads share the handle; LevelDB queues concurrent writers and the one at
 * the front writes and syncs the group's batches together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>

#include "bench.h"

#define LEVELDB_NAME "leveldb"
/* The load is written in batches of this many bytes: big enough to be fast,
 * small enough not to hold a million values in one batch. */
#define LEVELDB_LOAD_BATCH_BYTES (4u << 20)

typedef struct level_bench {
	leveldb_t *db;                /* the store                           */
	leveldb_options_t *opt;       /* open options                        */
	leveldb_writeoptions_t *wsync;/* sync=true (or false when unsynced)  */
	leveldb_readoptions_t *ropt;  /* defaults                            */
} level_bench;

static int level_err(const char *what, char *err)
{
	bench_fail(LEVELDB_NAME, "%s: %s", what, err ? err : "failed");
	leveldb_free(err);
	return -1;
}

static const char *level_version(void)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "%d.%d", leveldb_major_version(),
	         leveldb_minor_version());
	return buf;
}

static int level_open(const char *dir, const bench_open_opts *o,
                              void **out)
{
	level_bench *b = calloc(1, sizeof(*b));
	char *err = NULL;

	if (!b)
		return bench_fail(LEVELDB_NAME, "out of memory");
	b->opt = leveldb_options_create();
	leveldb_options_set_create_if_missing(b->opt, 1);
	b->db = leveldb_open(b->opt, dir, &err);
	if (err) {
		leveldb_options_destroy(b->opt);
		free(b);
		return level_err("open", err);
	}
	b->wsync = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(b->wsync, o->unsynced ? 0 : 1);
	b->ropt = leveldb_readoptions_create();
	*out = b;
	return 0;
}

static void level_close(void *db)
{
	level_bench *b = db;

	leveldb_close(b->db);
	leveldb_writeoptions_destroy(b->wsync);
	leveldb_readoptions_destroy(b->ropt);
	leveldb_options_destroy(b->opt);
	free(b);
}

static int level_load(void *db, uint64_t n, size_t vsize)
{
	level_bench *b = db;
	leveldb_writebatch_t *wb = leveldb_writebatch_create();
	char key[BENCH_KEY_LEN + 1];
	char *val = malloc(vsize ? vsize : 1);
	char *err = NULL;
	size_t pending = 0;

	if (!val) {
		leveldb_writebatch_destroy(wb);
		return bench_fail(LEVELDB_NAME, "out of memory");
	}
	for (uint64_t i = 0; i < n && !err; i++) {
		bench_key(key, i);
		bench_value(val, vsize, i);
		leveldb_writebatch_put(wb, key, BENCH_KEY_LEN, val, vsize);
		pending += BENCH_KEY_LEN + vsize;
		if (pending >= LEVELDB_LOAD_BATCH_BYTES || i + 1 == n) {
			/* the batch is synced: the load is durable once done */
			leveldb_write(b->db, b->wsync, wb, &err);
			leveldb_writebatch_clear(wb);
			pending = 0;
		}
	}
	leveldb_writebatch_destroy(wb);
	free(val);
	return err ? level_err("load", err) : 0;
}

/* LevelDB handles are thread-safe: the context is the store itself. */
static int level_thread_open(void *db, bench_role role, void **out)
{
	(void)role;
	*out = db;
	return 0;
}

static void level_thread_close(void *ctx)
{
	(void)ctx;
}

static int level_put(void *ctx, const void *key, size_t klen,
                             const void *val, size_t vlen)
{
	level_bench *b = ctx;
	char *err = NULL;

	leveldb_put(b->db, b->wsync, key, klen, val, vlen, &err);
	return err ? level_err("put", err) : 0;
}

static int level_get(void *ctx, const void *key, size_t klen,
                             size_t *vlen, uint64_t *touch)
{
	level_bench *b = ctx;
	char *err = NULL;
	char *v = leveldb_get(b->db, b->ropt, key, klen, vlen, &err);

	if (err)
		return level_err("get", err);
	if (!v)
		return bench_fail(LEVELDB_NAME, "get: key missing");
	*touch += bench_touch(v, *vlen);
	leveldb_free(v);
	return 0;
}

const bench_engine bench_engine_leveldb = {
	.name = LEVELDB_NAME,
	.settings = "default options; WriteOptions sync=true; threads share the handle",
	.version = level_version,
	.open = level_open,
	.close = level_close,
	.load = level_load,
	.thread_open = level_thread_open,
	.thread_close = level_thread_close,
	.put = level_put,
	.get = level_get,
	.scan = NULL,
	.space = NULL,
};
