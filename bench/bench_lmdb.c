/*
 * bench_lmdb.c -- LMDB as a benchmark peer.
 *
 * Default environment flags: every write transaction commit is synced (LMDB
 * writes the data pages, syncs, then writes the meta page and syncs again:
 * two syncs per commit).  One write transaction per put.  Writers from many
 * threads serialize on LMDB's writer mutex: that is what LMDB does, and what
 * is measured.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "bench.h"

#define LMDB_NAME "lmdb"

typedef struct lmdb_bench {
	MDB_env *env; /* the environment (one directory)  */
	MDB_dbi dbi;  /* the unnamed main database         */
} lmdb_bench;

typedef struct lmdb_thread {
	lmdb_bench *b;     /* the store                                    */
	bench_role role;   /* what the context is for                      */
	MDB_txn *rtxn;     /* read transaction (readers only)              */
	MDB_cursor *cur;   /* cursor in rtxn, opened on the first scan     */
} lmdb_thread;

static int lmdb_err(const char *what, int rc)
{
	return bench_fail(LMDB_NAME, "%s: %s", what, mdb_strerror(rc));
}

static const char *lmdb_version(void)
{
	return mdb_version(NULL, NULL, NULL);
}

static int lmdb_open(const char *dir, const bench_open_opts *o, void **out)
{
	lmdb_bench *b = calloc(1, sizeof(*b));
	MDB_txn *txn;
	/* The map only reserves address space; size it well above what the
	 * workload can write (values plus page overhead, copy-on-write slack). */
	size_t map = (size_t)1 << 30;
	size_t need = (size_t)o->keys * (o->value_size + 64) * 4;
	int rc;

	if (!b)
		return bench_fail(LMDB_NAME, "out of memory");
	if (need > map)
		map = need;
	rc = mdb_env_create(&b->env);
	if (rc)
		goto out_free;
	if ((rc = mdb_env_set_mapsize(b->env, map)) ||
	    (rc = mdb_env_set_maxreaders(b->env, 256)) ||
	    (rc = mdb_env_open(b->env, dir, o->unsynced ? MDB_NOSYNC : 0, 0644)))
		goto out_env;
	if ((rc = mdb_txn_begin(b->env, NULL, 0, &txn)))
		goto out_env;
	if ((rc = mdb_dbi_open(txn, NULL, 0, &b->dbi))) {
		mdb_txn_abort(txn);
		goto out_env;
	}
	if ((rc = mdb_txn_commit(txn)))
		goto out_env;
	*out = b;
	return 0;

out_env:
	mdb_env_close(b->env);
out_free:
	free(b);
	return lmdb_err("open", rc);
}

static void lmdb_close(void *db)
{
	lmdb_bench *b = db;

	mdb_env_close(b->env);
	free(b);
}

/* One write transaction, keys in order so MDB_APPEND fills pages fully. */
static int lmdb_load(void *db, uint64_t n, size_t vsize)
{
	lmdb_bench *b = db;
	char key[BENCH_KEY_LEN + 1];
	char *val = malloc(vsize ? vsize : 1);
	MDB_txn *txn;
	MDB_val k = { BENCH_KEY_LEN, key }, v = { vsize, val };
	int rc;

	if (!val)
		return bench_fail(LMDB_NAME, "out of memory");
	if ((rc = mdb_txn_begin(b->env, NULL, 0, &txn)))
		goto out;
	for (uint64_t i = 0; i < n; i++) {
		bench_key(key, i);
		bench_value(val, vsize, i);
		if ((rc = mdb_put(txn, b->dbi, &k, &v, MDB_APPEND))) {
			mdb_txn_abort(txn);
			goto out;
		}
	}
	rc = mdb_txn_commit(txn);
out:
	free(val);
	return rc ? lmdb_err("load", rc) : 0;
}

