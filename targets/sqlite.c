/*
 * sqlite.c -- SQLite as a torture --target sqlite:CONFIG adapter
 * (adapter.h): one table kv(k PRIMARY KEY, v), each put an
 * INSERT OR REPLACE in its own (autocommit) transaction, acknowledged when
 * sqlite3_step returned SQLITE_DONE.
 *
 * CONFIG is JOURNAL-SYNC: journal_mode wal or delete, synchronous off,
 * normal, full or extra.  WAL runs with locking_mode=EXCLUSIVE, which keeps
 * the WAL index in heap memory instead of a shared mapping of DB-shm (the
 * shim refuses writable shared mappings: docs/targets.md).  The checker
 * opens the database the same way; SQLite's own recovery (rolling back a
 * hot journal, reading the WAL) runs under the shim.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "adapter.h"

static const char *const configs[] = { "wal-off", "wal-normal", "wal-full",
	"wal-extra", "delete-off", "delete-normal", "delete-full",
	"delete-extra", NULL };

typedef struct store {
	sqlite3 *db;
	sqlite3_stmt *put; /* INSERT OR REPLACE */
} store;

static const char *version(void)
{
	return sqlite3_libversion();
}

static int exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "sqlite: %s: %s\n", sql, err ? err :
		        sqlite3_errmsg(db));
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

static int sq_open(const char *dir, int config, void **out)
{
	static const char *const sync[] = { "OFF", "NORMAL", "FULL", "EXTRA" };
	char path[4200], sql[128];
	store *s = calloc(1, sizeof *s);
	int wal = config < 4;

	if (!s)
		return -1;
	*out = s;
	snprintf(path, sizeof path, "%s/kv.db", dir);
	if (sqlite3_open(path, &s->db) != SQLITE_OK) {
		fprintf(stderr, "sqlite: open %s: %s\n", path,
		        sqlite3_errmsg(s->db));
		return -1;
	}
	sqlite3_busy_timeout(s->db, 5000);
	snprintf(sql, sizeof sql, "PRAGMA synchronous=%s", sync[config % 4]);
	if ((wal && exec(s->db, "PRAGMA locking_mode=EXCLUSIVE") != 0) ||
	    exec(s->db, wal ? "PRAGMA journal_mode=WAL" :
	                      "PRAGMA journal_mode=DELETE") != 0 ||
	    exec(s->db, sql) != 0 ||
	    exec(s->db, "CREATE TABLE IF NOT EXISTS kv(k TEXT PRIMARY KEY, "
	                "v TEXT)") != 0)
		return -1;
	if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO kv VALUES(?, ?)",
	                       -1, &s->put, NULL) != SQLITE_OK) {
		fprintf(stderr, "sqlite: prepare: %s\n", sqlite3_errmsg(s->db));
		return -1;
	}
	return 0;
}

static int sq_put(void *st, const char *key, const char *val)
{
	store *s = st;
	int rc;

	sqlite3_bind_text(s->put, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(s->put, 2, val, -1, SQLITE_STATIC);
	rc = sqlite3_step(s->put);
	sqlite3_reset(s->put);
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "sqlite: INSERT: %s (%s)\n", sqlite3_errstr(rc),
		        sqlite3_errmsg(s->db));
		return -1;
	}
	return 0;
}

static int sq_check(void *st)
{
	store *s = st;
	sqlite3_stmt *q;
	int rc;

	/* a damaged database is "unreadable", not an empty one */
	if (sqlite3_prepare_v2(s->db, "PRAGMA quick_check", -1, &q,
	                       NULL) != SQLITE_OK ||
	    sqlite3_step(q) != SQLITE_ROW ||
	    strcmp((const char *)sqlite3_column_text(q, 0), "ok") != 0) {
		fprintf(stderr, "sqlite: quick_check: %s\n",
		        sqlite3_errmsg(s->db));
		sqlite3_finalize(q);
		return -1;
	}
	sqlite3_finalize(q);
	if (sqlite3_prepare_v2(s->db, "SELECT k, v FROM kv", -1, &q,
	                       NULL) != SQLITE_OK) {
		fprintf(stderr, "sqlite: SELECT: %s\n", sqlite3_errmsg(s->db));
		return -1;
	}
	int bad = 0;
	while (!bad && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const unsigned char *k = sqlite3_column_text(q, 0);
		const unsigned char *v = sqlite3_column_text(q, 1);
		bad = adapter_emit(k, k ? strlen((const char *)k) : 0, v,
		                   v ? strlen((const char *)v) : 0) < 0;
	}
	sqlite3_finalize(q);
	if (bad)
		return -1;
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "sqlite: SELECT: %s\n", sqlite3_errmsg(s->db));
		return -1;
	}
	return 0;
}

static void sq_close(void *st)
{
	store *s = st;

	sqlite3_finalize(s->put);
	sqlite3_close(s->db);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { "sqlite", configs, version, sq_open,
		sq_put, sq_check, sq_close };

	return adapter_main(&a, argc, argv);
}
