/*
 * bench_sqlite.c -- SQLite as a benchmark peer.
 *
 * journal_mode=WAL, synchronous=FULL: every commit appends its pages to the
 * WAL and syncs it once.  A table kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT
 * ROWID; one INSERT OR REPLACE per put in autocommit mode, i.e. one
 * transaction per put.
 *
 * Threads share one connection opened in serialized mode (SQLITE_OPEN_
 * FULLMUTEX), each with its own prepared statement: SQLite then serializes
 * the writers on the connection's mutex.  Separate connections would also
 * serialize (on the WAL write lock) but would spend the waits inside the
 * busy handler's sleeps, measuring that back-off policy rather than SQLite.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "bench.h"

#define SQLITE_NAME "sqlite"
#define SQLITE_PUT_SQL "INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)"
#define SQLITE_GET_SQL "SELECT v FROM kv WHERE k = ?1"

typedef struct sqlite_bench {
	sqlite3 *conn; /* the one shared connection */
} sqlite_bench;

typedef struct sqlite_thread {
	sqlite_bench *b;    /* the store                          */
	sqlite3_stmt *stmt; /* this thread's put or get statement */
} sqlite_thread;

static int sqlite_err(sqlite_bench *b, const char *what)
{
	return bench_fail(SQLITE_NAME, "%s: %s", what, sqlite3_errmsg(b->conn));
}

static const char *sqlite_version(void)
{
	return sqlite3_libversion();
}

static int sqlite_open(const char *dir, const bench_open_opts *o, void **out)
{
	sqlite_bench *b = calloc(1, sizeof(*b));
	char path[4096];
	const char *setup = o->unsynced ?
		"PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;" :
		"PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;";

	if (!b)
		return bench_fail(SQLITE_NAME, "out of memory");
	snprintf(path, sizeof(path), "%s/bench.sqlite", dir);
	if (sqlite3_open_v2(path, &b->conn,
	                    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                    SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK)
		goto out_close;
	if (sqlite3_exec(b->conn, setup, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(b->conn, "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) "
	                 "WITHOUT ROWID;", NULL, NULL, NULL) != SQLITE_OK)
		goto out_close;
	*out = b;
	return 0;

out_close:
	sqlite_err(b, "open");
	sqlite3_close(b->conn);
	free(b);
	return -1;
}

static void sqlite_close(void *db)
{
	sqlite_bench *b = db;

	sqlite3_close(b->conn);
	free(b);
}

static int sqlite_insert(sqlite_bench *b, sqlite3_stmt *st, const void *key,
                         size_t klen, const void *val, size_t vlen)
{
	/* SQLITE_STATIC: the caller's buffers outlive the step. */
	if (sqlite3_bind_blob(st, 1, key, (int)klen, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_blob(st, 2, val, (int)vlen, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE) {
		sqlite3_reset(st);
		return sqlite_err(b, "insert");
	}
	sqlite3_reset(st);
	return 0;
}

/* One explicit transaction around every insert: SQLite's fast path. */
static int sqlite_load(void *db, uint64_t n, size_t vsize)
{
	sqlite_bench *b = db;
	char key[BENCH_KEY_LEN + 1];
	char *val = malloc(vsize ? vsize : 1);
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (!val)
		return bench_fail(SQLITE_NAME, "out of memory");
	if (sqlite3_exec(b->conn, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->conn, SQLITE_PUT_SQL, -1, &st, NULL) != SQLITE_OK) {
		sqlite_err(b, "load");
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		bench_key(key, i);
		bench_value(val, vsize, i);
		if (sqlite_insert(b, st, key, BENCH_KEY_LEN, val, vsize))
			goto out;
	}
	if (sqlite3_exec(b->conn, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite_err(b, "load commit");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	free(val);
	return rc;
}

static int sqlite_thread_open(void *db, bench_role role, void **out)
{
	sqlite_thread *t = calloc(1, sizeof(*t));
	const char *sql = role == BENCH_WRITER ? SQLITE_PUT_SQL : SQLITE_GET_SQL;

	if (!t)
		return bench_fail(SQLITE_NAME, "out of memory");
	t->b = db;
	if (sqlite3_prepare_v2(t->b->conn, sql, -1, &t->stmt, NULL) != SQLITE_OK) {
		sqlite_err(t->b, "prepare");
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

static void sqlite_thread_close(void *ctx)
{
	sqlite_thread *t = ctx;

	sqlite3_finalize(t->stmt);
	free(t);
}

static int sqlite_put(void *ctx, const void *key, size_t klen, const void *val,
                      size_t vlen)
{
	sqlite_thread *t = ctx;

	return sqlite_insert(t->b, t->stmt, key, klen, val, vlen);
}

static int sqlite_get(void *ctx, const void *key, size_t klen, size_t *vlen,
                      uint64_t *touch)
{
	sqlite_thread *t = ctx;
	sqlite3_stmt *st = t->stmt;
	int rc;

	if (sqlite3_bind_blob(st, 1, key, (int)klen, SQLITE_STATIC) != SQLITE_OK)
		return sqlite_err(t->b, "bind");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*vlen = (size_t)sqlite3_column_bytes(st, 0);
		*touch += bench_touch(sqlite3_column_blob(st, 0), *vlen);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? bench_fail(SQLITE_NAME, "get: key missing")
		                         : sqlite_err(t->b, "get");
	return 0;
}

const bench_engine bench_engine_sqlite = {
	.name = SQLITE_NAME,
	.settings = "WAL; synchronous=FULL; one transaction per put; threads share "
	            "one serialized connection",
	.version = sqlite_version,
	.open = sqlite_open,
	.close = sqlite_close,
	.load = sqlite_load,
	.thread_open = sqlite_thread_open,
	.thread_close = sqlite_thread_close,
	.put = sqlite_put,
	.get = sqlite_get,
	.scan = NULL,
	.space = NULL,
};
