/*
 * tdb.c -- Samba's trivial database as a torture --target tdb:CONFIG
 * adapter (adapter.h): one database file DIR/data.tdb, written through
 * tdb's default memory mapping (a writable MAP_SHARED mapping of the file).
 *
 *   transaction  each put in tdb_transaction_start/commit, which writes a
 *                recovery area and syncs (fdatasync, msync) twice
 *   nosync       the same with TDB_NOSYNC: the commit syncs nothing
 *   plain        tdb_store outside a transaction: nothing is synced
 *   nommap-transaction, nommap-plain
 *                the first and the last with TDB_NOMMAP: tdb reads and
 *                writes the file with pread/pwrite instead of the mapping
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdb.h>

#include "adapter.h"

enum { TRANSACTION, NOSYNC, PLAIN, NOMMAP_TRANSACTION, NOMMAP_PLAIN };

static const char *const configs[] = { "transaction", "nosync", "plain",
	"nommap-transaction", "nommap-plain", NULL };

typedef struct store {
	struct tdb_context *db;
	int config;
} store;

static const char *version(void)
{
	return TDB_VERSION_TEXT; /* tdb has no version call */
}

static int fail(store *s, const char *what)
{
	fprintf(stderr, "tdb: %s: %s\n", what,
	        s->db ? tdb_errorstr(s->db) : "open failed");
	return -1;
}

static int td_open(const char *dir, int config, void **out)
{
	char path[4096];
	store *s = calloc(1, sizeof *s);

	if (!s)
		return -1;
	*out = s;
	s->config = config;
	snprintf(path, sizeof path, "%s/data.tdb", dir);
	s->db = tdb_open(path, 0, config == NOSYNC ? TDB_NOSYNC :
	                 config >= NOMMAP_TRANSACTION ? TDB_NOMMAP : TDB_DEFAULT,
	                 O_RDWR | O_CREAT, 0644);
	return s->db ? 0 : fail(s, "tdb_open");
}

static int td_put(void *st, const char *key, const char *val)
{
	store *s = st;
	TDB_DATA k = { (unsigned char *)key, strlen(key) };
	TDB_DATA v = { (unsigned char *)val, strlen(val) };

	int txn = s->config != PLAIN && s->config != NOMMAP_PLAIN;

	if (txn && tdb_transaction_start(s->db) != 0)
		return fail(s, "tdb_transaction_start");
	if (tdb_store(s->db, k, v, TDB_REPLACE) != 0)
		return fail(s, "tdb_store");
	if (txn && tdb_transaction_commit(s->db) != 0)
		return fail(s, "tdb_transaction_commit");
	return 0;
}

static int emit(struct tdb_context *db, TDB_DATA k, TDB_DATA v, void *arg)
{
	(void)db;
	(void)arg;
	return adapter_emit(k.dptr, k.dsize, v.dptr, v.dsize) < 0 ? -1 : 0;
}

static int td_check(void *st)
{
	store *s = st;

	return tdb_traverse_read(s->db, emit, NULL) < 0 ? fail(s, "traverse")
	                                                : 0;
}

static void td_close(void *st)
{
	store *s = st;

	if (s->db)
		tdb_close(s->db);
	free(s);
}

int main(int argc, char **argv)
{
	static const adapter a = { "tdb", configs, version, td_open, td_put,
		td_check, td_close };

	return adapter_main(&a, argc, argv);
}