static int lmdb_thread_open(void *db, bench_role role, void **out)
{
	lmdb_thread *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return bench_fail(LMDB_NAME, "out of memory");
	t->b = db;
	t->role = role;
	if (role != BENCH_WRITER) {
		/* Reader slots are per thread (LMDB's default TLS mode), so the
		 * read transaction is begun on the thread that uses it. */
		rc = mdb_txn_begin(t->b->env, NULL, MDB_RDONLY, &t->rtxn);
		if (rc) {
			free(t);
			return lmdb_err("read txn", rc);
		}
		if (role == BENCH_READ_FRESH)
			mdb_txn_reset(t->rtxn);
	}
	*out = t;
	return 0;
}

static void lmdb_thread_close(void *ctx)
{
	lmdb_thread *t = ctx;

	if (t->cur)
		mdb_cursor_close(t->cur);
	if (t->rtxn)
		mdb_txn_abort(t->rtxn);
	free(t);
}

static int lmdb_put(void *ctx, const void *key, size_t klen, const void *val,
                    size_t vlen)
{
	lmdb_thread *t = ctx;
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	MDB_txn *txn;
	int rc;

	if ((rc = mdb_txn_begin(t->b->env, NULL, 0, &txn)))
		return lmdb_err("put begin", rc);
	if ((rc = mdb_put(txn, t->b->dbi, &k, &v, 0))) {
		mdb_txn_abort(txn);
		return lmdb_err("put", rc);
	}
	if ((rc = mdb_txn_commit(txn)))
		return lmdb_err("commit", rc);
	return 0;
}

/* A fresh reader renews its transaction per get, the cheapest way LMDB
 * offers to see the newest commit (comparable to keel_get). */
static int lmdb_get(void *ctx, const void *key, size_t klen, size_t *vlen,
                    uint64_t *touch)
{
	lmdb_thread *t = ctx;
	MDB_val k = { klen, (void *)key }, v;
	int rc;

	if (t->role == BENCH_READ_FRESH && (rc = mdb_txn_renew(t->rtxn)))
		return lmdb_err("renew", rc);
	rc = mdb_get(t->rtxn, t->b->dbi, &k, &v);
	if (rc == 0) {
		*vlen = v.mv_size;
		*touch += bench_touch(v.mv_data, v.mv_size);
	}
	if (t->role == BENCH_READ_FRESH)
		mdb_txn_reset(t->rtxn);
	return rc ? lmdb_err("get", rc) : 0;
}

static int lmdb_scan(void *ctx, const void *start, size_t slen, unsigned n,
                     unsigned *got, uint64_t *touch)
{
	lmdb_thread *t = ctx;
	MDB_val k = { slen, (void *)start }, v;
	MDB_cursor_op op = MDB_SET_RANGE;
	unsigned i;
	int rc = 0;

	if (t->role == BENCH_READ_FRESH)
		return bench_fail(LMDB_NAME, "scan needs a snapshot reader");
	if (!t->cur && (rc = mdb_cursor_open(t->rtxn, t->b->dbi, &t->cur)))
		return lmdb_err("cursor", rc);
	for (i = 0; i < n; i++, op = MDB_NEXT) {
		rc = mdb_cursor_get(t->cur, &k, &v, op);
		if (rc)
			break;
		*touch += bench_touch(v.mv_data, v.mv_size);
	}
	*got = i;
	return rc && rc != MDB_NOTFOUND ? lmdb_err("scan", rc) : 0;
}

const bench_engine bench_engine_lmdb = {
	.name = LMDB_NAME,
	.settings = "default env flags (synced: 2 syncs per commit); one txn per put",
	.version = lmdb_version,
	.open = lmdb_open,
	.close = lmdb_close,
	.load = lmdb_load,
	.thread_open = lmdb_thread_open,
	.thread_close = lmdb_thread_close,
	.put = lmdb_put,
	.get = lmdb_get,
	.scan = lmdb_scan,
	.space = NULL,
};
