/*
 * bdb.c -- Berkeley DB as a torture --target bdb:CONFIG adapter
 * (adapter.h): a transactional environment in DIR (log.0000000001, the
 * B-tree data.db, the region files __db.NNN), opened with DB_RECOVER so
 * that recovery runs on every open, workload and checker alike; each put
 * its own transaction, acknowledged when txn->commit returned 0.
 *
 *   txn              the default: the commit writes and flushes the log
 *   txn-nosync       DB_TXN_NOSYNC: the commit neither writes nor flushes
 *                    the log (it stays in the log buffer)
 *   txn-writenosync  DB_TXN_WRITE_NOSYNC: the commit writes the log but
 *                    does not flush it
 *   txn-smalllog     txn with 32 KiB log files (set_lg_max) instead of
 *                    10 MiB: a life of puts moves the log to a new file,
 *                    which the defaults reach only after ~60,000 puts
 *
 * The region files (__db.001 ...) are shared memory mapped MAP_SHARED;
 * DB_RECOVER rebuilds them, and nothing needs them after a crash: torture
 * runs this adapter with --volatile '__db.[0-9][0-9][0-9]' (not '__db.*':
 * a database is created as __db.TXNID.RAND and renamed into place, and
 * that file must be tracked like any other).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <db.h>

#include "adapter.h"

static const char *const configs[] = { "txn", "txn-nosync",
	"txn-writenosync", "txn-smalllog", NULL };
static const u_int32_t env_flags[] = { 0, DB_TXN_NOSYNC,
	DB_TXN_WRITE_NOSYNC, 0 };
#define SMALL_LOG_CONFIG 3
#define SMALL_LOG_MAX (32u << 10)   /* bytes per log file               */
#define SMALL_LOG_BUFFER (8u << 10) /* BDB wants at most a quarter of it */

typedef struct store {
	DB_ENV *env;
	DB *db;
} store;

static const char *version(void)
{
	return db_version(NULL, NULL, NULL);
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "bdb: %s: %s\n", what, db_strerror(rc));
	return -1;
}

/* The environment, with recovery: a crash leaves the regions stale (or,
 * after a power cut, missing or torn); DB_RECOVER rebuilds them from the
 * log before anything reads the database. */
static int env_open(store *s, const char *dir, int config)
{
	const u_int32_t flags = DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK |
	                        DB_INIT_LOG | DB_INIT_MPOOL | DB_RECOVER;
	int rc;

	if ((rc = db_env_create(&s->env, 0)) != 0)
		return fail("db_env_create", rc);
	s->env->set_errfile(s->env, stderr);
	s->env->set_errpfx(s->env, "bdb");
	if (env_flags[config] &&
	    (rc = s->env->set_flags(s->env, env_flags[config], 1)) != 0)
		return fail("DB_ENV->set_flags", rc);
	if (config == SMALL_LOG_CONFIG &&
	    ((rc = s->env->set_lg_bsize(s->env, SMALL_LOG_BUFFER)) != 0 ||
	     (rc = s->env->set_lg_max(s->env, SMALL_LOG_MAX)) != 0))
		return fail("DB_ENV->set_lg_max", rc);
	if ((rc = s->env->open(s->env, dir, flags, 0644)) != 0)
		return fail("DB_ENV->open", rc);
	return 0;
}

static int bdb_open(const char *dir, int config, void **out)
{
	store *s = calloc(1, sizeof *s);
	DB_TXN *txn;
	int rc;

	if (!s)
		return -1;
	*out = s;
	if (env_open(s, dir, config) != 0)
		return -1;
	if ((rc = db_create(&s->db, s->env, 0)) != 0)
		return fail("db_create", rc);
	/* the database is created in a transaction, so that recovery knows
	 * it too: a crash right after the open leaves it whole or absent */
	if ((rc = s->env->txn_begin(s->env, NULL, &txn, 0)) != 0)
		return fail("DB_ENV->txn_begin", rc);
	if ((rc = s->db->open(s->db, txn, "data.db", NULL, DB_BTREE,
	                      DB_CREATE, 0644)) != 0) {
		txn->abort(txn);
		return fail("DB->open", rc);
	}
	if ((rc = txn->commit(txn, 0)) != 0)
		return fail("DB_TXN->commit", rc);
	return 0;
}

static int bdb_put(void *st, const char *key, const char *val)
{
	store *s = st;
	DBT k = { .data = (void *)key, .size = (u_int32_t)strlen(key) };
	DBT v = { .data = (void *)val, .size = (u_int32_t)strlen(val) };
	DB_TXN *txn;
	int rc;

	if ((rc = s->env->txn_begin(s->env, NULL, &txn, 0)) != 0)
		return fail("DB_ENV->txn_begin", rc);
	if ((rc = s->db->put(s->db, txn, &k, &v, 0)) != 0) {
		txn->abort(txn);
		return fail("DB->put", rc);
	}
	if ((rc = txn->commit(txn, 0)) != 0)
		return fail("DB_TXN->commit", rc);
	return 0;
}

static int bdb_check(void *st)
{
	store *s = st;
	DBT k = { 0 }, v = { 0 };
	DBC *c;
	int rc, bad = 0;

	if ((rc = s->db->cursor(s->db, NULL, &c, 0)) != 0)
		return fail("DB->cursor", rc);
	while (!bad && (rc = c->get(c, &k, &v, DB_NEXT)) == 0)
		bad = adapter_emit(k.data, k.size, v.data, v.size) < 0;
	c->close(c);
	if (bad)
		return -1;
	return rc == DB_NOTFOUND ? 0 : fail("DBC->get", rc);
}

static void bdb_close(void *st)
{
	store *s = st;

	if (s->db)
		s->db->close(s->db, 0);
	if (s->env)
		s->env->close(s->env, 0);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { "bdb", configs, version, bdb_open, bdb_put,
		bdb_check, bdb_close };

	return adapter_main(&a, argc, argv);
}
