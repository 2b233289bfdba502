/*
 * adapters.c -- the table of engine adapters (adapters.h).  Each row's
 * configurations are the ones its program in targets/ accepts;
 * tests/claims.sh checks that the two lists agree.
 */
#include "adapters.h"

#include <string.h>

static const torture_adapter adapters[] = {
	{ "files", { "rename-full", "rename-fsync-file", "rename-nosync",
	             "overwrite", "append-log", NULL }, NULL, NULL, 50 },
	{ "sqlite", { "wal-full", "wal-extra", "wal-normal", "wal-off",
	              "delete-full", "delete-extra", "delete-normal",
	              "delete-off", NULL }, NULL, "libsqlite3-dev", 50 },
	/* lock.mdb is the reader table, a writable shared mapping that is
	 * rebuilt after a crash */
	{ "lmdb", { "default", "nometasync", "nosync", "writemap", NULL },
	  "lock.mdb", "liblmdb-dev", 50 },
	{ "leveldb", { "sync", "nosync", NULL }, NULL, "libleveldb-dev", 100 },
	{ "rocksdb", { "sync", "nosync", NULL }, NULL, "librocksdb-dev", 300 },
	{ "redis", { "always", "everysec", "no", NULL }, NULL,
	  "redis-server", 300 },
	/* programs people run, one process per put (scripts in targets/) */
	{ "git", { "defaults", "fsync", NULL }, NULL, "git", 2000 },
	{ "sqlite3", { "defaults", "extra", NULL }, NULL, "sqlite3", 1000 },
	{ "glib", { "defaults", "durable", NULL }, NULL, "libglib2.0-dev", 50 },
	/* the engine's durable marker is memory shared with readers, never
	 * synced and never read by recovery (docs/targets.md) */
	{ "keel", { "default", "no-sync", NULL }, "*.durable*", NULL, 50 },
	/* both write through a writable shared mapping of their one file */
	{ "gdbm", { "sync", "nosync", "nommap-sync", "crash-tolerant", NULL },
	  NULL, "libgdbm-dev", 50 },
	{ "tdb", { "transaction", "nosync", "plain", "nommap-transaction",
	          "nommap-plain", NULL }, NULL, "libtdb-dev",
	  50 },
	/* Berkeley DB's region files (__db.001 ...) are shared memory that
	 * DB_RECOVER rebuilds on every open: nothing reads them after a
	 * crash (its other __db.* names are real files renamed into place).
	 * Each open's recovery zeroes the rest of the 10 MiB log file, which
	 * under the shim takes most of a 50 ms life */
	{ "bdb", { "txn", "txn-nosync", "txn-writenosync", "txn-smalllog",
	           NULL },
	  "__db.[0-9][0-9][0-9]", "libdb5.3-dev", 150 },
};
#define NADAPTERS (sizeof adapters / sizeof adapters[0])

const torture_adapter *adapter_find(const char *arg)
{
	size_t len = strcspn(arg, ":");

	for (size_t i = 0; i < NADAPTERS; i++)
		if (strlen(adapters[i].name) == len &&
		    strncmp(adapters[i].name, arg, len) == 0)
			return &adapters[i];
	return NULL;
}

const torture_adapter *adapter_parse(const char *arg, const char **config)
{
	const torture_adapter *a = adapter_find(arg);
	const char *colon = strchr(arg, ':');

	*config = NULL;
	if (!a)
		return NULL;
	if (!colon) {
		*config = a->configs[0];
		return a;
	}
	for (int i = 0; a->configs[i]; i++)
		if (strcmp(a->configs[i], colon + 1) == 0) {
			*config = a->configs[i];
			return a;
		}
	return NULL;
}

void adapter_list(FILE *f, const torture_adapter *only)
{
	for (size_t i = 0; i < NADAPTERS; i++) {
		if (only && only != &adapters[i])
			continue;
		for (int j = 0; adapters[i].configs[j]; j++)
			fprintf(f, "%s%s:%s\n", f == stdout ? "" : "  ",
			        adapters[i].name,
			        adapters[i].configs[j]);
	}
}
