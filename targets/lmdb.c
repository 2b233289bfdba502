/*
 * lmdb.c -- LMDB as a torture --target lmdb:CONFIG adapter (adapter.h): one
 * environment in DIR (data.mdb, lock.mdb), each put its own write
 * transaction, acknowledged when mdb_txn_commit returned 0.
 *
 *   default      mdb_env_open flags 0
 *   nometasync   MDB_NOMETASYNC
 *   nosync       MDB_NOSYNC
 *   writemap     MDB_WRITEMAP: the data file is a writable shared mapping,
 *                whose stores the shim records a page at a time
 *
 * lock.mdb (the reader table, a writable shared mapping) is never needed
 * after a crash: torture runs this adapter with --volatile 'lock.mdb'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "adapter.h"

static const char *const configs[] = { "default", "nometasync", "nosync",
	"writemap", NULL };
static const unsigned flags[] = { 0, MDB_NOMETASYNC, MDB_NOSYNC,
	MDB_WRITEMAP };

typedef struct store {
	MDB_env *env;
	MDB_dbi dbi;
} store;

static const char *version(void)
{
	return mdb_version(NULL, NULL, NULL);
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "lmdb: %s: %s\n", what, mdb_strerror(rc));
	return -1;
}

static int lm_open(const char *dir, int config, void **out)
{
	store *s = calloc(1, sizeof *s);
	MDB_txn *txn;
	int rc;

	if (!s)
		return -1;
	*out = s;
	if ((rc = mdb_env_create(&s->env)) != 0)
		return fail("mdb_env_create", rc);
	if ((rc = mdb_env_set_mapsize(s->env, 16u << 20)) != 0)
		return fail("mdb_env_set_mapsize", rc);
	if ((rc = mdb_env_open(s->env, dir, flags[config], 0644)) != 0)
		return fail("mdb_env_open", rc);
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		return fail("mdb_txn_begin", rc);
	if ((rc = mdb_dbi_open(txn, NULL, 0, &s->dbi)) != 0) {
		mdb_txn_abort(txn);
		return fail("mdb_dbi_open", rc);
	}
	if ((rc = mdb_txn_commit(txn)) != 0)
		return fail("mdb_txn_commit", rc);
	return 0;
}

static int lm_put(void *st, const char *key, const char *val)
{
	store *s = st;
	MDB_val k = { strlen(key), (void *)key }, v = { strlen(val), (void *)val };
	MDB_txn *txn;
	int rc;

	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		return fail("mdb_txn_begin", rc);
	if ((rc = mdb_put(txn, s->dbi, &k, &v, 0)) != 0) {
		mdb_txn_abort(txn);
		return fail("mdb_put", rc);
	}
	if ((rc = mdb_txn_commit(txn)) != 0)
		return fail("mdb_txn_commit", rc);
	return 0;
}

static int lm_check(void *st)
{
	store *s = st;
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn)) != 0)
		return fail("mdb_txn_begin", rc);
	if ((rc = mdb_cursor_open(txn, s->dbi, &c)) != 0) {
		mdb_txn_abort(txn);
		return fail("mdb_cursor_open", rc);
	}
	int bad = 0;
	while (!bad && (rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0)
		bad = adapter_emit(k.mv_data, k.mv_size, v.mv_data,
		                   v.mv_size) < 0;
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	if (bad)
		return -1;
	return rc == MDB_NOTFOUND ? 0 : fail("mdb_cursor_get", rc);
}

static void lm_close(void *st)
{
	store *s = st;

	if (s->env)
		mdb_env_close(s->env);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { "lmdb", configs, version, lm_open, lm_put,
		lm_check, lm_close };

	return adapter_main(&a, argc, argv);
}
